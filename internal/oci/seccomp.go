package oci

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/berth-dev/berth/internal/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// seccompChoice is what a security context asks for: no filter, the
// built-in RuntimeDefault profile, or a profile file on the host.
type seccompChoice struct {
	kind  runtimeapi.SecurityProfile_ProfileType
	field string // the CRI field that named it, for errors
	path  string // Localhost only
}

// requestedSeccomp reads the seccomp field, falling back to the deprecated
// seccomp_profile_path ("runtime/default", "docker/default", "unconfined",
// "localhost/<path>") when the field is unset. Nothing requested is
// Unconfined, as for containerd and CRI-O.
func requestedSeccomp(sc *runtimeapi.LinuxContainerSecurityContext) (seccompChoice, error) {
	if p := sc.GetSeccomp(); p != nil {
		choice := seccompChoice{kind: p.GetProfileType(), field: "seccomp", path: p.GetLocalhostRef()}
		if choice.kind == runtimeapi.SecurityProfile_Localhost {
			choice.field = "seccomp.localhost_ref"
		}
		return choice, nil
	}
	legacy := sc.GetSeccompProfilePath()
	choice := seccompChoice{kind: runtimeapi.SecurityProfile_Unconfined, field: "seccomp_profile_path"}
	switch {
	case legacy == "" || legacy == "unconfined":
	case legacy == "runtime/default" || legacy == "docker/default":
		choice.kind = runtimeapi.SecurityProfile_RuntimeDefault
	case strings.HasPrefix(legacy, "localhost/"):
		choice.kind, choice.path = runtimeapi.SecurityProfile_Localhost, strings.TrimPrefix(legacy, "localhost/")
	default:
		return choice, fmt.Errorf("security context: seccomp_profile_path %q: unknown profile: %w", legacy, errdefs.ErrInvalidArgument)
	}
	return choice, nil
}

// containerSeccomp is the seccomp filter of a container whose bounding set
// is caps, or nil for none. Privileged containers always run unfiltered,
// whatever profile they name (as in containerd and CRI-O, and as critest's
// "ignore a seccomp profile ... when privileged" spec requires); only a
// malformed seccomp_profile_path string is still refused.
func containerSeccomp(sc *runtimeapi.LinuxContainerSecurityContext, caps []string) (*specs.LinuxSeccomp, error) {
	choice, err := requestedSeccomp(sc)
	if err != nil || sc.GetPrivileged() {
		return nil, err
	}
	switch choice.kind {
	case runtimeapi.SecurityProfile_RuntimeDefault:
		return RuntimeDefaultSeccomp(caps), nil
	case runtimeapi.SecurityProfile_Localhost:
		return LoadSeccompProfile(choice.field, choice.path, caps)
	default:
		return nil, nil
	}
}

// LoadSeccompProfile reads a seccomp profile in the Docker/OCI JSON format
// from an absolute host path and converts it for a container holding caps.
// field names the CRI field in errors.
func LoadSeccompProfile(field, file string, caps []string) (*specs.LinuxSeccomp, error) {
	if file == "" || !path.IsAbs(file) {
		return nil, fmt.Errorf("security context: %s: seccomp profile %q: not an absolute path: %w", field, file, errdefs.ErrInvalidArgument)
	}
	data, err := readProfileFile(file)
	if err != nil {
		return nil, fmt.Errorf("security context: %s: seccomp profile %q: %v: %w", field, file, err, errdefs.ErrInvalidArgument)
	}
	profile, err := ConvertSeccompProfile(data, caps, runtime.GOARCH, hostKernelVersion())
	if err != nil {
		return nil, fmt.Errorf("security context: %s: seccomp profile %q: %w", field, file, err)
	}
	return profile, nil
}

// maxProfileBytes bounds a seccomp profile file; Docker's default profile
// is about 20 KiB.
const maxProfileBytes = 1 << 20

// readProfileFile reads a profile the CRI request names on the host: a
// regular file (not a FIFO or a device, which could block or never end)
// of at most maxProfileBytes.
func readProfileFile(file string) ([]byte, error) {
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%v)", info.Mode().Type())
	}
	data, err := io.ReadAll(io.LimitReader(f, maxProfileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxProfileBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxProfileBytes)
	}
	return data, nil
}

// seccompProfileFile is the Docker seccomp profile format; an OCI
// linux.seccomp object is a subset of it.
type seccompProfileFile struct {
	DefaultAction    specs.LinuxSeccompAction `json:"defaultAction"`
	DefaultErrnoRet  *uint                    `json:"defaultErrnoRet,omitempty"`
	Architectures    []specs.Arch             `json:"architectures,omitempty"`
	ArchMap          []seccompArchMap         `json:"archMap,omitempty"`
	Flags            []specs.LinuxSeccompFlag `json:"flags,omitempty"`
	ListenerPath     string                   `json:"listenerPath,omitempty"`
	ListenerMetadata string                   `json:"listenerMetadata,omitempty"`
	Syscalls         []seccompFileSyscall     `json:"syscalls,omitempty"`
}

type seccompArchMap struct {
	Arch    specs.Arch   `json:"architecture"`
	SubArch []specs.Arch `json:"subArchitectures"`
}

type seccompFileSyscall struct {
	Name     string                   `json:"name,omitempty"`
	Names    []string                 `json:"names,omitempty"`
	Action   specs.LinuxSeccompAction `json:"action"`
	ErrnoRet *uint                    `json:"errnoRet,omitempty"`
	Args     []specs.LinuxSeccompArg  `json:"args,omitempty"`
	Includes seccompCondition         `json:"includes,omitempty"`
	Excludes seccompCondition         `json:"excludes,omitempty"`
}

// seccompCondition limits a rule to Go architectures ("amd64", "arm64"),
// capabilities, and a minimum kernel ("5.8").
type seccompCondition struct {
	Arches    []string `json:"arches,omitempty"`
	Caps      []string `json:"caps,omitempty"`
	MinKernel string   `json:"minKernel,omitempty"`
}

// ConvertSeccompProfile converts a Docker/OCI seccomp JSON profile into the
// runtime-spec form for a container holding caps on goarch and a host
// kernel of the given (major, minor), resolving archMap, includes and
// excludes. Errors wrap ErrInvalidArgument.
func ConvertSeccompProfile(data []byte, caps []string, goarch string, kernel [2]int) (*specs.LinuxSeccomp, error) {
	var file seccompProfileFile
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, fmt.Errorf("json: %v: %w", err, errdefs.ErrInvalidArgument)
	}
	if !knownSeccompAction(file.DefaultAction) {
		return nil, fmt.Errorf("defaultAction %q: unknown: %w", file.DefaultAction, errdefs.ErrInvalidArgument)
	}
	out := &specs.LinuxSeccomp{
		DefaultAction: file.DefaultAction, DefaultErrnoRet: file.DefaultErrnoRet,
		Architectures: profileArchitectures(file, goarch), Flags: file.Flags,
		ListenerPath: file.ListenerPath, ListenerMetadata: file.ListenerMetadata,
	}
	held := capabilitySet(caps)
	for i, rule := range file.Syscalls {
		names := rule.Names
		if rule.Name != "" {
			names = append([]string{rule.Name}, names...)
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("syscalls[%d]: no names: %w", i, errdefs.ErrInvalidArgument)
		}
		if !knownSeccompAction(rule.Action) {
			return nil, fmt.Errorf("syscalls[%d] %s: action %q: unknown: %w", i, names[0], rule.Action, errdefs.ErrInvalidArgument)
		}
		include, err := ruleApplies(rule, held, goarch, kernel)
		if err != nil {
			return nil, fmt.Errorf("syscalls[%d] %s: %w", i, names[0], err)
		}
		if include {
			out.Syscalls = append(out.Syscalls, specs.LinuxSyscall{
				Names: names, Action: rule.Action, ErrnoRet: rule.ErrnoRet, Args: rule.Args,
			})
		}
	}
	return out, nil
}

// ruleApplies: every "includes" condition holds and no "excludes" one does.
func ruleApplies(rule seccompFileSyscall, held map[string]bool, goarch string, kernel [2]int) (bool, error) {
	inc, exc := rule.Includes, rule.Excludes
	for _, c := range inc.Caps {
		if !held[strings.ToUpper(c)] {
			return false, nil
		}
	}
	for _, c := range exc.Caps {
		if held[strings.ToUpper(c)] {
			return false, nil
		}
	}
	if len(inc.Arches) > 0 && !contains(inc.Arches, goarch) {
		return false, nil
	}
	if contains(exc.Arches, goarch) {
		return false, nil
	}
	for _, cond := range []struct {
		min  string
		want bool
	}{{inc.MinKernel, true}, {exc.MinKernel, false}} {
		if cond.min == "" {
			continue
		}
		min, err := parseKernelVersion(cond.min)
		if err != nil {
			return false, err
		}
		if kernelAtLeast(kernel, min) != cond.want {
			return false, nil
		}
	}
	return true, nil
}

// profileArchitectures picks the archMap entry of goarch's native seccomp
// architecture (with its sub-architectures), else the plain list.
func profileArchitectures(file seccompProfileFile, goarch string) []specs.Arch {
	if len(file.ArchMap) == 0 {
		return file.Architectures
	}
	native := nativeArchitectures(goarch)
	if len(native) == 0 {
		return nil
	}
	for _, m := range file.ArchMap {
		if m.Arch == native[0] {
			return append([]specs.Arch{m.Arch}, m.SubArch...)
		}
	}
	return nil
}

func knownSeccompAction(a specs.LinuxSeccompAction) bool {
	switch a {
	case specs.ActKill, specs.ActKillProcess, specs.ActKillThread, specs.ActTrap, specs.ActErrno,
		specs.ActTrace, specs.ActAllow, specs.ActLog, specs.ActNotify:
		return true
	}
	return false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// parseKernelVersion reads "major.minor" from a version such as "5.8" or
// a release such as "6.1.0-18-amd64".
func parseKernelVersion(v string) ([2]int, error) {
	major, rest, _ := strings.Cut(v, ".")
	minorDigits := strings.TrimLeft(rest, "0123456789")
	minor := strings.TrimSuffix(rest, minorDigits)
	a, errA := strconv.Atoi(major)
	b, errB := strconv.Atoi(minor)
	if errA != nil || errB != nil {
		return [2]int{}, fmt.Errorf("kernel version %q: not major.minor: %w", v, errdefs.ErrInvalidArgument)
	}
	return [2]int{a, b}, nil
}

func kernelAtLeast(have, min [2]int) bool {
	return have[0] > min[0] || (have[0] == min[0] && have[1] >= min[1])
}

// hostKernelVersion is the running kernel's (major, minor), or (0, 0) when
// uname cannot be read (then no minKernel rule applies).
func hostKernelVersion() [2]int {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return [2]int{}
	}
	v, err := parseKernelVersion(unix.ByteSliceToString(u.Release[:]))
	if err != nil {
		return [2]int{}
	}
	return v
}
