package e2e

import (
	"path/filepath"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/test/harness"
)

// runtime is one CRI runtime with a berth agent driving it: berth serve
// (the agent inside) or containerd (`berth agent` on its socket). Its
// start function makes both run with fresh directories, a network of
// their own and the busybox image, and registers the teardown: drain (the
// agent deletes every pod), stop both, fail the test for whatever they
// left behind, then remove it.
type runtime interface {
	// name is the runtime's name in CRI Version, the scheme of the
	// container ids in pod statuses.
	name() string
	// flags are the berth CLI's global flags for this agent and runtime.
	flags() []string
	// agentRoot is the agent's --root: <root>/agent holds its pods'
	// directories and sources.
	agentRoot() string
	// agentSocket is where the agent API listens.
	agentSocket() string
	// cri is the runtime's CRI client; images its image service.
	cri() runtimeapi.RuntimeServiceClient
	images() runtimeapi.ImageServiceClient
	// importImages imports a `docker save` archive into the runtime.
	importImages(archive string) error
	// killAgent kills the agent with SIGKILL (berth serve with it, for
	// berth); startAgent starts it again. The pods keep running.
	killAgent()
	startAgent()
	// stopAgent stops the agent with SIGTERM (berth serve with it); the
	// pods keep running.
	stopAgent()
	// setAgentArgs replaces the agent's flags for its next start.
	setAgentArgs(args []string)
	// net is the runtime's CNI network.
	net() harness.Network
	// logTail is the end of the agent's log.
	logTail(lines int) string
	// agentPid is the process id of the running agent (berth serve, for
	// berth).
	agentPid() int
	// known are the sandbox and container ids and the pod uids seen, for
	// the leftover checks.
	known() (ids, podUIDs map[string]bool)
	// echoesEnv reports whether a verbose ContainerStatus shows the
	// container's env values (containerd puts the OCI spec in its info).
	echoesEnv() bool
	// plainHTTPRegistry lets the runtime pull from a plain-HTTP registry
	// on 127.0.0.1 (host is 127.0.0.1:<port>).
	plainHTTPRegistry(t *testing.T, host string)
}

// runtimeKind names a runtime and starts one: agentArgs are the agent's
// flags, drain deletes every pod through the agent at teardown.
type runtimeKind struct {
	name  string
	skip  func() string // why it cannot run here, or ""
	start func(t *testing.T, agentArgs []string, drain func()) runtime
}

// runtimes are the runtimes every scenario runs on, in order.
var runtimes = []runtimeKind{
	{name: "berth", skip: func() string { return "" }, start: startBerth},
	{name: "containerd", skip: containerdSkipReason, start: startContainerd},
}

// onEachRuntime runs a scenario on every runtime, as subtests named after
// the runtimes. They run side by side (each runtime has its own
// directories, network and subnet); the scenarios one after the other.
func onEachRuntime(t *testing.T, scenario func(t *testing.T, n *node)) {
	onEachRuntimeWith(t, func(t *testing.T, start func(...string) *node) { scenario(t, start()) })
}

// onEachRuntimeWith is onEachRuntime for a scenario that prepares things
// before the node starts: start starts it with more agent flags.
func onEachRuntimeWith(t *testing.T, scenario func(t *testing.T, start func(agentArgs ...string) *node)) {
	for _, kind := range runtimes {
		t.Run(kind.name, func(t *testing.T) {
			if reason := kind.skip(); reason != "" {
				t.Skip(reason)
			}
			t.Parallel()
			scenario(t, func(args ...string) *node { return startNode(t, kind, args...) })
		})
	}
}

// berthRuntime is a `berth serve` with its agent (test/harness).
type berthRuntime struct{ *harness.Daemon }

func startBerth(t *testing.T, agentArgs []string, drain func()) runtime {
	d := harness.Start(t, harness.Options{
		BinDir: env.BinDir, Config: env.Config, Layouts: []string{env.Layout, bareLayout}, ServeArgs: agentArgs,
	})
	d.BeforeCleanup = drain
	return berthRuntime{d}
}

func (berthRuntime) name() string                           { return "berth" }
func (b berthRuntime) flags() []string                      { return b.GlobalFlags() }
func (b berthRuntime) agentRoot() string                    { return b.Root }
func (b berthRuntime) agentSocket() string                  { return filepath.Join(b.State, agentapi.SocketName) }
func (b berthRuntime) cri() runtimeapi.RuntimeServiceClient { return b.RT }
func (b berthRuntime) killAgent()                           { b.Kill9() }
func (b berthRuntime) startAgent()                          { b.Start() }
func (b berthRuntime) stopAgent()                           { b.Stop() }
func (b berthRuntime) setAgentArgs(args []string)           { b.ServeArgs = args }
func (b berthRuntime) net() harness.Network                 { return b.Net }
func (b berthRuntime) logTail(lines int) string             { return b.LogTail(lines) }
func (b berthRuntime) agentPid() int                        { return b.Pid() }
func (b berthRuntime) known() (map[string]bool, map[string]bool) {
	return b.KnownIDs, b.KnownPodUIDs
}
func (berthRuntime) echoesEnv() bool { return false }

// plainHTTPRegistry: berth reaches loopback registries over plain HTTP.
func (berthRuntime) plainHTTPRegistry(*testing.T, string) {}

func (b berthRuntime) images() runtimeapi.ImageServiceClient { return b.Img }

func (b berthRuntime) importImages(archive string) error {
	b.MustBerth("image", "import", archive)
	return nil
}
