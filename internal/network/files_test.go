package network

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-dev/berth/internal/errdefs"
)

func readString(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestWriteHostname(t *testing.T) {
	p := filepath.Join(t.TempDir(), "hostname")
	if err := WriteHostname(p, "web-1"); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, p); got != "web-1\n" {
		t.Errorf("hostname file = %q", got)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v", st.Mode().Perm())
	}
	if err := WriteHostname(p, "bad name"); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("bad hostname: %v", err)
	}
}

func TestWriteHosts(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "hosts")
	ips := []net.IP{net.ParseIP("10.88.0.5"), net.ParseIP("fd00::5")}
	if err := WriteHosts(p, "web-1", ips, false); err != nil {
		t.Fatal(err)
	}
	got := readString(t, p)
	for _, want := range []string{"127.0.0.1\tlocalhost\n", "::1\tlocalhost ip6-localhost ip6-loopback\n", "10.88.0.5\tweb-1\n", "fd00::5\tweb-1\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("hosts lacks %q:\n%s", want, got)
		}
	}

	hostFile := filepath.Join(dir, "host-hosts")
	writeFile(t, hostFile, "192.0.2.1 myhost\n")
	old := hostHostsFile
	hostHostsFile = hostFile
	t.Cleanup(func() { hostHostsFile = old })
	if err := WriteHosts(p, "web-1", ips, true); err != nil {
		t.Fatal(err)
	}
	got = readString(t, p)
	if !strings.HasSuffix(got, "192.0.2.1 myhost\n") || strings.Contains(got, "10.88.0.5") {
		t.Errorf("host-network hosts = %q", got)
	}
	if err := WriteHosts(p, "web-1", []net.IP{nil}, false); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("nil ip: %v", err)
	}
}

func TestWriteResolvConf(t *testing.T) {
	dir := t.TempDir()
	host := filepath.Join(dir, "host-resolv.conf")
	writeFile(t, host, "nameserver 192.0.2.53\n")
	p := filepath.Join(dir, "resolv.conf")

	if err := WriteResolvConf(p, nil, host); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, p); got != "nameserver 192.0.2.53\n" {
		t.Errorf("copied resolv.conf = %q", got)
	}
	dns := &DNS{Servers: []string{"10.96.0.10", "fd00::10"}, Searches: []string{"ns.svc.cluster.local", "svc.cluster.local"}, Options: []string{"ndots:5"}}
	if err := WriteResolvConf(p, dns, host); err != nil {
		t.Fatal(err)
	}
	want := "nameserver 10.96.0.10\nnameserver fd00::10\nsearch ns.svc.cluster.local svc.cluster.local\noptions ndots:5\n"
	if got := readString(t, p); got != want {
		t.Errorf("resolv.conf = %q, want %q", got, want)
	}
	if err := WriteResolvConf(p, &DNS{}, host); err != nil || readString(t, p) != "nameserver 192.0.2.53\n" {
		t.Errorf("empty DNS should copy the host file: %v", err)
	}
	for name, bad := range map[string]*DNS{
		"server":  {Servers: []string{"dns.example"}},
		"search":  {Searches: []string{"a\nnameserver 1.2.3.4"}},
		"options": {Options: []string{""}},
	} {
		if err := WriteResolvConf(p, bad, host); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("bad %s: %v", name, err)
		}
	}
	if err := WriteResolvConf(p, nil, filepath.Join(dir, "missing")); err == nil {
		t.Error("missing host resolv.conf: no error")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}
