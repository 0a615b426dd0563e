package integration

import (
	"encoding/base64"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/test/harness"
	"github.com/berth-dev/berth/test/registry"
	"github.com/berth-dev/berth/test/testimage"
)

// mirrorName is a registry name that never resolves (RFC 2606 .invalid):
// only the hosts config can make its images pullable.
const mirrorName = "registry.berth.invalid"

// TestPullThroughMirror pulls <mirrorName>/pause:3.10 through hosts.toml:
// a dead mirror first (connection refused: berth falls back), then the local
// registry with a rewrite of the repository path (pause → mirror/pause).
func TestPullThroughMirror(t *testing.T) {
	reg := startRegistry(t, registry.Options{})
	hosts := t.TempDir()
	d := startDaemon(t, withHostsDir(hosts))
	p, err := reg.PushImage("mirror/pause:3.10", testimage.Options{
		Layers: 2, ExtraFiles: map[string]string{"/etc/mirrored": harness.RandomHex(12) + "\n"}, Cmd: []string{"true"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ref := mirrorName + "/pause:3.10"
	// The upstream is a dead loopback port, here and below: no test sends a
	// DNS query or a packet off the machine.
	upstream := deadAddress(t)
	writeHostsFile(t, hosts, mirrorName, fmt.Sprintf("server = %q\n", "http://"+upstream))
	_, err = d.pull(ref, nil)
	wantCode(t, "PullImage "+ref+" with no mirror configured", err, codes.Unavailable)

	writeHostsFile(t, hosts, mirrorName, fmt.Sprintf(`server = "http://%s"

[host."http://%s"]
  capabilities = ["pull", "resolve"]

[host."http://%s"]
  capabilities = ["pull", "resolve"]
  rewrite = { "^(.*)$" = "mirror/$1" }
`, upstream, deadAddress(t), reg.Host))
	// The config is re-read: no restart.
	d.mustPull(ref, nil, p.ID)
	img := d.imageStatus(ref)
	if img == nil || !slices.Contains(img.GetRepoTags(), ref) {
		t.Errorf("ImageStatus %s after the mirrored pull: %v, want it tagged %s", ref, img, ref)
	}
	if gets := blobGets(t, reg); gets[p.Layers[0]] != 1 {
		t.Errorf("layer %s: %d GETs from the mirror, want 1", p.Layers[0], gets[p.Layers[0]])
	}
	d.runImage("mirrored", ref)
}

// TestPullWithAuth pulls from an htpasswd registry: anonymous and wrong
// passwords are refused (FailedPrecondition, "unauthorized"); username and
// password, or the base64 auth field, succeed.
func TestPullWithAuth(t *testing.T) {
	reg := startRegistry(t, registry.Options{Username: "puller", Password: "pw-" + harness.RandomHex(8)})
	d := startDaemon(t, withHostsDir(t.TempDir()))
	opts := testimage.Options{Layers: 2, ExtraFiles: map[string]string{"/etc/private": harness.RandomHex(12) + "\n"}}
	p, err := reg.PushImage("berth-test/private:v1", opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		auth *runtimeapi.AuthConfig
	}{
		{"anonymous", nil},
		{"a wrong password", &runtimeapi.AuthConfig{Username: reg.Username, Password: "wrong"}},
	} {
		_, err := d.pull(p.Ref, c.auth)
		msg := wantCode(t, "PullImage "+p.Ref+" "+c.what, err, codes.FailedPrecondition)
		if err != nil && !mentionsAny(strings.ToLower(msg), "unauthorized", "401", "denied") {
			t.Errorf("PullImage %s %s: message %q does not say unauthorized", p.Ref, c.what, msg)
		}
	}
	if ids := d.imageIDs(); slices.Contains(ids, p.ID) {
		t.Errorf("ListImages after refused pulls: %v holds %s", ids, p.ID)
	}
	d.mustPull(p.Ref, &runtimeapi.AuthConfig{Username: reg.Username, Password: reg.Password}, p.ID)

	opts.ExtraFiles = map[string]string{"/etc/private": harness.RandomHex(12) + "\n"}
	p2, err := reg.PushImage("berth-test/private:v2", opts)
	if err != nil {
		t.Fatal(err)
	}
	basic := base64.StdEncoding.EncodeToString([]byte(reg.Username + ":" + reg.Password))
	d.mustPull(p2.Ref, &runtimeapi.AuthConfig{Auth: basic}, p2.ID)
}

// TestPullOverTLS pulls from a registry whose certificate is signed by a
// test CA: refused until hosts.toml names the CA, then pulled (no restart).
func TestPullOverTLS(t *testing.T) {
	reg := startRegistry(t, registry.Options{TLS: true})
	hosts := t.TempDir()
	d := startDaemon(t, withHostsDir(hosts))
	p, err := reg.PushImage("berth-test/tls:v1", testimage.Options{
		Layers: 2, ExtraFiles: map[string]string{"/etc/tls": harness.RandomHex(12) + "\n"},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.pull(p.Ref, nil)
	wantCode(t, "PullImage "+p.Ref+" without the CA", err, codes.Unavailable)

	writeHostsFile(t, hosts, reg.Host, fmt.Sprintf("server = %q\nca = %q\n", reg.URL, reg.CAFile))
	d.mustPull(p.Ref, nil, p.ID)
}

// deadAddress is a loopback address where nothing listens.
func deadAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
