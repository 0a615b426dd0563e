package registry

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/berth-dev/berth/internal/errdefs"
)

const authFileJSON = `{"auths": {
	"reg.example": {"auth": "aG9zdDpwdw=="},
	"reg.example/team": {"username": "team", "password": "pw"},
	"*.mirror.example": {"username": "mirror", "password": "pw"},
	"other.example": {"username": "other", "password": "pw"}
}}`

func writeAuthFile(t *testing.T, body string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(path, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	return path
}

// TestAuthFileEntries: without request credentials the upstream gets the
// most specific entry of the image's repository (else of its own host), a
// mirror only the entry of its own host.
func TestAuthFileEntries(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the auth file must be owned by root")
	}
	path := writeAuthFile(t, authFileJSON, 0o600)
	up := mustRegistry(t, "reg.example")
	for _, tc := range []struct {
		what, repo string
		ep         Endpoint
		want       string
	}{
		{"upstream", "app", Endpoint{Host: "reg.example"}, "host"},
		{"upstream, path entry", "team/app", Endpoint{Host: "reg.example"}, "team"},
		{"upstream served elsewhere", "app", Endpoint{Host: "127.0.0.1:5000"}, "host"},
		{"mirror with its own entry", "app", Endpoint{Host: "a.mirror.example", Mirror: true}, "mirror"},
		{"mirror without an entry", "app", Endpoint{Host: "127.0.0.1:5000", Mirror: true}, ""},
	} {
		a, err := authenticator(context.Background(), Options{AuthFile: path}, tc.ep, up.Repo(tc.repo))
		if err != nil {
			t.Fatalf("%s: %v", tc.what, err)
		}
		if got := usernameOf(t, a); got != tc.want {
			t.Errorf("%s: user %q, want %q", tc.what, got, tc.want)
		}
	}
	// Request credentials win over the file.
	a, err := authenticator(context.Background(), Options{AuthFile: path, Credentials: &Credentials{Username: "req", Password: "x"}},
		Endpoint{Host: "reg.example"}, up.Repo("app"))
	if err != nil || usernameOf(t, a) != "req" {
		t.Errorf("request credentials with an auth file: %v, %v; want user req", a, err)
	}
}

// TestAuthFileRefused: a file others may write, not owned by root, not a
// regular file or not a config.json fails the pull (FailedPrecondition)
// with a message naming the file and the reason, never its content; a
// missing file is anonymous.
func TestAuthFileRefused(t *testing.T) {
	const secret = "pw-never-printed"
	broken := `{"auths": {"reg.example": {"password": "` + secret + `"`
	cases := []struct {
		what, path, want string
	}{
		{"world-writable", writeAuthFile(t, authFileJSON, 0o606), "writable by group or others"},
		{"group-writable", writeAuthFile(t, authFileJSON, 0o660), "writable by group or others"},
		{"a directory", t.TempDir(), "not a regular file"},
	}
	if os.Geteuid() == 0 {
		cases = append(cases, struct{ what, path, want string }{"not JSON", writeAuthFile(t, broken, 0o600), "not a docker config.json"})
		notRoot := writeAuthFile(t, authFileJSON, 0o600)
		if err := os.Chown(notRoot, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, struct{ what, path, want string }{"owned by nobody", notRoot, "owned by uid 65534, want root"})
	}
	up := mustRegistry(t, "reg.example")
	for _, tc := range cases {
		_, err := authenticator(context.Background(), Options{AuthFile: tc.path}, Endpoint{Host: "reg.example"}, up.Repo("app"))
		if !errors.Is(err, errdefs.ErrFailedPrecondition) || !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want FailedPrecondition naming %s and %q", tc.what, err, tc.path, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("%s: %q prints the file's content", tc.what, err)
		}
		if CheckAuthFile(tc.path) == nil {
			t.Errorf("%s: CheckAuthFile accepts it", tc.what)
		}
	}
	missing := filepath.Join(t.TempDir(), "absent.json")
	a, err := authenticator(context.Background(), Options{AuthFile: missing}, Endpoint{Host: "reg.example"}, up.Repo("app"))
	if err != nil || a != authn.Anonymous {
		t.Errorf("missing auth file: %v, %v; want anonymous", a, err)
	}
	if err := CheckAuthFile(missing); err != nil {
		t.Errorf("CheckAuthFile(missing): %v", err)
	}
}
