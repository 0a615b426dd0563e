package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// usernsPod runs without the host's users (hostUsers: false): kubelet
// allocates its ids and berth runs it in a user namespace.
const usernsPod = `apiVersion: v1
kind: Pod
metadata:
  name: userns
  namespace: default
spec:
  hostUsers: false
  terminationGracePeriodSeconds: 1
  volumes:
  - name: work
    emptyDir: {}
  containers:
  - name: app
    image: busybox:latest
    imagePullPolicy: Never
    command: ["sh", "-c", "id -u > /work/uid && exec sleep 3600"]
    volumeMounts: [{name: work, mountPath: /work}]
`

// runUsernsPod places usernsPod and checks that its process is root
// inside and an unprivileged id on the host: the first id of the 65536
// kubelet gave it, which /proc/self/uid_map inside shows.
func (c cri) runUsernsPod() {
	k, t := c.k, c.k.T
	k.WriteManifest("userns.yaml", usernsPod)
	pod := "userns-" + k.NodeName
	k.WaitFor("the hostUsers: false pod to run", 2*time.Minute, func() bool { return c.state(pod, "app") == running })
	id := c.runningID(pod, "app")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.d.RT.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Timeout: 10,
		Cmd: []string{"sh", "-c", "id -u; cat /work/uid; tr -s ' ' < /proc/self/uid_map"}})
	if err != nil {
		t.Fatalf("exec in %s: %v", pod, err)
	}
	lines := strings.Split(strings.TrimSpace(string(resp.GetStdout())), "\n")
	if len(lines) != 3 || lines[0] != "0" || lines[1] != "0" {
		t.Fatalf("in %s: %q, want uid 0 (and in the emptyDir) and the uid map", pod, resp.GetStdout())
	}
	m := strings.Fields(lines[2])
	if len(m) != 3 || m[0] != "0" || m[2] != "65536" {
		t.Fatalf("uid_map in %s: %q, want 0 <host id> 65536", pod, lines[2])
	}
	hostID, _ := strconv.Atoi(m[1])
	if hostID < 65536 {
		t.Errorf("%s maps its root to host id %d, want one of kubelet's (>= 65536)", pod, hostID)
	}
	if uid := hostUID(c, id); uid != m[1] {
		t.Errorf("%s's process runs as uid %s on the host, want %s", pod, uid, m[1])
	}
	t.Logf("%s: root inside, uid %d on the host", pod, hostID)
	if err := os.Remove(filepath.Join(k.Manifests, "userns.yaml")); err != nil {
		t.Fatal(err)
	}
	k.WaitFor("kubelet to remove the hostUsers: false pod", 2*time.Minute, func() bool { return len(c.readySandboxes(pod)) == 0 })
}

// hostUID reads the real uid of a container's process from the host.
func hostUID(c cri, id string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.d.RT.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		c.k.T.Fatalf("ContainerStatus %s: %v", id, err)
	}
	var info struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(resp.GetInfo()["info"]), &info); err != nil || info.Pid <= 0 {
		c.k.T.Fatalf("ContainerStatus %s: no pid (%v)", id, err)
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", info.Pid))
	if err != nil {
		c.k.T.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
			return f[1]
		}
	}
	return ""
}
