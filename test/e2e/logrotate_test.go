package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
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

// chattyPod writes numbered lines at full speed until /tmp/stop exists
// (TestLogRotation creates it once it has seen enough rotations) or for
// seconds at most, then "last N end" (lines 0 to N-1 were written), then
// sleeps.
func chattyPod(seconds int) string {
	return fmt.Sprintf(`
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
      i=0; end=$(( $(date +%%s) + %d ))
      while [ ! -e /tmp/stop ] && [ $(date +%%s) -lt $end ]; do
        j=0
        while [ $j -lt 1000 ]; do
          echo "line $i %s"
          i=$((i+1)); j=$((j+1))
        done
      done
      echo "last $i end"
      exec sleep 3600
`, seconds, chattyDots)
}

// chattyDots pad chatty's lines.
var chattyDots = strings.Repeat(".", 60)

// The agent rotates a log written at full speed (rename, CRI
// ReopenContainerLog, older files gzipped, at most max-files kept):
// what it keeps holds every line once, in order, up to the last one, and
// `berth logs` (read at the end, and followed from the start) shows the
// same.
func TestLogRotation(t *testing.T) {
	onEachRuntimeWith(t, func(t *testing.T, start func(...string) *node) {
		logRotation(t, start(
			fmt.Sprintf("--container-log-max-size=%d", rotationMaxSize),
			fmt.Sprintf("--container-log-max-files=%d", rotationMaxFiles),
			"--container-log-monitor-interval=1s",
		))
	})
}

func logRotation(t *testing.T, n *node) {
	splitsAllowed := n.rt.name() == "containerd"
	n.apply("chatty.yaml", chattyPod(600))
	pod := n.waitPod("chatty", "chatty runs", running("chatty"))
	followed := n.followLogs("chatty")
	path := n.logPath(pod, "chatty")
	deadline := time.Now().Add(3 * time.Minute)
	n.waitRotations(path, rotationMaxFiles+1, deadline)
	n.must("exec", "chatty", "--", "touch", "/tmp/stop")
	nums, last := n.waitChattyDone(path, splitsAllowed, deadline)
	first := nums[0]
	checkContiguous(t, "the retained files", nums, first, last-1)
	rotated := waitCompressed(t, path, deadline)
	t.Logf("lines %d to %d of %d kept in %s + %v", first, last-1, last, path, rotated)
	if len(rotated) != rotationMaxFiles-1 || first == 0 {
		t.Errorf("%d rotated files, first line kept %d; want %d files and the oldest lines gone", len(rotated), first, rotationMaxFiles-1)
	}
	if !olderCompressed(rotated) {
		t.Errorf("rotated files %v: want the older ones gzipped, the newest plain", rotated)
	}
	out := n.must("logs", "chatty")
	checkContiguous(t, "berth logs", outputLines(t, "berth logs", out, splitsAllowed), first, last-1)

	followed.waitLast(fmt.Sprintf("last %d end\n", last), deadline)
	fl := outputLines(t, "berth logs -f", followed.String(), splitsAllowed)
	if len(fl) == 0 {
		t.Fatalf("berth logs -f printed no line")
	}
	if !checkContiguous(t, "berth logs -f", fl, fl[0], last-1) {
		t.Logf("berth logs -f's stderr:\n%s", followed.Errors())
	}
}

// waitCompressed waits until the agent's compression, which runs apart
// from rotation, has caught up (the older rotated files gzipped, the
// newest plain), or the deadline passes; it returns the rotated files.
func waitCompressed(t *testing.T, path string, deadline time.Time) []string {
	t.Helper()
	for {
		rotated, err := logrotate.RotatedFiles(path)
		if err != nil {
			t.Fatal(err)
		}
		if olderCompressed(rotated) || time.Now().After(deadline) {
			return rotated
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// olderCompressed reports whether the rotated files are gzipped but the
// newest.
func olderCompressed(rotated []string) bool {
	for i, f := range rotated {
		if strings.HasSuffix(f, ".gz") != (i < len(rotated)-1) {
			return false
		}
	}
	return true
}

// waitRotations waits until the log at path has been rotated at least
// want times (distinct rotated names seen; the agent removes the oldest
// beyond its max-files).
func (n *node) waitRotations(path string, want int, deadline time.Time) {
	n.t.Helper()
	seen := map[string]bool{}
	for len(seen) < want {
		files, err := logrotate.RotatedFiles(path)
		if err != nil {
			n.t.Fatal(err)
		}
		for _, f := range files {
			seen[strings.TrimSuffix(f, ".gz")] = true
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("%s\n%d rotations of %s seen in time; want %d", n.rt.logTail(40), len(seen), path, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitChattyDone waits until chatty has written "last N end" and its log
// is too small to be rotated again (the files stay as they are), and
// returns the numbers of the lines kept and N. The size is checked after
// "last" was read (chatty writes nothing more then) and the files read
// again: a read while the agent rotated sees the files half moved, and a
// size checked before chatty's last lines lets one more rotation come.
func (n *node) waitChattyDone(path string, splitsAllowed bool, deadline time.Time) ([]int, int) {
	n.t.Helper()
	var err error
	for {
		var before, after []string
		if before, err = readRetained(path); err == nil {
			nums, last, splits, perr := chattyLines(before, splitsAllowed)
			var st os.FileInfo
			if err = perr; err == nil && last >= 0 && len(nums) > 0 {
				if st, err = os.Stat(path); err == nil && st.Size() < rotationMaxSize {
					if after, err = readRetained(path); err == nil && slices.Equal(before, after) {
						n.t.Logf("%d lines cut in two at a rotation", splits)
						return nums, last
					}
				}
			}
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("%s\nchatty did not finish writing in time (last error: %v)", n.rt.logTail(40), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// outputLines reads chatty's lines in `berth logs` output.
func outputLines(t *testing.T, what, out string, splitsAllowed bool) []int {
	t.Helper()
	nums, _, splits, err := chattyLines(strings.Split(strings.TrimSuffix(out, "\n"), "\n"), splitsAllowed)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	t.Logf("%s: %d lines cut in two at a rotation", what, splits)
	return nums
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

// readRetained reads the contents of the rotated files' and the current
// log's records, in order.
func readRetained(path string) ([]string, error) {
	files, err := logrotate.RotatedFiles(path)
	if err != nil {
		return nil, err
	}
	var contents []string
	for _, file := range append(files, path) {
		r, err := logrotate.OpenRotated(file)
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			// <time> <stream> <P|F> <content>
			fields := strings.SplitN(sc.Text(), " ", 4)
			if len(fields) < 4 {
				return nil, fmt.Errorf("%s: %q", file, sc.Text())
			}
			contents = append(contents, fields[3])
		}
	}
	return contents, nil
}

// chattyLines reads chatty's output: the numbers of its "line N" lines
// in order, and the N of its "last N end" (-1 when not there yet).
//
// containerd may cut a line in two at a rotation: its ReopenContainerLog
// closes the old log's pipe with the part of a line it holds, written as
// a whole record, and the rest goes to the new log. With splitsAllowed, a
// line that is not chatty's but makes one with the next is counted as
// that one (splits says how many); berth's monitor never cuts a line
// (crilog: a record goes whole to one file), so for berth none is allowed.
func chattyLines(contents []string, splitsAllowed bool) (nums []int, last, splits int, err error) {
	last = -1
	for i := 0; i < len(contents); i++ {
		c := contents[i]
		n, l, ok := parseChatty(c)
		if !ok && splitsAllowed && i+1 < len(contents) {
			if n, l, ok = parseChatty(c + contents[i+1]); ok {
				i++
				splits++
			}
		}
		switch {
		case !ok && splitsAllowed && (c == "" || i == 0):
			// the empty rest of a line cut just before its newline, or
			// the rest of one whose start went with a removed file
		case !ok:
			return nil, -1, splits, fmt.Errorf("not a line of chatty: %q", c)
		case l >= 0:
			last = l
		default:
			nums = append(nums, n)
		}
	}
	return nums, last, splits, nil
}

// parseChatty reads "line N <dots>" (n) or "last N end" (last), exactly.
func parseChatty(s string) (n, last int, ok bool) {
	if _, err := fmt.Sscanf(s, "last %d end", &last); err == nil && s == fmt.Sprintf("last %d end", last) {
		return -1, last, true
	}
	if _, err := fmt.Sscanf(s, "line %d", &n); err == nil && s == fmt.Sprintf("line %d %s", n, chattyDots) {
		return n, -1, true
	}
	return -1, -1, false
}

// checkContiguous fails unless nums are first, first+1, ..., last, and
// reports whether they are.
func checkContiguous(t *testing.T, what string, nums []int, first, last int) bool {
	t.Helper()
	if len(nums) == 0 {
		t.Errorf("%s: no line; want %d to %d", what, first, last)
		return false
	}
	for i, n := range nums {
		if n != first+i {
			t.Errorf("%s: line %d at position %d, after %d; want %d (lines %d to %d, once each)", what, n, i, nums[max(i-1, 0)], first+i, first, last)
			return false
		}
	}
	if got := nums[len(nums)-1]; got != last {
		t.Errorf("%s: ends at line %d; want %d", what, got, last)
		return false
	}
	return true
}
