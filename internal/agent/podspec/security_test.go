package podspec

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func securityOf(t *testing.T, pod *v1.Pod, opts ContainerOptions) *runtimeapi.LinuxContainerSecurityContext {
	t.Helper()
	sc, err := containerSecurityContext(pod, &pod.Spec.Containers[0], opts)
	if err != nil {
		t.Fatalf("containerSecurityContext: %v", err)
	}
	return sc
}

func TestSeccompPrecedence(t *testing.T) {
	localhost := &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("audit.json")}
	runtimeDefault := &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}
	unconfined := &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined}
	cases := []struct {
		name           string
		pod, container *v1.SeccompProfile
		nodeDefault    bool
		want           runtimeapi.SecurityProfile_ProfileType
		ref            string
	}{
		{"none: unconfined", nil, nil, false, runtimeapi.SecurityProfile_Unconfined, ""},
		{"none with node default", nil, nil, true, runtimeapi.SecurityProfile_RuntimeDefault, ""},
		{"pod level", runtimeDefault, nil, false, runtimeapi.SecurityProfile_RuntimeDefault, ""},
		{"container over pod", runtimeDefault, unconfined, true, runtimeapi.SecurityProfile_Unconfined, ""},
		{"localhost from pod", localhost, nil, false, runtimeapi.SecurityProfile_Localhost, "/var/lib/berth/seccomp/audit.json"},
		{"localhost from container", unconfined, localhost, false, runtimeapi.SecurityProfile_Localhost, "/var/lib/berth/seccomp/audit.json"},
	}
	for _, tc := range cases {
		pod := newPod(newContainer("a"))
		pod.Spec.SecurityContext = &v1.PodSecurityContext{SeccompProfile: tc.pod}
		if tc.container != nil {
			pod.Spec.Containers[0].SecurityContext = &v1.SecurityContext{SeccompProfile: tc.container}
		}
		opts := ContainerOptions{Seccomp: SeccompSettings{ProfileRoot: "/var/lib/berth/seccomp", DefaultToRuntimeDefault: tc.nodeDefault}}
		got := securityOf(t, pod, opts).Seccomp
		if got.ProfileType != tc.want || got.LocalhostRef != tc.ref {
			t.Errorf("%s: %v %q, want %v %q", tc.name, got.ProfileType, got.LocalhostRef, tc.want, tc.ref)
		}
	}
}

func TestSeccompLocalhostErrors(t *testing.T) {
	for name, p := range map[string]*v1.SeccompProfile{
		"no profile":  {Type: v1.SeccompProfileTypeLocalhost},
		"escape":      {Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("../etc/x.json")},
		"bad type":    {Type: "Weird"},
		"no root set": {Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("p.json")},
	} {
		pod := newPod(newContainer("a"))
		pod.Spec.Containers[0].SecurityContext = &v1.SecurityContext{SeccompProfile: p}
		root := "/seccomp"
		if name == "no root set" {
			root = ""
		}
		if _, err := containerSecurityContext(pod, &pod.Spec.Containers[0], ContainerOptions{Seccomp: SeccompSettings{ProfileRoot: root}}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestNoNewPrivs(t *testing.T) {
	cases := []struct {
		name string
		sc   *v1.SecurityContext
		want bool
	}{
		{"no security context", nil, false},
		{"unset", &v1.SecurityContext{}, false},
		{"allowed", &v1.SecurityContext{AllowPrivilegeEscalation: ptr(true)}, false},
		{"disallowed", &v1.SecurityContext{AllowPrivilegeEscalation: ptr(false)}, true},
		{"disallowed but privileged", &v1.SecurityContext{AllowPrivilegeEscalation: ptr(false), Privileged: ptr(true)}, false},
		{"disallowed but SYS_ADMIN", &v1.SecurityContext{AllowPrivilegeEscalation: ptr(false),
			Capabilities: &v1.Capabilities{Add: []v1.Capability{"SYS_ADMIN"}}}, false},
		{"disallowed but CAP_SYS_ADMIN", &v1.SecurityContext{AllowPrivilegeEscalation: ptr(false),
			Capabilities: &v1.Capabilities{Add: []v1.Capability{"CAP_SYS_ADMIN"}}}, false},
		{"disallowed with other caps", &v1.SecurityContext{AllowPrivilegeEscalation: ptr(false),
			Capabilities: &v1.Capabilities{Add: []v1.Capability{"NET_ADMIN"}}}, true},
	}
	for _, tc := range cases {
		pod := newPod(newContainer("a"))
		pod.Spec.Containers[0].SecurityContext = tc.sc
		if got := securityOf(t, pod, ContainerOptions{}).NoNewPrivs; got != tc.want {
			t.Errorf("%s: no_new_privs %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestNamespaceOptions(t *testing.T) {
	type modes struct{ net, pid, ipc runtimeapi.NamespaceMode }
	cases := []struct {
		name string
		set  func(*v1.PodSpec)
		want modes
	}{
		{"defaults", func(*v1.PodSpec) {}, modes{runtimeapi.NamespaceMode_POD, runtimeapi.NamespaceMode_CONTAINER, runtimeapi.NamespaceMode_POD}},
		{"host network", func(s *v1.PodSpec) { s.HostNetwork = true }, modes{runtimeapi.NamespaceMode_NODE, runtimeapi.NamespaceMode_CONTAINER, runtimeapi.NamespaceMode_POD}},
		{"host pid", func(s *v1.PodSpec) { s.HostPID = true }, modes{runtimeapi.NamespaceMode_POD, runtimeapi.NamespaceMode_NODE, runtimeapi.NamespaceMode_POD}},
		{"shared pid", func(s *v1.PodSpec) { s.ShareProcessNamespace = ptr(true) }, modes{runtimeapi.NamespaceMode_POD, runtimeapi.NamespaceMode_POD, runtimeapi.NamespaceMode_POD}},
		{"host pid wins over shared", func(s *v1.PodSpec) { s.HostPID = true; s.ShareProcessNamespace = ptr(true) },
			modes{runtimeapi.NamespaceMode_POD, runtimeapi.NamespaceMode_NODE, runtimeapi.NamespaceMode_POD}},
		{"host ipc", func(s *v1.PodSpec) { s.HostIPC = true }, modes{runtimeapi.NamespaceMode_POD, runtimeapi.NamespaceMode_CONTAINER, runtimeapi.NamespaceMode_NODE}},
	}
	for _, tc := range cases {
		pod := newPod(newContainer("a"))
		tc.set(&pod.Spec)
		ns := NamespaceOptions(pod)
		if got := (modes{ns.Network, ns.Pid, ns.Ipc}); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestEphemeralTargetNamespace(t *testing.T) {
	pod := newPod(newContainer("a"))
	sc := securityOf(t, pod, ContainerOptions{TargetContainerID: "abc123"})
	if sc.NamespaceOptions.Pid != runtimeapi.NamespaceMode_TARGET || sc.NamespaceOptions.TargetId != "abc123" {
		t.Errorf("target: %v", sc.NamespaceOptions)
	}
	pod.Spec.ShareProcessNamespace = ptr(true)
	sc = securityOf(t, pod, ContainerOptions{TargetContainerID: "abc123"})
	if sc.NamespaceOptions.Pid != runtimeapi.NamespaceMode_POD || sc.NamespaceOptions.TargetId != "" {
		t.Errorf("shared pid namespace must win over a target: %v", sc.NamespaceOptions)
	}
}

func TestContainerSecurityFields(t *testing.T) {
	pod := newPod(newContainer("a"))
	pod.Spec.SecurityContext = &v1.PodSecurityContext{
		RunAsUser: ptr(int64(1000)), RunAsGroup: ptr(int64(2000)), FSGroup: ptr(int64(3000)),
		SupplementalGroups: []int64{4000, 5000}, SupplementalGroupsPolicy: ptr(v1.SupplementalGroupsPolicyStrict),
	}
	pod.Spec.Containers[0].SecurityContext = &v1.SecurityContext{
		RunAsUser: ptr(int64(1001)), ReadOnlyRootFilesystem: ptr(true), Privileged: ptr(false),
		Capabilities: &v1.Capabilities{Add: []v1.Capability{"NET_ADMIN"}, Drop: []v1.Capability{"ALL"}},
		ProcMount:    ptr(v1.DefaultProcMount),
	}
	sc := securityOf(t, pod, ContainerOptions{ImageUser: "nobody"})
	if sc.RunAsUser.GetValue() != 1001 || sc.RunAsGroup.GetValue() != 2000 || sc.RunAsUsername != "" {
		t.Errorf("users: %v %v %q", sc.RunAsUser, sc.RunAsGroup, sc.RunAsUsername)
	}
	if !slices.Equal(sc.SupplementalGroups, []int64{3000, 4000, 5000}) || sc.SupplementalGroupsPolicy != runtimeapi.SupplementalGroupsPolicy_Strict {
		t.Errorf("groups: %v %v", sc.SupplementalGroups, sc.SupplementalGroupsPolicy)
	}
	if !sc.ReadonlyRootfs || sc.Privileged {
		t.Errorf("readonly %v privileged %v", sc.ReadonlyRootfs, sc.Privileged)
	}
	if !slices.Equal(sc.Capabilities.AddCapabilities, []string{"NET_ADMIN"}) || !slices.Equal(sc.Capabilities.DropCapabilities, []string{"ALL"}) {
		t.Errorf("caps %v", sc.Capabilities)
	}
	if !slices.Contains(sc.MaskedPaths, "/proc/kcore") || !slices.Contains(sc.ReadonlyPaths, "/proc/sys") {
		t.Errorf("default masked/readonly paths missing: %v %v", sc.MaskedPaths, sc.ReadonlyPaths)
	}
	pod.Spec.Containers[0].SecurityContext.ProcMount = ptr(v1.UnmaskedProcMount)
	if sc := securityOf(t, pod, ContainerOptions{}); len(sc.MaskedPaths) != 0 || len(sc.ReadonlyPaths) != 0 {
		t.Errorf("unmasked procMount still masks: %v %v", sc.MaskedPaths, sc.ReadonlyPaths)
	}
}

func TestImageUserFallback(t *testing.T) {
	cases := []struct {
		image string
		uid   *int64
		name  string
	}{
		{"", nil, ""}, {"1234", ptr(int64(1234)), ""}, {"1234:55", ptr(int64(1234)), ""}, {"www", nil, "www"}, {"www:staff", nil, "www"},
	}
	for _, tc := range cases {
		pod := newPod(newContainer("a"))
		sc := securityOf(t, pod, ContainerOptions{ImageUser: tc.image})
		if (sc.RunAsUser == nil) != (tc.uid == nil) || (tc.uid != nil && sc.RunAsUser.Value != *tc.uid) || sc.RunAsUsername != tc.name {
			t.Errorf("image user %q: uid %v name %q", tc.image, sc.RunAsUser, sc.RunAsUsername)
		}
	}
}

func TestAppArmor(t *testing.T) {
	pod := newPod(newContainer("a"))
	if sc := securityOf(t, pod, ContainerOptions{}); sc.Apparmor != nil {
		t.Errorf("no profile asked, got %v", sc.Apparmor)
	}
	pod.Annotations[appArmorAnnotationPrefix+"a"] = "localhost/old"
	if sc := securityOf(t, pod, ContainerOptions{}); sc.Apparmor.GetLocalhostRef() != "old" || sc.ApparmorProfile != "localhost/old" {
		t.Errorf("annotation: %v %q", sc.Apparmor, sc.ApparmorProfile)
	}
	pod.Spec.SecurityContext = &v1.PodSecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}}
	if sc := securityOf(t, pod, ContainerOptions{}); sc.Apparmor.GetProfileType() != runtimeapi.SecurityProfile_RuntimeDefault {
		t.Errorf("pod field must win over annotation: %v", sc.Apparmor)
	}
	pod.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}}
	if sc := securityOf(t, pod, ContainerOptions{}); sc.Apparmor.GetProfileType() != runtimeapi.SecurityProfile_Unconfined {
		t.Errorf("container field must win: %v", sc.Apparmor)
	}
}

func TestVerifyRunAsNonRoot(t *testing.T) {
	cases := []struct {
		name      string
		pod, ctr  *bool
		user      *int64
		image     string
		wantError string
	}{
		{"not asked", nil, nil, nil, "", ""},
		{"asked, image root by default", ptr(true), nil, nil, "", "will run as root"},
		{"asked, image uid 0", ptr(true), nil, nil, "0:0", "will run as root"},
		{"asked, image uid 1000", ptr(true), nil, nil, "1000", ""},
		{"asked, image named user", ptr(true), nil, nil, "app", "non-numeric"},
		{"asked, runAsUser 0", ptr(true), nil, ptr(int64(0)), "1000", "runAsUser 0"},
		{"asked, runAsUser 5", nil, ptr(true), ptr(int64(5)), "", ""},
		{"container overrides pod", ptr(true), ptr(false), nil, "", ""},
	}
	for _, tc := range cases {
		pod := newPod(newContainer("a"))
		pod.Spec.SecurityContext = &v1.PodSecurityContext{RunAsNonRoot: tc.pod, RunAsUser: tc.user}
		pod.Spec.Containers[0].SecurityContext = &v1.SecurityContext{RunAsNonRoot: tc.ctr}
		err := VerifyRunAsNonRoot(pod, &pod.Spec.Containers[0], tc.image)
		if tc.wantError == "" && err != nil || tc.wantError != "" && (err == nil || !strings.Contains(err.Error(), tc.wantError)) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.wantError)
		}
	}
}
