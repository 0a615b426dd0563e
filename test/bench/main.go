package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/image"
	"github.com/berth-dev/berth/test/testimage"
)

// options are the command-line flags.
type options struct {
	runs      int    // measured runs per latency and floor
	pods      int    // pods running for the many-monitors memory line
	out       string // report file; "" prints only
	binDir    string
	pull      bool   // run the image pull section
	runtimes  bool   // run the runtime comparison: berth's two runcs and containerd
	pullRuns  int    // measured runs of berth and of the floor
	pullCache string // OCI layout dir of the large image, kept and reused across runs; "" builds it in the work dir
	// The concurrency section.
	concPods    int     // pods started per phase
	conc        intList // pods in flight, one phase per value
	containerd2 string  // containerd 2.4's binaries (make containerd2-bin)
	only        string  // "" runs every section; "concurrency" only that one
	// cni is berth's network: cniDefault (berth's own default network) or
	// cniPlugins (the plugin list containerd gets, as an admin's config).
	cni string
}

// results is everything the report shows.
type results struct {
	host             hostInfo
	ctr, pod         latencies   // pid CONTAINER and pid POD cycles
	serverCtr        serverTimes // the daemon's own view of ctr's calls
	serverPod        serverTimes
	floors           floors
	mem              memory
	pull             pullResults
	runtimes         runtimeResults
	conc             concResults
	leftovers        []string // found (and removed) during cleanup
	startedAt        time.Time
	took             time.Duration
	loadBefore, load string
	berthCNI         string // which network berth ran (-cni), in words
}

func main() {
	var o options
	flag.IntVar(&o.runs, "n", 20, "measured runs per latency and floor (one warm-up run is discarded)")
	flag.IntVar(&o.pods, "pods", 20, "pods running at once for the memory lines")
	flag.StringVar(&o.out, "o", "", "also write the Markdown report to this file")
	flag.StringVar(&o.binDir, "bin", "bin", "directory holding berth, berth-monitor and berth-pause")
	flag.BoolVar(&o.pull, "pull", true, "measure pulling a ~190 MB image from a local docker-registry against skopeo copy + tar")
	flag.BoolVar(&o.runtimes, "runtimes", true, "measure the pod cycle on berth with the pinned runc, with the system's runc (handler runc-system) and on a private containerd 1.6, in turns")
	flag.IntVar(&o.pullRuns, "pull-runs", 3, "measured runs of the pull and of its floor")
	flag.StringVar(&o.pullCache, "pull-cache", "", "keep the pull image's OCI layout in this dir and reuse it (saves ~15 s of building)")
	flag.IntVar(&o.concPods, "conc-pods", 60, "concurrency section: pods started per phase")
	o.conc = intList{1, 10, 50}
	flag.Var(&o.conc, "conc", "concurrency section: pods in flight, comma-separated, one phase per value")
	flag.StringVar(&o.containerd2, "containerd2", containerd2Dir, "directory of containerd 2.4's containerd, containerd-shim-runc-v2 and ctr (make containerd2-bin)")
	flag.StringVar(&o.cni, "cni", cniDefault, `berth's network: "default" (berth's default network: in-process lo, one node-wide masquerade, portmap only with host ports) or "plugins" (the list containerd gets, as an admin's config: bridge with ipMasq, host-local, portmap)`)
	flag.StringVar(&o.only, "only", "", `run one section only: "concurrency" (after the setup: the daemon, the image)`)
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	binDir, err := filepath.Abs(o.binDir)
	if err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return errors.New("needs root (namespaces, CNI, runc)")
	}
	if o.runs < 1 || o.pods < 1 || o.pullRuns < 1 || o.concPods < 1 {
		return errors.New("-n, -pods, -pull-runs and -conc-pods must be at least 1")
	}
	if o.only != "" && o.only != onlyConcurrency {
		return fmt.Errorf("-only=%s: the only section that runs alone is %q", o.only, onlyConcurrency)
	}
	if o.containerd2, err = filepath.Abs(o.containerd2); err != nil {
		return err
	}
	if o.cni != cniDefault && o.cni != cniPlugins {
		return fmt.Errorf("-cni=%s: want %q or %q", o.cni, cniDefault, cniPlugins)
	}
	e, err := newEnv(binDir)
	if err != nil {
		return err
	}
	e.cni = o.cni
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	res := &results{startedAt: time.Now(), host: readHostInfo(), loadBefore: loadAverage(), berthCNI: e.cniDescription()}
	progressf("id %s: root %s, state %s, bridge %s, subnet %s", e.id, e.root, e.state, e.bridge, e.subnet)
	b := &bench{o: o, e: e, res: res}
	measureErr := b.measure(ctx)
	if measureErr != nil && b.d != nil {
		fmt.Fprintln(os.Stderr, logTail(e.daemonLog(), 40))
	}
	for _, c := range b.ctrds {
		if measureErr != nil {
			fmt.Fprintln(os.Stderr, c.LogTail(40))
		}
	}
	res.leftovers, err = b.cleanup()
	res.took, res.load = time.Since(res.startedAt), loadAverage()
	if measureErr != nil {
		return errors.Join(measureErr, err)
	}
	report := render(o, res)
	fmt.Print(report)
	if o.out != "" {
		if werr := writeReport(o.out, report); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	return err
}

// bench is one run: its environment, its daemon (and the containerds
// running while the runtime comparison or the concurrency section runs)
// and what it measured.
type bench struct {
	o          options
	e          *env
	d          *daemon
	ctrds      []*benchContainerd
	busyboxRef string // the test image's name
	res        *results
}

// phase is one step of the measurement.
type phase struct {
	name string
	run  func() error
}

// measure sets up the environment and runs every phase in order.
func (b *bench) measure(ctx context.Context) error {
	if err := b.setUp(ctx); err != nil {
		return err
	}
	for _, p := range b.phases(ctx) {
		progressf("%s", p.name)
		if err := p.run(); err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// phases are the sections the options ask for, in order.
func (b *bench) phases(ctx context.Context) []phase {
	conc := phase{"concurrency: berth, containerd 1.6, containerd 2.4", func() error { return b.measureConcurrency(ctx) }}
	if b.o.only == onlyConcurrency {
		return []phase{conc}
	}
	phases := []phase{
		{"latencies, pid CONTAINER", func() error { return b.measureMode(ctx, runtimeapi.NamespaceMode_CONTAINER) }},
		{"latencies, pid POD", func() error { return b.measureMode(ctx, runtimeapi.NamespaceMode_POD) }},
	}
	if b.o.runtimes {
		phases = append(phases, phase{"runtimes: berth pinned runc, berth system runc, containerd 1.6", func() error { return b.measureRuntimes(ctx) }})
	}
	phases = append(phases, conc,
		phase{"floor: namespaces + CNI ADD", func() error { return b.e.measureNetworkFloors(ctx, b.o.runs, &b.res.floors) }},
		phase{"floor: monitor launch", func() error { return b.e.measureMonitorFloor(ctx, b.o.runs, &b.res.floors) }},
		phase{"floor: runc", func() error { return b.e.measureRuncFloors(ctx, b.o.runs, &b.res.floors) }},
		phase{"floor: pinned runc on berth's bundle", func() error {
			return b.e.measureBundleFloors(ctx, b.d.criClient, b.o.runs, &b.res.floors)
		}},
		phase{"memory", func() error { return b.d.measureMemory(ctx, b.o.pods, &b.res.mem) }},
	)
	if b.o.pull {
		phases = append(phases, phase{"image pull vs skopeo + tar", func() error { return b.measurePull(ctx) }})
	}
	return phases
}

// setUp creates the directories, imports the image and starts the daemon,
// then reads its idle memory.
func (b *bench) setUp(ctx context.Context) error {
	if err := b.e.prepare(); err != nil {
		return err
	}
	ref, err := image.NormalizeRef("busybox:latest")
	if err != nil {
		return err
	}
	b.busyboxRef = ref
	archive := filepath.Join(b.e.work, "busybox-oci.tar")
	if err := testimage.WriteOCIArchive(archive, testimage.Options{Name: ref, Cmd: []string{"sh"}}); err != nil {
		return fmt.Errorf("test image: %w", err)
	}
	if err := b.e.importImage(archive); err != nil {
		return err
	}
	if b.d, err = startDaemon(ctx, b.e); err != nil {
		return err
	}
	time.Sleep(time.Second)
	if b.res.mem.serveIdle, err = readUsage(b.d.pid()); err != nil {
		return fmt.Errorf("berth serve: %w", err)
	}
	return nil
}

// measureMode runs the latency cycles of one PID mode and reads the
// daemon's own durations for them.
func (b *bench) measureMode(ctx context.Context, pid runtimeapi.NamespaceMode) error {
	from := b.e.logOffset()
	l, err := b.d.measureLatencies(ctx, pid, b.o.runs)
	if err != nil {
		return err
	}
	srv := b.e.readServerTimes(from, b.e.logOffset())
	if pid == runtimeapi.NamespaceMode_POD {
		b.res.pod, b.res.serverPod = l, srv
	} else {
		b.res.ctr, b.res.serverCtr = l, srv
	}
	return nil
}

func writeReport(path, report string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("report %s: %w", path, err)
	}
	if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
		return fmt.Errorf("report %s: %w", path, err)
	}
	return nil
}
