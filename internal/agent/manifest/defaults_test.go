package manifest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// everythingDefaulted has one of each thing that gets a default.
const everythingDefaulted = `apiVersion: v1
kind: Pod
metadata:
  name: defaults
spec:
  hostNetwork: true
  initContainers:
  - name: init
    image: registry.example.com:5000/tools/init
    resources:
      limits:
        cpu: "0.5"
  containers:
  - name: app
    image: nginx@sha256:0000000000000000000000000000000000000000000000000000000000000000
    ports:
    - containerPort: 8080
    env:
    - name: NAME
      valueFrom:
        fieldRef:
          fieldPath: metadata.name
    resources:
      limits:
        memory: 100M
      requests:
        cpu: 100m
    livenessProbe:
      httpGet:
        port: 8080
    startupProbe:
      grpc:
        port: 9000
    lifecycle:
      postStart:
        httpGet:
          port: 8080
  volumes:
  - name: scratch
  - name: host
    hostPath:
      path: /var/lib/data
  - name: config
    configMap:
      name: cfg
  - name: secret
    secret:
      secretName: sec
  - name: info
    downwardAPI:
      items:
      - path: name
        fieldRef:
          fieldPath: metadata.name
  - name: all
    projected:
      sources:
      - downwardAPI:
          items:
          - path: labels
            fieldRef:
              fieldPath: metadata.labels
`

func TestPodDefaults(t *testing.T) {
	pod := onlyPod(t, decodeString(t, everythingDefaulted, "defaults.yaml"))
	spec := pod.Spec
	init, app := spec.InitContainers[0], spec.Containers[0]
	checks := []struct {
		what      string
		got, want any
	}{
		{"namespace", pod.Namespace, "default"},
		{"restartPolicy", spec.RestartPolicy, v1.RestartPolicyAlways},
		{"dnsPolicy", spec.DNSPolicy, v1.DNSClusterFirst},
		{"terminationGracePeriodSeconds", *spec.TerminationGracePeriodSeconds, int64(30)},
		{"securityContext", reflect.DeepEqual(*spec.SecurityContext, v1.PodSecurityContext{}), true},
		{"schedulerName", spec.SchedulerName, "default-scheduler"},
		{"enableServiceLinks", *spec.EnableServiceLinks, true},
		{"terminationMessagePath", app.TerminationMessagePath, "/dev/termination-log"},
		{"terminationMessagePolicy", app.TerminationMessagePolicy, v1.TerminationMessageReadFile},
		{"untagged image pull policy", init.ImagePullPolicy, v1.PullAlways},
		{"digest image pull policy", app.ImagePullPolicy, v1.PullIfNotPresent},
		{"port protocol", app.Ports[0].Protocol, v1.ProtocolTCP},
		{"hostNetwork hostPort", app.Ports[0].HostPort, int32(8080)},
		{"env fieldRef apiVersion", app.Env[0].ValueFrom.FieldRef.APIVersion, "v1"},
		{"init requests from limits", init.Resources.Requests.Cpu().String(), "500m"},
		{"requests from limits", app.Resources.Requests.Memory().String(), "100M"},
		{"explicit request kept", app.Resources.Requests.Cpu().String(), "100m"},
		{"probe timeout", app.LivenessProbe.TimeoutSeconds, int32(1)},
		{"probe period", app.LivenessProbe.PeriodSeconds, int32(10)},
		{"probe success", app.LivenessProbe.SuccessThreshold, int32(1)},
		{"probe failure", app.LivenessProbe.FailureThreshold, int32(3)},
		{"httpGet path", app.LivenessProbe.HTTPGet.Path, "/"},
		{"httpGet scheme", app.LivenessProbe.HTTPGet.Scheme, v1.URISchemeHTTP},
		{"grpc service", *app.StartupProbe.GRPC.Service, ""},
		{"hook httpGet path", app.Lifecycle.PostStart.HTTPGet.Path, "/"},
		{"volume without source", spec.Volumes[0].EmptyDir != nil, true},
		{"emptyDir medium", spec.Volumes[0].EmptyDir.Medium, v1.StorageMediumDefault},
		{"hostPath type", *spec.Volumes[1].HostPath.Type, v1.HostPathUnset},
		{"configMap mode", *spec.Volumes[2].ConfigMap.DefaultMode, int32(0o644)},
		{"secret mode", *spec.Volumes[3].Secret.DefaultMode, int32(0o644)},
		{"downwardAPI mode", *spec.Volumes[4].DownwardAPI.DefaultMode, int32(0o644)},
		{"downwardAPI fieldRef apiVersion", spec.Volumes[4].DownwardAPI.Items[0].FieldRef.APIVersion, "v1"},
		{"projected mode", *spec.Volumes[5].Projected.DefaultMode, int32(0o644)},
		{"projected fieldRef apiVersion", spec.Volumes[5].Projected.Sources[0].DownwardAPI.Items[0].FieldRef.APIVersion, "v1"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
}

func TestDefaultPullPolicy(t *testing.T) {
	cases := map[string]v1.PullPolicy{
		"busybox":                           v1.PullAlways,
		"busybox:latest":                    v1.PullAlways,
		"docker.io/library/busybox:1.36":    v1.PullIfNotPresent,
		"localhost:5000/busybox":            v1.PullAlways,
		"localhost:5000/busybox:latest":     v1.PullAlways,
		"localhost:5000/busybox:v2":         v1.PullIfNotPresent,
		"busybox@sha256:abcd":               v1.PullIfNotPresent,
		"busybox:latest@sha256:abcd":        v1.PullAlways,
		"registry.example.com/a/b/c:stable": v1.PullIfNotPresent,
	}
	for image, want := range cases {
		if got := defaultPullPolicy(image); got != want {
			t.Errorf("defaultPullPolicy(%q) = %s, want %s", image, got, want)
		}
	}
}

func TestExplicitValuesAreKept(t *testing.T) {
	manifests := `apiVersion: v1
kind: Pod
metadata:
  name: explicit
  namespace: team
  uid: 11111111-2222-3333-4444-555555555555
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: busybox:latest
    imagePullPolicy: Never
    livenessProbe:
      exec:
        command: ["true"]
      periodSeconds: 3
`
	pod := onlyPod(t, decodeString(t, manifests, "explicit.yaml"))
	if pod.Namespace != "team" || pod.Spec.RestartPolicy != v1.RestartPolicyNever ||
		*pod.Spec.TerminationGracePeriodSeconds != 5 || pod.Spec.Containers[0].ImagePullPolicy != v1.PullNever ||
		pod.Spec.Containers[0].LivenessProbe.PeriodSeconds != 3 {
		t.Errorf("explicit values were overwritten: %+v", pod)
	}
}

// A manifest's metadata.uid is ignored, as the API server ignores it on
// create: the pod gets the uid it would have without one, and the given
// one is kept aside for apply's warning.
func TestManifestUIDIsIgnored(t *testing.T) {
	const pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: b\n%sspec:\n  containers: [{name: app, image: busybox}]\n"
	given := decodeString(t, fmt.Sprintf(pod, "  uid: 11111111-2222-3333-4444-555555555555\n"), "b.yaml")
	plain := decodeString(t, fmt.Sprintf(pod, ""), "b.yaml")
	if g, p := given.Pods[0], plain.Pods[0]; g.UID != p.UID || g.IgnoredUID != "11111111-2222-3333-4444-555555555555" || p.IgnoredUID != "" {
		t.Errorf("pod with a uid: uid %q (ignored %q); without: uid %q (ignored %q); want the same derived uid, the given one ignored",
			g.UID, g.IgnoredUID, p.UID, p.IgnoredUID)
	}
	same := decodeString(t, fmt.Sprintf(pod, "  uid: "+string(plain.Pods[0].UID)+"\n"), "b.yaml")
	if same.Pods[0].IgnoredUID != "" {
		t.Errorf("a manifest giving the derived uid itself: ignored %q, want no warning", same.Pods[0].IgnoredUID)
	}
	if traversal := decodeString(t, fmt.Sprintf(pod, "  uid: ../../etc\n"), "b.yaml"); traversal.Pods[0].UID != plain.Pods[0].UID {
		t.Errorf("a uid that is a path: uid %q, want the derived %q", traversal.Pods[0].UID, plain.Pods[0].UID)
	}
}

func TestConfigObjectDefaults(t *testing.T) {
	b := decodeString(t, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n", "c.yaml")
	if b.Secrets["default/s"].Type != v1.SecretTypeOpaque {
		t.Errorf("secret type = %q, want Opaque", b.Secrets["default/s"].Type)
	}
	if b.ConfigMaps["default/c"].Data == nil {
		t.Error("configmap data is nil, want an empty map")
	}
}

func TestSetDefaultsIsIdempotent(t *testing.T) {
	b := decodeString(t, everythingDefaulted, "defaults.yaml")
	before, _ := json.Marshal(b)
	b.SetDefaults()
	after, _ := json.Marshal(b)
	if string(before) != string(after) {
		t.Errorf("SetDefaults changed a decoded bundle:\n%s\n%s", before, after)
	}
}

func TestStaticPodUID(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "web.yaml", webManifests)
	uidOf := func(b *Bundle, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return string(b.Pods[0].UID)
	}
	first := uidOf(Load(path, nil))
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(first) {
		t.Fatalf("uid %q is not 32 hex digits", first)
	}
	if again := uidOf(Load(path, nil)); again != first {
		t.Errorf("reloading the same file gave uid %s, then %s", first, again)
	}
	if viaDir := uidOf(Load(dir, nil)); viaDir != first {
		t.Errorf("loading the file through its directory changed the uid: %s, %s", first, viaDir)
	}
	t.Chdir(dir)
	if relative := uidOf(Load("web.yaml", nil)); relative != first {
		t.Errorf("a relative path to the same file changed the uid: %s, %s", first, relative)
	}

	spelledOut := writeFile(t, dir, "web.yaml", replaceOnce(t, webManifests, "    image: nginx:1.27\n", "    image: nginx:1.27\n    imagePullPolicy: IfNotPresent\n"))
	if same := uidOf(Load(spelledOut, nil)); same != first {
		t.Errorf("spelling out a default changed the uid: %s, %s", first, same)
	}
	changed := writeFile(t, dir, "web.yaml", replaceOnce(t, webManifests, "nginx:1.27", "nginx:1.28"))
	if other := uidOf(Load(changed, nil)); other == first {
		t.Error("changing the image kept the uid")
	}
	moved := writeFile(t, dir, "moved.yaml", webManifests)
	if other := uidOf(Load(moved, nil)); other == first {
		t.Error("the same pod from another file kept the uid")
	}
	if err := os.Remove(filepath.Join(dir, "moved.yaml")); err != nil {
		t.Fatal(err)
	}
}

func replaceOnce(t *testing.T, s, old, replacement string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("%q not found", old)
	}
	return strings.Replace(s, old, replacement, 1)
}

// TestImageVolumePullPolicyDefault: Always for :latest or no tag, else
// IfNotPresent, as a container's; an explicit one stays.
func TestImageVolumePullPolicyDefault(t *testing.T) {
	manifests := `apiVersion: v1
kind: Pod
metadata: {name: tools}
spec:
  containers:
  - {name: app, image: busybox:1.36}
  volumes:
  - {name: latest, image: {reference: tools}}
  - {name: tagged, image: {reference: tools:v1}}
  - {name: pinned, image: {reference: "tools@sha256:abcd"}}
  - {name: explicit, image: {reference: tools, pullPolicy: Never}}
`
	pod := onlyPod(t, decodeString(t, manifests, "tools.yaml"))
	want := []v1.PullPolicy{v1.PullAlways, v1.PullIfNotPresent, v1.PullIfNotPresent, v1.PullNever}
	for i, v := range pod.Spec.Volumes {
		if v.Image == nil || v.Image.PullPolicy != want[i] {
			t.Errorf("volume %s: %+v, want pullPolicy %s", v.Name, v.Image, want[i])
		}
	}
}
