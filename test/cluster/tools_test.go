package cluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/test/kube"
)

// talkPod has a container that ticks on stdout, one that crashes once (its
// second attempt runs on: kubelet's garbage collection keeps one dead
// attempt, which is then the one --previous reads), one with a shell on
// stdin to attach to, and one serving HTTP on 8080.
const talkPod = `apiVersion: v1
kind: Pod
metadata: {name: talk}
spec:
  terminationGracePeriodSeconds: 1
  volumes: [{name: work, emptyDir: {}}]
  containers:
  - name: ticker
    image: busybox:latest
    command: [sh, -c, 'i=0; while true; do echo "tick $i"; i=$((i+1)); sleep 0.2; done']
  - name: crasher
    image: busybox:latest
    command: [sh, -c, 'test -f /work/crashed && exec sleep 3600; touch /work/crashed; echo crashing; exit 1']
    volumeMounts: [{name: work, mountPath: /work}]
  - name: shell
    image: busybox:latest
    stdin: true
    command: [sh]
  - name: web
    image: busybox:latest
    command: [sh, -c, 'mkdir /www && echo port-forwarded > /www/index.html && exec httpd -f -p 8080 -h /www']
`

// testTools checks kubectl's node-facing commands, which the API server
// proxies to kubelet's server and kubelet to berth's streaming server.
func (c *cluster) testTools(t *testing.T) {
	c.apply(t, talkPod)
	c.waitFor(t, "containers ticker, shell and web to run", 2*time.Minute, func() bool {
		out, _ := c.try("get", "pod", "talk", "-o", `jsonpath={.status.containerStatuses[?(@.state.running)].name}`)
		f := strings.Fields(out)
		return contains(f, "ticker") && contains(f, "shell") && contains(f, "web")
	})
	t.Run("logs", c.testLogs)
	t.Run("exec", c.testExec)
	t.Run("attach", c.testAttach)
	t.Run("port-forward", c.testPortForward)
	t.Run("cp", c.testCp)
	t.Run("stats", c.testStats)
}

// testLogs follows a container's log and reads a crashed attempt's.
func (c *cluster) testLogs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := c.command(ctx, "logs", "-f", "talk", "-c", "ticker")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	first, last := -1, -1
	for sc := bufio.NewScanner(out); sc.Scan() && (first < 0 || last < first+15); {
		n, err := strconv.Atoi(strings.TrimPrefix(sc.Text(), "tick "))
		if err != nil || (last >= 0 && n != last+1) {
			t.Fatalf("logs -f: line %q after tick %d", sc.Text(), last)
		}
		if first < 0 {
			first = n
		}
		last = n
	}
	if last < first+15 {
		t.Fatalf("logs -f ended after ticks %d..%d: %v", first, last, ctx.Err())
	}
	c.waitFor(t, "crasher to restart", 2*time.Minute, func() bool { return c.restarts(t, "talk", "crasher") == "1" })
	if prev := c.kubectlT(t, "logs", "--previous", "talk", "-c", "crasher"); prev != "crashing" {
		t.Errorf("logs --previous = %q, want crashing", prev)
	}
}

// testExec runs a command with stdin, and one with a terminal (kubectl
// -t needs one of its own: script gives it a pty).
func (c *cluster) testExec(t *testing.T) {
	out, err := c.tryIn("hello through exec\n", "exec", "-i", "talk", "-c", "ticker", "--", "cat")
	if err != nil || out != "hello through exec" {
		t.Errorf("exec -i cat: %q, %v", out, err)
	}
	script := fmt.Sprintf("%s exec -it talk -c ticker -- sh -c 'tty; exit 7'", c.kubectlBin)
	cmd := exec.Command("script", "-qec", script, "/dev/null")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.cp.AdminKubeconfig)
	b, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 7 || !strings.Contains(string(b), "/dev/pts/") {
		t.Errorf("exec -it: exit %d (%v), output %q; want exit 7 and a /dev/pts terminal", code, err, b)
	}
}

// testAttach attaches to the shell's stdin and reads what it prints.
func (c *cluster) testAttach(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := c.command(ctx, "attach", "-i", "talk", "-c", "shell")
	stdin, err := cmd.StdinPipe() // open until the answer came: kubectl ends at its EOF
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	if _, err := io.WriteString(stdin, "echo attached-$((6*7))\n"); err != nil {
		t.Fatal(err)
	}
	if !readUntil(out, "attached-42") {
		t.Errorf("attach: the shell did not answer: %v", ctx.Err())
	}
}

// testPortForward forwards a loopback port to the web container.
func (c *cluster) testPortForward(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	port := kube.FreePort(t)
	cmd := c.command(ctx, "port-forward", "--address", "127.0.0.1", "pod/talk", fmt.Sprintf("%d:8080", port))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	if !readUntil(out, "Forwarding from") {
		t.Fatalf("port-forward did not start: %v", ctx.Err())
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	for i := 0; i < 3; i++ { // every request is a new stream
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/index.html", port))
		if err != nil {
			t.Fatalf("GET through port-forward: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "port-forwarded\n" {
			t.Errorf("GET through port-forward: %q", body)
		}
	}
}

// testCp copies a file into a container and back.
func (c *cluster) testCp(t *testing.T) {
	dir := t.TempDir()
	content := strings.Repeat("copied through tar\n", 5000)
	src, back := filepath.Join(dir, "src"), filepath.Join(dir, "back")
	if err := os.WriteFile(src, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	c.kubectlT(t, "cp", "-c", "ticker", src, "talk:/tmp/copied")
	c.kubectlT(t, "cp", "-c", "ticker", "talk:/tmp/copied", back)
	if b, err := os.ReadFile(back); err != nil || string(b) != content {
		t.Errorf("cp there and back: %d bytes, %v; want %d bytes alike", len(b), err, len(content))
	}
}

// readUntil reads r until a line contains want; false at the end of r.
func readUntil(r io.Reader, want string) bool {
	for sc := bufio.NewScanner(r); sc.Scan(); {
		if strings.Contains(sc.Text(), want) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
