package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/test/harness"
)

// containerdSkipReason says why containerd cannot run here, or "".
func containerdSkipReason() string {
	if missing := harness.Containerd16.Missing(); missing != "" {
		return "containerd runs skipped: " + missing + " (Debian packages containerd and runc; `make deps` installs them)"
	}
	return ""
}

// ctrdNode is a private containerd and a `berth agent` on its socket,
// their directories and network, and what was seen of them.
type ctrdNode struct {
	t         *testing.T
	root      string // /var/lib/bt-ctrd-<id>
	state     string // /run/bt-ctrd-<id>
	tmp       string // configs and logs
	agentArgs []string
	berthConf string // berth's config file (no host config is read)
	network   harness.Network
	ctrd      *harness.Containerd
	agent     harness.Process
	drain     func()
	seen      seenObjects
	// absentHostDirs are the harness.ContainerdHostDirs that did not
	// exist at the start.
	absentHostDirs []string
}

// startContainerd starts containerd with the test images and the agent
// on its socket; the teardown is registered first.
func startContainerd(t *testing.T, agentArgs []string, drain func()) runtime {
	t.Helper()
	id := harness.RandomHex(6)
	c := &ctrdNode{
		t: t, root: "/var/lib/bt-ctrd-" + id, state: "/run/bt-ctrd-" + id, tmp: t.TempDir(),
		agentArgs: agentArgs, drain: drain, seen: newSeenObjects(),
	}
	c.network = harness.NewNetwork("btc", id, filepath.Join(c.root, "cni-ipam"))
	c.ctrd = harness.NewContainerd(harness.Containerd16, c.root, c.state, filepath.Join(c.tmp, "containerd.log"))
	c.agent = harness.Process{Name: "berth agent", Bin: filepath.Join(env.BinDir, "berth"), LogPath: filepath.Join(c.tmp, "agent.log"), CleanExit: true}
	c.absentHostDirs = harness.AbsentDirs(harness.ContainerdHostDirs)
	harness.KeepOnFailure(t, c.ctrd.LogPath, c.agent.LogPath) // runs after the teardown
	t.Cleanup(c.teardown)
	if err := c.writeConfigs(); err != nil {
		t.Fatal(err)
	}
	if err := c.ctrd.Launch(); err != nil {
		t.Fatalf("%v\n%s", err, c.ctrd.LogTail(40))
	}
	if err := c.ctrd.CheckOffline(); err != nil {
		t.Fatal(err)
	}
	if err := c.ctrd.ImportImages(containerdImages, busyboxRef); err != nil {
		t.Fatalf("images: %v\n%s", err, c.ctrd.LogTail(40))
	}
	c.startAgent()
	return c
}

// writeConfigs writes the CNI conflist, containerd's config and registry
// hosts, and berth's config.
func (c *ctrdNode) writeConfigs() error {
	cniConf := filepath.Join(c.tmp, "net.d")
	if err := c.network.WriteConfig(cniConf); err != nil {
		return fmt.Errorf("CNI config: %w", err)
	}
	hosts := filepath.Join(c.tmp, "certs.d")
	if err := harness.WriteOfflineHosts(hosts); err != nil {
		return fmt.Errorf("registry hosts: %w", err)
	}
	if err := c.ctrd.WriteConfig(c.tmp, harness.ContainerdSettings{CNIConfDir: cniConf, HostsDir: hosts}); err != nil {
		return fmt.Errorf("containerd config: %w", err)
	}
	var err error
	c.berthConf, err = harness.WriteOfflineConfig(c.tmp, busyboxRef)
	return err
}

func (c *ctrdNode) name() string { return "containerd" }

// flags point every berth command at the test's agent and containerd.
func (c *ctrdNode) flags() []string {
	return []string{
		"--config", c.berthConf, "--root", c.agentRoot(), "--state", c.agentState(),
		"--runtime-endpoint", c.ctrd.Endpoint(), "--log-level", "debug",
	}
}

// agentRoot and agentState are the agent's --root and --state.
func (c *ctrdNode) agentRoot() string  { return filepath.Join(c.root, "berth") }
func (c *ctrdNode) agentState() string { return filepath.Join(c.state, "berth") }

func (c *ctrdNode) agentSocket() string                  { return filepath.Join(c.agentState(), agentapi.SocketName) }
func (c *ctrdNode) cri() runtimeapi.RuntimeServiceClient { return c.ctrd.RT }
func (c *ctrdNode) logTail(lines int) string             { return c.agent.LogTail(lines) }
func (c *ctrdNode) agentPid() int                        { return c.agent.Pid() }
func (c *ctrdNode) known() (map[string]bool, map[string]bool) {
	return c.seen.ids, c.seen.podUIDs
}
func (c *ctrdNode) echoesEnv() bool { return true }

// plainHTTPRegistry writes the registry's hosts.toml: containerd 1.6 would
// try HTTPS on a loopback registry (re-read at each pull).
func (c *ctrdNode) plainHTTPRegistry(t *testing.T, host string) {
	if err := harness.WriteHostsTOML(filepath.Join(c.tmp, "certs.d"), host, "http://"+host); err != nil {
		t.Fatal(err)
	}
}
func (c *ctrdNode) net() harness.Network { return c.network }

// startAgent starts `berth agent` on containerd's socket; the node waits
// until it answers.
func (c *ctrdNode) startAgent() {
	// containerd 1.6 does not pin its sandbox image: kubelet's flag keeps
	// it from image garbage collection.
	c.agent.Args = append(append(c.flags(), "agent", "--pod-infra-container-image="+pauseRef), c.agentArgs...)
	if err := c.agent.Start(); err != nil {
		c.t.Fatal(err)
	}
}

// setAgentArgs replaces the agent's flags for its next start.
func (c *ctrdNode) setAgentArgs(args []string) { c.agentArgs = args }

// killAgent kills the agent with SIGKILL; containerd runs on.
func (c *ctrdNode) killAgent() { c.agent.Kill() }

// stopAgent stops the agent with SIGTERM; it must exit cleanly.
func (c *ctrdNode) stopAgent() {
	if err := c.agent.Stop(20 * time.Second); err != nil {
		c.t.Errorf("%v\n%s", err, c.agent.LogTail(30))
	}
}

func (c *ctrdNode) images() runtimeapi.ImageServiceClient { return c.ctrd.Img }
func (c *ctrdNode) importImages(archive string) error     { return c.ctrd.Import(archive) }
