package main

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// The bounds' flags reach the agent's configuration; a negative one is
// refused, naming its flag.
func TestServiceLimitFlags(t *testing.T) {
	parse := func(args ...string) (serviceFlags, error) {
		var f serviceFlags
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		f.bind(fs)
		return f, fs.Parse(args)
	}
	f, err := parse("--service-max-connections=10", "--service-max-connections-per-service=3",
		"--service-tcp-idle-timeout=5s", "--service-udp-max-flows-per-source=2", "--cluster-dns-max-concurrent=7",
		"--service-max-connections-per-source=2", "--service-tcp-first-byte-timeout=3s", "--service-tcp-half-closed-timeout=4s")
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.config()
	if err != nil {
		t.Fatal(err)
	}
	if l := c.Proxy; l.MaxConns != 10 || l.MaxConnsPerService != 3 || l.TCPIdle != 5*time.Second ||
		l.UDPMaxFlowsPerSource != 2 || l.UDPMaxFlows != 1024 || c.DNSMaxForwards != 7 ||
		l.MaxConnsPerSource != 2 || l.TCPFirstByte != 3*time.Second || l.TCPHalfClosed != 4*time.Second {
		t.Errorf("config %+v, DNS forwards %d", l, c.DNSMaxForwards)
	}
	for _, arg := range []string{"--service-max-connections-per-service=-1", "--service-max-connections-per-source=-1", "--service-tcp-first-byte-timeout=-1s", "--service-tcp-half-closed-timeout=-1s"} {
		flag, _, _ := strings.Cut(arg, "=")
		f, err = parse(arg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.config(); err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("a negative %s: %v; want an error naming it", flag, err)
		}
	}
}

// --service-interface names a link and the agent's nftables table: a
// name nft cannot take is refused, naming the flag.
func TestServiceInterfaceFlag(t *testing.T) {
	for name, ok := range map[string]bool{
		"berth-svc0": true, "bte2esvc-b": true, "svc_0.a": true, "s": true,
		"": false, "0svc": false, "-svc": false, "svc:0": false, "svc 0": false, "a-name-longer-15": false,
	} {
		var f serviceFlags
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		f.bind(fs)
		if err := fs.Parse([]string{"--service-interface=" + name}); err != nil {
			t.Fatal(err)
		}
		_, err := f.config()
		if ok != (err == nil) || (err != nil && !strings.Contains(err.Error(), "--service-interface")) {
			t.Errorf("%q: %v; want ok %v", name, err, ok)
		}
	}
}
