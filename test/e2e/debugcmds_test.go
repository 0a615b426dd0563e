package e2e

import (
	"bytes"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// debugManifest is a pod serving HTTP with busybox httpd on a named port,
// and a container echoing the lines of its stdin.
const debugManifest = `
apiVersion: v1
kind: Pod
metadata: {name: debug, labels: {app: debug}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sh, -c, 'mkdir -p /www && echo hello-through-the-tunnel > /www/index.html && exec httpd -f -p 8080 -h /www']
    ports: [{name: http, containerPort: 8080}]
  - name: echo
    image: busybox
    imagePullPolicy: IfNotPresent
    stdin: true
    command: [sh, -c, 'while read line; do echo "got:$line"; done']
`

// berth attach -i passes stdin to a container's main process and prints
// its output, and leaves the container running when it ends; attaching
// stdin to a container without stdin: true is refused.
func TestAttach(t *testing.T) { onEachRuntime(t, attach) }

func attach(t *testing.T, n *node) {
	n.apply("debug.yaml", debugManifest)
	n.waitPod("debug", "both running", func(p v1.Pod) bool { return running("web")(p) && running("echo")(p) })
	id := containerStatus(n.pod("debug"), "echo").ContainerID
	bg := n.background("attach", "debug", "-c", "echo", "-i")
	bg.waitOutput("the echo of a line written to attach's stdin", func() {
		_, _ = io.WriteString(bg.stdin, "hello\n") // again until the attach is through
	}, "got:hello")
	bg.kill()
	if _, errOut, err := n.berth("attach", "debug", "-c", "web", "-i"); err == nil || !strings.Contains(errOut, "stdin is not open") {
		t.Errorf("berth attach -i to a container without stdin: %v, %q; want a refusal", err, errOut)
	}
	p := n.pod("debug")
	if st := containerStatus(p, "echo"); st.State.Running == nil || st.ContainerID != id {
		t.Errorf("after the attach ended the echo container is %+v; want %s still running", st.State, id)
	}
}

// berth port-forward listens on 127.0.0.1 (a free port with :REMOTE, a
// named container port too) and carries a connection into the pod's
// network namespace.
func TestPortForward(t *testing.T) { onEachRuntime(t, portForward) }

func portForward(t *testing.T, n *node) {
	n.apply("debug.yaml", debugManifest)
	n.waitPod("debug", "web running", running("web"))
	for _, port := range []string{":8080", ":http"} {
		bg := n.background("port-forward", "debug", port)
		out := bg.waitOutput("the forwarded port", nil, "Forwarding from 127.0.0.1:")
		m := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 8080`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("berth port-forward debug %s printed %q", port, out)
		}
		if strings.Contains(out, "[::1]") {
			t.Errorf("berth port-forward listens on ::1 too by default: %q", out)
		}
		resp, err := http.Get("http://127.0.0.1:" + m[1] + "/")
		if err != nil {
			t.Fatalf("GET through the forwarded port %s: %v\n%s", m[1], err, bg.output())
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(body) != "hello-through-the-tunnel\n" {
			t.Errorf("GET through the forwarded port: %d %q, %v; want the pod's page", resp.StatusCode, body, err)
		}
		bg.kill()
	}
}

// bgBerth is a berth command running in the background, its output
// collected.
type bgBerth struct {
	t     *testing.T
	args  []string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	mu    sync.Mutex
	out   bytes.Buffer
	done  chan struct{}
}

// background starts a berth command that runs until killed; the test's
// cleanup kills it.
func (n *node) background(args ...string) *bgBerth {
	n.t.Helper()
	b := &bgBerth{t: n.t, args: args, cmd: n.berthCmd(args...), done: make(chan struct{})}
	stdin, err := b.cmd.StdinPipe()
	if err != nil {
		n.t.Fatal(err)
	}
	b.stdin = stdin
	b.cmd.Stdout, b.cmd.Stderr = b, b
	if err := b.cmd.Start(); err != nil {
		n.t.Fatalf("berth %v: %v", args, err)
	}
	go func() { _ = b.cmd.Wait(); close(b.done) }() // the exit shows in the output checks
	n.t.Cleanup(b.kill)
	return b
}

func (b *bgBerth) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.out.Write(p)
}

func (b *bgBerth) output() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.out.String()
}

// waitOutput waits up to 30 s until the output holds want, calling poke
// (when not nil) on each look; it returns the output.
func (b *bgBerth) waitOutput(what string, poke func(), want string) string {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if poke != nil {
			poke()
		}
		if out := b.output(); strings.Contains(out, want) {
			return out
		}
		select {
		case <-b.done:
			if out := b.output(); strings.Contains(out, want) {
				return out
			}
			b.t.Fatalf("berth %v ended before %s: %s\n%s", b.args, what, b.cmd.ProcessState, b.output())
		default:
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("berth %v: timed out waiting for %s; output:\n%s", b.args, what, b.output())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// kill ends the command (SIGKILL) and waits for it.
func (b *bgBerth) kill() {
	select {
	case <-b.done:
		return
	default:
	}
	_ = b.cmd.Process.Kill() // it may end on its own meanwhile
	<-b.done
}
