package agent

import (
	"bufio"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/berth-dev/berth/internal/agent/podspec"
)

// node is what the agent knows about its machine: the downward API's
// hostIP and allocatable, and the DNS every pod starts from.
type node struct {
	hostIPs     []string
	allocatable podspec.Allocatable
	dns         podspec.DNS
}

// readNode reads the host's addresses, CPUs, memory and resolv.conf. What
// cannot be read stays empty: a pod's hostIP is then empty too.
func readNode() node {
	n := node{hostIPs: hostIPs()}
	n.allocatable.MilliCPU = int64(runtime.NumCPU()) * 1000
	n.allocatable.MemoryBytes = memTotal()
	n.dns = hostDNS("/etc/resolv.conf", "/run/systemd/resolve/resolv.conf")
	return n
}

// hostDNS reads the host's resolv.conf. When it names only loopback
// servers (systemd-resolved's stub at 127.0.0.53, unreachable from a pod's
// network namespace), the upstream file systemd-resolved keeps is used
// instead when there is one, as kubelet's setups do.
func hostDNS(path, upstream string) podspec.DNS {
	dns := readResolvConf(path)
	if len(dns.Servers) > 0 && allLoopback(dns.Servers) {
		if up := readResolvConf(upstream); len(up.Servers) > 0 {
			return up
		}
	}
	return dns
}

func readResolvConf(path string) podspec.DNS {
	f, err := os.Open(path)
	if err != nil {
		return podspec.DNS{}
	}
	defer f.Close()
	dns, err := podspec.ParseResolvConf(f)
	if err != nil {
		return podspec.DNS{}
	}
	return dns
}

func allLoopback(servers []string) bool {
	for _, s := range servers {
		if ip := net.ParseIP(s); ip == nil || !ip.IsLoopback() {
			return false
		}
	}
	return true
}

// hostIPs lists the machine's global unicast addresses, IPv4 first, as the
// node's addresses (kubelet takes the node's InternalIP).
func hostIPs() []string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var v4, v6 []string
	for _, addr := range addrs {
		ipnet, ok := addr.(*net.IPNet)
		if !ok || !ipnet.IP.IsGlobalUnicast() {
			continue
		}
		if ipnet.IP.To4() != nil {
			v4 = append(v4, ipnet.IP.String())
		} else {
			v6 = append(v6, ipnet.IP.String())
		}
	}
	return append(v4, v6...)
}

// memTotal is MemTotal of /proc/meminfo in bytes, 0 when unknown.
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err == nil {
				return kb * 1024
			}
		}
	}
	return 0
}
