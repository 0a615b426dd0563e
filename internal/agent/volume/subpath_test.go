package volume

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/podspec"
)

// subPathFixture builds a volume with symlinks that stay in and that lead
// out, and a sibling directory outside it.
func subPathFixture(t *testing.T) (vol, outside string) {
	t.Helper()
	root := t.TempDir()
	vol = filepath.Join(root, "vol")
	outside = filepath.Join(root, "outside")
	for _, d := range []string{filepath.Join(vol, "data", "deep"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(vol, 0o770); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"inside-rel":   "data/deep",
		"inside-abs":   filepath.Join(vol, "data"),
		"up-and-back":  "../vol/data",
		"escape-rel":   "../outside",
		"escape-abs":   "/etc",
		"data/sneaky":  "../../outside",
		"chain":        "inside-rel/../../escape-rel",
		"loop-a":       "loop-b",
		"loop-b":       "loop-a",
		"to-file-link": "data/deep/f",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(vol, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(vol, "data", "deep", "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return vol, outside
}

// sameFile reports whether the open file and path are the same inode.
func sameFile(t *testing.T, f *os.File, path string) bool {
	t.Helper()
	var a, b unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &a); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(path, &b); err != nil {
		t.Fatal(err)
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}

func TestOpenSubPath(t *testing.T) {
	vol, outside := subPathFixture(t)
	ok := map[string]string{
		"data":                 filepath.Join(vol, "data"),
		"data/deep/f":          filepath.Join(vol, "data", "deep", "f"),
		"inside-rel":           filepath.Join(vol, "data", "deep"),
		"inside-abs/deep":      filepath.Join(vol, "data", "deep"),
		"up-and-back":          filepath.Join(vol, "data"),
		"to-file-link":         filepath.Join(vol, "data", "deep", "f"),
		"./data//deep":         filepath.Join(vol, "data", "deep"),
		"new/dirs":             filepath.Join(vol, "new", "dirs"),
		"inside-rel/new-child": filepath.Join(vol, "data", "deep", "new-child"),
	}
	for sub, want := range ok {
		f, got, err := openSubPath(vol, sub)
		if err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", sub, got, err, want)
			continue
		}
		if !sameFile(t, f, want) {
			t.Errorf("%s: the descriptor is not %s", sub, want)
		}
		f.Close()
	}
	for _, dir := range []string{"new", "new/dirs", "data/deep/new-child"} {
		if got := modeOf(t, filepath.Join(vol, dir)); got != 0o770 {
			t.Errorf("created subPath dir %s: mode %v, want the volume's 0770", dir, got)
		}
	}
	bad := map[string]string{
		"escape-rel":        "outside the volume",
		"escape-abs":        "outside the volume",
		"escape-abs/passwd": "outside the volume",
		"data/sneaky":       "outside the volume",
		"chain":             "outside the volume",
		"escape-rel/new":    "outside the volume",
		"loop-a":            "too many levels",
		"../vol/data":       "must not contain '..'",
		"/etc":              "non-empty relative",
		"":                  "non-empty relative",
		"data/deep/f/under": "not a directory",
	}
	for sub, want := range bad {
		f, got, err := openSubPath(vol, sub)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), strconv.Quote(sub)) {
			t.Errorf("%s: %q %v, want error %q naming the subPath", sub, got, err, want)
		}
		if f != nil {
			f.Close()
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("something was created outside the volume: %v", entries)
	}
}

// TestOpenSubPathRefusesSymlinkPlantedAfterResolving is the race's outcome
// made deterministic: the plan resolveSubPath made by name no longer
// matches the volume, and the walk on descriptors fails instead of
// following the symlink now in its way: to an existing target, and to
// directories still to be made.
func TestOpenSubPathRefusesSymlinkPlantedAfterResolving(t *testing.T) {
	vol, outside := subPathFixture(t)
	if err := os.MkdirAll(filepath.Join(vol, "swap", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"swap/sub", "swap/new", "fresh/new"} {
		target, err := resolveSubPath(vol, sub)
		if err != nil {
			t.Fatal(err)
		}
		first := strings.Split(sub, "/")[0]
		if err := os.RemoveAll(filepath.Join(vol, first)); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(vol, first)); err != nil {
			t.Fatal(err)
		}
		f, _, err := openTarget(target, sub)
		if err == nil {
			f.Close()
			t.Errorf("%s: opened through the symlink planted after resolving", sub)
		} else if !strings.Contains(err.Error(), "a symlink appeared") {
			t.Errorf("%s: error %v, want it to say a symlink appeared", sub, err)
		}
		if err := os.Remove(filepath.Join(vol, first)); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(vol, "swap", "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("something was created outside the volume: %v", entries)
	}
}

func TestOpenSubPathIntoConfigMapKey(t *testing.T) {
	m := newManager(t)
	pod := podWith("u-subpath", v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
		LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}})
	srcs := podspec.Sources{ConfigMaps: []v1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"k": "v"}}}}
	dir := setup(t, m, pod, srcs)["cfg"]
	f, got, err := openSubPath(dir, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	version, _ := currentVersion(dir)
	if want := filepath.Join(dir, version, "k"); got != want || !sameFile(t, f, want) {
		t.Errorf("opened %s, want the file in the current version %s", got, version)
	}
}
