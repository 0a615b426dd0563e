package pod

import (
	"encoding/json"
	"errors"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/oci"
)

// FuzzValidateCRIConfig feeds arbitrary RunPodSandbox and CreateContainer
// configs (protobuf, as they arrive over the CRI) to the request
// validation and, for configs it accepts, to the OCI spec builders, as
// RunPodSandbox and CreateContainer do. A refused config is refused as
// invalid input. An accepted config either builds a spec or fails with a
// classified error (one the CRI maps to a gRPC code rather than Unknown);
// a spec it builds has the rootfs it was given, clean absolute mount
// destinations, a command, the requested environment, and encodes to
// config.json.
func FuzzValidateCRIConfig(f *testing.F) {
	for _, seed := range criFuzzSeeds() {
		sandbox, err := proto.Marshal(seed.sandbox)
		if err != nil {
			f.Fatal(err)
		}
		container, err := proto.Marshal(seed.container)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(sandbox, container, seed.handler)
	}
	rootfs := f.TempDir()
	if err := os.MkdirAll(filepath.Join(rootfs, "etc"), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, "etc", "passwd"), []byte("root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000::/home/app:/bin/sh\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, sandboxData, containerData []byte, handler string) {
		var sandboxCfg runtimeapi.PodSandboxConfig
		var cfg runtimeapi.ContainerConfig
		if proto.Unmarshal(sandboxData, &sandboxCfg) != nil || proto.Unmarshal(containerData, &cfg) != nil {
			return // the gRPC server refuses what does not decode
		}
		if err := validateSandboxConfig(&sandboxCfg, handler, defaultHandlers); err != nil {
			requireInvalidArgument(t, "RunPodSandbox", err)
			return
		}
		sandbox := fuzzOCISandbox(&sandboxCfg)
		checkSandboxSpec(t, sandbox, rootfs)
		if err := validateContainerConfig(&cfg, &sandboxCfg); err != nil {
			requireInvalidArgument(t, "CreateContainer", err)
			return
		}
		if readsHostFiles(&cfg) {
			return // stays pure: no host device walks or profile files
		}
		checkContainerSpec(t, &cfg, sandbox, rootfs)
	})
}

func requireInvalidArgument(t *testing.T, step string, err error) {
	t.Helper()
	if !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("%s: validation refused without ErrInvalidArgument: %v", step, err)
	}
}

// requireClassified fails unless err carries a category the CRI server
// maps to a gRPC code.
func requireClassified(t *testing.T, step string, err error) {
	t.Helper()
	for _, category := range []error{errdefs.ErrInvalidArgument, errdefs.ErrNotFound, errdefs.ErrFailedPrecondition, errdefs.ErrNotImplemented} {
		if errors.Is(err, category) {
			return
		}
	}
	t.Fatalf("%s: validated config fails unclassified: %v", step, err)
}

// fuzzOCISandbox is the sandbox a container joins, with the namespaces
// RunPodSandbox would have pinned.
func fuzzOCISandbox(cfg *runtimeapi.PodSandboxConfig) oci.Sandbox {
	return oci.Sandbox{
		ID: "sb0", Config: cfg,
		NetNS: "/run/berth/pods/sb0/ns/net", IPCNS: "/run/berth/pods/sb0/ns/ipc", UTSNS: "/run/berth/pods/sb0/ns/uts",
		PIDNS:        "/proc/1/ns/pid",
		HostnamePath: "/run/berth/pods/sb0/hostname", HostsPath: "/run/berth/pods/sb0/hosts",
		ResolvConfPath: "/run/berth/pods/sb0/resolv.conf",
	}
}

func checkSandboxSpec(t *testing.T, sandbox oci.Sandbox, rootfs string) {
	t.Helper()
	spec, err := oci.BuildSandboxSpec(oci.SandboxInput{Sandbox: sandbox, RootfsPath: rootfs, OOMScoreAdjMin: -999})
	if err != nil {
		requireClassified(t, "pause spec", err)
		return
	}
	checkSpec(t, "pause spec", spec, rootfs)
}

func checkContainerSpec(t *testing.T, cfg *runtimeapi.ContainerConfig, sandbox oci.Sandbox, rootfs string) {
	t.Helper()
	spec, err := oci.BuildSpec(oci.Input{
		ContainerID: "ctr0", Config: cfg, Sandbox: sandbox,
		Image:      oci.Image{Config: ocispec.ImageConfig{Cmd: []string{"/bin/sh"}, Env: []string{"PATH=/bin"}}, Name: "busybox:latest"},
		RootfsPath: rootfs, OOMScoreAdjMin: -999, TargetPID: 1,
		CgroupParent: sandbox.Config.GetLinux().GetCgroupParent(),
	})
	if err != nil {
		requireClassified(t, "container spec", err)
		return
	}
	checkSpec(t, "container spec", spec, rootfs)
	if len(spec.Process.Args) == 0 {
		t.Fatal("container spec: no command")
	}
	want := map[string]string{}
	for _, kv := range cfg.GetEnvs() {
		want[kv.GetKey()] = kv.GetKey() + "=" + string(kv.GetValue())
	}
	for key, entry := range want {
		if !slices.Contains(spec.Process.Env, entry) {
			t.Fatalf("container spec: env %s: want %q in %q", key, entry, spec.Process.Env)
		}
	}
}

// checkSpec checks what every spec must hold for runc.
func checkSpec(t *testing.T, step string, spec *specs.Spec, rootfs string) {
	t.Helper()
	if spec.Root == nil || spec.Root.Path != rootfs || spec.Process == nil || spec.Linux == nil {
		t.Fatalf("%s: root, process or linux section missing or wrong: %+v", step, spec)
	}
	for _, m := range spec.Mounts {
		if !path.IsAbs(m.Destination) || path.Clean(m.Destination) != m.Destination || m.Destination == "/" {
			t.Fatalf("%s: mount destination %q is not a clean absolute path below /", step, m.Destination)
		}
	}
	if _, err := json.Marshal(spec); err != nil {
		t.Fatalf("%s: does not encode: %v", step, err)
	}
}

// readsHostFiles reports whether building cfg's spec would read the host:
// privileged containers get every /dev node, requested devices are
// stat'ed, Localhost seccomp profiles are files.
func readsHostFiles(cfg *runtimeapi.ContainerConfig) bool {
	sc := cfg.GetLinux().GetSecurityContext()
	return sc.GetPrivileged() || len(cfg.GetDevices()) > 0 ||
		sc.GetSeccomp().GetProfileType() == runtimeapi.SecurityProfile_Localhost ||
		(sc.GetSeccomp() == nil && strings.HasPrefix(sc.GetSeccompProfilePath(), "localhost/"))
}

type criFuzzSeed struct {
	sandbox   *runtimeapi.PodSandboxConfig
	container *runtimeapi.ContainerConfig
	handler   string
}

// criFuzzSeeds are configs as the kubelet and critest send them.
func criFuzzSeeds() []criFuzzSeed {
	kubelet := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "0b8e1c6a-1f", Attempt: 1},
		Hostname:     "web",
		LogDirectory: "/var/log/pods/default_web_0b8e1c6a-1f",
		DnsConfig:    &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: []string{"default.svc.cluster.local"}, Options: []string{"ndots:5"}},
		PortMappings: []*runtimeapi.PortMapping{{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 8080, HostPort: 30080}},
		Labels:       map[string]string{"app": "web", "io.kubernetes.pod.name": "web"},
		Annotations:  map[string]string{"kubernetes.io/config.source": "file"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent: "/kubepods/besteffort/pod0b8e1c6a-1f",
			Sysctls:      map[string]string{"net.ipv4.ip_unprivileged_port_start": "0"},
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD},
				RunAsUser:        &runtimeapi.Int64Value{Value: 65535},
			},
		},
	}
	hostPod := proto.Clone(kubelet).(*runtimeapi.PodSandboxConfig)
	hostPod.Linux.Sysctls = nil // namespaced sysctls need the pod's own network namespace
	hostPod.Linux.SecurityContext.NamespaceOptions = &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_POD, Ipc: runtimeapi.NamespaceMode_NODE}
	app := &runtimeapi.ContainerConfig{
		Metadata:   &runtimeapi.ContainerMetadata{Name: "app", Attempt: 0},
		Image:      &runtimeapi.ImageSpec{Image: "docker.io/library/busybox:latest"},
		Command:    []string{"httpd", "-f", "-p", "8080"},
		Args:       []string{"-h", "/www"},
		WorkingDir: "/www",
		Envs:       []*runtimeapi.KeyValue{{Key: "POD_NAME", Value: []byte("web")}, {Key: "PATH", Value: []byte("/usr/bin:/bin")}, {Key: "POD_NAME", Value: []byte("web2")}},
		Mounts: []*runtimeapi.Mount{
			{ContainerPath: "/www", HostPath: "/var/lib/berth/pods/0b8e1c6a-1f/volumes/www", Propagation: runtimeapi.MountPropagation_PROPAGATION_PRIVATE},
			{ContainerPath: "/etc/config/", HostPath: "/var/lib/berth/pods/0b8e1c6a-1f/volumes/config", Readonly: true, RecursiveReadOnly: true},
			{ContainerPath: "/dev/termination-log", HostPath: "/var/lib/berth/pods/0b8e1c6a-1f/containers/app/0"},
		},
		LogPath: "app/0.log",
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources: &runtimeapi.LinuxContainerResources{CpuPeriod: 100000, CpuQuota: 50000, CpuShares: 512, MemoryLimitInBytes: 128 << 20, OomScoreAdj: 1000},
			SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				Capabilities:       &runtimeapi.Capability{AddCapabilities: []string{"NET_BIND_SERVICE"}, DropCapabilities: []string{"ALL"}},
				RunAsUsername:      "app",
				ReadonlyRootfs:     true,
				NoNewPrivs:         true,
				Seccomp:            &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
				MaskedPaths:        []string{"/proc/kcore"},
				NamespaceOptions:   &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_TARGET, TargetId: "ctr-1"},
				SupplementalGroups: []int64{1000, 2000},
			},
		},
	}
	minimal := &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: "sha256:abc"}}
	escaping := proto.Clone(app).(*runtimeapi.ContainerConfig)
	escaping.LogPath = "../../etc/cron.d/x"
	escaping.Mounts = append(escaping.Mounts, &runtimeapi.Mount{ContainerPath: "/", HostPath: "/"})
	badMeta := proto.Clone(kubelet).(*runtimeapi.PodSandboxConfig)
	badMeta.Metadata.Uid = "../../x"
	return []criFuzzSeed{
		{kubelet, app, ""},
		{hostPod, minimal, "runc"},
		{kubelet, escaping, ""},
		{badMeta, minimal, ""},
		{kubelet, minimal, "kata"},
		{&runtimeapi.PodSandboxConfig{}, &runtimeapi.ContainerConfig{}, ""},
	}
}
