package agent

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestHostDNSSkipsTheSystemdResolvedStub(t *testing.T) {
	dir := t.TempDir()
	stub := filepath.Join(dir, "resolv.conf")
	upstream := filepath.Join(dir, "upstream.conf")
	write := func(path, content string) {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(stub, "nameserver 127.0.0.53\nsearch corp.example\noptions edns0\n")
	write(upstream, "nameserver 192.0.2.53\nsearch corp.example\n")
	if got := hostDNS(stub, upstream).Servers; !slices.Equal(got, []string{"192.0.2.53"}) {
		t.Errorf("servers %v with a stub resolv.conf, want the upstream 192.0.2.53", got)
	}
	if got := hostDNS(stub, filepath.Join(dir, "missing")).Servers; !slices.Equal(got, []string{"127.0.0.53"}) {
		t.Errorf("servers %v without an upstream file, want the stub kept", got)
	}
	write(stub, "nameserver 198.51.100.1\n")
	if got := hostDNS(stub, upstream).Servers; !slices.Equal(got, []string{"198.51.100.1"}) {
		t.Errorf("servers %v, want /etc/resolv.conf's own when it is not a stub", got)
	}
}
