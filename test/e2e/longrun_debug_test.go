package e2e

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// longrunDebug runs every debugging command on the running pod bare,
// whose image has no shell: exec of a binary it has, debug --target,
// logs (-c, --tail, --since, -l, -f), attach, port-forward (to a server
// in an ephemeral container), cp both ways, top pods and node, events.
func longrunDebug(t *testing.T, n *node) {
	t.Helper()
	if _, _, err := n.berth("exec", "bare", "--", "sh", "-c", "true"); err == nil {
		t.Fatal("exec sh in the bare image worked: it is meant to have no shell")
	}
	if out := n.must("exec", "bare", "--", "/pause", "-v"); strings.TrimSpace(out) == "" {
		t.Error("berth exec bare -- /pause -v printed nothing")
	}
	n.must("debug", "bare", "--image=busybox", "--image-pull-policy=IfNotPresent", "--target=app", "--profile=general",
		"-c", "lister", "--", "sh", "-c", "for i in 1 2 3; do echo n$i; done; ls /proc/1/root/data")
	n.waitPod("bare", "lister done", func(p v1.Pod) bool { return ephemeral(p, "lister").State.Terminated != nil })
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"logs", "bare", "-c", "lister"}, "n1\nn2\nn3\nhello.txt\n"},
		{[]string{"logs", "bare", "-c", "lister", "--tail", "2"}, "n3\nhello.txt\n"},
		{[]string{"logs", "bare", "-c", "lister", "--since", "1h"}, "n1\nn2\nn3\nhello.txt\n"},
		{[]string{"logs", "-l", "app=bare", "-c", "lister", "--tail", "1", "--prefix"}, "[pod/bare/lister] hello.txt\n"},
		{[]string{"logs", "bare", "-c", "lister", "-f"}, "n1\nn2\nn3\nhello.txt\n"},
		{[]string{"logs", "bare"}, ""},
	} {
		if got := n.must(tc.args...); got != tc.want {
			t.Errorf("berth %v = %q; want %q", tc.args, got, tc.want)
		}
	}
	longrunAttach(t, n)
	longrunPortForward(t, n)
	longrunCopy(t, n)
	longrunTopEvents(t, n)
	if st := containerStatus(n.pod("bare"), "app"); st.State.Running == nil || st.RestartCount != 0 {
		t.Errorf("bare's container after the debugging commands: %+v; want it running since the start", st)
	}
}

// longrunAttach: `debug -i` attaches to a new ephemeral container reading
// stdin; once that client is gone, `attach -i` reaches the same process.
func longrunAttach(t *testing.T, n *node) {
	t.Helper()
	bg := n.background("debug", "-i", "bare", "--image=busybox", "--image-pull-policy=IfNotPresent", "--target=app",
		"-c", "echo", "--", "sh", "-c", `while read l; do echo "got:$l"; done`)
	bg.waitOutput("the echo through debug -i", func() { _, _ = io.WriteString(bg.stdin, "one\n") }, "got:one")
	bg.kill()
	at := n.background("attach", "bare", "-c", "echo", "-i")
	at.waitOutput("the echo through attach -i", func() { _, _ = io.WriteString(at.stdin, "two\n") }, "got:two")
	at.kill()
}

// longrunPortForward forwards a local port to a server an ephemeral
// container runs in bare's network namespace.
func longrunPortForward(t *testing.T, n *node) {
	t.Helper()
	n.must("debug", "bare", "--image=busybox", "--image-pull-policy=IfNotPresent", "-c", "web", "--",
		"sh", "-c", "mkdir -p /www && echo hello-bare > /www/index.html && exec httpd -f -p 8080 -h /www")
	n.waitPod("bare", "web runs", func(p v1.Pod) bool { return ephemeral(p, "web").State.Running != nil })
	bg := n.background("port-forward", "bare", ":8080")
	out := bg.waitOutput("the forwarded port", nil, "Forwarding from 127.0.0.1:")
	m := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 8080`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("berth port-forward bare :8080 printed %q", out)
	}
	resp, err := http.Get("http://127.0.0.1:" + m[1] + "/")
	if err != nil {
		t.Fatalf("GET through the forwarded port: %v\n%s", err, bg.output())
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != "hello-bare\n" {
		t.Errorf("GET through the forwarded port: %q, %v; want hello-bare", body, err)
	}
	bg.kill()
}

// longrunCopy copies a file out of bare, one into it, and that one back.
func longrunCopy(t *testing.T, n *node) {
	t.Helper()
	dir := t.TempDir()
	n.must("cp", "bare:/data/hello.txt", filepath.Join(dir, "hello.txt"))
	if got := readFile(t, filepath.Join(dir, "hello.txt")); got != "hello from the image\n" {
		t.Errorf("cp out of bare: %q", got)
	}
	up := filepath.Join(dir, "up.txt")
	if err := os.WriteFile(up, []byte("up and back\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n.must("cp", up, "bare:/data/up.txt")
	n.must("cp", "bare:/data/up.txt", filepath.Join(dir, "back.txt"))
	if got := readFile(t, filepath.Join(dir, "back.txt")); got != "up and back\n" {
		t.Errorf("cp into bare and back: %q", got)
	}
}

// longrunTopEvents: top pods has a row for bare, top node one for the
// node, events bare's events.
func longrunTopEvents(t *testing.T, n *node) {
	t.Helper()
	n.waitPod("bare", "top pods lists bare", func(v1.Pod) bool {
		out, _, _ := n.berth("top", "pods")
		return regexp.MustCompile(`(?m)^bare\s+\d+m\s+\d+Mi$`).MatchString(out)
	})
	if out := n.must("top", "node"); !regexp.MustCompile(`(?m)^NAME\s+CPU\(cores\).*IMAGE-FS\(bytes\)\n\S+\s+\d+m\s+\d+%\s+\d+Mi\s+\d+%\s+\d+Mi\n$`).MatchString(out) {
		t.Errorf("berth top node:\n%s", out)
	}
	out := n.must("events")
	for _, want := range []string{"pod/bare", "Started", "pod/hog", "Evicted"} {
		if !strings.Contains(out, want) {
			t.Errorf("berth events lacks %q:\n%s", want, out)
		}
	}
}
