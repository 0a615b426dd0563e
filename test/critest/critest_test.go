package critest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/test/harness"
	"github.com/berth-dev/berth/test/registry"
)

// TestCritest runs critest against a berth serve of its own, with the
// critest images served from a local registry under their original names.
func TestCritest(t *testing.T) {
	critest := os.Getenv("BERTH_CRITEST")
	if critest == "" {
		t.Skip("BERTH_CRITEST is not set (`make critest` builds critest and sets it)")
	}
	d := setUp(t)
	args := append(d.endpointArgs(), "-ginkgo.skip", skipRegexp(readSkipList(t)))
	if focus := os.Getenv("BERTH_CRITEST_FOCUS"); focus != "" {
		args = append(args, "-ginkgo.focus", focus)
	}
	if os.Getenv("BERTH_CRITEST_VERBOSE") == "1" {
		args = append(args, "-ginkgo.v")
	}
	runErr := runCritest(t, critest, args)
	d.stop(t)
	if runErr != nil {
		t.Errorf("critest: %v (berth serve's log: %s)\n%s", runErr, d.logPath, d.logTail(80))
	}
	d.assertClean(t)
}

// setUp builds the programs, starts a registry holding the critest images
// and a berth serve whose hosts.toml points there.
func setUp(t *testing.T) *daemon {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root")
	}
	if reason := registry.SkipReason(); reason != "" {
		t.Skip(reason)
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	progs := buildPrograms(t, bin)
	reg, err := registry.Start(mkdir(t, tmp, "registry"), registry.Options{})
	if err != nil {
		t.Fatalf("registry: %v", err)
	}
	t.Cleanup(func() { _ = reg.Stop() })
	pushImages(t, reg, progs)
	d := newDaemon(t, tmp, bin, writeHosts(t, tmp, reg.Host))
	d.start(t)
	return d
}

func (d *daemon) endpointArgs() []string {
	return []string{
		"-runtime-endpoint", "unix://" + d.socket, "-image-endpoint", "unix://" + d.socket,
		"-ginkgo.no-color", "-ginkgo.timeout", "40m", "-ginkgo.poll-progress-after", "2m",
	}
}

// runCritest runs critest with args, its output going to the test's.
func runCritest(t *testing.T, critest string, args []string) error {
	cmd := exec.Command(critest, args...)
	cmd.Dir = t.TempDir() // critest looks for crictl.yaml in its working directory; none there
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	t.Logf("critest %s", strings.Join(args, " "))
	return cmd.Run()
}

// buildPrograms builds berth's binaries and the image programs into dir;
// where BERTH_CRITEST_PROGRAMS names a directory holding them all built
// already (make test-vm: no Go toolchain in the VM), dir becomes a copy.
func buildPrograms(t *testing.T, dir string) Programs {
	t.Helper()
	if prebuilt := os.Getenv("BERTH_CRITEST_PROGRAMS"); prebuilt != "" {
		return copyPrograms(t, prebuilt, dir)
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	builds := [][]string{
		{"build", "-o", dir + "/", "./cmd/berth", "./cmd/berth-pause"},
		{"build", "-o", filepath.Join(dir, "fakenginx"), "./test/critest/cmd/fakenginx"},
		{"build", "-o", filepath.Join(dir, "nonewprivs"), "./test/critest/cmd/nonewprivs"},
	}
	for _, args := range builds {
		cmd := exec.Command(goBinary(), args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %v: %v\n%s", args, err, out)
		}
	}
	if err := harness.BuildMonitor(repo, filepath.Join(dir, "berth-monitor")); err != nil {
		t.Fatal(err)
	}
	if err := harness.CopyPinnedRunc(dir); err != nil {
		t.Fatal(err)
	}
	return Programs{FakeNginx: filepath.Join(dir, "fakenginx"), NoNewPrivs: filepath.Join(dir, "nonewprivs")}
}

// copyPrograms copies the prebuilt programs of from into dir (berth-runc
// where it is there).
func copyPrograms(t *testing.T, from, dir string) Programs {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"berth", "berth-monitor", "berth-pause", "fakenginx", "nonewprivs", "berth-runc"} {
		data, err := os.ReadFile(filepath.Join(from, name))
		if errors.Is(err, fs.ErrNotExist) && name == "berth-runc" {
			continue // berth runs the system's runc
		}
		if err != nil {
			t.Fatalf("BERTH_CRITEST_PROGRAMS: %v", err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return Programs{FakeNginx: filepath.Join(dir, "fakenginx"), NoNewPrivs: filepath.Join(dir, "nonewprivs")}
}

func goBinary() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "/usr/local/go/bin/go"
}

// pushImages builds every image and pushes it under the local registry's
// names for it.
func pushImages(t *testing.T, reg *registry.Registry, progs Programs) {
	t.Helper()
	base, err := BaseLayer()
	if err != nil {
		t.Fatalf("base layer: %v", err)
	}
	for _, im := range Images() {
		img, err := im.Build(base, progs)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range im.Names {
			if _, err := reg.Push(localName(name), img); err != nil {
				t.Fatalf("push %s: %v", name, err)
			}
		}
	}
}

// localName is where the local registry keeps an upstream image: the same
// repository path for registry.k8s.io, the rewritten one for gcr.io.
func localName(ref string) string {
	if rest, ok := strings.CutPrefix(ref, criToolsRepo); ok {
		return RewrittenCRITools + rest
	}
	_, path, _ := strings.Cut(ref, "/")
	return path
}

// writeHosts writes berth's hosts.toml files: registry.k8s.io and
// k8s.gcr.io are served by the local registry as they are, gcr.io through a
// rewrite of its repositories.
func writeHosts(t *testing.T, tmp, host string) string {
	t.Helper()
	dir := mkdir(t, tmp, "hosts")
	files := map[string]string{
		"registry.k8s.io": fmt.Sprintf("server = %q\n", "http://"+host),
		"k8s.gcr.io":      fmt.Sprintf("server = %q\n", "http://"+host),
		"gcr.io": fmt.Sprintf("server = %q\n\n[rewrite]\n  %q = %q\n", "http://"+host,
			"^k8s-staging-cri-tools/(.*)$", RewrittenCRITools+"$1"),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(mkdir(t, dir, name), "hosts.toml"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// skipEntry is one spec critest cannot pass offline, and why.
type skipEntry struct{ spec, reason string }

// readSkipList reads skip.txt: "spec text | reason" per line, # comments.
func readSkipList(t *testing.T) []skipEntry {
	t.Helper()
	f, err := os.Open("skip.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []skipEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		spec, reason, ok := strings.Cut(line, "|")
		if !ok || strings.TrimSpace(reason) == "" {
			t.Fatalf("skip.txt: %q has no reason (spec | reason)", line)
		}
		out = append(out, skipEntry{strings.TrimSpace(spec), strings.TrimSpace(reason)})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// skipRegexp matches exactly the listed spec texts.
func skipRegexp(skips []skipEntry) string {
	if len(skips) == 0 {
		return "^$"
	}
	quoted := make([]string, len(skips))
	for i, s := range skips {
		quoted[i] = regexp.QuoteMeta(s.spec)
	}
	return strings.Join(quoted, "|")
}

func mkdir(t *testing.T, parent, name string) string {
	t.Helper()
	dir := filepath.Join(parent, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// waitFor polls cond every 50 ms until it holds or the timeout passes.
func waitFor(timeout time.Duration, cond func() bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return true
}
