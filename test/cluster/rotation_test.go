package cluster

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// chattyLines is how many numbered lines chattyPod writes: about 5 MiB of
// log with CRI's prefixes, in batches over some 15 seconds, so that kubelet
// (containerLogMaxSize 1Mi, checked every 3s) rotates the file several
// times while the container writes.
const chattyLines = 40000

var chattyPod = fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: chatty}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: chatty
    image: busybox:latest
    command:
    - sh
    - -c
    - |
      i=0
      while [ $i -lt %d ]; do
        echo "line $i ................................................................................"
        i=$((i+1))
        [ $((i %% 1000)) = 0 ] && sleep 0.3
      done
      exec sleep 3600
`, chattyLines)

// testLogRotation checks that kubelet's rotation, which renames the log
// and asks berth to reopen it (ReopenContainerLog), loses no line and
// duplicates none.
func (c *cluster) testLogRotation(t *testing.T) {
	c.apply(t, chattyPod)
	uid := c.kubectlT(t, "get", "pod", "chatty", "-o", "jsonpath={.metadata.uid}")
	dir := filepath.Join(c.kubelet.PodLogs, "default_chatty_"+uid, "chatty")
	var files []string
	var seen map[int]int
	c.waitFor(t, "every line of chatty in its logs", 3*time.Minute, func() bool {
		var err error
		files, seen, err = readLogs(dir)
		return err == nil && len(seen) == chattyLines
	})
	for n, count := range seen {
		if count != 1 || n < 0 || n >= chattyLines {
			t.Errorf("line %d is in the logs %d times", n, count)
		}
	}
	if len(files) < 3 {
		t.Errorf("kubelet rotated the log %d times, want at least 2: %v", len(files)-1, files)
	}
	t.Logf("%d lines in %d files: %v", len(seen), len(files), files)
	c.kubectlT(t, "delete", "pod/chatty", "--timeout=2m")
}

// readLogs reads the current and rotated logs of a container (rotated
// ones may be gzipped) and counts each numbered line.
func readLogs(dir string) ([]string, map[int]int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	seen := map[int]int{}
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
		if err := countLines(filepath.Join(dir, e.Name()), seen); err != nil {
			return nil, nil, err // rotated or compressed meanwhile: read again
		}
	}
	return files, seen, nil
}

// countLines counts the "line N" messages of a CRI log file.
func countLines(path string, seen map[int]int) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return err
		}
		r = gz
	}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		// <time> stdout F line N ....
		fields := strings.SplitN(sc.Text(), " ", 6)
		if len(fields) < 5 || fields[3] != "line" {
			return fmt.Errorf("%s: not a line of chatty: %q", path, sc.Text())
		}
		n, err := strconv.Atoi(fields[4])
		if err != nil {
			return fmt.Errorf("%s: %q", path, sc.Text())
		}
		seen[n]++
	}
	return sc.Err()
}
