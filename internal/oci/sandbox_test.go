package oci

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/berth-dev/berth/internal/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestBuildSandboxSpec(t *testing.T) {
	sb := testSandbox()
	sb.Config.Linux.Sysctls = map[string]string{"net.ipv4.ping_group_range": "0 0"}
	spec, err := BuildSandboxSpec(SandboxInput{Sandbox: sb, RootfsPath: "/run/berth/bundles/sb1/rootfs", OOMScoreAdjMin: -999})
	if err != nil {
		t.Fatal(err)
	}
	p := spec.Process
	if !reflect.DeepEqual(p.Args, []string{PauseBinary}) || !p.NoNewPrivileges || *p.OOMScoreAdj != SandboxOOMScoreAdj {
		t.Errorf("process = %+v", p)
	}
	if !spec.Root.Readonly || spec.Root.Path != "/run/berth/bundles/sb1/rootfs" {
		t.Errorf("root = %+v", spec.Root)
	}
	data, err := json.Marshal(spec.Process)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"capabilities":{}`) {
		t.Errorf("capabilities must be an explicit empty set (runc keeps all caps for a missing one): %s", data)
	}
	want := []specs.LinuxNamespace{
		{Type: specs.MountNamespace}, {Type: specs.PIDNamespace},
		{Type: specs.NetworkNamespace, Path: sb.NetNS}, {Type: specs.IPCNamespace, Path: sb.IPCNS}, {Type: specs.UTSNamespace, Path: sb.UTSNS},
	}
	if !reflect.DeepEqual(spec.Linux.Namespaces, want) {
		t.Errorf("namespaces = %+v", spec.Linux.Namespaces)
	}
	if spec.Linux.CgroupsPath != "/kubepods/podx/sb1" || spec.Hostname != "web-host" {
		t.Errorf("cgroupsPath %q hostname %q", spec.Linux.CgroupsPath, spec.Hostname)
	}
	if spec.Annotations[AnnotationContainerType] != ContainerTypeSandbox || spec.Annotations[AnnotationSandboxUID] != "uid-1" {
		t.Errorf("annotations = %v", spec.Annotations)
	}
	if spec.Linux.Sysctl["net.ipv4.ping_group_range"] != "0 0" {
		t.Errorf("sysctls = %v", spec.Linux.Sysctl)
	}
	if got := destinations(spec.Mounts); !reflect.DeepEqual(got, []string{"/proc", "/dev"}) {
		t.Errorf("mounts = %v", got)
	}
}

func TestBuildSandboxSpecHostNamespacesAndClamp(t *testing.T) {
	sb := testSandbox()
	sb.NetNS, sb.UTSNS, sb.IPCNS = "", "", ""
	sb.Config.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_NODE, Ipc: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_POD}}
	spec, err := BuildSandboxSpec(SandboxInput{Sandbox: sb, RootfsPath: "/r", OOMScoreAdjMin: 0, CgroupParent: "/other"})
	if err != nil {
		t.Fatal(err)
	}
	want := []specs.LinuxNamespace{{Type: specs.MountNamespace}, {Type: specs.PIDNamespace}}
	if !reflect.DeepEqual(spec.Linux.Namespaces, want) || spec.Hostname != "" {
		t.Errorf("namespaces = %+v hostname %q", spec.Linux.Namespaces, spec.Hostname)
	}
	if *spec.Process.OOMScoreAdj != 0 || spec.Annotations[AnnotationRequestedOOMScoreAdj] != "-998" {
		t.Errorf("oom %d annotations %v", *spec.Process.OOMScoreAdj, spec.Annotations)
	}
	if spec.Linux.CgroupsPath != "/other/sb1" {
		t.Errorf("cgroupsPath %q", spec.Linux.CgroupsPath)
	}

	if _, err := BuildSandboxSpec(SandboxInput{Sandbox: testSandbox(), RootfsPath: "rel"}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("relative rootfs: err = %v", err)
	}
	unpinned := testSandbox()
	unpinned.NetNS = ""
	if _, err := BuildSandboxSpec(SandboxInput{Sandbox: unpinned, RootfsPath: "/r"}); !errors.Is(err, errdefs.ErrFailedPrecondition) {
		t.Errorf("pod network without a pin: err = %v", err)
	}
}

func TestBuildSandboxSpecAppliesThePodSeccompProfile(t *testing.T) {
	sb := testSandbox()
	spec, err := BuildSandboxSpec(SandboxInput{Sandbox: sb, RootfsPath: "/r"})
	if err != nil {
		t.Fatal(err)
	}
	if spec.Linux.Seccomp != nil {
		t.Errorf("no pod profile requested: seccomp = %+v, want none", spec.Linux.Seccomp)
	}
	sb.Config.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{
		Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}}
	if spec, err = BuildSandboxSpec(SandboxInput{Sandbox: sb, RootfsPath: "/r"}); err != nil {
		t.Fatal(err)
	}
	if spec.Linux.Seccomp == nil || spec.Linux.Seccomp.DefaultAction != specs.ActErrno {
		t.Errorf("RuntimeDefault for the pod: seccomp = %+v, want the default profile", spec.Linux.Seccomp)
	}
	sb.Config.Linux.SecurityContext.Seccomp = &runtimeapi.SecurityProfile{
		ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "/nonexistent/profile.json"}
	if _, err := BuildSandboxSpec(SandboxInput{Sandbox: sb, RootfsPath: "/r"}); err == nil {
		t.Error("a missing Localhost profile: no error")
	}
}
