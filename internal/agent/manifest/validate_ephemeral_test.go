package manifest

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func ephemeralPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{extraContainer("setup")},
			Containers:     []v1.Container{extraContainer("app")},
			Volumes:        []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
		},
	}
}

func debugContainer(name string, edit func(c *v1.EphemeralContainer)) v1.EphemeralContainer {
	ec := v1.EphemeralContainer{EphemeralContainerCommon: v1.EphemeralContainerCommon(extraContainer(name))}
	if edit != nil {
		edit(&ec)
	}
	return ec
}

// An ephemeral container is validated as the API server validates an
// update of the ephemeralcontainers subresource.
func TestValidateEphemeralContainersUpdate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(c *v1.EphemeralContainer)
		want string // "" = valid
	}{
		{"plain", nil, ""},
		{"target a regular container", func(c *v1.EphemeralContainer) { c.TargetContainerName = "app" }, ""},
		{"target an init container", func(c *v1.EphemeralContainer) { c.TargetContainerName = "setup" }, ""},
		{"mount a volume", func(c *v1.EphemeralContainer) { c.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}} }, ""},
		{"unknown target", func(c *v1.EphemeralContainer) { c.TargetContainerName = "nope" },
			`spec.ephemeralContainers[0].targetContainerName: Not found: "nope"`},
		{"named like a container", func(c *v1.EphemeralContainer) { c.Name = "setup" }, `spec.ephemeralContainers[0].name: Duplicate value: "setup"`},
		{"bad name", func(c *v1.EphemeralContainer) { c.Name = "Debug" }, `spec.ephemeralContainers[0].name: Invalid value: "Debug"`},
		{"no image", func(c *v1.EphemeralContainer) { c.Image = "" }, "spec.ephemeralContainers[0].image: Required value"},
		{"ports", func(c *v1.EphemeralContainer) {
			c.Ports = []v1.ContainerPort{{ContainerPort: 80, Protocol: v1.ProtocolTCP}}
		},
			"spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container"},
		{"probe", func(c *v1.EphemeralContainer) {
			c.ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, TimeoutSeconds: 1, PeriodSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1}
		}, "spec.ephemeralContainers[0].readinessProbe: Forbidden"},
		{"lifecycle", func(c *v1.EphemeralContainer) {
			c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
		}, "spec.ephemeralContainers[0].lifecycle: Forbidden"},
		{"resources", func(c *v1.EphemeralContainer) {
			c.Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
		}, "spec.ephemeralContainers[0].resources: Forbidden"},
		{"restartPolicy", func(c *v1.EphemeralContainer) { c.RestartPolicy = ptrTo(v1.ContainerRestartPolicyAlways) },
			"spec.ephemeralContainers[0].restartPolicy: Forbidden"},
		{"subPath", func(c *v1.EphemeralContainer) {
			c.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data", SubPath: "x"}}
		}, "spec.ephemeralContainers[0].volumeMounts[0].subPath: Forbidden"},
		{"unknown volume", func(c *v1.EphemeralContainer) { c.VolumeMounts = []v1.VolumeMount{{Name: "nope", MountPath: "/x"}} },
			"spec.ephemeralContainers[0].volumeMounts[0].name: Not found"},
	} {
		err := ValidateEphemeralContainersUpdate(ephemeralPod(), []v1.EphemeralContainer{debugContainer("debugger", tc.edit)})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "Pod default/web")):
			t.Errorf("%s: err = %v; want %q, naming the pod", tc.name, err, tc.want)
		}
	}
}

// Ephemeral containers can only be added: not removed, not changed, not
// twice under one name.
func TestEphemeralContainersAreAddOnly(t *testing.T) {
	pod := ephemeralPod()
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{debugContainer("one", nil)}
	changed := debugContainer("one", func(c *v1.EphemeralContainer) { c.Command = []string{"sh"} })
	for _, tc := range []struct {
		name string
		list []v1.EphemeralContainer
		want string
	}{
		{"added", []v1.EphemeralContainer{debugContainer("one", nil), debugContainer("two", nil)}, ""},
		{"removed", nil, `existing ephemeral containers "one" may not be removed`},
		{"changed", []v1.EphemeralContainer{changed}, `existing ephemeral containers "one" may not be changed`},
		{"twice", []v1.EphemeralContainer{debugContainer("one", nil), debugContainer("one", nil)}, `spec.ephemeralContainers[1].name: Duplicate value: "one"`},
	} {
		err := ValidateEphemeralContainersUpdate(pod, tc.list)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: err = %v; want %q", tc.name, err, tc.want)
		}
	}
}
