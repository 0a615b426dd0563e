package oci

import (
	"errors"
	"reflect"
	"testing"

	"github.com/berth-dev/berth/internal/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestContainerNamespaces(t *testing.T) {
	sb := testSandbox()
	sb.PIDNS = "/proc/77/ns/pid"
	mnt := specs.LinuxNamespace{Type: specs.MountNamespace}
	net := specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: sb.NetNS}
	ipc := specs.LinuxNamespace{Type: specs.IPCNamespace, Path: sb.IPCNS}
	uts := specs.LinuxNamespace{Type: specs.UTSNamespace, Path: sb.UTSNS}
	const (
		POD       = runtimeapi.NamespaceMode_POD
		CONTAINER = runtimeapi.NamespaceMode_CONTAINER
		NODE      = runtimeapi.NamespaceMode_NODE
		TARGET    = runtimeapi.NamespaceMode_TARGET
	)
	for _, tc := range []struct {
		name string
		opts *runtimeapi.NamespaceOption
		want []specs.LinuxNamespace
	}{
		{"pod net/ipc, own pid", &runtimeapi.NamespaceOption{Pid: CONTAINER},
			[]specs.LinuxNamespace{mnt, net, ipc, uts, {Type: specs.PIDNamespace}}},
		{"shared pid", &runtimeapi.NamespaceOption{Pid: POD},
			[]specs.LinuxNamespace{mnt, net, ipc, uts, {Type: specs.PIDNamespace, Path: "/proc/77/ns/pid"}}},
		{"host pid", &runtimeapi.NamespaceOption{Pid: NODE}, []specs.LinuxNamespace{mnt, net, ipc, uts}},
		{"host network takes host uts", &runtimeapi.NamespaceOption{Network: NODE, Pid: CONTAINER},
			[]specs.LinuxNamespace{mnt, ipc, {Type: specs.PIDNamespace}}},
		{"host ipc", &runtimeapi.NamespaceOption{Ipc: NODE, Pid: CONTAINER},
			[]specs.LinuxNamespace{mnt, net, uts, {Type: specs.PIDNamespace}}},
		{"all host", &runtimeapi.NamespaceOption{Network: NODE, Ipc: NODE, Pid: NODE}, []specs.LinuxNamespace{mnt}},
		{"target", &runtimeapi.NamespaceOption{Pid: TARGET, TargetId: "other"},
			[]specs.LinuxNamespace{mnt, net, ipc, uts, {Type: specs.PIDNamespace, Path: "/proc/4242/ns/pid"}}},
		{"userns NODE is fine", &runtimeapi.NamespaceOption{Pid: CONTAINER, UsernsOptions: &runtimeapi.UserNamespace{Mode: NODE}},
			[]specs.LinuxNamespace{mnt, net, ipc, uts, {Type: specs.PIDNamespace}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := containerNamespaces(sb, tc.opts, 4242)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("namespaces = %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestContainerNamespaceErrors(t *testing.T) {
	unpinned := testSandbox()
	unpinned.NetNS = ""
	for _, tc := range []struct {
		name  string
		sb    Sandbox
		opts  *runtimeapi.NamespaceOption
		pid   int
		class error
	}{
		{"pod pid without shared namespace", testSandbox(), &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_POD}, 0, errdefs.ErrFailedPrecondition},
		{"target without pid", testSandbox(), &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_TARGET, TargetId: "x"}, 0, errdefs.ErrFailedPrecondition},
		{"target without id", testSandbox(), &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_TARGET}, 5, errdefs.ErrInvalidArgument},
		{"pod network not pinned", unpinned, &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER}, 0, errdefs.ErrFailedPrecondition},
		{"network mode CONTAINER", testSandbox(), &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_CONTAINER}, 0, errdefs.ErrInvalidArgument},
		{"user namespace POD in a pod without one", testSandbox(), &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER,
			UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD}}, 0, errdefs.ErrInvalidArgument},
		{"user namespace CONTAINER", testSandbox(), &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER,
			UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_CONTAINER}}, 0, errdefs.ErrInvalidArgument},
		{"user namespace NODE in a pod with one", usernsSandbox(), &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER,
			UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}}, 0, errdefs.ErrInvalidArgument},
		{"user namespace with another mapping", usernsSandbox(), &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER,
			UsernsOptions: podUserns(1 << 20)}, 0, errdefs.ErrInvalidArgument},
	} {
		if _, err := containerNamespaces(tc.sb, tc.opts, tc.pid); !errors.Is(err, tc.class) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.class)
		}
	}
}

func TestNamespaceOptionsFallback(t *testing.T) {
	in := testInput(t)
	in.Config.Linux.SecurityContext.NamespaceOptions = nil
	if got := containerNamespaceOptions(in); got != defaultNamespaceOptions {
		t.Fatalf("no options anywhere: %v, want defaults", got)
	}
	podOpts := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}
	in.Sandbox.Config.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: podOpts}
	if got := containerNamespaceOptions(in); got != podOpts {
		t.Fatalf("pod options not used: %v", got)
	}
}
