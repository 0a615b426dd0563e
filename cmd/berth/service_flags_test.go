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
		"--service-tcp-idle-timeout=5s", "--service-udp-max-flows-per-source=2", "--cluster-dns-max-concurrent=7")
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.config()
	if err != nil {
		t.Fatal(err)
	}
	if l := c.Proxy; l.MaxConns != 10 || l.MaxConnsPerService != 3 || l.TCPIdle != 5*time.Second ||
		l.UDPMaxFlowsPerSource != 2 || l.UDPMaxFlows != 1024 || c.DNSMaxForwards != 7 {
		t.Errorf("config %+v, DNS forwards %d", l, c.DNSMaxForwards)
	}
	f, err = parse("--service-max-connections-per-service=-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.config(); err == nil || !strings.Contains(err.Error(), "--service-max-connections-per-service") {
		t.Errorf("a negative bound: %v; want an error naming its flag", err)
	}
}
