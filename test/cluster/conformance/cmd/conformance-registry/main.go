// Command conformance-registry serves the node conformance images by hand:
// it builds them (from the programs make e2e-bin and make
// conformance-deps put in bin/), starts Debian's docker-registry on
// 127.0.0.1 in -dir, pushes them, writes berth's hosts.toml into -hosts,
// prints the registry's address and serves until SIGINT or SIGTERM.
// test/cluster does the same in Go; this is for a cluster brought up by
// hand.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/berth-dev/berth/test/cluster/conformance"
	"github.com/berth-dev/berth/test/registry"
)

func main() {
	dir := flag.String("dir", "", "registry directory (storage, config, log); must exist")
	hosts := flag.String("hosts", "", "berth's [registry] hosts_dir to write registry.k8s.io/hosts.toml into")
	kubeBin := flag.String("kube-bin", "bin/kube-1.37", "where make e2e-bin put agnhost")
	deps := flag.String("deps", "bin/conformance-deps", "where make conformance-deps put the other programs")
	flag.Parse()
	if *dir == "" || *hosts == "" {
		fmt.Fprintln(os.Stderr, "conformance-registry: -dir and -hosts are required")
		os.Exit(2)
	}
	if err := run(*dir, *hosts, *kubeBin, *deps); err != nil {
		fmt.Fprintln(os.Stderr, "conformance-registry:", err)
		os.Exit(1)
	}
}

func run(dir, hosts, kubeBin, deps string) error {
	start := time.Now()
	images, err := conformance.BuildAll(conformance.HostPrograms(kubeBin, deps))
	if err != nil {
		return err
	}
	reg, err := registry.Start(dir, registry.Options{})
	if err != nil {
		return err
	}
	defer reg.Stop() //nolint:errcheck // exiting anyway
	if err := conformance.Push(reg, images); err != nil {
		return err
	}
	if err := conformance.WriteHosts(hosts, reg.Host); err != nil {
		return err
	}
	fmt.Printf("registry %s (pid %d) serves %d images; built and pushed in %s\n",
		reg.Host, reg.PID(), len(images), time.Since(start).Round(time.Millisecond))
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	<-sigs
	return reg.Stop()
}
