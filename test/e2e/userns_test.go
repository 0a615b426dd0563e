package e2e

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// usernsPod runs NAME in a user namespace of its own (spec.hostUsers:
// false), as root inside.
const usernsPod = `
apiVersion: v1
kind: Pod
metadata: {name: NAME}
spec:
  hostUsers: false
  terminationGracePeriodSeconds: 1
  volumes: [{name: scratch, emptyDir: {}}]
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sleep, "3600"]
    volumeMounts: [{name: scratch, mountPath: /scratch}]
`

// TestHostUsersFalse: a pod with hostUsers: false runs as root in its own
// user namespace, mapped from a block of 65536 host ids the agent
// allocated (kubelet's UsernsManager): inside, id -u is 0 and uid_map and
// gid_map read "0 H 65536"; from the host its process runs as H,
// unprivileged. A second such pod gets a disjoint block; after kill -9 of
// the agent both keep theirs; deleting a pod frees its block's record.
// berth serve only: it needs a handler that advertises user namespaces.
func TestHostUsersFalse(t *testing.T) {
	n := startNode(t, runtimes[0])
	hosts := map[string]uint32{}
	for _, name := range []string{"userns-a", "userns-b"} {
		n.apply(name+".yaml", strings.ReplaceAll(usernsPod, "NAME", name))
		n.waitPod(name, "app running", running("app"))
		hosts[name] = checkPodUserns(t, n, name)
	}
	a, b := hosts["userns-a"], hosts["userns-b"]
	if a == b || (a < b && uint64(a)+65536 > uint64(b)) || (b < a && uint64(b)+65536 > uint64(a)) {
		t.Errorf("the two pods' host ids overlap: %d and %d, 65536 each", a, b)
	}
	n.restartAgent()
	for name, host := range hosts {
		n.waitPod(name, "app running under the new agent", running("app"))
		if again := checkPodUserns(t, n, name); again != host {
			t.Errorf("%s: host ids from %d after the agent's restart; want %d, unchanged", name, again, host)
		}
	}
	uid := string(n.pod("userns-a").UID)
	record := filepath.Join(n.rt.agentRoot(), "agent", "userns", uid+".json")
	if _, err := os.Stat(record); err != nil {
		t.Errorf("userns-a's allocation record: %v", err)
	}
	n.deleteAndCheckGone("userns-a")
	if _, err := os.Stat(record); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("userns-a's allocation record after its removal: %v", err)
	}
}

// checkPodUserns checks pod's user namespace from inside and from the host
// and returns the first host id of its block.
func checkPodUserns(t *testing.T, n *node, pod string) uint32 {
	t.Helper()
	if out, err := n.exec(pod, "app", "id", "-u"); err != nil || strings.TrimSpace(out) != "0" {
		t.Fatalf("%s: id -u: %q, %v; want 0", pod, out, err)
	}
	var host uint32
	for _, file := range []string{"/proc/self/uid_map", "/proc/self/gid_map"} {
		out, err := n.exec(pod, "app", "cat", file)
		if err != nil {
			t.Fatal(err)
		}
		h, err := parseIDMap(out)
		if err != nil || h < 65536 || h%65536 != 0 || (host != 0 && h != host) {
			t.Fatalf("%s: %s %q (%v); want one line \"0 H 65536\", H a multiple of 65536 from 65536 on, the same for uids and gids", pod, file, out, err)
		}
		host = h
	}
	pid := containerPid(t, n, pod, "app")
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	want := strconv.FormatUint(uint64(host), 10)
	for _, key := range []string{"Uid:", "Gid:"} {
		ids := statusIDs(string(status), key)
		if len(ids) != 4 || slices.ContainsFunc(ids, func(id string) bool { return id != want }) {
			t.Errorf("%s: host /proc/%d/status %s %v; want %s four times (root inside is unprivileged on the host)", pod, pid, key, ids, want)
		}
	}
	return host
}

// parseIDMap reads a uid_map or gid_map of one line "0 H 65536" and
// returns H.
func parseIDMap(content string) (uint32, error) {
	lines := strings.Split(strings.TrimSpace(content), "\n")
	if len(lines) != 1 {
		return 0, fmt.Errorf("%d lines", len(lines))
	}
	f := strings.Fields(lines[0])
	if len(f) != 3 || f[0] != "0" || f[2] != "65536" {
		return 0, fmt.Errorf("line %q", lines[0])
	}
	h, err := strconv.ParseUint(f[1], 10, 32)
	return uint32(h), err
}

// statusIDs are the fields of the line of /proc/<pid>/status starting
// with key ("Uid:": real, effective, saved, filesystem).
func statusIDs(status, key string) []string {
	for _, line := range strings.Split(status, "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			return strings.Fields(rest)
		}
	}
	return nil
}
