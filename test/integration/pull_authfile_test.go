package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/test/harness"
	"github.com/berth-dev/berth/test/registry"
	"github.com/berth-dev/berth/test/testimage"
)

// TestPullWithAuthFile: [registry] auth_file gives PullImage requests
// without credentials the file's entry for the registry. The file is read
// at each pull (absent: anonymous, then written: used), refused while
// others may write it (FailedPrecondition naming it; credentials in the
// request still pull), and SIGHUP moves berth to another file.
func TestPullWithAuthFile(t *testing.T) {
	reg := startRegistry(t, registry.Options{Username: "puller", Password: "pw-" + harness.RandomHex(8)})
	dir := t.TempDir()
	first, second := filepath.Join(dir, "auth.json"), filepath.Join(dir, "auth2.json")
	cfgPath := filepath.Join(dir, "config.toml")
	hosts := t.TempDir()
	writeCfg := func(authFile string) {
		t.Helper()
		conf := fmt.Sprintf("[registry]\nhosts_dir = %q\nauth_file = %q\n", hosts, authFile)
		if err := os.WriteFile(cfgPath, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeAuth := func(path string) {
		t.Helper()
		conf := fmt.Sprintf(`{"auths": {%q: {"username": %q, "password": %q}}}`, "http://"+reg.Host, reg.Username, reg.Password)
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeCfg(first)
	d := startDaemon(t, func(_ *testing.T, o *harness.Options) { o.Config = cfgPath })
	var refs []string
	var ids []string
	for _, tag := range []string{"v1", "v2", "v3"} {
		p, err := reg.PushImage("berth-test/authfile:"+tag, testimage.Options{ExtraFiles: map[string]string{"/etc/tag": tag + "\n"}})
		if err != nil {
			t.Fatal(err)
		}
		refs, ids = append(refs, p.Ref), append(ids, p.ID)
	}

	_, err := d.pull(refs[0], nil)
	if msg := wantCode(t, "PullImage without the auth file", err, codes.FailedPrecondition); err != nil && !mentionsAny(strings.ToLower(msg), "unauthorized", "401") {
		t.Errorf("PullImage without the auth file: %q does not say unauthorized", msg)
	}
	writeAuth(first)
	d.mustPull(refs[0], nil, ids[0])

	if err := os.Chmod(first, 0o666); err != nil {
		t.Fatal(err)
	}
	_, err = d.pull(refs[1], nil)
	if msg := wantCode(t, "PullImage with a world-writable auth file", err, codes.FailedPrecondition); err != nil &&
		(!strings.Contains(msg, first) || !strings.Contains(msg, "writable by group or others")) {
		t.Errorf("PullImage with a world-writable auth file: %q does not name the file and its mode", msg)
	}
	d.mustPull(refs[1], &runtimeapi.AuthConfig{Username: reg.Username, Password: reg.Password}, ids[1])

	writeAuth(second)
	writeCfg(second)
	if err := d.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitForLog(t, d, `msg="config reloaded" changed=[registry.auth_file]`, 1)
	d.mustPull(refs[2], nil, ids[2])
}
