package volume

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/podspec"
)

func versionDirs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") && e.Name() != dataLink {
			out = append(out, e.Name())
		}
	}
	return out
}

func cmSources(data map[string]string) podspec.Sources {
	return podspec.Sources{ConfigMaps: []v1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: data}}}
}

func TestAtomicUpdate(t *testing.T) {
	m := newManager(t)
	pod := podWith("u-update", v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
		LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}})
	dir := setup(t, m, pod, cmSources(map[string]string{"a": "1", "b": "2"}))["cfg"]
	first := versionDirs(t, dir)
	if len(first) != 1 {
		t.Fatalf("versions %v", first)
	}

	setup(t, m, pod, cmSources(map[string]string{"a": "1", "b": "2"}))
	if got := versionDirs(t, dir); !slices.Equal(got, first) {
		t.Errorf("unchanged data wrote a new version: %v -> %v", first, got)
	}

	setup(t, m, pod, cmSources(map[string]string{"a": "one", "c": "3"}))
	second := versionDirs(t, dir)
	if len(second) != 1 || second[0] == first[0] {
		t.Errorf("after a change: versions %v (before %v), want one new", second, first)
	}
	if readFile(t, filepath.Join(dir, "a")) != "one" || readFile(t, filepath.Join(dir, "c")) != "3" {
		t.Error("new content not visible")
	}
	if _, err := os.Lstat(filepath.Join(dir, "b")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("link to a removed key still there: %v", err)
	}
	if got := visibleNames(t, dir); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("names %v", got)
	}
}

func TestAtomicUpdateRepairs(t *testing.T) {
	dir := t.TempDir()
	files := payload{"k": {data: []byte("v"), mode: 0o644}}
	if _, err := writeAtomic(dir, files, nil); err != nil {
		t.Fatal(err)
	}
	// A lost link, a leftover temporary link and a stale version get fixed
	// without rewriting the content.
	if err := os.Remove(filepath.Join(dir, "k")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nowhere", filepath.Join(dir, dataLinkTmp)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "..2001_01_01_00_00_00.1"), 0o755); err != nil {
		t.Fatal(err)
	}
	written, err := writeAtomic(dir, files, nil)
	if err != nil || written {
		t.Fatalf("written %v err %v, want a repair only", written, err)
	}
	if readFile(t, filepath.Join(dir, "k")) != "v" {
		t.Error("link not restored")
	}
	if got := versionDirs(t, dir); len(got) != 1 {
		t.Errorf("leftovers not removed: %v", got)
	}
	// A file edited behind the agent's back is rewritten.
	version, _ := currentVersion(dir)
	if err := os.WriteFile(filepath.Join(dir, version, "k"), []byte("tampered"), 0o644); err != nil {
		t.Fatal(err)
	}
	if written, err := writeAtomic(dir, files, nil); err != nil || !written || readFile(t, filepath.Join(dir, "k")) != "v" {
		t.Errorf("tampered content: written %v err %v", written, err)
	}
}

// TestAtomicUpdateReadersSeeWholeVersions reads a large file in a loop while
// it is replaced: every successful read must be one whole version.
func TestAtomicUpdateReadersSeeWholeVersions(t *testing.T) {
	dir := t.TempDir()
	const size = 256 << 10
	version := func(i int) payload {
		return payload{"big": {data: bytes.Repeat([]byte{byte('a' + i%26)}, size), mode: 0o644}}
	}
	if _, err := writeAtomic(dir, version(0), nil); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var reads, torn atomic.Int64
	var wg sync.WaitGroup
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				data, err := os.ReadFile(filepath.Join(dir, "big"))
				if err != nil {
					continue // the path moved under the reader: it retries, as any reader must
				}
				reads.Add(1)
				if len(data) != size || bytes.Count(data, data[:1]) != size {
					torn.Add(1)
				}
			}
		}()
	}
	for i := 1; i <= 100; i++ {
		if _, err := writeAtomic(dir, version(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if torn.Load() != 0 {
		t.Errorf("%d of %d reads saw a mix of versions", torn.Load(), reads.Load())
	}
	if reads.Load() == 0 {
		t.Error("readers never read")
	}
	if got := versionDirs(t, dir); len(got) != 1 {
		t.Errorf("old versions left: %v", got)
	}
}

func TestValidatePayload(t *testing.T) {
	for _, bad := range []string{"", "/abs", "../up", "..hidden", "a/../b", "a//b", "./a", "a/."} {
		if err := validatePayload(payload{bad: {}}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := validatePayload(payload{"a": {}, "a/b": {}}); err == nil {
		t.Error("a path that is both a file and a directory accepted")
	}
	if err := validatePayload(payload{"a/b": {}, "a/c": {}, "d..e": {}}); err != nil {
		t.Errorf("valid payload refused: %v", err)
	}
}

func TestKeepsLastVersionWhenSourceGoes(t *testing.T) {
	m := newManager(t)
	pod := podWith("u-gone", v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
		LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}})
	dir := setup(t, m, pod, cmSources(map[string]string{"a": "1"}))["cfg"]
	paths, err := m.Setup(t.Context(), pod, podspec.Sources{}, podspec.Downward{})
	if err == nil || !strings.Contains(err.Error(), `configMap "cfg" not found`) {
		t.Errorf("error %v should report the missing configMap", err)
	}
	if paths["cfg"] != dir || readFile(t, filepath.Join(dir, "a")) != "1" {
		t.Errorf("paths %v: the last content must stay usable", paths)
	}
}
