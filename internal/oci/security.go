package oci

import (
	"fmt"
	"strings"

	"github.com/berth-dev/berth/internal/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// DefaultCapabilities is the capability set of an unprivileged container
// (bounding, effective and permitted; never inheritable or ambient).
var DefaultCapabilities = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
	"CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
	"CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
}

// allCapabilities lists capabilities 0..40 in kernel order: what runc 1.1
// knows and what "ALL" and privileged mean.
var allCapabilities = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
	"CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE",
	"CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK", "CAP_IPC_OWNER",
	"CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE", "CAP_SYS_PACCT",
	"CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_RESOURCE", "CAP_SYS_TIME",
	"CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE", "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL",
	"CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM",
	"CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF", "CAP_CHECKPOINT_RESTORE",
}

// DefaultMaskedPaths and DefaultReadonlyPaths apply unless the request
// names its own (kubelet sends them; an empty list means "Unmasked" procMount
// is not distinguishable on the wire, so empty falls back to the defaults).
var (
	DefaultMaskedPaths = []string{
		"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
		"/sys/firmware", "/sys/devices/virtual/powercap",
	}
	DefaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// containerCapabilities computes the capability sets. Privileged gets every
// capability the host's bounding set holds. Otherwise the default set with, in this order: add "ALL",
// drop "ALL", the named adds, the named drops (so drop ALL + add X gives
// only X, and add ALL + drop X all but X). Ambient adds go into every set.
func containerCapabilities(sc *runtimeapi.LinuxContainerSecurityContext) (*specs.LinuxCapabilities, error) {
	if sc.GetPrivileged() {
		return capabilitySets(hostCapabilities(), nil), nil
	}
	requested := sc.GetCapabilities()
	adds, addAll, err := normalizeCapabilities("add_capabilities", requested.GetAddCapabilities())
	if err != nil {
		return nil, err
	}
	drops, dropAll, err := normalizeCapabilities("drop_capabilities", requested.GetDropCapabilities())
	if err != nil {
		return nil, err
	}
	ambient, ambientAll, err := normalizeCapabilities("add_ambient_capabilities", requested.GetAddAmbientCapabilities())
	if err != nil {
		return nil, err
	}
	if ambientAll {
		return nil, fmt.Errorf("security context: add_ambient_capabilities: ALL: not allowed: %w", errdefs.ErrInvalidArgument)
	}
	set := capabilitySet(DefaultCapabilities)
	if addAll {
		set = capabilitySet(hostCapabilities())
	}
	if dropAll {
		set = map[string]bool{}
	}
	for _, c := range append(adds, ambient...) {
		set[c] = true
	}
	for _, c := range drops {
		delete(set, c)
	}
	return capabilitySets(orderedCapabilities(set), orderedCapabilities(capabilitySet(ambient))), nil
}

// hostCapabilities is allCapabilities limited to berth's own bounding set:
// what "ALL" and privileged can actually grant (runc refuses a set beyond
// it, e.g. on hosts that drop CAP_SYS_RESOURCE from every process).
func hostCapabilities() []string {
	var caps []string
	for i, c := range allCapabilities {
		if held, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(i), 0, 0, 0); err == nil && held == 1 {
			caps = append(caps, c)
		}
	}
	return caps
}

func capabilitySets(caps, ambient []string) *specs.LinuxCapabilities {
	return &specs.LinuxCapabilities{
		Bounding:    caps,
		Effective:   append([]string(nil), caps...),
		Permitted:   append([]string(nil), caps...),
		Inheritable: ambient,
		Ambient:     append([]string(nil), ambient...),
	}
}

// normalizeCapabilities accepts "NET_ADMIN", "net_admin" or "CAP_NET_ADMIN";
// all reports an "ALL" entry.
func normalizeCapabilities(field string, names []string) (caps []string, all bool, err error) {
	known := capabilitySet(allCapabilities)
	for _, name := range names {
		upper := strings.ToUpper(strings.TrimSpace(name))
		if upper == "ALL" {
			all = true
			continue
		}
		if !strings.HasPrefix(upper, "CAP_") {
			upper = "CAP_" + upper
		}
		if !known[upper] {
			return nil, false, fmt.Errorf("security context: %s: capability %q: unknown: %w", field, name, errdefs.ErrInvalidArgument)
		}
		caps = append(caps, upper)
	}
	return caps, all, nil
}

func capabilitySet(caps []string) map[string]bool {
	set := make(map[string]bool, len(caps))
	for _, c := range caps {
		set[c] = true
	}
	return set
}

// orderedCapabilities lists set in kernel order (stable specs, readable diffs).
func orderedCapabilities(set map[string]bool) []string {
	var caps []string
	for _, c := range allCapabilities {
		if set[c] {
			caps = append(caps, c)
		}
	}
	return caps
}

// Kubelet sends both lists empty for procMount: Unmasked, which Kubernetes
// allows only with hostUsers: false; protobuf cannot tell empty from
// unset, so berth reads two empty lists as Unmasked only for a container in
// a pod's user namespace (its root is no root of the host's), and as the
// defaults elsewhere (a CRI client that sends none gets a masked /proc).
func maskedAndReadonlyPaths(sc *runtimeapi.LinuxContainerSecurityContext, inUserns bool) (masked, readonly []string) {
	if inUserns && len(sc.GetMaskedPaths()) == 0 && len(sc.GetReadonlyPaths()) == 0 {
		return []string{}, []string{}
	}
	masked, readonly = DefaultMaskedPaths, DefaultReadonlyPaths
	if len(sc.GetMaskedPaths()) > 0 {
		masked = sc.GetMaskedPaths()
	}
	if len(sc.GetReadonlyPaths()) > 0 {
		readonly = sc.GetReadonlyPaths()
	}
	return append([]string(nil), masked...), append([]string(nil), readonly...)
}
