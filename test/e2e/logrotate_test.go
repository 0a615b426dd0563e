package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/logrotate"
)

// rotationMaxSize and rotationMaxFiles are the agent's rotation settings
// in TestLogRotation; it checks every second.
const (
	rotationMaxSize  = 256 << 10
	rotationMaxFiles = 4
)

// chatty writes numbered lines at full speed for 8 seconds, then "last
// N" (lines 0 to N-1 were written), then sleeps.
const chattyPod = `
apiVersion: v1
kind: Pod
metadata: {name: chatty}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: chatty
    image: busybox
    imagePullPolicy: IfNotPresent
    command:
    - sh
    - -c
    - |
      i=0; end=$(( $(date +%s) + 8 ))
      while :; do
        j=0
        while [ $j -lt 1000 ]; do
          echo "line $i ............................................................"
          i=$((i+1)); j=$((j+1))
        done
        [ $(date +%s) -ge $end ] && break
      done
      echo "last $i"
      exec sleep 3600
`

// The agent rotates a log written at full speed (rename, CRI
// ReopenContainerLog, older files gzipped, at most max-files kept):
// what it keeps holds every line once, in order, up to the last one, and
// `berth logs` (read at the end, and followed from the start) shows the
// same.
func TestLogRotation(t *testing.T) {
	onEachRuntimeWith(t, []string{
		fmt.Sprintf("--container-log-max-size=%d", rotationMaxSize),
		fmt.Sprintf("--container-log-max-files=%d", rotationMaxFiles),
		"--container-log-monitor-interval=1s",
	}, logRotation)
}

func logRotation(t *testing.T, n *node) {
	n.apply("chatty.yaml", chattyPod)
	pod := n.waitPod("chatty", "chatty runs", running("chatty"))
	follow, followed := n.followLogs("chatty")
	path := n.logPath(pod, "chatty")
	var last int
	deadline := time.Now().Add(2 * time.Minute)
	for {
		// Done once "last N" is written and the log is too small to
		// be rotated again: then the files stay as they are.
		if st, err := os.Stat(path); err == nil && st.Size() < rotationMaxSize {
			if nums, l, err := readRetained(path); err == nil && l >= 0 && len(nums) > 0 {
				last = l
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("chatty did not finish writing within 2 minutes\n%s", n.rt.logTail(40))
		}
		time.Sleep(200 * time.Millisecond)
	}
	nums, _, err := readRetained(path)
	if err != nil {
		t.Fatal(err)
	}
	first := nums[0]
	checkContiguous(t, "the retained files", nums, first, last-1)
	rotated, err := logrotate.RotatedFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lines %d to %d of %d kept in %s + %v", first, last-1, last, path, rotated)
	if len(rotated) != rotationMaxFiles-1 || first == 0 {
		t.Errorf("%d rotated files, first line kept %d; want %d files and the oldest lines gone", len(rotated), first, rotationMaxFiles-1)
	}
	for i, f := range rotated {
		if gz := strings.HasSuffix(f, ".gz"); gz != (i < len(rotated)-1) {
			t.Errorf("rotated file %s: want the older ones gzipped, the newest plain", f)
		}
	}
	out := n.must("logs", "chatty")
	checkContiguous(t, "berth logs", parseLines(t, out), first, last-1)

	lastLine := fmt.Sprintf("last %d\n", last)
	for !strings.Contains(followed.String(), lastLine) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	_ = follow.Process.Kill()
	_ = follow.Wait()
	fl := parseLines(t, followed.String())
	if len(fl) == 0 {
		t.Fatalf("berth logs -f printed no line")
	}
	checkContiguous(t, "berth logs -f", fl, fl[0], last-1)
}

// followLogs starts `berth logs -f`; the test kills it.
func (n *node) followLogs(pod string) (*exec.Cmd, *lockedBuffer) {
	n.t.Helper()
	cmd := n.berthCmd("logs", "-f", pod)
	out := &lockedBuffer{}
	cmd.Stdout = out
	if err := cmd.Start(); err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, out
}

// lockedBuffer is a bytes.Buffer a command writes while the test reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// logPath is the log file of the container's current instance.
func (n *node) logPath(pod v1.Pod, container string) string {
	n.t.Helper()
	detail, err := n.client.DescribePod(context.Background(), pod.Namespace, pod.Name)
	if err != nil {
		n.t.Fatal(err)
	}
	_, id, _ := strings.Cut(containerStatus(detail.Pod, container).ContainerID, "://")
	path := detail.LogPaths[id]
	if path == "" {
		n.t.Fatalf("no log path for %s/%s (%s): %v", pod.Name, container, id, detail.LogPaths)
	}
	return path
}

// readRetained reads the line numbers of the rotated files and the
// current log, in order, and the N of "last N" (-1 when not there yet).
func readRetained(path string) ([]int, int, error) {
	files, err := logrotate.RotatedFiles(path)
	if err != nil {
		return nil, -1, err
	}
	var nums []int
	last := -1
	for _, file := range append(files, path) {
		r, err := logrotate.OpenRotated(file)
		if err != nil {
			return nil, -1, err
		}
		data, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			return nil, -1, err
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			// <time> <stream> <P|F> <content>
			fields := strings.SplitN(sc.Text(), " ", 4)
			if len(fields) < 4 {
				return nil, -1, fmt.Errorf("%s: %q", file, sc.Text())
			}
			n, l, err := parseLine(fields[3])
			if err != nil {
				return nil, -1, fmt.Errorf("%s: %w", file, err)
			}
			if l >= 0 {
				last = l
			} else {
				nums = append(nums, n)
			}
		}
	}
	return nums, last, nil
}

// parseLine reads "line N ..." (n) or "last N" (last); the other is -1.
func parseLine(s string) (n, last int, err error) {
	fields := strings.Fields(s)
	if len(fields) >= 2 {
		v, err := strconv.Atoi(fields[1])
		if err == nil && fields[0] == "line" {
			return v, -1, nil
		}
		if err == nil && fields[0] == "last" {
			return -1, v, nil
		}
	}
	return -1, -1, fmt.Errorf("not a line of chatty: %q", s)
}

// parseLines reads `berth logs` output: the numbered lines, "last N" left
// out.
func parseLines(t *testing.T, out string) []int {
	t.Helper()
	var nums []int
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		n, _, err := parseLine(line)
		if err != nil {
			t.Fatalf("berth logs: %v", err)
		}
		if n >= 0 {
			nums = append(nums, n)
		}
	}
	return nums
}

// checkContiguous fails unless nums are first, first+1, ..., last.
func checkContiguous(t *testing.T, what string, nums []int, first, last int) {
	t.Helper()
	if len(nums) == 0 {
		t.Errorf("%s: no line; want %d to %d", what, first, last)
		return
	}
	for i, n := range nums {
		if n != first+i {
			t.Errorf("%s: line %d at position %d, after %d; want %d (lines %d to %d, once each)", what, n, i, nums[max(i-1, 0)], first+i, first, last)
			return
		}
	}
	if got := nums[len(nums)-1]; got != last {
		t.Errorf("%s: ends at line %d; want %d", what, got, last)
	}
}
