package network

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/store"
)

// hostHostsFile is the host's hosts file, copied for host-network pods.
var hostHostsFile = "/etc/hosts"

// WriteHostname writes the pod's /etc/hostname.
func WriteHostname(path, hostname string) error {
	if err := validateName("hostname", hostname); err != nil {
		return err
	}
	return writePodFile(path, []byte(hostname+"\n"))
}

// WriteHosts writes the pod's /etc/hosts: localhost entries plus one line
// per pod IP naming the hostname, or for a host-network pod the host's own
// hosts file.
func WriteHosts(path, hostname string, ips []net.IP, hostNetwork bool) error {
	if err := validateName("hostname", hostname); err != nil {
		return err
	}
	var b bytes.Buffer
	if hostNetwork {
		host, err := os.ReadFile(hostHostsFile)
		if err != nil {
			return fmt.Errorf("hosts file %s: host file: %w", path, err)
		}
		b.WriteString("# Managed by berth: copy of the host's hosts file (host network).\n")
		b.Write(host)
		return writePodFile(path, b.Bytes())
	}
	b.WriteString("# Managed by berth: pod hosts file.\n")
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	for _, ip := range ips {
		if ip == nil || ip.IsUnspecified() {
			return fmt.Errorf("hosts file %s: ip %q: not a pod address: %w", path, ip, errdefs.ErrInvalidArgument)
		}
		fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
	}
	return writePodFile(path, b.Bytes())
}

// DNS is a pod's resolver configuration.
type DNS struct {
	Servers, Searches, Options []string
}

// WriteResolvConf writes the pod's /etc/resolv.conf from dns, or copies
// hostResolvConf when dns is nil or empty.
func WriteResolvConf(path string, dns *DNS, hostResolvConf string) error {
	if dns == nil || len(dns.Servers)+len(dns.Searches)+len(dns.Options) == 0 {
		host, err := os.ReadFile(hostResolvConf)
		if err != nil {
			return fmt.Errorf("resolv.conf %s: host file: %w", path, err)
		}
		return writePodFile(path, host)
	}
	var b bytes.Buffer
	for i, s := range dns.Servers {
		if net.ParseIP(s) == nil {
			return fmt.Errorf("resolv.conf %s: dns server %d %q: not an IP address: %w", path, i, s, errdefs.ErrInvalidArgument)
		}
		fmt.Fprintf(&b, "nameserver %s\n", s)
	}
	for _, f := range []struct {
		field, keyword string
		values         []string
	}{{"dns search", "search", dns.Searches}, {"dns option", "options", dns.Options}} {
		if len(f.values) == 0 {
			continue
		}
		for i, v := range f.values {
			if v == "" || strings.ContainsAny(v, " \t\r\n#;") {
				return fmt.Errorf("resolv.conf %s: %s %d %q: empty or has blanks or comment marks: %w", path, f.field, i, v, errdefs.ErrInvalidArgument)
			}
		}
		fmt.Fprintf(&b, "%s %s\n", f.keyword, strings.Join(f.values, " "))
	}
	return writePodFile(path, b.Bytes())
}

func validateName(field, v string) error {
	if v == "" || len(v) > maxHostnameLen || strings.ContainsAny(v, " \t\r\n\x00/") {
		return fmt.Errorf("%s %q: empty, longer than %d bytes or has blanks: %w", field, v, maxHostnameLen, errdefs.ErrInvalidArgument)
	}
	return nil
}

// writePodFile writes a per-pod file readable by every container user, with
// store.WriteFileVolatile: readers see the old or the new content, never a
// part; it is not flushed, the pod's directory being under the state
// directory, which a reboot clears. A file already bind-mounted somewhere
// keeps its old content there.
func writePodFile(path string, data []byte) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("pod file %q: not an absolute path: %w", path, errdefs.ErrInvalidArgument)
	}
	if err := store.WriteFileVolatile(path, data, 0o644); err != nil {
		return fmt.Errorf("pod file: %w", err)
	}
	return nil
}
