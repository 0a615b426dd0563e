package oci

import (
	"errors"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/berth-dev/berth/internal/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func without(list []string, drop ...string) []string {
	set := capabilitySet(drop)
	var out []string
	for _, c := range list {
		if !set[c] {
			out = append(out, c)
		}
	}
	return out
}

// boundingFromProcStatus reads this process's bounding set from the CapBnd
// line of /proc/self/status: the ceiling of "ALL" and privileged.
func boundingFromProcStatus(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if hex, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			var caps []string
			for i, c := range allCapabilities {
				if mask&(1<<i) != 0 {
					caps = append(caps, c)
				}
			}
			return caps
		}
	}
	t.Fatal("/proc/self/status: no CapBnd line")
	return nil
}

func TestCapabilities(t *testing.T) {
	defaults := orderedCapabilities(capabilitySet(DefaultCapabilities))
	caps := func(add, drop []string) *runtimeapi.LinuxContainerSecurityContext {
		return &runtimeapi.LinuxContainerSecurityContext{Capabilities: &runtimeapi.Capability{AddCapabilities: add, DropCapabilities: drop}}
	}
	for _, tc := range []struct {
		name string
		sc   *runtimeapi.LinuxContainerSecurityContext
		want []string
	}{
		{"defaults", nil, defaults},
		{"add without prefix", caps([]string{"NET_ADMIN"}, nil), orderedCapabilities(capabilitySet(append([]string{"CAP_NET_ADMIN"}, DefaultCapabilities...)))},
		{"add lower case with prefix", caps([]string{"cap_sys_time"}, nil), orderedCapabilities(capabilitySet(append([]string{"CAP_SYS_TIME"}, DefaultCapabilities...)))},
		{"drop", caps(nil, []string{"NET_RAW", "CAP_MKNOD"}), without(defaults, "CAP_NET_RAW", "CAP_MKNOD")},
		{"drop ALL", caps(nil, []string{"ALL"}), nil},
		{"drop ALL then add", caps([]string{"NET_BIND_SERVICE"}, []string{"ALL"}), []string{"CAP_NET_BIND_SERVICE"}},
		{"add ALL", caps([]string{"ALL"}, nil), boundingFromProcStatus(t)},
		{"add ALL drop one", caps([]string{"all"}, []string{"SYS_ADMIN"}), without(boundingFromProcStatus(t), "CAP_SYS_ADMIN")},
		{"privileged ignores drops", &runtimeapi.LinuxContainerSecurityContext{Privileged: true,
			Capabilities: &runtimeapi.Capability{DropCapabilities: []string{"ALL"}}}, boundingFromProcStatus(t)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := containerCapabilities(tc.sc)
			if err != nil {
				t.Fatal(err)
			}
			for set, v := range map[string][]string{"bounding": got.Bounding, "effective": got.Effective, "permitted": got.Permitted} {
				if !reflect.DeepEqual(v, tc.want) {
					t.Errorf("%s = %v, want %v", set, v, tc.want)
				}
			}
			if len(got.Inheritable) != 0 || len(got.Ambient) != 0 {
				t.Errorf("inheritable %v ambient %v, want none", got.Inheritable, got.Ambient)
			}
		})
	}
}

func TestCapabilitiesAmbientAndErrors(t *testing.T) {
	got, err := containerCapabilities(&runtimeapi.LinuxContainerSecurityContext{Capabilities: &runtimeapi.Capability{
		DropCapabilities: []string{"ALL"}, AddAmbientCapabilities: []string{"NET_BIND_SERVICE"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"CAP_NET_BIND_SERVICE"}
	for name, v := range map[string][]string{"bounding": got.Bounding, "permitted": got.Permitted,
		"effective": got.Effective, "inheritable": got.Inheritable, "ambient": got.Ambient} {
		if !reflect.DeepEqual(v, want) {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}
	for _, sc := range []*runtimeapi.LinuxContainerSecurityContext{
		{Capabilities: &runtimeapi.Capability{AddCapabilities: []string{"FLY"}}},
		{Capabilities: &runtimeapi.Capability{DropCapabilities: []string{"CAP_NOPE"}}},
		{Capabilities: &runtimeapi.Capability{AddAmbientCapabilities: []string{"ALL"}}},
	} {
		if _, err := containerCapabilities(sc); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%v: err = %v, want InvalidArgument", sc.Capabilities, err)
		}
	}
}

func TestMaskedAndReadonlyPaths(t *testing.T) {
	masked, ro := maskedAndReadonlyPaths(nil, false)
	if !reflect.DeepEqual(masked, DefaultMaskedPaths) || !reflect.DeepEqual(ro, DefaultReadonlyPaths) {
		t.Fatalf("defaults: %v %v", masked, ro)
	}
	for _, inUserns := range []bool{false, true} {
		masked, ro = maskedAndReadonlyPaths(&runtimeapi.LinuxContainerSecurityContext{MaskedPaths: []string{"/a"}, ReadonlyPaths: []string{"/b"}}, inUserns)
		if !reflect.DeepEqual(masked, []string{"/a"}) || !reflect.DeepEqual(ro, []string{"/b"}) {
			t.Fatalf("requested (user namespace %v): %v %v", inUserns, masked, ro)
		}
	}
	// procMount: Unmasked, as kubelet sends it: both lists empty, in a
	// user namespace only.
	masked, ro = maskedAndReadonlyPaths(&runtimeapi.LinuxContainerSecurityContext{}, true)
	if masked == nil || ro == nil || len(masked)+len(ro) != 0 {
		t.Fatalf("unmasked in a user namespace: %v %v, want both empty", masked, ro)
	}
}

func TestPodSysctls(t *testing.T) {
	pod := func(sysctls map[string]string) *runtimeapi.PodSandboxConfig {
		return &runtimeapi.PodSandboxConfig{Linux: &runtimeapi.LinuxPodSandboxConfig{Sysctls: sysctls}}
	}
	podNS := &runtimeapi.NamespaceOption{}
	hostNet := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}
	hostIPC := &runtimeapi.NamespaceOption{Ipc: runtimeapi.NamespaceMode_NODE}
	ok := map[string]string{"net.ipv4.ip_forward": "1", "kernel.shmmax": "1000", "fs.mqueue.msg_max": "20"}
	got, err := podSysctls(pod(ok), podNS)
	if err != nil || !reflect.DeepEqual(got, ok) {
		t.Fatalf("podSysctls = %v, %v", got, err)
	}
	for _, tc := range []struct {
		name    string
		sysctls map[string]string
		opts    *runtimeapi.NamespaceOption
	}{
		{"not namespaced", map[string]string{"vm.swappiness": "1"}, podNS},
		{"net with host network", map[string]string{"net.core.somaxconn": "1"}, hostNet},
		{"ipc with host ipc", map[string]string{"kernel.msgmax": "1"}, hostIPC},
	} {
		if _, err := podSysctls(pod(tc.sysctls), tc.opts); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%s: err = %v, want InvalidArgument", tc.name, err)
		}
	}
}
