package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
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

// busyManifest is a pod that keeps a CPU busy.
const busyManifest = `
apiVersion: v1
kind: Pod
metadata: {name: busy}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: spin, image: busybox, imagePullPolicy: IfNotPresent, command: [sh, -c, 'while :; do :; done']}
`

// berth events -w prints the events of a pod applied after it started;
// berth events lists them; berth top pods shows the CPU a busy pod uses
// (from the runtime's stats), per container with --containers, and
// berth top node the node's use.
func TestTopAndEvents(t *testing.T) { onEachRuntime(t, topAndEvents) }

func topAndEvents(t *testing.T, n *node) {
	watch := n.background("events", "-w")
	watch.waitOutput("the header", nil, "LAST SEEN")
	n.apply("busy.yaml", busyManifest)
	n.waitPod("busy", "spin running", running("spin"))
	watch.waitOutput("the pod's Started event", nil, "Started container spin")
	if out := n.must("events"); !strings.Contains(out, "Scheduled") || !strings.Contains(out, "pod/busy") {
		t.Errorf("berth events:\n%s\nwant the busy pod's Scheduled event", out)
	}
	cpu := regexp.MustCompile(`(?m)^busy\s+(\d+)m\s+(\d+)Mi$`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := n.must("top", "pods")
		m := cpu.FindStringSubmatch(out)
		if m != nil {
			if milli, _ := strconv.Atoi(m[1]); milli >= 200 {
				break // a spinning shell uses close to a core
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("berth top pods:\n%s\nwant busy using 200m at least", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if out := n.must("top", "pods", "--containers", "--no-headers"); !regexp.MustCompile(`(?m)^busy\s+spin\s+\d+m\s+\d+Mi$`).MatchString(out) {
		t.Errorf("berth top pods --containers:\n%s\nwant a row for busy's spin", out)
	}
	out := n.must("top", "node")
	if !regexp.MustCompile(`(?m)^NAME\s+CPU\(cores\)\s+CPU\(%\)\s+MEMORY\(bytes\)\s+MEMORY\(%\)\s+IMAGE-FS\(bytes\)\n\S+\s+\d+m\s+\d+%\s+\d+Mi\s+\d+%\s+\d+Mi\n$`).MatchString(out) {
		t.Errorf("berth top node:\n%s", out)
	}
}

// logsManifest is two pods labelled app=logs writing 15 numbered lines,
// and one that is not.
const logsManifest = `
apiVersion: v1
kind: Pod
metadata: {name: la, labels: {app: logs}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: busybox, imagePullPolicy: IfNotPresent, command: [sh, -c, 'for i in $(seq 1 15); do echo "a$i"; done; exec sleep 3600']}
---
apiVersion: v1
kind: Pod
metadata: {name: lb, labels: {app: logs}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: busybox, imagePullPolicy: IfNotPresent, command: [sh, -c, 'for i in $(seq 1 15); do echo "b$i"; done; exec sleep 3600']}
---
apiVersion: v1
kind: Pod
metadata: {name: other, labels: {app: other}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: busybox, imagePullPolicy: IfNotPresent, command: [sh, -c, 'echo other; exec sleep 3600']}
`

// berth logs -l prints the last 10 lines of each matching pod; --tail,
// --prefix, --since, --since-time and --timestamps work as kubectl's.
func TestLogsSelector(t *testing.T) { onEachRuntime(t, logsSelector) }

func logsSelector(t *testing.T, n *node) {
	n.apply("logs.yaml", logsManifest)
	for _, name := range []string{"la", "lb", "other"} {
		n.waitPod(name, "all lines written", func(v1.Pod) bool {
			out, _, _ := n.berth("logs", name)
			return strings.HasSuffix(out, "15\n") || out == "other\n"
		})
	}
	lines := func(prefix string, from, to int) string {
		var b strings.Builder
		for i := from; i <= to; i++ {
			fmt.Fprintf(&b, "%s%d\n", prefix, i)
		}
		return b.String()
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"logs", "-l", "app=logs"}, lines("a", 6, 15) + lines("b", 6, 15)},
		{[]string{"logs", "-l", "app=logs", "--tail", "2", "--prefix"}, "[pod/la/c] a14\n[pod/la/c] a15\n[pod/lb/c] b14\n[pod/lb/c] b15\n"},
		{[]string{"logs", "-l", "app in (logs,other),app!=logs"}, "other\n"},
		{[]string{"logs", "la", "--since", "1h"}, lines("a", 1, 15)},
		{[]string{"logs", "la", "--tail", "3"}, lines("a", 13, 15)},
		{[]string{"logs", "la", "--since-time", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}, ""},
	} {
		if got := n.must(tc.args...); got != tc.want {
			t.Errorf("berth %v = %q; want %q", tc.args, got, tc.want)
		}
	}
	out := n.must("logs", "la", "--tail", "1", "--timestamps")
	ts, line, _ := strings.Cut(out, " ")
	if stamp, err := time.Parse(time.RFC3339Nano, ts); err != nil || line != "a15\n" || time.Since(stamp) > 10*time.Minute {
		t.Errorf("berth logs --timestamps --tail 1 = %q (%v); want a recent RFC 3339 time and a15", out, err)
	}
	follow := n.background("logs", "-l", "app=logs", "-f", "--tail", "1", "--prefix")
	follow.waitOutput("both pods' last line", nil, "[pod/la/c] a15\n")
	follow.waitOutput("both pods' last line", nil, "[pod/lb/c] b15\n")
	follow.kill()
	if _, errOut, err := n.berth("logs", "-l", "app", "-f", "--max-log-requests", "1"); err == nil || !strings.Contains(errOut, "--max-log-requests=1") {
		t.Errorf("berth logs -l -f of 3 pods, at most 1: %v, %q; want a refusal", err, errOut)
	}
	if _, errOut, err := n.berth("logs", "la", "-l", "app=logs"); err == nil || !strings.Contains(errOut, "not both") {
		t.Errorf("berth logs with a name and -l: %v, %q; want a refusal", err, errOut)
	}
}
