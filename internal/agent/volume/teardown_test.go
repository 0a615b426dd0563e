package volume

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/podspec"
)

func TestTeardownRemovesMountsAndFiles(t *testing.T) {
	requireRoot(t)
	m := newManager(t)
	pod := podWith("u-teardown",
		v1.Volume{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}},
		v1.Volume{Name: "disk", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		v1.Volume{Name: "creds", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds"}}},
	)
	setup(t, m, pod, sources())
	if under, _ := mountsUnder(m.PodDir("u-teardown")); len(under) != 2 {
		t.Fatalf("mounts before teardown: %v", under)
	}
	if err := m.Teardown("u-teardown"); err != nil {
		t.Fatal(err)
	}
	assertNoMountsUnder(t, m.Root)
	if _, err := os.Lstat(m.PodDir("u-teardown")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pod dir still there: %v", err)
	}
	if err := m.Teardown("u-teardown"); err != nil {
		t.Errorf("second teardown: %v", err)
	}
}

func TestTeardownAfterPartialSetup(t *testing.T) {
	requireRoot(t)
	m := newManager(t)
	pod := podWith("u-partial",
		v1.Volume{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}},
		v1.Volume{Name: "missing", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "absent"}}},
	)
	if _, err := m.Setup(t.Context(), pod, sources(), podspec.Downward{}); err == nil {
		t.Fatal("setup with a missing secret succeeded")
	}
	// Also a mount stacked twice on one point and a half-made secret
	// volume: a tmpfs with no files yet.
	mem := m.VolumeDir("u-partial", PluginEmptyDir, "mem")
	if err := unix.Mount("tmpfs", mem, "tmpfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	half := m.VolumeDir("u-partial", PluginSecret, "half")
	if err := os.MkdirAll(half, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", half, "tmpfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	if err := m.Teardown("u-partial"); err != nil {
		t.Fatal(err)
	}
	assertNoMountsUnder(t, m.Root)
	if _, err := os.Lstat(m.PodDir("u-partial")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pod dir still there: %v", err)
	}
}

func TestTeardownOrphans(t *testing.T) {
	m := newManager(t)
	for _, uid := range []string{"keep-me", "drop-me"} {
		setup(t, m, podWith(uid, v1.Volume{Name: "d", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}), podspec.Sources{})
	}
	if err := m.TeardownOrphans(map[string]bool{"keep-me": true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(m.PodDir("keep-me")); err != nil {
		t.Errorf("kept pod removed: %v", err)
	}
	if _, err := os.Stat(m.PodDir("drop-me")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("orphan kept: %v", err)
	}
	empty := &Manager{Root: filepath.Join(t.TempDir(), "never-used")}
	if err := empty.TeardownOrphans(nil); err != nil {
		t.Errorf("no pods dir: %v", err)
	}
}

func TestRefusesUnsafeUIDs(t *testing.T) {
	m := newManager(t)
	for _, uid := range []string{"", ".", "..", "a/b"} {
		if err := m.Teardown(uid); err == nil {
			t.Errorf("Teardown(%q) accepted", uid)
		}
		if _, err := m.Setup(t.Context(), podWith(uid), podspec.Sources{}, podspec.Downward{}); err == nil {
			t.Errorf("Setup with uid %q accepted", uid)
		}
	}
}

func TestUnescapeMountPath(t *testing.T) {
	cases := map[string]string{
		`/plain`:             "/plain",
		`/with\040space`:     "/with space",
		`/tab\011and\012nl`:  "/tab\tand\nnl",
		`/back\134slash`:     `/back\slash`,
		`/trailing\04`:       `/trailing\04`,
		`/not\999octal\040x`: `/not\999octal x`,
	}
	for in, want := range cases {
		if got := unescapeMountPath(in); got != want {
			t.Errorf("%q -> %q, want %q", in, got, want)
		}
	}
}
