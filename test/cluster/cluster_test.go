package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/test/harness"
	"github.com/berth-dev/berth/test/kube"
)

// cluster is the control plane, the node's kubelet and berth under it.
type cluster struct {
	t          *testing.T
	cp         *kube.ControlPlane
	kubelet    *kube.Kubelet
	berth      *harness.Daemon
	kubectlBin string
}

// kubeletConfig is added to the node kubelet's configuration: small log
// files, checked often, so that a test sees kubelet rotate them.
const kubeletConfig = `containerLogMaxSize: 1Mi
containerLogMaxFiles: 20
containerLogMonitorInterval: 3s
`

// startCluster starts berth, the control plane and a kubelet registered as
// node "localhost", and waits until the node is Ready and the default
// service account exists.
func startCluster(t *testing.T) *cluster {
	bin := os.Getenv("BERTH_KUBE_BIN") // set: TestMain checked
	if conformanceDeps() != "" {
		serveConformanceImages(t, bin, harness.OfflineHostsDir(filepath.Dir(env.Config)))
	}
	cp := kube.StartControlPlane(t, bin, os.Getenv("BERTH_ETCD"))
	kubelet := os.Getenv("BERTH_KUBELET") // a kubelet of another version than the control plane's
	if kubelet == "" {
		kubelet = filepath.Join(bin, "kubelet")
	}
	k := kube.NewKubelet(t, kube.KubeletOptions{Bin: kubelet, ControlPlane: cp, Config: kubeletConfig})
	d := harness.Start(t, harness.Options{
		BinDir: env.BinDir, Config: env.Config, Layouts: []string{env.Layout},
		ServeArgs: []string{"--agent=false"},
	})
	c := &cluster{t: t, cp: cp, kubelet: k, berth: d, kubectlBin: filepath.Join(bin, "kubectl")}
	k.Start(d.Socket)
	c.waitFor(t, "node localhost to be Ready", 2*time.Minute, func() bool {
		out, _ := c.try("get", "node", "localhost", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		return out == "True"
	})
	c.waitFor(t, "the default service account", time.Minute, func() bool {
		_, err := c.try("get", "serviceaccount", "default")
		return err == nil
	})
	return c
}

// TestCluster runs a one-node cluster on berth and drives it with kubectl.
func TestCluster(t *testing.T) {
	c := startCluster(t)
	t.Run("node", c.testNode)
	t.Run("deployment", c.testDeployment)
	t.Run("job", c.testJob)
	t.Run("lifecycle", c.testLifecycle)
	t.Run("tools", c.testTools)
	t.Run("log-rotation", c.testLogRotation)
	if conformanceDeps() != "" {
		t.Run("conformance", c.testConformance)
	}
	c.teardown()
}

var semverRuntime = regexp.MustCompile(`^berth://[0-9]+\.[0-9]+\.[0-9]+`)

// testNode checks what the node reports of berth.
func (c *cluster) testNode(t *testing.T) {
	info := c.kubectlT(t, "get", "node", "localhost", "-o", "jsonpath={.status.nodeInfo.containerRuntimeVersion}")
	if !semverRuntime.MatchString(info) { // kubelet says berth://Unknown unless it parses the version
		t.Errorf("node's containerRuntimeVersion = %q, want berth://<semantic version>", info)
	}
}

// teardown deletes every namespace's workloads and waits until kubelet
// has removed every sandbox and container from berth.
func (c *cluster) teardown() {
	if c.t.Failed() {
		c.dumpStacks()
	}
	c.kubectl("delete", "deployments,jobs,pods", "--all", "--all-namespaces", "--wait=false")
	c.kubectl("delete", "namespaces", "-l", "e2e-framework", "--wait=false") // left by a failed conformance spec
	c.waitFor(c.t, "kubelet to remove every sandbox and container from berth", 5*time.Minute, c.berthEmpty)
}

// berthEmpty reports whether berth lists no sandbox and no container.
func (c *cluster) berthEmpty() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sbs, err := c.berth.RT.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		c.t.Fatalf("ListPodSandbox: %v", err)
	}
	for _, sb := range sbs.GetItems() {
		c.berth.KnownPodUIDs[sb.GetMetadata().GetUid()] = true
	}
	ctrs, err := c.berth.RT.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		c.t.Fatalf("ListContainers: %v", err)
	}
	return len(sbs.GetItems()) == 0 && len(ctrs.GetContainers()) == 0
}

// try runs kubectl as the cluster's admin and returns its trimmed stdout;
// the error includes stderr.
func (c *cluster) try(args ...string) (string, error) {
	return c.tryIn("", args...)
}

// tryIn is try with stdin.
func (c *cluster) tryIn(stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := c.command(ctx, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// command is a kubectl command as the cluster's admin.
func (c *cluster) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, c.kubectlBin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.cp.AdminKubeconfig)
	return cmd
}

// busyboxImage matches a container's "image: busybox:latest" line in a
// block mapping; apply adds the pull policy that keeps kubelet from pulling
// the tag latest (berth serves it imported, offline).
var busyboxImage = regexp.MustCompile(`(\n\s*)image: busybox:latest\n`)

// apply creates or updates the objects of a manifest, failing t on an
// error.
func (c *cluster) apply(t *testing.T, manifest string) {
	t.Helper()
	manifest = busyboxImage.ReplaceAllString(manifest, "${1}image: busybox:latest${1}imagePullPolicy: IfNotPresent\n")
	if _, err := c.tryIn(manifest, "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
}

// kubectl runs kubectl and fails the cluster's test on an error.
func (c *cluster) kubectl(args ...string) string {
	return c.kubectlT(c.t, args...)
}

// kubectlT runs kubectl and fails t on an error.
func (c *cluster) kubectlT(t *testing.T, args ...string) string {
	t.Helper()
	out, err := c.try(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitFor polls cond until it holds. It fails t (the test or subtest
// waiting) at once when kubelet or a control plane component exited, and
// on timeout (kubelet's teardown then shows the end of its log).
func (c *cluster) waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	kube.WaitFor(t, what, timeout, func() bool {
		down := c.kubelet.Died()
		if down == "" {
			down = c.cp.Down()
		}
		if down != "" {
			harness.Summarize("%s: %s", t.Name(), firstLine(down))
			t.Fatal(down)
		}
		return cond()
	})
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

// dumpStacks puts berth's goroutine stacks in its log and kubelet's in
// goroutines.log beside kubelet's, both kept with the failed run's logs.
func (c *cluster) dumpStacks() {
	c.berth.DumpStacks()
	out, err := c.kubeletGet("/debug/pprof/goroutine?debug=2")
	if err != nil {
		c.t.Logf("kubelet's goroutine stacks: %v", err)
		return
	}
	path := filepath.Join(c.kubelet.Dir, "goroutines.log")
	if err := os.WriteFile(path, []byte(out), 0o600); err != nil {
		c.t.Logf("kubelet's goroutine stacks: %v", err)
	}
}
