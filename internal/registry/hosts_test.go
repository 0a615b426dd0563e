package registry

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/berth-dev/berth/internal/errdefs"
)

func writeHostsFile(t *testing.T, dir, host, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, host), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, host, "hosts.toml"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestEndpointsOrderAndDefaults(t *testing.T) {
	dir := t.TempDir()
	writeHostsFile(t, dir, "reg.example", `
server = "https://up.example"
ca = "/etc/ca.pem"
[host."http://m2.example:5000"]
  capabilities = ["pull"]
[host."https://m1.example/prefix"]
  skip_verify = true
[host."https://m3.example/custom"]
  override_path = true
  [host."https://m3.example/custom".rewrite]
    "^library/(.*)$" = "hub/$1"
`)
	eps, err := Endpoints(dir, "reg.example", "reg.example")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"http://m2.example:5000/v2", "https://m1.example/prefix/v2", "https://m3.example/custom", "https://up.example/v2"}
	if len(eps) != len(want) {
		t.Fatalf("got %d endpoints, want %d", len(eps), len(want))
	}
	for i, ep := range eps {
		if ep.URL() != want[i] {
			t.Errorf("endpoint %d = %s, want %s", i, ep.URL(), want[i])
		}
	}
	if eps[0].Resolve || !eps[0].Pull || !eps[1].SkipVerify || eps[3].Mirror || !eps[0].Mirror || eps[3].CAFiles[0] != "/etc/ca.pem" {
		t.Errorf("settings lost: %+v", eps)
	}
	if got := applyRewrites(eps[2].Rewrites, "library/busybox"); got != "hub/busybox" {
		t.Errorf("rewrite = %q", got)
	}
}

func TestEndpointsWithoutConfig(t *testing.T) {
	for host, want := range map[string]string{
		"127.0.0.1:5000": "http://127.0.0.1:5000/v2",
		"localhost:1":    "http://localhost:1/v2",
		"[::1]:5000":     "http://[::1]:5000/v2",
		"reg.example":    "https://reg.example/v2",
		"10.0.0.1:5000":  "https://10.0.0.1:5000/v2",
	} {
		eps, err := Endpoints(t.TempDir(), host, host)
		if err != nil || len(eps) != 1 || eps[0].URL() != want {
			t.Errorf("%s: %v %+v, want %s", host, err, eps, want)
		}
	}
}

func TestEndpointsDefaultDirAndErrors(t *testing.T) {
	dir := t.TempDir()
	writeHostsFile(t, dir, "_default", "server = \"https://ignored.example\"\n[host.\"http://mirror.example\"]\n")
	eps, err := Endpoints(dir, "any.example", "any.example")
	if err != nil || len(eps) != 2 || eps[1].URL() != "https://any.example/v2" {
		t.Errorf("_default: %v %+v", err, eps)
	}
	for name, content := range map[string]string{
		"unknown key":    "mirrors = 1\n",
		"bad url":        "server = \"ftp://x\"\n",
		"bad capability": "[host.\"http://m\"]\ncapabilities = [\"fly\"]\n",
		"bad rewrite":    "[rewrite]\n\"(\" = \"x\"\n",
		"not toml":       "server = \n",
	} {
		writeHostsFile(t, dir, "bad.example", content)
		if _, err := Endpoints(dir, "bad.example", "bad.example"); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%s: err = %v, want InvalidArgument", name, err)
		}
	}
}
