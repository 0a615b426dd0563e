package volume

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/podspec"
)

func sources() podspec.Sources {
	return podspec.Sources{
		ConfigMaps: []v1.ConfigMap{{
			ObjectMeta: metav1.ObjectMeta{Name: "cfg"},
			Data:       map[string]string{"app.conf": "level=debug", "other": "o"},
			BinaryData: map[string][]byte{"blob": {0, 1, 2}},
		}},
		Secrets: []v1.Secret{{
			ObjectMeta: metav1.ObjectMeta{Name: "creds"},
			Data:       map[string][]byte{"password": []byte("s3cret")},
			StringData: map[string]string{"token": "tok"},
		}},
	}
}

func TestConfigMapVolume(t *testing.T) {
	m := newManager(t)
	pod := podWith("u-cm",
		v1.Volume{Name: "all", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, DefaultMode: ptr(int32(0o600))}}},
		v1.Volume{Name: "picked", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "cfg"},
			Items:                []v1.KeyToPath{{Key: "app.conf", Path: "etc/app/app.conf", Mode: ptr(int32(0o755))}, {Key: "blob", Path: "blob.bin"}},
		}}},
	)
	paths := setup(t, m, pod, sources())
	all := paths["all"]
	if all != m.VolumeDir("u-cm", PluginConfigMap, "all") {
		t.Errorf("path %s", all)
	}
	if readFile(t, filepath.Join(all, "app.conf")) != "level=debug" || readFile(t, filepath.Join(all, "blob")) != "\x00\x01\x02" {
		t.Error("configMap content wrong")
	}
	if got := modeOf(t, filepath.Join(all, "other")); got != 0o600 {
		t.Errorf("defaultMode not applied: %v", got)
	}
	if target, err := os.Readlink(filepath.Join(all, "app.conf")); err != nil || target != "..data/app.conf" {
		t.Errorf("app.conf link %q %v", target, err)
	}
	if target, err := os.Readlink(filepath.Join(all, "..data")); err != nil || !strings.HasPrefix(target, "..") || strings.Contains(target, "/") {
		t.Errorf("..data link %q %v", target, err)
	}
	picked := paths["picked"]
	if readFile(t, filepath.Join(picked, "etc/app/app.conf")) != "level=debug" {
		t.Error("item path not honoured")
	}
	if got := modeOf(t, filepath.Join(picked, "etc/app/app.conf")); got != 0o755 {
		t.Errorf("item mode %v, want 0755", got)
	}
	if got := modeOf(t, filepath.Join(picked, "blob.bin")); got != 0o644 {
		t.Errorf("default file mode %v, want 0644", got)
	}
	if got := visibleNames(t, picked); !slices.Equal(got, []string{"blob.bin", "etc"}) {
		t.Errorf("visible names %v", got)
	}
}

func TestSecretVolume(t *testing.T) {
	requireRoot(t)
	m := newManager(t)
	pod := podWith("u-secret", v1.Volume{Name: "creds", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds"}}})
	pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr(int64(2000))}
	dir := setup(t, m, pod, sources())["creds"]
	if !isTmpfs(t, dir) {
		t.Error("secret volume is not on tmpfs")
	}
	if readFile(t, filepath.Join(dir, "password")) != "s3cret" || readFile(t, filepath.Join(dir, "token")) != "tok" {
		t.Error("secret content wrong")
	}
	info, err := os.Stat(filepath.Join(dir, "password"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o644 || info.Sys().(*syscall.Stat_t).Gid != 2000 {
		t.Errorf("mode %v gid %d, want 0644 group 2000", info.Mode().Perm(), info.Sys().(*syscall.Stat_t).Gid)
	}
	pod.Spec.Volumes[0].Secret.DefaultMode = ptr(int32(0o400))
	setup(t, m, pod, sources())
	if got := modeOf(t, filepath.Join(dir, "password")); got != 0o440 {
		t.Errorf("0400 with fsGroup: %v, want group-readable 0440", got)
	}
}

func TestMissingSources(t *testing.T) {
	requireRoot(t)
	m := newManager(t)
	optional := ptr(true)
	pod := podWith("u-missing",
		v1.Volume{Name: "opt-cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Optional: optional}}},
		v1.Volume{Name: "opt-secret", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "absent", Optional: optional}}},
		v1.Volume{Name: "opt-key", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Optional: optional,
			Items: []v1.KeyToPath{{Key: "nokey", Path: "x"}, {Key: "other", Path: "o"}}}}},
		v1.Volume{Name: "req-cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "absent"}}}},
		v1.Volume{Name: "req-secret", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "gone"}}},
		v1.Volume{Name: "req-key", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds",
			Items: []v1.KeyToPath{{Key: "nokey", Path: "x"}}}}},
	)
	paths, err := m.Setup(t.Context(), pod, sources(), podspec.Downward{})
	for _, want := range []string{`volume "req-cm": configMap "absent" not found`, `volume "req-secret": secret "gone" not found`,
		`volume "req-key": secret "creds" has no key "nokey"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	for _, name := range []string{"opt-cm", "opt-secret"} {
		if got := visibleNames(t, paths[name]); len(got) != 0 {
			t.Errorf("%s: optional missing source should give an empty volume, got %v", name, got)
		}
	}
	if got := visibleNames(t, paths["opt-key"]); !slices.Equal(got, []string{"o"}) {
		t.Errorf("opt-key: %v, want only the existing key", got)
	}
	if len(paths) != 3 {
		t.Errorf("paths %v: want the three optional volumes", paths)
	}
}

func TestDownwardAPIVolume(t *testing.T) {
	requireRoot(t)
	m := newManager(t)
	pod := podWith("u-downward", v1.Volume{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{
		DefaultMode: ptr(int32(0o640)),
		Items: []v1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
			{Path: "annotations", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.annotations"}},
			{Path: "meta/name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}, Mode: ptr(int32(0o600))},
			{Path: "uid", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.uid"}},
			{Path: "mem_limit_mi", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.memory", Divisor: mustQuantity("1Mi")}},
			{Path: "cpu_limit", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu"}},
		},
	}}})
	paths, err := m.Setup(t.Context(), pod, podspec.Sources{}, podspec.Downward{Allocatable: podspec.Allocatable{MilliCPU: 3500}})
	if err != nil {
		t.Fatal(err)
	}
	dir := paths["info"]
	want := map[string]string{
		"labels": "app=\"web\"\ntier=\"front\"", "annotations": `owner="team \"a\""`, "meta/name": "web",
		"uid": "u-downward", "mem_limit_mi": "64", "cpu_limit": "4",
	}
	for name, content := range want {
		if got := readFile(t, filepath.Join(dir, name)); got != content {
			t.Errorf("%s = %q, want %q", name, got, content)
		}
	}
	if modeOf(t, filepath.Join(dir, "labels")) != 0o640 || modeOf(t, filepath.Join(dir, "meta/name")) != 0o600 {
		t.Error("modes not applied")
	}
	if !isTmpfs(t, dir) {
		t.Error("downwardAPI volume is not on tmpfs")
	}
}

func TestProjectedVolume(t *testing.T) {
	requireRoot(t)
	m := newManager(t)
	projected := &v1.ProjectedVolumeSource{DefaultMode: ptr(int32(0o440)), Sources: []v1.VolumeProjection{
		{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"},
			Items: []v1.KeyToPath{{Key: "app.conf", Path: "app.conf"}}}},
		{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "creds"},
			Items: []v1.KeyToPath{{Key: "token", Path: "secret/token", Mode: ptr(int32(0o400))}}}},
		{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{
			{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
	}}
	pod := podWith("u-projected", v1.Volume{Name: "all", VolumeSource: v1.VolumeSource{Projected: projected}})
	dir := setup(t, m, pod, sources())["all"]
	if got := visibleNames(t, dir); !slices.Equal(got, []string{"app.conf", "namespace", "secret"}) {
		t.Errorf("names %v (serviceAccountToken must write nothing)", got)
	}
	if readFile(t, filepath.Join(dir, "secret/token")) != "tok" || readFile(t, filepath.Join(dir, "namespace")) != "shop" {
		t.Error("projected content wrong")
	}
	if modeOf(t, filepath.Join(dir, "app.conf")) != 0o440 || modeOf(t, filepath.Join(dir, "secret/token")) != 0o400 {
		t.Error("projected modes wrong")
	}
	projected.Sources = append(projected.Sources, v1.VolumeProjection{ConfigMap: &v1.ConfigMapProjection{
		LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Items: []v1.KeyToPath{{Key: "other", Path: "app.conf"}}}})
	if _, err := m.Setup(t.Context(), pod, sources(), podspec.Downward{}); err == nil || !strings.Contains(err.Error(), "projected twice") {
		t.Errorf("duplicate path: %v", err)
	}
}

// visibleNames lists a generated volume's entries without the ".." ones.
func visibleNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "..") {
			names = append(names, e.Name())
		}
	}
	return names
}
