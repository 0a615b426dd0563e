package oci

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/berth-dev/berth/internal/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestBuildSpecProcess(t *testing.T) {
	in := testInput(t)
	in.Image.Config.Entrypoint = []string{"/entry"}
	in.Image.Config.Env = []string{"PATH=/img/bin", "HOSTNAME=image", "A=1"}
	in.Image.Config.WorkingDir = "/srv"
	in.Image.Config.User = "app"
	in.Config.Args = []string{"--flag"}
	in.Config.Envs = []*runtimeapi.KeyValue{{Key: "A", Value: []byte("2")}, {Key: "B", Value: []byte("3")}}
	in.Config.Tty = true
	securityContext(in).NoNewPrivs = true
	spec, err := BuildSpec(in)
	if err != nil {
		t.Fatal(err)
	}
	p := spec.Process
	if want := []string{"/entry", "--flag"}; !reflect.DeepEqual(p.Args, want) {
		t.Errorf("args = %q, want %q", p.Args, want)
	}
	if want := []string{"PATH=/img/bin", "HOSTNAME=web-host", "A=2", "B=3"}; !reflect.DeepEqual(p.Env, want) {
		t.Errorf("env = %q, want %q", p.Env, want)
	}
	if p.Cwd != "/srv" || !p.Terminal || !p.NoNewPrivileges || p.User.UID != 1000 || p.User.GID != 1001 {
		t.Errorf("process = %+v", p)
	}
	if want := []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 1024, Soft: 1024}}; !reflect.DeepEqual(p.Rlimits, want) {
		t.Errorf("rlimits = %+v", p.Rlimits)
	}
	if spec.Hostname != "web-host" || spec.Version != SpecVersion || spec.Root.Path != in.RootfsPath || spec.Root.Readonly {
		t.Errorf("spec header: hostname %q version %q root %+v", spec.Hostname, spec.Version, spec.Root)
	}
	if p.OOMScoreAdj != nil {
		t.Errorf("oom_score_adj = %d without resources, want unset", *p.OOMScoreAdj)
	}
}

func TestBuildSpecDefaults(t *testing.T) {
	in := testInput(t)
	in.Config.WorkingDir = "/work"
	spec, err := BuildSpec(in)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Process.Cwd != "/work" || spec.Process.NoNewPrivileges || spec.Process.Terminal {
		t.Errorf("process = %+v", spec.Process)
	}
	if want := []string{defaultPath, "HOSTNAME=web-host"}; !reflect.DeepEqual(spec.Process.Env, want) {
		t.Errorf("env = %q, want %q", spec.Process.Env, want)
	}
	if spec.Linux.CgroupsPath != "/kubepods/podx/ctr1" {
		t.Errorf("cgroupsPath = %q", spec.Linux.CgroupsPath)
	}
	if !reflect.DeepEqual(spec.Linux.MaskedPaths, DefaultMaskedPaths) || !reflect.DeepEqual(spec.Linux.ReadonlyPaths, DefaultReadonlyPaths) {
		t.Errorf("masked %v readonly %v", spec.Linux.MaskedPaths, spec.Linux.ReadonlyPaths)
	}
	if spec.Linux.Seccomp != nil || spec.Process.ApparmorProfile != "" {
		t.Errorf("unexpected confinement: seccomp %v apparmor %q", spec.Linux.Seccomp, spec.Process.ApparmorProfile)
	}
	// config.json must survive a round trip.
	data, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	var back specs.Spec
	if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(&back, spec) {
		t.Fatalf("json round trip differs: %v", err)
	}

	in.Image.Config.WorkingDir = "relative"
	in.Config.WorkingDir = ""
	if _, err := BuildSpec(in); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("relative working dir: err = %v", err)
	}
}

func TestBuildSpecAnnotations(t *testing.T) {
	in := testInput(t)
	in.Config.Annotations = map[string]string{"team": "a", AnnotationContainerType: "sandbox"}
	securityContext(in).Seccomp = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
	spec, err := BuildSpec(in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"team":                     "a",
		AnnotationContainerType:    ContainerTypeContainer,
		AnnotationContainerName:    "app",
		AnnotationSandboxID:        "sb1",
		AnnotationSandboxName:      "web",
		AnnotationSandboxNamespace: "default",
		AnnotationSandboxUID:       "uid-1",
		AnnotationImageName:        "example.test/app:1",
	}
	if !reflect.DeepEqual(spec.Annotations, want) {
		t.Fatalf("annotations = %v\nwant %v", spec.Annotations, want)
	}
}

func TestBuildSpecResourcesAndOOM(t *testing.T) {
	for _, tc := range []struct {
		name      string
		requested int64
		min       int
		want      int
		annotated bool
	}{
		{"allowed", -997, -999, -997, false},
		{"clamped", -1000, -999, -999, true},
		{"best effort", 1000, 0, 1000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := testInput(t)
			in.OOMScoreAdjMin = tc.min
			in.Config.Linux.Resources = &runtimeapi.LinuxContainerResources{OomScoreAdj: tc.requested, CpuShares: 2, MemoryLimitInBytes: 64 << 20}
			spec, err := BuildSpec(in)
			if err != nil {
				t.Fatal(err)
			}
			if *spec.Process.OOMScoreAdj != tc.want {
				t.Errorf("oom_score_adj = %d, want %d", *spec.Process.OOMScoreAdj, tc.want)
			}
			if _, ok := spec.Annotations[AnnotationRequestedOOMScoreAdj]; ok != tc.annotated {
				t.Errorf("clamp annotation present = %v, want %v", ok, tc.annotated)
			}
			r := spec.Linux.Resources
			if *r.CPU.Shares != 2 || *r.Memory.Limit != 64<<20 || *r.Memory.Swap != 64<<20 || len(r.Devices) == 0 {
				t.Errorf("resources = %+v", r)
			}
		})
	}
	in := testInput(t)
	in.Config.Linux.Resources = &runtimeapi.LinuxContainerResources{OomScoreAdj: 1001}
	if _, err := BuildSpec(in); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("oom_score_adj 1001: err = %v", err)
	}
}

func TestBuildSpecPrivilegedAndReadonly(t *testing.T) {
	in := testInput(t)
	securityContext(in).Privileged = true
	securityContext(in).ReadonlyRootfs = true
	spec, err := BuildSpec(in)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Linux.MaskedPaths != nil || spec.Linux.ReadonlyPaths != nil {
		t.Errorf("privileged: masked %v readonly %v, want none", spec.Linux.MaskedPaths, spec.Linux.ReadonlyPaths)
	}
	if !reflect.DeepEqual(spec.Process.Capabilities.Bounding, boundingFromProcStatus(t)) {
		t.Errorf("privileged bounding = %v", spec.Process.Capabilities.Bounding)
	}
	if !spec.Root.Readonly {
		t.Error("readonly_rootfs not applied")
	}
	if rules := spec.Linux.Resources.Devices; len(rules) != 1 || !rules[0].Allow {
		t.Errorf("privileged device rules = %+v", rules)
	}
}

func TestBuildSpecHostNetwork(t *testing.T) {
	in := testInput(t)
	securityContext(in).NamespaceOptions = &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_CONTAINER}
	in.Sandbox.Config.Hostname = ""
	in.Sandbox.Config.Linux.Sysctls = map[string]string{"kernel.shmmax": "42"}
	spec, err := BuildSpec(in)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Hostname != "" {
		t.Errorf("hostname %q set in the host UTS namespace", spec.Hostname)
	}
	for _, ns := range spec.Linux.Namespaces {
		if ns.Type == specs.NetworkNamespace || ns.Type == specs.UTSNamespace {
			t.Errorf("host network spec has %+v", ns)
		}
	}
	if spec.Linux.Sysctl["kernel.shmmax"] != "42" {
		t.Errorf("sysctls = %v", spec.Linux.Sysctl)
	}
}

func TestBuildSpecInvalidInput(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Input)
	}{
		{"no id", func(in *Input) { in.ContainerID = "" }},
		{"no config", func(in *Input) { in.Config = nil }},
		{"no metadata", func(in *Input) { in.Config.Metadata = nil }},
		{"no sandbox config", func(in *Input) { in.Sandbox.Config = nil }},
		{"relative rootfs", func(in *Input) { in.RootfsPath = "rootfs" }},
		{"no command", func(in *Input) { in.Image.Config.Cmd = nil }},
		{"systemd parent", func(in *Input) { in.CgroupParent = "kubepods.slice" }},
	} {
		in := testInput(t)
		tc.mutate(&in)
		if _, err := BuildSpec(in); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%s: err = %v, want InvalidArgument", tc.name, err)
		}
	}
}
