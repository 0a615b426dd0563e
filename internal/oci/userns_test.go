package oci

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/errdefs"
)

// podUserns is a POD-mode user namespace mapping 65536 ids from hostID.
func podUserns(hostID uint32) *runtimeapi.UserNamespace {
	m := []*runtimeapi.IDMapping{{ContainerId: 0, HostId: hostID, Length: 65536}}
	return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: m, Gids: m}
}

// usernsSandbox is testSandbox in a user namespace mapped from 65536.
func usernsSandbox() Sandbox {
	sb := testSandbox()
	sb.Config.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{UsernsOptions: podUserns(65536)},
	}
	sb.UserNS = "/run/berth/pods/sb1/ns/user"
	return sb
}

func TestContainerJoinsThePodsUserNamespace(t *testing.T) {
	user := specs.LinuxNamespace{Type: specs.UserNamespace, Path: "/run/berth/pods/sb1/ns/user"}
	for name, asked := range map[string]*runtimeapi.UserNamespace{
		"restated, as kubelet does": podUserns(65536),
		"unset: follows the pod":    nil,
	} {
		in := testInput(t)
		in.Sandbox = usernsSandbox()
		in.Config.Linux.SecurityContext.NamespaceOptions.UsernsOptions = asked
		in.Config.Mounts = []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: "/srv/data",
			UidMappings: podUserns(65536).Uids, GidMappings: podUserns(65536).Gids}}
		spec, err := BuildSpec(in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := spec.Linux.Namespaces[0]; !reflect.DeepEqual(got, user) {
			t.Errorf("%s: first namespace = %+v, want the pod's user namespace", name, got)
		}
		if spec.Linux.UIDMappings != nil || spec.Linux.GIDMappings != nil {
			t.Errorf("%s: the spec restates mappings runc reads from the joined namespace", name)
		}
		for _, m := range spec.Mounts {
			if m.Destination == "/data" && !slices.Contains(m.Options, "idmap") {
				t.Errorf("%s: /data options %v: want idmap", name, m.Options)
			}
		}
	}
}

func TestPauseJoinsThePodsUserNamespace(t *testing.T) {
	spec, err := BuildSandboxSpec(SandboxInput{Sandbox: usernsSandbox(), RootfsPath: "/run/berth/bundles/sb1/rootfs"})
	if err != nil {
		t.Fatal(err)
	}
	if got := spec.Linux.Namespaces[0]; got.Type != specs.UserNamespace || got.Path != "/run/berth/pods/sb1/ns/user" {
		t.Errorf("first namespace = %+v, want the pod's user namespace", got)
	}
}

func TestIDMappedMountNeedsThePodsMapping(t *testing.T) {
	other := podUserns(1 << 20)
	_, _, err := requestedMounts(usernsSandbox(), []*runtimeapi.Mount{{ContainerPath: "/d", HostPath: "/h",
		UidMappings: other.Uids, GidMappings: other.Gids}}, nil)
	if !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("a mount mapped unlike its pod: err = %v, want InvalidArgument", err)
	}
	mounts, _, err := requestedMounts(usernsSandbox(), []*runtimeapi.Mount{{ContainerPath: "/d", HostPath: "/h"}}, nil)
	if err != nil || slices.Contains(mounts[0].Options, "idmap") {
		t.Errorf("a mount without mappings: %v, %v: want it as is", mounts, err)
	}
}
