package pod

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"syscall"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/errdefs"
)

func goodSandboxConfig() *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "u1"},
		LogDirectory: "/var/log/pods/default_web_u1",
		PortMappings: []*runtimeapi.PortMapping{{ContainerPort: 80, HostPort: 8080}},
	}
}

func TestValidateSandboxConfigNamesTheField(t *testing.T) {
	cases := []struct {
		field  string
		mutate func(*runtimeapi.PodSandboxConfig)
	}{
		{"config.metadata", func(c *runtimeapi.PodSandboxConfig) { c.Metadata = nil }},
		{"config.metadata.name", func(c *runtimeapi.PodSandboxConfig) { c.Metadata.Name = "" }},
		{"config.metadata.uid", func(c *runtimeapi.PodSandboxConfig) { c.Metadata.Uid = "a/b" }},
		{"config.log_directory", func(c *runtimeapi.PodSandboxConfig) { c.LogDirectory = "relative/dir" }},
		{"config.port_mappings[0].container_port", func(c *runtimeapi.PodSandboxConfig) { c.PortMappings[0].ContainerPort = 0 }},
		{"config.port_mappings[0].host_port", func(c *runtimeapi.PodSandboxConfig) { c.PortMappings[0].HostPort = 70000 }},
	}
	if err := validateSandboxConfig(goodSandboxConfig(), "", defaultHandlers); err != nil {
		t.Fatalf("good config: %v", err)
	}
	for _, tc := range cases {
		cfg := goodSandboxConfig()
		tc.mutate(cfg)
		err := validateSandboxConfig(cfg, "", defaultHandlers)
		if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.HasPrefix(err.Error(), tc.field+":") {
			t.Errorf("%s: got %v", tc.field, err)
		}
	}
	if err := validateSandboxConfig(goodSandboxConfig(), "kata", defaultHandlers); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("unknown handler: %v", err)
	}
}

func TestValidateContainerConfigNamesTheField(t *testing.T) {
	good := func() *runtimeapi.ContainerConfig {
		return &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
			Image:    &runtimeapi.ImageSpec{Image: "busybox"},
			LogPath:  "app/0.log",
			Mounts:   []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: "/srv/data"}},
			Envs:     []*runtimeapi.KeyValue{{Key: "A", Value: []byte("1")}},
		}
	}
	cases := []struct {
		field  string
		mutate func(*runtimeapi.ContainerConfig)
	}{
		{"config.metadata.name", func(c *runtimeapi.ContainerConfig) { c.Metadata = nil }},
		{"config.image.image", func(c *runtimeapi.ContainerConfig) { c.Image = nil }},
		{"config.log_path", func(c *runtimeapi.ContainerConfig) { c.LogPath = "/abs.log" }},
		{"config.log_path", func(c *runtimeapi.ContainerConfig) { c.LogPath = "../escape.log" }},
		{"config.mounts[0].container_path", func(c *runtimeapi.ContainerConfig) { c.Mounts[0].ContainerPath = "data" }},
		{"config.mounts[0].host_path", func(c *runtimeapi.ContainerConfig) { c.Mounts[0].HostPath = "srv" }},
		{"config.envs[0].key", func(c *runtimeapi.ContainerConfig) { c.Envs[0].Key = "A=B" }},
	}
	if err := validateContainerConfig(good(), goodSandboxConfig()); err != nil {
		t.Fatalf("good config: %v", err)
	}
	for _, tc := range cases {
		cfg := good()
		tc.mutate(cfg)
		err := validateContainerConfig(cfg, goodSandboxConfig())
		if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.HasPrefix(err.Error(), tc.field+":") {
			t.Errorf("%s: got %v", tc.field, err)
		}
	}
}

func TestParseSignal(t *testing.T) {
	cases := map[string]syscall.Signal{"SIGTERM": syscall.SIGTERM, "term": syscall.SIGTERM, "9": syscall.SIGKILL,
		"SIGUSR1": syscall.SIGUSR1, "SIGWINCH": syscall.SIGWINCH, "QUIT": syscall.SIGQUIT, "SIGBUS": syscall.SIGBUS,
		"SIGRTMIN": 34, "SIGRTMIN+3": 37, "RTMAX-1": 63, "SIGRTMAX": 64}
	for in, want := range cases {
		if got, ok := parseSignal(in); !ok || got != want {
			t.Errorf("%q: %v %v, want %v", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "SIGNOPE", "0", "99", "SIGRTMIN-1", "SIGRTMAX+1", "SIGRTMIN+31", "SIGRTMIN+x"} {
		if _, ok := parseSignal(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestExitReason(t *testing.T) {
	if exitReason(0, false) != ReasonCompleted || exitReason(3, false) != ReasonError || exitReason(137, true) != ReasonOOMKilled {
		t.Fatal("exit reasons")
	}
}

func TestRollbackRunsNewestFirstDespiteErrors(t *testing.T) {
	var rb rollback
	var order []string
	rb.add("a", func(context.Context) error { order = append(order, "a"); return nil })
	rb.add("b", func(context.Context) error { order = append(order, "b"); return errors.New("fails") })
	rb.add("c", func(ctx context.Context) error {
		order = append(order, "c")
		if ctx.Err() != nil {
			t.Error("undo context already cancelled")
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the request was cancelled; undo must still run
	rb.run(ctx, slog.Default(), "test")
	if strings.Join(order, "") != "cba" {
		t.Fatalf("order %v", order)
	}
}

func TestCRISignal(t *testing.T) {
	for sig, want := range map[runtimeapi.Signal]syscall.Signal{
		runtimeapi.Signal_SIGNAL_SIGUSR1: syscall.SIGUSR1, runtimeapi.Signal_SIGNAL_SIGTERM: syscall.SIGTERM,
		runtimeapi.Signal_SIGNAL_SIGRTMINPLUS1: 35, runtimeapi.Signal_SIGNAL_SIGRTMAXMINUS2: 62,
	} {
		if got, ok := criSignal(sig); !ok || got != want {
			t.Errorf("%v: %v %v, want %v", sig, got, ok, want)
		}
	}
	for _, sig := range []runtimeapi.Signal{runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT, runtimeapi.Signal(999)} {
		if got, ok := criSignal(sig); ok {
			t.Errorf("%v mapped to %v", sig, got)
		}
	}
}

// defaultHandlers are the handlers of a Service without extra runtimes.
var defaultHandlers = []string{"", DefaultHandler}
