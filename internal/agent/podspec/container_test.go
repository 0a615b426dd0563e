package podspec

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestContainerConfig(t *testing.T) {
	c := newContainer("app")
	c.Command = []string{"/bin/sh", "-c"}
	c.Args = []string{"echo $(GREETING) $$(GREETING) $(UNSET)"}
	c.WorkingDir = "/work"
	c.Env = []v1.EnvVar{{Name: "NAME", Value: "world"}, {Name: "GREETING", Value: "hello $(NAME)"}}
	c.Stdin, c.StdinOnce, c.TTY = true, true, true
	c.Resources = resources("100m", "64Mi", "200m", "128Mi")
	c.Lifecycle = &v1.Lifecycle{StopSignal: ptr(v1.SIGUSR1)}
	pod := newPod(c)
	cfg, err := ContainerConfig(pod, &pod.Spec.Containers[0], ContainerTypeRegular, 4,
		ContainerOptions{Downward: Downward{Allocatable: Allocatable{MemoryBytes: 1 << 30}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Metadata.Name != "app" || cfg.Metadata.Attempt != 4 || cfg.LogPath != "app/4.log" {
		t.Errorf("metadata %v log %q", cfg.Metadata, cfg.LogPath)
	}
	if cfg.Image.Image != c.Image || cfg.Image.UserSpecifiedImage != c.Image {
		t.Errorf("image %v", cfg.Image)
	}
	if !slices.Equal(cfg.Command, c.Command) || cfg.Args[0] != "echo hello world $(GREETING) $(UNSET)" {
		t.Errorf("command %q args %q", cfg.Command, cfg.Args)
	}
	if cfg.WorkingDir != "/work" || !cfg.Stdin || !cfg.StdinOnce || !cfg.Tty {
		t.Errorf("working dir / stdio: %v", cfg)
	}
	if len(cfg.Envs) != 2 || cfg.Envs[1].Key != "GREETING" || string(cfg.Envs[1].Value) != "hello world" {
		t.Errorf("envs %v", cfg.Envs)
	}
	r := cfg.Linux.Resources
	if r.CpuShares != 102 || r.CpuQuota != 20000 || r.MemoryLimitInBytes != 128<<20 || r.OomScoreAdj != 1000-1000*64/1024 {
		t.Errorf("resources %v", r)
	}
	if cfg.StopSignal != runtimeapi.Signal_SIGNAL_SIGUSR1 {
		t.Errorf("stop signal %v", cfg.StopSignal)
	}
	if cfg.Labels[LabelContainerName] != "app" || cfg.Labels[LabelPodName] != "web" || cfg.Annotations[AnnotationContainerType] != "regular" {
		t.Errorf("labels %v annotations %v", cfg.Labels, cfg.Annotations)
	}
}

// TestContainerConfigPassesCDIAnnotations: the pod's cdi.k8s.io/
// annotations reach every container's CRI annotations, where the runtime
// resolves the CDI devices they name; its other annotations do not.
func TestContainerConfigPassesCDIAnnotations(t *testing.T) {
	pod := newPod(newContainer("app"))
	pod.Spec.InitContainers = []v1.Container{newContainer("init")}
	pod.Annotations = map[string]string{"cdi.k8s.io/gpu": "example.com/gpu=0,example.com/gpu=1", "team": "a"}
	for _, tc := range []struct {
		c   *v1.Container
		typ ContainerType
	}{{&pod.Spec.Containers[0], ContainerTypeRegular}, {&pod.Spec.InitContainers[0], ContainerTypeInit}} {
		cfg, err := ContainerConfig(pod, tc.c, tc.typ, 0, ContainerOptions{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Annotations["cdi.k8s.io/gpu"] != "example.com/gpu=0,example.com/gpu=1" || cfg.Annotations["team"] != "" {
			t.Errorf("%s: annotations %v; want the CDI one only", tc.c.Name, cfg.Annotations)
		}
	}
}

func TestContainerConfigRefusals(t *testing.T) {
	noImage := newContainer("app")
	noImage.Image = ""
	pod := newPod(noImage)
	if _, err := ContainerConfig(pod, &pod.Spec.Containers[0], ContainerTypeRegular, 0, ContainerOptions{}, nil); err == nil {
		t.Error("container without image accepted")
	}
	pod = newPod(newContainer("app"))
	if _, err := ContainerConfig(pod, &pod.Spec.Containers[0], "daemon", 0, ContainerOptions{}, nil); err == nil {
		t.Error("unknown container type accepted")
	}
	if _, err := ContainerConfig(pod, &pod.Spec.Containers[0], ContainerTypeRegular, -1, ContainerOptions{}, nil); err == nil {
		t.Error("negative restart count accepted")
	}
	pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{StopSignal: ptr(v1.Signal("SIGNOPE"))}
	if _, err := ContainerConfig(pod, &pod.Spec.Containers[0], ContainerTypeRegular, 0, ContainerOptions{}, nil); err == nil {
		t.Error("unknown stop signal accepted")
	}
	for api, cri := range map[v1.Signal]runtimeapi.Signal{
		"SIGRTMIN+1": runtimeapi.Signal_SIGNAL_SIGRTMINPLUS1, "SIGRTMAX-3": runtimeapi.Signal_SIGNAL_SIGRTMAXMINUS3, v1.SIGKILL: runtimeapi.Signal_SIGNAL_SIGKILL,
	} {
		pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{StopSignal: ptr(api)}
		cfg, err := ContainerConfig(pod, &pod.Spec.Containers[0], ContainerTypeRegular, 0, ContainerOptions{}, nil)
		if err != nil || cfg.GetStopSignal() != cri {
			t.Errorf("stop signal %s: %v %v, want %v", api, cfg.GetStopSignal(), err, cri)
		}
	}
}

func mountPod() *v1.Pod {
	c := newContainer("app")
	c.Env = []v1.EnvVar{{Name: "POD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}, {Name: "EMPTY"}}
	c.VolumeMounts = []v1.VolumeMount{
		{Name: "data", MountPath: "/data"},
		{Name: "data", MountPath: "/sub", SubPath: "a/b", ReadOnly: true},
		{Name: "data", MountPath: "/expr", SubPathExpr: "logs/$(POD)"},
		{Name: "cfg", MountPath: "/etc/cfg"},
		{Name: "host", MountPath: "/host", MountPropagation: ptr(v1.MountPropagationHostToContainer)},
	}
	pod := newPod(c)
	pod.Spec.Volumes = []v1.Volume{
		{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}},
		{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/srv"}}},
	}
	return pod
}

var mountPaths = VolumePaths{"data": "/pods/uid-1/volumes/empty/data", "cfg": "/pods/uid-1/volumes/cm/cfg", "host": "/srv"}

func TestContainerMounts(t *testing.T) {
	pod := mountPod()
	cfg, err := ContainerConfig(pod, &pod.Spec.Containers[0], ContainerTypeRegular, 0,
		ContainerOptions{TerminationMessageHostPath: "/pods/uid-1/containers/app/0123"}, mountPaths)
	if err != nil {
		t.Fatal(err)
	}
	type m struct {
		container, host string
		ro              bool
		prop            runtimeapi.MountPropagation
	}
	want := []m{
		{"/data", "/pods/uid-1/volumes/empty/data", false, runtimeapi.MountPropagation_PROPAGATION_PRIVATE},
		{"/sub", "/pods/uid-1/volumes/empty/data/a/b", true, runtimeapi.MountPropagation_PROPAGATION_PRIVATE},
		{"/expr", "/pods/uid-1/volumes/empty/data/logs/web", false, runtimeapi.MountPropagation_PROPAGATION_PRIVATE},
		{"/etc/cfg", "/pods/uid-1/volumes/cm/cfg", true, runtimeapi.MountPropagation_PROPAGATION_PRIVATE},
		{"/host", "/srv", false, runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER},
		{"/dev/termination-log", "/pods/uid-1/containers/app/0123", false, runtimeapi.MountPropagation_PROPAGATION_PRIVATE},
	}
	var got []m
	for _, x := range cfg.Mounts {
		got = append(got, m{x.ContainerPath, x.HostPath, x.Readonly, x.Propagation})
	}
	if !slices.Equal(got, want) {
		t.Errorf("mounts\n got %v\nwant %v", got, want)
	}
}

// A persistentVolumeClaim volume marked readOnly is mounted read-only
// everywhere, as the kubelet does; without the mark as each mount says.
func TestClaimVolumeReadOnly(t *testing.T) {
	for _, readOnly := range []bool{false, true} {
		c := newContainer("app")
		c.VolumeMounts = []v1.VolumeMount{{Name: "db", MountPath: "/db"}}
		pod := newPod(c)
		pod.Spec.Volumes = []v1.Volume{{Name: "db", VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data", ReadOnly: readOnly}}}}
		cfg, err := ContainerConfig(pod, &pod.Spec.Containers[0], ContainerTypeRegular, 0, ContainerOptions{}, VolumePaths{"db": "/claims/pvc-1"})
		if err != nil {
			t.Fatal(err)
		}
		if m := cfg.Mounts[0]; m.HostPath != "/claims/pvc-1" || m.Readonly != readOnly {
			t.Errorf("claim readOnly %v: mount %+v", readOnly, m)
		}
	}
}

func TestContainerMountsUseResolver(t *testing.T) {
	pod := mountPod()
	var calls []SubPathMount
	refuse := errors.New("escapes")
	opts := ContainerOptions{ResolveSubPath: func(m SubPathMount) (string, error) {
		calls = append(calls, m)
		if m.SubPath == "logs/web" {
			return "", refuse
		}
		return filepath.Join(m.VolumePath, "resolved", m.SubPath), nil
	}}
	_, err := ContainerConfig(pod, &pod.Spec.Containers[0], ContainerTypeRegular, 0, opts, mountPaths)
	if !errors.Is(err, refuse) || !strings.Contains(err.Error(), `volumeMount "data" at /expr`) {
		t.Errorf("error %v should wrap the resolver's and name the mount", err)
	}
	data := mountPaths["data"]
	want := []SubPathMount{
		{PodUID: string(pod.UID), Container: "app", MountIndex: 1, Volume: "data", VolumePath: data, SubPath: "a/b"},
		{PodUID: string(pod.UID), Container: "app", MountIndex: 2, Volume: "data", VolumePath: data, SubPath: "logs/web"},
	}
	if !slices.Equal(calls, want) {
		t.Errorf("resolver calls\n got %+v\nwant %+v", calls, want)
	}
}

func TestContainerMountErrors(t *testing.T) {
	cases := map[string]func(*v1.Pod){
		"volume not set up": func(p *v1.Pod) { p.Spec.Containers[0].VolumeMounts[0].Name = "ghost" },
		"absolute subPath":  func(p *v1.Pod) { p.Spec.Containers[0].VolumeMounts[1].SubPath = "/etc" },
		"subPath escapes":   func(p *v1.Pod) { p.Spec.Containers[0].VolumeMounts[1].SubPath = "a/../../x" },
		"expr escapes":      func(p *v1.Pod) { p.Spec.Containers[0].VolumeMounts[2].SubPathExpr = "$(POD)/.." },
		"expr unknown var":  func(p *v1.Pod) { p.Spec.Containers[0].VolumeMounts[2].SubPathExpr = "x/$(NOPE)" },
		"expr empty var":    func(p *v1.Pod) { p.Spec.Containers[0].VolumeMounts[2].SubPathExpr = "x/$(EMPTY)" },
		"bidirectional unprivileged": func(p *v1.Pod) {
			p.Spec.Containers[0].VolumeMounts[4].MountPropagation = ptr(v1.MountPropagationBidirectional)
		},
		"rro without readOnly": func(p *v1.Pod) {
			p.Spec.Containers[0].VolumeMounts[0].RecursiveReadOnly = ptr(v1.RecursiveReadOnlyEnabled)
		},
		"rro enabled unsupported": func(p *v1.Pod) {
			p.Spec.Containers[0].VolumeMounts[1].RecursiveReadOnly = ptr(v1.RecursiveReadOnlyEnabled)
		},
	}
	for name, breakIt := range cases {
		pod := mountPod()
		breakIt(pod)
		if _, err := ContainerConfig(pod, &pod.Spec.Containers[0], ContainerTypeRegular, 0, ContainerOptions{}, mountPaths); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	pod := mountPod()
	pod.Spec.Containers[0].SecurityContext = &v1.SecurityContext{Privileged: ptr(true)}
	pod.Spec.Containers[0].VolumeMounts[4].MountPropagation = ptr(v1.MountPropagationBidirectional)
	pod.Spec.Containers[0].VolumeMounts[1].RecursiveReadOnly = ptr(v1.RecursiveReadOnlyIfPossible)
	cfg, err := ContainerConfig(pod, &pod.Spec.Containers[0], ContainerTypeRegular, 0, ContainerOptions{}, mountPaths)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Mounts[4].Propagation != runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL || cfg.Mounts[1].RecursiveReadOnly {
		t.Errorf("privileged bidirectional / rro IfPossible unsupported: %v %v", cfg.Mounts[4], cfg.Mounts[1])
	}
}

func TestFindContainerAndSources(t *testing.T) {
	side := newContainer("side")
	side.RestartPolicy = ptr(v1.ContainerRestartPolicyAlways)
	side.EnvFrom = []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}}}}
	pod := newPod(newContainer("app"))
	pod.Spec.InitContainers = []v1.Container{newContainer("init"), side}
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
	pod.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
		{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}},
	}}}}}
	for name, want := range map[string]ContainerType{"init": ContainerTypeInit, "side": ContainerTypeSidecar, "app": ContainerTypeRegular, "debug": ContainerTypeEphemeral} {
		c, typ, ok := FindContainer(pod, name)
		if !ok || typ != want || c.Name != name {
			t.Errorf("%s: %v %v %v", name, c, typ, ok)
		}
	}
	if _, _, ok := FindContainer(pod, "ghost"); ok {
		t.Error("found a container that is not there")
	}
	all := testSources()
	all.ConfigMaps = append(all.ConfigMaps, v1.ConfigMap{})
	all.ConfigMaps[1].Name, all.ConfigMaps[1].Namespace = "cfg", "elsewhere"
	got := ReferencedSources(pod, all.ConfigMaps, all.Secrets)
	if len(got.ConfigMaps) != 1 || got.ConfigMaps[0].Namespace != "shop" || len(got.Secrets) != 1 {
		t.Errorf("referenced sources %+v", got)
	}
}
