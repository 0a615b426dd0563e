package oci

import (
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func hasCgroupNamespace(namespaces []specs.LinuxNamespace) bool {
	return slices.ContainsFunc(namespaces, func(ns specs.LinuxNamespace) bool {
		return ns.Type == specs.CgroupNamespace
	})
}

// TestCgroupNamespace: on a cgroup v2-only host (CgroupNamespace) a
// container gets a new cgroup namespace, with no path (runc then mounts
// cgroup2 at /sys/fs/cgroup with the container's cgroup as its root); a
// privileged container and every container elsewhere keep the host's, as
// containerd and CRI-O do.
func TestCgroupNamespace(t *testing.T) {
	for _, tc := range []struct {
		name          string
		unified, priv bool
		wantNew       bool
	}{
		{"v2 host", true, false, true},
		{"v2 host, privileged", true, true, false},
		{"v1 or hybrid host", false, false, false},
	} {
		in := testInput(t)
		in.CgroupNamespace = tc.unified
		securityContext(in).Privileged = tc.priv
		spec, err := BuildSpec(in)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := hasCgroupNamespace(spec.Linux.Namespaces); got != tc.wantNew {
			t.Errorf("%s: cgroup namespace %v, want %v (%+v)", tc.name, got, tc.wantNew, spec.Linux.Namespaces)
		}
		for _, ns := range spec.Linux.Namespaces {
			if ns.Type == specs.CgroupNamespace && ns.Path != "" {
				t.Errorf("%s: cgroup namespace joins %q, want a new one", tc.name, ns.Path)
			}
		}
		i := slices.IndexFunc(spec.Mounts, func(m specs.Mount) bool { return m.Destination == "/sys/fs/cgroup" })
		if i < 0 || spec.Mounts[i].Type != "cgroup" {
			t.Errorf("%s: /sys/fs/cgroup is not a cgroup mount: %+v", tc.name, spec.Mounts)
		}
	}
}

// TestSandboxCgroupNamespace: berth-pause gets a new cgroup namespace on a
// cgroup v2-only host, unless the pod is privileged; elsewhere the host's.
func TestSandboxCgroupNamespace(t *testing.T) {
	for _, tc := range []struct {
		name          string
		unified, priv bool
		wantNew       bool
	}{
		{"v2 host", true, false, true},
		{"v2 host, privileged pod", true, true, false},
		{"v1 or hybrid host", false, false, false},
	} {
		sb := testSandbox()
		sb.Config.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{Privileged: tc.priv}
		spec, err := BuildSandboxSpec(SandboxInput{Sandbox: sb, RootfsPath: "/run/berth/bundles/sb1/rootfs", CgroupNamespace: tc.unified})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := hasCgroupNamespace(spec.Linux.Namespaces); got != tc.wantNew {
			t.Errorf("%s: cgroup namespace %v, want %v (%+v)", tc.name, got, tc.wantNew, spec.Linux.Namespaces)
		}
	}
}
