package podspec

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestSandboxConfig(t *testing.T) {
	c := newContainer("app")
	c.Resources = resources("250m", "64Mi", "500m", "128Mi")
	c.Ports = []v1.ContainerPort{
		{Name: "http", ContainerPort: 80, HostPort: 8080, Protocol: v1.ProtocolTCP},
		{Name: "http", ContainerPort: 81, Protocol: v1.ProtocolTCP}, // same name: dropped
		{ContainerPort: 53, HostPort: 5353, Protocol: v1.ProtocolUDP, HostIP: "127.0.0.1"},
	}
	pod := newPod(c)
	pod.Spec.SecurityContext = &v1.PodSecurityContext{
		RunAsUser: ptr(int64(10)), RunAsGroup: ptr(int64(20)), FSGroup: ptr(int64(30)),
		Sysctls: []v1.Sysctl{{Name: "net.ipv4.ip_unprivileged_port_start", Value: "0"}},
	}
	pod.Spec.Overhead = v1.ResourceList{}
	cfg, err := SandboxConfig(pod, 3, SourceRefs{}, SandboxOptions{LogRoot: "/logs", HostDNS: hostDNS, CgroupParent: "/custom"})
	if err != nil {
		t.Fatal(err)
	}
	md := cfg.Metadata
	if md.Name != "web" || md.Namespace != "shop" || md.Uid != "uid-1" || md.Attempt != 3 {
		t.Errorf("metadata %v", md)
	}
	if cfg.Hostname != "web" || cfg.LogDirectory != "/logs/shop_web_uid-1" {
		t.Errorf("hostname %q log dir %q", cfg.Hostname, cfg.LogDirectory)
	}
	if cfg.Labels["app"] != "web" || cfg.Labels[LabelPodUID] != "uid-1" || cfg.Annotations["note"] != "x" {
		t.Errorf("pod labels/annotations not carried: %v %v", cfg.Labels, cfg.Annotations)
	}
	if len(cfg.PortMappings) != 2 || cfg.PortMappings[0].HostPort != 8080 ||
		cfg.PortMappings[1].Protocol != runtimeapi.Protocol_UDP || cfg.PortMappings[1].HostIp != "127.0.0.1" {
		t.Errorf("ports %v", cfg.PortMappings)
	}
	linux := cfg.Linux
	if linux.CgroupParent != "/custom/kubepods/burstable/poduid-1" {
		t.Errorf("cgroup parent %q", linux.CgroupParent)
	}
	if linux.Sysctls["net.ipv4.ip_unprivileged_port_start"] != "0" {
		t.Errorf("sysctls %v", linux.Sysctls)
	}
	sc := linux.SecurityContext
	if sc.RunAsUser.GetValue() != 10 || sc.RunAsGroup.GetValue() != 20 || len(sc.SupplementalGroups) != 1 || sc.SupplementalGroups[0] != 30 {
		t.Errorf("sandbox security context %v", sc)
	}
	if sc.Seccomp.GetProfileType() != runtimeapi.SecurityProfile_Unconfined || sc.Privileged {
		t.Errorf("seccomp %v privileged %v", sc.Seccomp, sc.Privileged)
	}
	if linux.Resources.MemoryLimitInBytes != 128<<20 || linux.Resources.CpuQuota != 50000 || linux.Resources.CpuShares != 256 {
		t.Errorf("resources %v", linux.Resources)
	}
	if linux.Overhead != nil {
		t.Errorf("empty overhead gave %v", linux.Overhead)
	}
	if cfg.DnsConfig.Servers[0] != "192.168.1.1" {
		t.Errorf("dns %v", cfg.DnsConfig)
	}
}

func TestSandboxPrivilegedAndOverhead(t *testing.T) {
	side := newContainer("side")
	side.SecurityContext = &v1.SecurityContext{Privileged: ptr(true)}
	pod := newPod(newContainer("app"))
	pod.Spec.InitContainers = []v1.Container{side}
	pod.Spec.Overhead = resources("", "", "100m", "32Mi").Limits
	cfg, err := SandboxConfig(pod, 0, SourceRefs{}, SandboxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Linux.SecurityContext.Privileged {
		t.Error("a privileged init container must make the sandbox privileged")
	}
	if o := cfg.Linux.Overhead; o == nil || o.CpuQuota != 10000 || o.MemoryLimitInBytes != 32<<20 {
		t.Errorf("overhead %v", o)
	}
	if got := cfg.Linux.CgroupParent; got != "/berth/kubepods/besteffort/poduid-1" {
		t.Errorf("default cgroup parent %q", got)
	}
}

func TestHostname(t *testing.T) {
	long := strings.Repeat("a", 61) + "-.xyz"
	cases := []struct {
		name string
		set  func(*v1.Pod)
		want string
		err  bool
	}{
		{"pod name", func(*v1.Pod) {}, "web", false},
		{"spec.hostname", func(p *v1.Pod) { p.Spec.Hostname = "db-0"; p.Spec.Subdomain = "db" }, "db-0", false},
		{"host network", func(p *v1.Pod) { p.Spec.HostNetwork = true; p.Spec.Hostname = "x" }, "", false},
		{"truncated", func(p *v1.Pod) { p.Name = long }, strings.Repeat("a", 61), false},
		{"override", func(p *v1.Pod) { p.Spec.HostnameOverride = ptr("box.example"); p.Spec.Hostname = "db-0" }, "box.example", false},
		{"invalid hostname", func(p *v1.Pod) { p.Spec.Hostname = "Not_Valid" }, "", true},
	}
	for _, tc := range cases {
		pod := newPod(newContainer("a"))
		tc.set(pod)
		got, err := Hostname(pod)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("%s: %q %v, want %q (error %v)", tc.name, got, err, tc.want, tc.err)
		}
	}
}

func TestPodCgroupParent(t *testing.T) {
	guaranteed := newPod(withResources("a", resources("1", "1Gi", "1", "1Gi")))
	if got := PodCgroupParent("berth", guaranteed); got != "/berth/kubepods/poduid-1" {
		t.Errorf("guaranteed: %q", got)
	}
}

func TestPodSlice(t *testing.T) {
	guaranteed := newPod(withResources("a", resources("1", "1Gi", "1", "1Gi")))
	besteffort := newPod(newContainer("a"))
	besteffort.UID = "0b8e-1c6a"
	odd := newPod(newContainer("a"))
	odd.UID = "a:b/c.d"
	if got := PodSlice(odd); got != "berth-kubepods-besteffort-poda_b_c_d.slice" {
		t.Errorf("PodSlice of uid %q = %q", odd.UID, got)
	}
	for _, tc := range []struct {
		pod  *v1.Pod
		want string
	}{
		{guaranteed, "berth-kubepods-poduid_1.slice"},
		{besteffort, "berth-kubepods-besteffort-pod0b8e_1c6a.slice"},
	} {
		if got := PodSlice(tc.pod); got != tc.want {
			t.Errorf("PodSlice = %q, want %q", got, tc.want)
		}
		cfg, err := SandboxConfig(tc.pod, 0, SourceRefs{}, SandboxOptions{SystemdCgroup: true})
		if err != nil || cfg.GetLinux().GetCgroupParent() != tc.want {
			t.Errorf("SandboxConfig under systemd: parent %q, %v; want %q", cfg.GetLinux().GetCgroupParent(), err, tc.want)
		}
	}
}

func TestSandboxConfigRefusals(t *testing.T) {
	userns := newPod(newContainer("a"))
	userns.Spec.HostUsers = ptr(false)
	noUID := newPod(newContainer("a"))
	noUID.UID = ""
	slash := newPod(newContainer("a"))
	slash.Name = "a/b"
	for name, pod := range map[string]*v1.Pod{"hostUsers false without mappings": userns, "no uid": noUID, "slash in name": slash} {
		if _, err := SandboxConfig(pod, 0, SourceRefs{}, SandboxOptions{}); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}
