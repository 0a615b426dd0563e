package agentbench

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/image"
	"github.com/berth-dev/berth/test/harness"
	"github.com/berth-dev/berth/test/testimage"
)

// bench is one daemon with its agent and the scenarios' results.
type bench struct {
	t       *testing.T
	d       *harness.Daemon
	client  *agentapi.Client
	metrics string // http://127.0.0.1:port/metrics
	dir     string // manifests
}

// sample is one measured run.
type sample struct {
	wall    time.Duration // berth run -d → all Running (and Ready)
	runtime time.Duration // server-side time of the CRI calls meanwhile
	calls   map[string]float64
}

func TestAgentBenchmark(t *testing.T) {
	out := os.Getenv("BERTH_AGENT_BENCH")
	if out == "" {
		t.Skip("BERTH_AGENT_BENCH is not set (`make bench` sets it)")
	}
	if reason := harness.SkipReason(); reason != "" {
		t.Skip(reason)
	}
	b := startBench(t)
	runs := 5
	var report strings.Builder
	report.WriteString("| scenario | runs | `berth run -d` → all up, p50 | runtime alone: the same pods started by direct CRI calls, p50 | agent + CLI share | CRI server time, summed over overlapping calls |\n|---|---:|---:|---:|---:|---:|\n")
	scenarios := []struct {
		name, yaml       string
		pods, containers int
		ready            bool
	}{
		{"one pod, 4 containers → Running", fourContainerPod("four", false), 1, 4, false},
		{"one pod, 4 containers with readiness probes → Ready", fourContainerPod("fourready", true), 1, 4, true},
		{"50 single-container pods at once → Running", manyPods("many", 50), 50, 1, false},
	}
	for _, sc := range scenarios {
		samples := b.measure(sc.yaml, sc.pods, sc.ready, runs)
		wall, summed := medians(samples)
		direct := b.directStart(sc.pods, sc.containers, runs)
		share := ms(wall - direct)
		if wall < direct {
			share = "— (faster than 50 direct starts at once, which contend more than the agent's workers)"
		}
		fmt.Fprintf(&report, "| %s | %d | %s | %s | %s | %s |\n", sc.name, len(samples), ms(wall), ms(direct), share, ms(summed))
	}
	if podman := podmanPlay(t, fourContainerPod("podfour", false), 3); podman != "" {
		report.WriteString(podman)
	} else {
		report.WriteString("\n`podman kube play` of the same pod: podman is not installed here (`apt-get install podman` to compare).\n")
	}
	if err := os.WriteFile(out, []byte(report.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s:\n%s", out, report.String())
}

func startBench(t *testing.T) *bench {
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	if err := harness.BuildBinaries(filepath.Join("..", ".."), bin); err != nil {
		t.Fatal(err)
	}
	ref, err := image.NormalizeRef("busybox:latest")
	if err != nil {
		t.Fatal(err)
	}
	config, err := harness.WriteOfflineConfig(tmp, ref)
	if err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	f, err := os.OpenFile(config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "\n[metrics]\naddress = %q\n", addr)
	f.Close()
	layout := filepath.Join(tmp, "layout")
	if err := testimage.WriteLayout(layout, testimage.Options{Name: ref}); err != nil {
		t.Fatal(err)
	}
	d := harness.Start(t, harness.Options{BinDir: bin, Config: config, Layouts: []string{layout},
		ServeArgs: []string{"--pod-log-dir=" + filepath.Join(tmp, "pod-logs")}})
	b := &bench{t: t, d: d, client: agentapi.NewClient(filepath.Join(d.State, agentapi.SocketName)),
		metrics: "http://" + addr + "/metrics", dir: t.TempDir()}
	d.BeforeCleanup = func() { b.deleteAll() }
	if !waitFor(30*time.Second, func() bool { return b.client.Reachable(context.Background()) }) {
		t.Fatalf("agent did not answer\n%s", d.LogTail(30))
	}
	return b
}

// measure applies yaml runs+1 times (the first is a warm-up), each time
// timing `berth run -d` until the pods are up, then deleting them.
func (b *bench) measure(yaml string, pods int, ready bool, runs int) []sample {
	path := filepath.Join(b.dir, "pods.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		b.t.Fatal(err)
	}
	var out []sample
	for i := 0; i <= runs; i++ {
		before := scrapeCallTimes(b.t, b.metrics)
		start := time.Now()
		b.d.MustBerth("run", "-d", "-f", path)
		if !waitFor(2*time.Minute, func() bool { return b.allUp(pods, ready) }) {
			b.t.Fatalf("pods not up within 2 minutes\n%s", b.d.LogTail(40))
		}
		wall := time.Since(start)
		calls := diffCalls(before, scrapeCallTimes(b.t, b.metrics))
		if i > 0 {
			out = append(out, sample{wall: wall, runtime: runtimeShare(calls), calls: calls})
		}
		b.d.MustBerth("delete", "-f", path, "--grace-period=0")
		if !waitFor(2*time.Minute, func() bool { return b.podCount() == 0 }) {
			b.t.Fatalf("pods not deleted within 2 minutes")
		}
	}
	return out
}

// allUp reports whether n pods run every container (ready too, if asked).
func (b *bench) allUp(n int, ready bool) bool {
	list, err := b.client.ListPods(context.Background(), "")
	if err != nil || len(list.Items) != n {
		return false
	}
	for _, p := range list.Items {
		if len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
			return false
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running == nil || (ready && !cs.Ready) {
				return false
			}
		}
		if ready && !podReady(p) {
			return false
		}
	}
	return true
}

func podReady(p v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func (b *bench) podCount() int {
	list, err := b.client.ListPods(context.Background(), "")
	if err != nil {
		return -1
	}
	return len(list.Items)
}

func (b *bench) deleteAll() {
	grace := int64(0)
	list, err := b.client.ListPods(context.Background(), "")
	if err != nil {
		return
	}
	for _, p := range list.Items {
		_, _ = b.client.Delete(context.Background(), p.Namespace, p.Name, &grace) // cleanup
	}
	waitFor(time.Minute, func() bool { return b.podCount() == 0 })
}

func medians(samples []sample) (wall, runtime time.Duration) {
	walls := make([]time.Duration, len(samples))
	rts := make([]time.Duration, len(samples))
	for i, s := range samples {
		walls[i], rts[i] = s.wall, s.runtime
	}
	slices.Sort(walls)
	slices.Sort(rts)
	return walls[len(walls)/2], rts[len(rts)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}
