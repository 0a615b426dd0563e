package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/test/testimage"
)

// bareRef is an image without a shell or tar: berth-pause as /pause and
// one data file.
const bareRef = "docker.io/berth-test/bare:1"

func bareImage(pauseBinary string) (testimage.Options, error) {
	pause, err := os.ReadFile(pauseBinary)
	if err != nil {
		return testimage.Options{}, err
	}
	return testimage.Options{Name: bareRef, Bare: true, Entrypoint: []string{"/pause"},
		ExtraFiles: map[string]string{"/pause": string(pause), "/data/hello.txt": "hello from the image\n"}}, nil
}

func writeBareLayout(dir, pauseBinary string) error {
	img, err := bareImage(pauseBinary)
	if err != nil {
		return err
	}
	return testimage.WriteLayout(dir, img)
}

const bareManifest = `
apiVersion: v1
kind: Pod
metadata: {name: bare}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: app, image: ` + bareRef + `, imagePullPolicy: IfNotPresent}
`

// ephemeral is the status of an ephemeral container.
func ephemeral(p v1.Pod, name string) v1.ContainerStatus {
	for _, st := range p.Status.EphemeralContainerStatuses {
		if st.Name == name {
			return st
		}
	}
	return v1.ContainerStatus{}
}

// berth debug --target adds a busybox container to a pod whose image has
// no shell: it sees the target's processes; describe lists it, get does
// not count it; -i attaches to a second one and passes stdin.
func TestDebugEphemeralContainer(t *testing.T) { onEachRuntime(t, debugEphemeral) }

func debugEphemeral(t *testing.T, n *node) {
	n.apply("bare.yaml", bareManifest)
	n.waitPod("bare", "app running, status at generation 1", func(p v1.Pod) bool { return running("app")(p) && observedGeneration(p, 1) })
	if _, errOut, err := n.berth("exec", "bare", "--", "sh", "-c", "true"); err == nil {
		t.Fatalf("exec sh in the bare image worked (%q): the image is meant to have no shell", errOut)
	}
	out := n.must("debug", "bare", "--image=busybox", "--image-pull-policy=IfNotPresent", "--target=app", "--", "ps")
	m := regexp.MustCompile(`Defaulting debug container name to (debugger-[a-z0-9]{5})\.`).FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, `Targeting container "app".`) {
		t.Fatalf("berth debug printed %q; want kubectl's lines", out)
	}
	name := m[1]
	// A spec change: a new generation, which the status shows once the agent acted on it.
	n.waitPod("bare", name+" terminated, status at generation 2", func(p v1.Pod) bool {
		return ephemeral(p, name).State.Terminated != nil && observedGeneration(p, 2)
	})
	if logs := n.must("logs", "bare", "-c", name); !strings.Contains(logs, "/pause") {
		t.Errorf("ps in the debug container (target app) shows %q; want the target's /pause", logs)
	}
	describe := n.must("describe", "pod", "bare")
	if i := strings.Index(describe, "Ephemeral Containers:"); i < 0 || !strings.Contains(describe[i:], name+":") {
		t.Errorf("describe lacks the ephemeral container %s:\n%s", name, describe)
	}
	if get := n.must("get", "pods", "bare"); !regexp.MustCompile(`bare\s+1/1\s+Running`).MatchString(get) {
		t.Errorf("get pods shows %q; want 1/1 Running (ephemeral containers do not count)", get)
	}
	bg := n.background("debug", "-i", "bare", "--image=busybox", "--image-pull-policy=IfNotPresent", "--target=app", "-c", "shell", "--", "sh")
	// ps runs each second until the next line: containerd 1.6 can pass
	// stdin on before it adds the attach's stdout, and lose what the first
	// ps writes in between.
	_, _ = bg.stdin.Write([]byte("while :; do ps -o pid,args; read -t 1 line && break; done; exit 0\n"))
	bg.waitOutput("ps through the attached stdin", nil, "/pause")
	_, _ = bg.stdin.Write([]byte("\n"))
	n.waitPod("bare", "shell exited", func(p v1.Pod) bool { return ephemeral(p, "shell").State.Terminated != nil })
	if _, errOut, err := n.berth("debug", "bare", "--image=busybox", "--image-pull-policy=IfNotPresent", "-c", "shell"); err == nil || !strings.Contains(errOut, "Duplicate value") {
		t.Errorf("a second ephemeral container named shell: %v %q; want it refused", err, errOut)
	}
	if st := containerStatus(n.pod("bare"), "app"); st.RestartCount != 0 || st.State.Running == nil {
		t.Errorf("the target container was disturbed: %+v", st)
	}
	// A restarted (kill -9) agent keeps them, and does not run them again.
	before := ephemeral(n.pod("bare"), name).ContainerID
	n.restartAgent()
	p := n.waitPod("bare", "both ephemeral containers reported, at generation 3", func(p v1.Pod) bool {
		return len(p.Status.EphemeralContainerStatuses) == 2 && observedGeneration(p, 3)
	})
	if len(p.Spec.EphemeralContainers) != 2 || p.Spec.EphemeralContainers[0].TargetContainerName != "app" {
		t.Errorf("after an agent restart the pod's ephemeral containers are %+v; want both", p.Spec.EphemeralContainers)
	}
	if st := ephemeral(p, name); st.ContainerID != before || st.State.Terminated == nil {
		t.Errorf("after an agent restart %s is %+v (%s); want the same terminated instance %s", name, st.State, st.ContainerID, before)
	}
}

// observedGeneration reports whether the pod is at generation and its
// status (status.observedGeneration and every condition's but
// AllContainersRestarting's) says the agent acted on it.
func observedGeneration(p v1.Pod, generation int64) bool {
	if p.Generation != generation || p.Status.ObservedGeneration != generation {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.ObservedGeneration != generation && c.Type != "AllContainersRestarting" {
			return false
		}
	}
	return len(p.Status.Conditions) > 0
}

// berth cp copies out of and into a container whose image has no tar or
// shell, and paths with ".." stay inside the container.
func TestCopy(t *testing.T) { onEachRuntime(t, copyFiles) }

func copyFiles(t *testing.T, n *node) {
	n.apply("bare.yaml", bareManifest)
	n.waitPod("bare", "app running", running("app"))
	dir := t.TempDir()
	n.must("cp", "bare:/data/hello.txt", dir)
	if got := readFile(t, filepath.Join(dir, "hello.txt")); got != "hello from the image\n" {
		t.Errorf("copied out: %q", got)
	}
	n.must("cp", "default/bare:../../../../etc/hostname", filepath.Join(dir, "hostname"))
	if got := readFile(t, filepath.Join(dir, "hostname")); got != "bare\n" {
		t.Errorf("bare:../../../../etc/hostname copied %q; want the container's /etc/hostname (bare)", got)
	}
	local := filepath.Join(dir, "up")
	if err := os.MkdirAll(filepath.Join(local, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(local, "sub", "file"), []byte("uploaded\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(local, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(local, "sub", "file"), 1234, 4321); err != nil {
		t.Fatal(err)
	}
	n.must("cp", local, "bare:/data/up")
	root := containerRoot(t, n, "bare", "app")
	checkOwner(t, filepath.Join(root, "data/up/sub/file"), 1234, 4321)
	n.must("cp", "--no-preserve", filepath.Join(local, "sub", "file"), "bare:/data/root-owned")
	checkOwner(t, filepath.Join(root, "data/root-owned"), 0, 0)
	back := filepath.Join(dir, "back")
	n.must("cp", "bare:/data/up", back)
	if got := readFile(t, filepath.Join(back, "sub", "file")); got != "uploaded\n" {
		t.Errorf("round trip of up/sub/file: %q", got)
	}
	if fi, err := os.Stat(filepath.Join(back, "sub", "file")); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("round trip of up/sub/file: mode %v, %v; want 0640", fi.Mode(), err)
	}
	if target, err := os.Readlink(filepath.Join(back, "link")); err != nil || target != "/etc/passwd" {
		t.Errorf("round trip of the symlink: %q, %v; want it a symlink to /etc/passwd", target, err)
	}
	if _, errOut, err := n.berth("cp", "bare:/dev/null", dir); err == nil || !strings.Contains(errOut, "a character device: refused") {
		t.Errorf("cp of /dev/null: %v %q; want it refused", err, errOut)
	}
}

// containerRoot is /proc/<pid>/root of a running container, the test's
// view of what berth cp wrote into it.
func containerRoot(t *testing.T, n *node, pod, container string) string {
	t.Helper()
	return fmt.Sprintf("/proc/%d/root", containerPid(t, n, pod, container))
}

// containerPid is the host pid of a running container's process, from the
// runtime's verbose ContainerStatus.
func containerPid(t *testing.T, n *node, pod, container string) int {
	t.Helper()
	id := strings.TrimPrefix(containerStatus(n.pod(pod), container).ContainerID, n.rt.name()+"://")
	resp, err := n.rt.cri().ContainerStatus(context.Background(), &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(resp.GetInfo()["info"]), &info); err != nil || info.Pid <= 0 {
		t.Fatalf("container %s: no pid in the verbose info (%v): %v", id, err, resp.GetInfo())
	}
	return info.Pid
}

func checkOwner(t *testing.T, path string, uid, gid uint32) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != uid || st.Gid != gid {
		t.Errorf("%s is owned by %d:%d; want %d:%d", path, st.Uid, st.Gid, uid, gid)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
