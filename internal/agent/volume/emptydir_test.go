package volume

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/podspec"
)

func TestEmptyDirOnDisk(t *testing.T) {
	m := newManager(t)
	pod := podWith("u-disk", v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
	paths := setup(t, m, pod, podspec.Sources{})
	dir := paths["scratch"]
	if want := filepath.Join(m.Root, "pods", "u-disk", "volumes", PluginEmptyDir, "scratch"); dir != want {
		t.Fatalf("path %s, want %s", dir, want)
	}
	if got := modeOf(t, dir); got != 0o777 {
		t.Errorf("mode %v, want 0777", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "kept"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	setup(t, m, pod, podspec.Sources{}) // a later sync keeps the content
	if readFile(t, filepath.Join(dir, "kept")) != "x" {
		t.Error("second Setup lost the emptyDir's content")
	}
}

func TestEmptyDirMemory(t *testing.T) {
	requireRoot(t)
	m := newManager(t)
	size := mustQuantity("8Mi")
	pod := podWith("u-mem",
		v1.Volume{Name: "sized", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: &size}}},
		v1.Volume{Name: "unsized", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}},
	)
	paths := setup(t, m, pod, podspec.Sources{})
	setup(t, m, pod, podspec.Sources{}) // idempotent: no second mount
	for _, name := range []string{"sized", "unsized"} {
		if !isTmpfs(t, paths[name]) {
			t.Errorf("%s: not on tmpfs", name)
		}
		if got := modeOf(t, paths[name]); got != 0o777 {
			t.Errorf("%s: mode %v, want 0777", name, got)
		}
		var fs unix.Statfs_t
		if err := unix.Statfs(paths[name], &fs); err != nil {
			t.Fatal(err)
		}
		if fs.Flags&unix.ST_NOSUID == 0 || fs.Flags&unix.ST_NODEV == 0 {
			t.Errorf("%s: tmpfs mount flags %#x, want nosuid and nodev", name, fs.Flags)
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(paths["sized"], &st); err != nil {
		t.Fatal(err)
	}
	if got := int64(st.Blocks) * st.Bsize; got != 8<<20 {
		t.Errorf("tmpfs size %d, want %d", got, 8<<20)
	}
	under, err := mountsUnder(m.PodDir("u-mem"))
	if err != nil {
		t.Fatal(err)
	}
	if len(under) != 2 {
		t.Errorf("mounts after two Setups: %v, want exactly 2", under)
	}
}

// A memory emptyDir an older agent mounted without nosuid and nodev gets
// them at the next setup.
func TestEmptyDirMemoryMountedBeforeIsHardened(t *testing.T) {
	requireRoot(t)
	m := newManager(t)
	pod := podWith("u-old",
		v1.Volume{Name: "old", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}})
	paths := setup(t, m, pod, podspec.Sources{})
	if err := unix.Mount("", paths["old"], "", unix.MS_REMOUNT|unix.MS_BIND, ""); err != nil { // as an older agent left it
		t.Fatal(err)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(paths["old"], &fs); err != nil || fs.Flags&(unix.ST_NOSUID|unix.ST_NODEV) != 0 {
		t.Fatalf("the test's remount: flags %#x, %v", fs.Flags, err)
	}
	setup(t, m, pod, podspec.Sources{})
	if err := unix.Statfs(paths["old"], &fs); err != nil {
		t.Fatal(err)
	}
	if fs.Flags&unix.ST_NOSUID == 0 || fs.Flags&unix.ST_NODEV == 0 {
		t.Errorf("tmpfs mount flags %#x after setup, want nosuid and nodev", fs.Flags)
	}
}

func TestEmptyDirFSGroup(t *testing.T) {
	requireRoot(t)
	m := newManager(t)
	pod := podWith("u-fsgroup", v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
	pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr(int64(4321))}
	dir := setup(t, m, pod, podspec.Sources{})["scratch"]
	info, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if gid := info.Sys().(*syscall.Stat_t).Gid; gid != 4321 {
		t.Errorf("group %d, want 4321", gid)
	}
	if got := modeOf(t, dir); got != 0o777|os.ModeSetgid {
		t.Errorf("mode %v, want setgid 0777", got)
	}
}

func TestUnsupportedVolumes(t *testing.T) {
	m := newManager(t)
	pod := podWith("u-unsupported",
		v1.Volume{Name: "claim", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}},
		v1.Volume{Name: "huge", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumHugePages}}},
		v1.Volume{Name: "fine", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
	)
	paths, err := m.Setup(t.Context(), pod, podspec.Sources{}, podspec.Downward{})
	if err == nil || !strings.Contains(err.Error(), `volume "claim"`) || !strings.Contains(err.Error(), `volume "huge"`) {
		t.Errorf("error %v should name both unsupported volumes", err)
	}
	if _, ok := paths["fine"]; !ok || len(paths) != 1 {
		t.Errorf("paths %v: the good volume must still be set up", paths)
	}
}

func ptr[T any](v T) *T { return &v }
