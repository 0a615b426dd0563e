package oci

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// allowsUnconditionally reports whether p has an argument-free allow rule
// naming name.
func allowsUnconditionally(p *specs.LinuxSeccomp, name string) bool {
	for _, rule := range p.Syscalls {
		if rule.Action == specs.ActAllow && len(rule.Args) == 0 && contains(rule.Names, name) {
			return true
		}
	}
	return false
}

func rulesFor(p *specs.LinuxSeccomp, name string) []specs.LinuxSyscall {
	var out []specs.LinuxSyscall
	for _, rule := range p.Syscalls {
		if contains(rule.Names, name) {
			out = append(out, rule)
		}
	}
	return out
}

const denyMkdirProfile = `{
  "defaultAction": "SCMP_ACT_ALLOW",
  "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]
}`

func TestSeccompProfileSelection(t *testing.T) {
	profileFile := filepath.Join(t.TempDir(), "deny-mkdir.json")
	if err := os.WriteFile(profileFile, []byte(denyMkdirProfile), 0o644); err != nil {
		t.Fatal(err)
	}
	profile := func(kind runtimeapi.SecurityProfile_ProfileType, ref string) *runtimeapi.SecurityProfile {
		return &runtimeapi.SecurityProfile{ProfileType: kind, LocalhostRef: ref}
	}
	for _, tc := range []struct {
		name string
		sc   *runtimeapi.LinuxContainerSecurityContext
		want string // "none", "default" or "localhost"
	}{
		{"nothing requested", nil, "none"},
		{"unconfined", &runtimeapi.LinuxContainerSecurityContext{Seccomp: profile(runtimeapi.SecurityProfile_Unconfined, "")}, "none"},
		{"runtime default", &runtimeapi.LinuxContainerSecurityContext{Seccomp: profile(runtimeapi.SecurityProfile_RuntimeDefault, "")}, "default"},
		{"localhost", &runtimeapi.LinuxContainerSecurityContext{Seccomp: profile(runtimeapi.SecurityProfile_Localhost, profileFile)}, "localhost"},
		{"field wins over legacy", &runtimeapi.LinuxContainerSecurityContext{SeccompProfilePath: "runtime/default",
			Seccomp: profile(runtimeapi.SecurityProfile_Unconfined, "")}, "none"},
		{"legacy runtime/default", &runtimeapi.LinuxContainerSecurityContext{SeccompProfilePath: "runtime/default"}, "default"},
		{"legacy docker/default", &runtimeapi.LinuxContainerSecurityContext{SeccompProfilePath: "docker/default"}, "default"},
		{"legacy unconfined", &runtimeapi.LinuxContainerSecurityContext{SeccompProfilePath: "unconfined"}, "none"},
		{"legacy localhost", &runtimeapi.LinuxContainerSecurityContext{SeccompProfilePath: "localhost/" + profileFile}, "localhost"},
		{"privileged runtime default", &runtimeapi.LinuxContainerSecurityContext{Privileged: true,
			Seccomp: profile(runtimeapi.SecurityProfile_RuntimeDefault, "")}, "none"},
		{"privileged localhost", &runtimeapi.LinuxContainerSecurityContext{Privileged: true,
			Seccomp: profile(runtimeapi.SecurityProfile_Localhost, profileFile)}, "none"},
		{"zero-value profile is runtime default", &runtimeapi.LinuxContainerSecurityContext{Seccomp: &runtimeapi.SecurityProfile{}}, "default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := containerSeccomp(tc.sc, DefaultCapabilities)
			if err != nil {
				t.Fatal(err)
			}
			kind := "none"
			switch {
			case got == nil:
			case got.DefaultAction == specs.ActErrno && allowsUnconditionally(got, "read"):
				kind = "default"
			case got.DefaultAction == specs.ActAllow && len(rulesFor(got, "mkdir")) == 1:
				kind = "localhost"
			default:
				kind = "unrecognised"
			}
			if kind != tc.want {
				t.Fatalf("profile %s (%+v), want %s", kind, got, tc.want)
			}
		})
	}
}

func TestSeccompProfileErrors(t *testing.T) {
	dir := t.TempDir()
	invalid := filepath.Join(dir, "invalid.json")
	if err := os.WriteFile(invalid, []byte(`{"defaultAction": "SCMP_ACT_MAYBE"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	notJSON := filepath.Join(dir, "garbage.json")
	if err := os.WriteFile(notJSON, []byte(`defaultAction: allow`), 0o644); err != nil {
		t.Fatal(err)
	}
	localhost := func(ref string) *runtimeapi.LinuxContainerSecurityContext {
		return &runtimeapi.LinuxContainerSecurityContext{Seccomp: &runtimeapi.SecurityProfile{
			ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: ref}}
	}
	for name, sc := range map[string]*runtimeapi.LinuxContainerSecurityContext{
		"relative path":   localhost("profiles/x.json"),
		"empty path":      localhost(""),
		"missing file":    localhost(filepath.Join(dir, "missing.json")),
		"unknown action":  localhost(invalid),
		"not json":        localhost(notJSON),
		"legacy relative": {SeccompProfilePath: "localhost/x.json"},
		"legacy unknown":  {SeccompProfilePath: "strict"},
	} {
		_, err := containerSeccomp(sc, DefaultCapabilities)
		if !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%s: err = %v, want InvalidArgument", name, err)
		}
	}
	_, err := containerSeccomp(localhost(filepath.Join(dir, "missing.json")), nil)
	if err == nil || !containsAll(err.Error(), "seccomp.localhost_ref", "missing.json") {
		t.Errorf("missing file: err = %v, want it to name the field and the path", err)
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func TestRuntimeDefaultSeccomp(t *testing.T) {
	p := RuntimeDefaultSeccomp(DefaultCapabilities)
	if p.DefaultAction != specs.ActErrno || p.DefaultErrnoRet != nil {
		t.Fatalf("default action %s errno %v, want SCMP_ACT_ERRNO (EPERM in runc)", p.DefaultAction, p.DefaultErrnoRet)
	}
	if runtime.GOARCH == "amd64" && !reflect.DeepEqual(p.Architectures, []specs.Arch{specs.ArchX86_64, specs.ArchX86, specs.ArchX32}) {
		t.Errorf("architectures = %v", p.Architectures)
	}
	for _, name := range []string{"read", "execve", "mkdir", "socket", "chown", "setuid", "capset", "chroot"} {
		if !allowsUnconditionally(p, name) {
			t.Errorf("%s: not allowed", name)
		}
	}
	for _, name := range []string{"mount", "umount2", "unshare", "setns", "keyctl", "add_key", "request_key",
		"ptrace", "init_module", "reboot", "clock_settime", "bpf", "perf_event_open", "kexec_load", "personality", "clone",
		"io_uring_setup", "userfaultfd"} {
		if allowsUnconditionally(p, name) {
			t.Errorf("%s: allowed without conditions", name)
		}
	}
	clone := rulesFor(p, "clone")
	if len(clone) != 1 || len(clone[0].Args) != 1 || clone[0].Args[0].Op != specs.OpMaskedEqual ||
		clone[0].Args[0].Value != 0x7E020000 || clone[0].Args[0].ValueTwo != 0 {
		t.Errorf("clone rules = %+v, want one allowing flags without namespace bits", clone)
	}
	clone3 := rulesFor(p, "clone3")
	if len(clone3) != 1 || clone3[0].Action != specs.ActErrno || clone3[0].ErrnoRet == nil || *clone3[0].ErrnoRet != 38 {
		t.Errorf("clone3 rules = %+v, want ENOSYS", clone3)
	}
	var personalities []uint64
	for _, rule := range rulesFor(p, "personality") {
		personalities = append(personalities, rule.Args[0].Value)
	}
	if !reflect.DeepEqual(personalities, allowedPersonalities) {
		t.Errorf("personality values = %#x, want %#x", personalities, allowedPersonalities)
	}

	admin := RuntimeDefaultSeccomp(append([]string{"CAP_SYS_ADMIN", "CAP_SYS_PTRACE"}, DefaultCapabilities...))
	for _, name := range []string{"mount", "umount2", "unshare", "setns", "clone", "clone3", "ptrace", "process_vm_readv"} {
		if !allowsUnconditionally(admin, name) {
			t.Errorf("with CAP_SYS_ADMIN and CAP_SYS_PTRACE: %s: not allowed", name)
		}
	}
	if noChroot := RuntimeDefaultSeccomp(without(DefaultCapabilities, "CAP_SYS_CHROOT")); allowsUnconditionally(noChroot, "chroot") {
		t.Error("without CAP_SYS_CHROOT: chroot allowed")
	}
	if len(rulesFor(admin, "clone3")) != 1 || allowsUnconditionally(admin, "reboot") {
		t.Errorf("with CAP_SYS_ADMIN: clone3 rules %+v, reboot allowed %v", rulesFor(admin, "clone3"), allowsUnconditionally(admin, "reboot"))
	}
}

// dockerStyleProfile exercises the parts of the Docker format that the
// OCI form lacks: archMap, "name", includes and excludes.
const dockerStyleProfile = `{
  "defaultAction": "SCMP_ACT_ERRNO",
  "defaultErrnoRet": 1,
  "archMap": [
    {"architecture": "SCMP_ARCH_X86_64", "subArchitectures": ["SCMP_ARCH_X86", "SCMP_ARCH_X32"]},
    {"architecture": "SCMP_ARCH_AARCH64", "subArchitectures": ["SCMP_ARCH_ARM"]}
  ],
  "syscalls": [
    {"names": ["read", "write"], "action": "SCMP_ACT_ALLOW", "comment": "always"},
    {"name": "ptrace", "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_PTRACE"]}},
    {"names": ["chown"], "action": "SCMP_ACT_ALLOW", "excludes": {"caps": ["CAP_CHOWN"]}},
    {"names": ["arch_prctl"], "action": "SCMP_ACT_ALLOW", "includes": {"arches": ["amd64"]}},
    {"names": ["new_call"], "action": "SCMP_ACT_ALLOW", "includes": {"minKernel": "6.2"}},
    {"names": ["old_call"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38, "excludes": {"minKernel": "6.2"}},
    {"names": ["personality"], "action": "SCMP_ACT_ALLOW", "args": [{"index": 0, "value": 8, "op": "SCMP_CMP_EQ"}]}
  ]
}`

func TestConvertSeccompProfile(t *testing.T) {
	names := func(p *specs.LinuxSeccomp) []string {
		var out []string
		for _, rule := range p.Syscalls {
			out = append(out, rule.Names...)
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		caps      []string
		goarch    string
		kernel    [2]int
		wantArch  []specs.Arch
		wantNames []string
	}{
		{"amd64 default caps old kernel", DefaultCapabilities, "amd64", [2]int{5, 10},
			[]specs.Arch{specs.ArchX86_64, specs.ArchX86, specs.ArchX32},
			[]string{"read", "write", "arch_prctl", "old_call", "personality"}},
		{"arm64 no caps new kernel", nil, "arm64", [2]int{6, 2},
			[]specs.Arch{specs.ArchAARCH64, specs.ArchARM},
			[]string{"read", "write", "chown", "new_call", "personality"}},
		{"ptrace cap", []string{"CAP_SYS_PTRACE"}, "amd64", [2]int{6, 10},
			[]specs.Arch{specs.ArchX86_64, specs.ArchX86, specs.ArchX32},
			[]string{"read", "write", "ptrace", "chown", "arch_prctl", "new_call", "personality"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ConvertSeccompProfile([]byte(dockerStyleProfile), tc.caps, tc.goarch, tc.kernel)
			if err != nil {
				t.Fatal(err)
			}
			if p.DefaultAction != specs.ActErrno || p.DefaultErrnoRet == nil || *p.DefaultErrnoRet != 1 {
				t.Errorf("default = %s %v", p.DefaultAction, p.DefaultErrnoRet)
			}
			if !reflect.DeepEqual(p.Architectures, tc.wantArch) {
				t.Errorf("architectures = %v, want %v", p.Architectures, tc.wantArch)
			}
			if got := names(p); !reflect.DeepEqual(got, tc.wantNames) {
				t.Errorf("syscalls = %v, want %v", got, tc.wantNames)
			}
		})
	}

	// The OCI form passes through unchanged.
	oci := `{"defaultAction":"SCMP_ACT_ALLOW","architectures":["SCMP_ARCH_X86_64"],
		"syscalls":[{"names":["mkdir"],"action":"SCMP_ACT_ERRNO","errnoRet":13,
		"args":[{"index":1,"value":448,"valueTwo":0,"op":"SCMP_CMP_EQ"}]}]}`
	p, err := ConvertSeccompProfile([]byte(oci), nil, "amd64", [2]int{6, 1})
	if err != nil {
		t.Fatal(err)
	}
	errno := uint(13)
	want := &specs.LinuxSeccomp{DefaultAction: specs.ActAllow, Architectures: []specs.Arch{specs.ArchX86_64},
		Syscalls: []specs.LinuxSyscall{{Names: []string{"mkdir"}, Action: specs.ActErrno, ErrnoRet: &errno,
			Args: []specs.LinuxSeccompArg{{Index: 1, Value: 448, Op: specs.OpEqualTo}}}}}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("OCI profile = %+v\nwant %+v", p, want)
	}

	for name, bad := range map[string]string{
		"no default action":  `{"syscalls":[]}`,
		"rule without names": `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"action":"SCMP_ACT_ERRNO"}]}`,
		"rule bad action":    `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["x"],"action":"deny"}]}`,
		"bad min kernel":     `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["x"],"action":"SCMP_ACT_ALLOW","includes":{"minKernel":"new"}}]}`,
		"wrong json type":    `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":{}}`,
	} {
		if _, err := ConvertSeccompProfile([]byte(bad), nil, "amd64", [2]int{6, 1}); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%s: err = %v, want InvalidArgument", name, err)
		}
	}
}

func TestParseKernelVersion(t *testing.T) {
	for in, want := range map[string][2]int{"5.8": {5, 8}, "6.1.0-18-amd64": {6, 1}, "6.18.44-fc-v595": {6, 18}, "4.15-rc1": {4, 15}} {
		if got, err := parseKernelVersion(in); err != nil || got != want {
			t.Errorf("parseKernelVersion(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "6", "six.1", "6.x"} {
		if _, err := parseKernelVersion(in); err == nil {
			t.Errorf("parseKernelVersion(%q): no error", in)
		}
	}
}

func TestBuildSpecSeccomp(t *testing.T) {
	in := testInput(t)
	securityContext(in).Seccomp = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
	securityContext(in).Capabilities = &runtimeapi.Capability{AddCapabilities: []string{"SYS_ADMIN"}}
	spec, err := BuildSpec(in)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Linux.Seccomp == nil || !allowsUnconditionally(spec.Linux.Seccomp, "mount") {
		t.Fatalf("seccomp = %+v, want RuntimeDefault following the added CAP_SYS_ADMIN", spec.Linux.Seccomp)
	}
	securityContext(in).Seccomp = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "/no/such/profile.json"}
	if _, err := BuildSpec(in); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("missing Localhost profile: err = %v, want InvalidArgument", err)
	}
}

// A profile path the CRI request names must be a bounded regular file: a
// FIFO would block CreateContainer, /dev/zero would never end.
func TestSeccompProfileFileMustBeABoundedRegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, maxProfileBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{fifo, "/dev/zero", dir, big} {
		done := make(chan error, 1)
		go func() { _, err := LoadSeccompProfile("seccomp", file, nil); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Errorf("%s: %v, want InvalidArgument", file, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: still reading after 10 s", file)
		}
	}
}
