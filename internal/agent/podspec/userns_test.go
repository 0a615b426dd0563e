package podspec

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func podUserNamespace(hostID uint32) *runtimeapi.UserNamespace {
	ids := func() []*runtimeapi.IDMapping {
		return []*runtimeapi.IDMapping{{ContainerId: 0, HostId: hostID, Length: 65536}}
	}
	return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: ids(), Gids: ids()}
}

func TestSandboxConfigUserNamespace(t *testing.T) {
	pod := newPod(newContainer("a"))
	pod.Spec.HostUsers = ptr(false)
	ns := podUserNamespace(131072)
	cfg, err := SandboxConfig(pod, 0, SourceRefs{}, SandboxOptions{UserNamespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions(); got.String() != ns.String() {
		t.Errorf("sandbox userns %v; want %v", got, ns)
	}
	node := &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}
	plain := newPod(newContainer("a"))
	cfg, err = SandboxConfig(plain, 0, SourceRefs{}, SandboxOptions{UserNamespace: node})
	if err != nil || cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions().GetMode() != runtimeapi.NamespaceMode_NODE {
		t.Errorf("a pod in the host's user namespace: %v, %v; want mode NODE", cfg.GetLinux().GetSecurityContext().GetNamespaceOptions(), err)
	}
	if _, err := SandboxConfig(plain, 0, SourceRefs{}, SandboxOptions{UserNamespace: ns}); err == nil || !strings.Contains(err.Error(), "spec.hostUsers is not false") {
		t.Errorf("mode POD for a pod without hostUsers: false: %v; want refused", err)
	}
	for name, given := range map[string]*runtimeapi.UserNamespace{"none": nil, "NODE": node, "POD without mappings": {}} {
		_, err := SandboxConfig(pod, 0, SourceRefs{}, SandboxOptions{UserNamespace: given})
		if err == nil || !strings.Contains(err.Error(), "pod shop/web: spec.hostUsers: false: no user namespace mappings") {
			t.Errorf("hostUsers: false with %s: %v; want refused", name, err)
		}
	}
}

func TestContainerConfigUserNamespace(t *testing.T) {
	c := newContainer("app")
	c.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "host", MountPath: "/host", ReadOnly: true}}
	pod := newPod(c)
	pod.Spec.HostUsers = ptr(false)
	ns := podUserNamespace(196608)
	opts := ContainerOptions{TerminationMessageHostPath: "/pods/uid-1/containers/app/0", UserNamespace: ns}
	cfg, err := ContainerConfig(pod, &pod.Spec.Containers[0], ContainerTypeRegular, 0, opts, mountPaths)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions(); got.String() != ns.String() {
		t.Errorf("container userns %v; want %v", got, ns)
	}
	if len(cfg.GetMounts()) != 3 {
		t.Fatalf("mounts %v; want the two volumes and the termination message", cfg.GetMounts())
	}
	for _, m := range cfg.GetMounts() {
		if len(m.GetUidMappings()) != 1 || m.GetUidMappings()[0].String() != ns.GetUids()[0].String() ||
			len(m.GetGidMappings()) != 1 || m.GetGidMappings()[0].String() != ns.GetGids()[0].String() {
			t.Errorf("mount %s: uid %v gid %v; want the pod's mappings", m.GetContainerPath(), m.GetUidMappings(), m.GetGidMappings())
		}
	}
	cfg.GetMounts()[0].GetUidMappings()[0].HostId = 1
	if ns.GetUids()[0].GetHostId() != 196608 {
		t.Error("a mount shares the pod's mapping messages")
	}
	if _, err := ContainerConfig(pod, &pod.Spec.Containers[0], ContainerTypeRegular, 0, ContainerOptions{}, mountPaths); err == nil {
		t.Error("hostUsers: false without mappings accepted")
	}
}

func TestContainerConfigHostUserNamespace(t *testing.T) {
	c := newContainer("app")
	c.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	pod := newPod(c)
	node := &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}
	cfg, err := ContainerConfig(pod, &pod.Spec.Containers[0], ContainerTypeRegular, 0, ContainerOptions{UserNamespace: node}, mountPaths)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions().GetMode() != runtimeapi.NamespaceMode_NODE {
		t.Errorf("userns %v; want mode NODE", cfg.GetLinux().GetSecurityContext().GetNamespaceOptions())
	}
	for _, m := range cfg.GetMounts() {
		if m.GetUidMappings() != nil || m.GetGidMappings() != nil {
			t.Errorf("mount %s of a pod in the host's user namespace has mappings", m.GetContainerPath())
		}
	}
}
