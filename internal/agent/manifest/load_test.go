package manifest

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "web.yaml", webManifests)
	b, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := onlyPod(t, b); got.Name != "web" || b.Pods[0].Source != path {
		t.Errorf("pod %s from %s, want web from %s", got.Name, b.Pods[0].Source, path)
	}
}

func TestLoadStdin(t *testing.T) {
	b, err := Load("-", strings.NewReader(podYAML("from-stdin", "busybox")))
	if err != nil {
		t.Fatal(err)
	}
	if b.Pods[0].Source != "-" || b.Pods[0].Name != "from-stdin" {
		t.Errorf("pod %s from %q, want from-stdin from -", b.Pods[0].Name, b.Pods[0].Source)
	}
}

func TestLoadDirectory(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "b.yml", podYAML("second", "busybox"))
	writeFile(t, dir, "a.yaml", podYAML("first", "busybox"))
	writeFile(t, dir, "c.json", `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "third"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}`)
	writeFile(t, dir, ".hidden.yaml", podYAML("hidden", "busybox"))
	writeFile(t, dir, "a.yaml~", podYAML("backup", "busybox"))
	writeFile(t, dir, "notes.txt", "not a manifest")
	if err := os.Mkdir(filepath.Join(dir, "nested"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "nested"), "deep.yaml", podYAML("deep", "busybox"))
	if err := os.Symlink(filepath.Join(dir, "nested", "deep.yaml"), filepath.Join(dir, "d.yaml")); err != nil {
		t.Fatal(err)
	}

	b, err := Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range b.Pods {
		names = append(names, p.Name)
	}
	if got, want := strings.Join(names, ","), "first,second,third,deep"; got != want {
		t.Errorf("pods = %s, want %s (sorted files, no dotfiles, backups, other extensions or subdirectories; symlinks followed)", got, want)
	}
	if src := b.Pod("default", "second").Source; src != filepath.Join(dir, "b.yml") {
		t.Errorf("source = %s, want %s", src, filepath.Join(dir, "b.yml"))
	}
}

func TestLoadDirectoryReportsEveryFile(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", podYAML("web", "busybox")+"    bogus: true\n")
	writeFile(t, dir, "b.yaml", podYAML("dup", "busybox"))
	writeFile(t, dir, "c.yaml", podYAML("dup", "busybox"))
	_, err := Load(dir, nil)
	if err == nil {
		t.Fatal("Load succeeded")
	}
	for _, want := range []string{
		filepath.Join(dir, "a.yaml") + `: Pod default/web: unknown field "spec.containers[0].bogus"`,
		filepath.Join(dir, "c.yaml") + ": Pod default/dup: also defined in " + filepath.Join(dir, "b.yaml"),
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error\n%v\ndoes not contain %q", err, want)
		}
	}
}

func TestLoadEmptyDirectoryAndMissingPath(t *testing.T) {
	b, err := Load(t.TempDir(), nil)
	if err != nil || len(b.Pods) != 0 {
		t.Errorf("empty directory: %v, %d pods", err, len(b.Pods))
	}
	if _, err := Load(filepath.Join(t.TempDir(), "absent.yaml"), nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want a not-exist error", err)
	}
}
