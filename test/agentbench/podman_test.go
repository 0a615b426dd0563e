package agentbench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/test/testimage"
)

// podmanPlay times `podman kube play` of yaml (after loading the same
// busybox image into podman's storage) and returns a report row, or ""
// when podman is not installed. podman returns once the containers are
// started, so its time is comparable to berth's wall time to Running.
func podmanPlay(t *testing.T, yaml string, runs int) string {
	podman, err := exec.LookPath("podman")
	if err != nil {
		return ""
	}
	dir := t.TempDir()
	archive := filepath.Join(dir, "busybox.tar")
	if err := testimage.WriteDockerArchive(archive, testimage.Options{Name: "docker.io/library/busybox:latest"}); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(podman, "load", "-i", archive).CombinedOutput(); err != nil {
		return fmt.Sprintf("\n`podman load` failed: %v: %s\n", err, out)
	}
	path := filepath.Join(dir, "pod.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	// podman raises RLIMIT_NOFILE and RLIMIT_NPROC above the hard limits,
	// which fails without CAP_SYS_RESOURCE: keep the host's nofile and a
	// modest nproc (at the host's value its pause container still fails).
	var nofile unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "containers.conf")
	limits := fmt.Sprintf("[containers]\ndefault_ulimits = [\"nofile=%d:%d\", \"nproc=4096:4096\"]\n", nofile.Cur, nofile.Max)
	if err := os.WriteFile(conf, []byte(limits), 0o644); err != nil {
		t.Fatal(err)
	}
	var times []time.Duration
	for i := 0; i <= runs; i++ {
		start := time.Now()
		play := exec.Command(podman, "--runtime", "runc", "kube", "play", "--replace", path)
		play.Env = append(os.Environ(), "CONTAINERS_CONF="+conf)
		out, err := play.CombinedOutput()
		took := time.Since(start)
		down := exec.Command(podman, "kube", "down", path)
		down.Env = play.Env
		_ = down.Run() // cleanup
		if err != nil {
			return fmt.Sprintf("\n`podman kube play` failed: %v: %s\n", err, lastLine(out))
		}
		if i > 0 {
			times = append(times, took)
		}
	}
	slices.Sort(times)
	return fmt.Sprintf("| `podman --runtime runc kube play` of the 4-container pod (returns when started) | %d | %s | | |\n",
		len(times), ms(times[len(times)/2]))
}

// lastLine is the last non-empty line of a command's output.
func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}
