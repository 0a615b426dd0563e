package imagegc

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
)

// disk is a fake image filesystem: 1000 bytes, of which free are free.
type disk struct {
	mu   sync.Mutex
	free uint64
}

func (d *disk) set(free uint64) { d.mu.Lock(); d.free = free; d.mu.Unlock() }

func (d *disk) statfs(path string) (FsStats, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if path != "/images" {
		return FsStats{}, nil
	}
	return FsStats{Capacity: 1000, Available: d.free}, nil
}

type fixture struct {
	rt    *criclienttest.Runtime
	clock *clocktesting.FakeClock
	disk  *disk
	m     *Manager
	// skipCalls is how many of the fake's calls came before the test's.
	skipCalls int
}

func newFixture(t *testing.T, policy Policy, needed ...string) *fixture {
	t.Helper()
	f := &fixture{rt: criclienttest.New(), clock: clocktesting.NewFakeClock(time.Unix(1_000_000, 0)), disk: &disk{free: 900}}
	f.rt.SetImageFs(&runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{
		{FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: "/images"}},
	}})
	m, err := New(Config{
		Runtime: f.rt, Images: f.rt, Policy: policy, Statfs: f.disk.statfs, Clock: f.clock,
		Needed: func() []string { return needed },
	})
	if err != nil {
		t.Fatal(err)
	}
	f.m = m
	// Without the fake's own busybox.
	if err := f.rt.RemoveImage(context.Background(), "busybox"); err != nil {
		t.Fatal(err)
	}
	f.skipCalls = len(f.rt.Calls())
	return f
}

func (f *fixture) image(t *testing.T, name string, size uint64, pinned bool) {
	t.Helper()
	f.rt.AddImage(&runtimeapi.Image{Id: "sha256:" + name, RepoTags: []string{"example.test/" + name + ":v1"}, Size: size, Pinned: pinned})
}

// useImage runs a container of ref and returns a function that removes it.
func (f *fixture) useImage(t *testing.T, ref string, state func(id string)) {
	t.Helper()
	ctx := context.Background()
	sb, err := f.rt.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	id, err := f.rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: ref},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if state != nil {
		state(id)
	}
}

func (f *fixture) removed() []string {
	var out []string
	for _, c := range f.rt.Calls()[f.skipCalls:] {
		if id, ok := strings.CutPrefix(c, "rmi sha256:"); ok {
			out = append(out, id)
		}
	}
	return out
}

func TestGarbageCollectFreesToLowThresholdLeastRecentlyUsedFirst(t *testing.T) {
	f := newFixture(t, DefaultPolicy(), "example.test/needed:v1")
	ctx := context.Background()
	for _, name := range []string{"c-recent", "a-old", "b-old", "inuse", "needed"} {
		f.image(t, name, 60, false)
	}
	f.image(t, "pinned", 60, true)
	// c-recent is used during the first round, then its container goes.
	f.useImage(t, "example.test/c-recent:v1", func(id string) {
		if err := f.m.GarbageCollect(ctx); err != nil {
			t.Fatal(err)
		}
		if err := f.rt.RemoveContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
	})
	f.useImage(t, "sha256:inuse", nil) // created, never started: in use all the same
	f.clock.Step(3 * time.Minute)
	// 90% used: free down to 80%, i.e. 1000*20/100 - 100 = 100 bytes.
	f.disk.set(100)
	if err := f.m.GarbageCollect(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := f.removed(), []string{"a-old", "b-old"}; !slices.Equal(got, want) {
		t.Fatalf("removed %v, want %v (never used first, then by first sighting; 120 bytes >= 100)", got, want)
	}
}

func TestGarbageCollectBelowHighThresholdRemovesNothing(t *testing.T) {
	f := newFixture(t, DefaultPolicy())
	f.image(t, "a", 60, false)
	f.disk.set(160) // 84% used
	ctx := context.Background()
	for range 2 {
		if err := f.m.GarbageCollect(ctx); err != nil {
			t.Fatal(err)
		}
		f.clock.Step(time.Hour)
	}
	if got := f.removed(); len(got) != 0 {
		t.Fatalf("removed %v below the high threshold", got)
	}
	f.disk.set(151) // 84.9%: kubelet's integer percentages make it 85, the threshold itself
	if err := f.m.GarbageCollect(ctx); err != nil {
		t.Fatalf("freeing 49 bytes with a 60-byte image: %v", err)
	}
	if got := f.removed(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("removed %v, want [a]", got)
	}
}

func TestGarbageCollectKeepsYoungImages(t *testing.T) {
	f := newFixture(t, DefaultPolicy())
	ctx := context.Background()
	f.disk.set(0)
	if err := f.m.GarbageCollect(ctx); err == nil {
		t.Fatal("a full disk with nothing to free is no error")
	}
	f.image(t, "fresh", 60, false)
	f.clock.Step(time.Minute)
	if err := f.m.GarbageCollect(ctx); err == nil {
		t.Fatal("a full disk with only a young image is no error")
	}
	if got := f.removed(); len(got) != 0 {
		t.Fatalf("removed %v: younger than --image-minimum-gc-age", got)
	}
	f.clock.Step(2 * time.Minute)
	_ = f.m.GarbageCollect(ctx) // still short of the low threshold: an error
	if got := f.removed(); !slices.Equal(got, []string{"fresh"}) {
		t.Fatalf("removed %v, want [fresh] once it is 2m old", got)
	}
}

func TestGarbageCollectMaxAge(t *testing.T) {
	policy := DefaultPolicy()
	policy.MaxAge = 10 * time.Minute
	f := newFixture(t, policy)
	ctx := context.Background()
	f.image(t, "idle", 60, false)
	f.image(t, "busy", 60, false)
	f.image(t, "pinned", 60, true)
	if err := f.m.GarbageCollect(ctx); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(5 * time.Minute)
	f.useImage(t, "sha256:busy", func(id string) {
		if err := f.m.GarbageCollect(ctx); err != nil {
			t.Fatal(err)
		}
		if err := f.rt.RemoveContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
	})
	f.clock.Step(5*time.Minute + time.Second)
	if err := f.m.GarbageCollect(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.removed(); !slices.Equal(got, []string{"idle"}) {
		t.Fatalf("removed %v, want [idle]: unused for 10m1s; busy was used 5m1s ago", got)
	}
	f.clock.Step(5 * time.Minute)
	if err := f.m.GarbageCollect(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.removed(); !slices.Equal(got, []string{"idle", "busy"}) {
		t.Fatalf("removed %v, want [idle busy]", got)
	}
}

func TestDeleteUnusedImages(t *testing.T) {
	// A reference the runtime cannot parse names no image: it does not
	// stop the collection.
	f := newFixture(t, DefaultPolicy(), "example.test/needed:v1", "not a reference")
	ctx := context.Background()
	f.image(t, "a", 10, false)
	f.image(t, "b", 20, false)
	f.image(t, "needed", 40, false)
	f.image(t, "inuse", 80, false)
	f.useImage(t, "example.test/inuse:v1", nil)
	if freed, err := f.m.DeleteUnusedImages(ctx); err != nil || freed != 0 {
		t.Fatalf("freed %d, %v; want 0: every image is younger than 2m", freed, err)
	}
	f.clock.Step(2 * time.Minute)
	freed, err := f.m.DeleteUnusedImages(ctx)
	if err != nil || freed != 30 {
		t.Fatalf("freed %d, %v; want 30", freed, err)
	}
	if got := f.removed(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("removed %v, want [a b]", got)
	}
}

// Collected learns, after each round, the images left and when they were
// listed (the agent prunes its image pull records with them).
func TestCollectedGetsTheImagesLeft(t *testing.T) {
	f := newFixture(t, DefaultPolicy())
	var left []string
	var listedAt time.Time
	f.m.cfg.Collected = func(remaining []string, at time.Time) {
		left, listedAt = slices.Sorted(slices.Values(remaining)), at
	}
	ctx := context.Background()
	f.image(t, "a", 10, false)
	f.image(t, "kept", 20, false)
	f.useImage(t, "example.test/kept:v1", nil)
	if err := f.m.GarbageCollect(ctx); err != nil {
		t.Fatal(err)
	}
	if want := []string{"sha256:a", "sha256:kept"}; !slices.Equal(left, want) || !listedAt.Equal(f.clock.Now()) {
		t.Errorf("after a round that removed nothing: %v at %v, want %v at %v", left, listedAt, want, f.clock.Now())
	}
	f.clock.Step(2 * time.Minute)
	if _, err := f.m.DeleteUnusedImages(ctx); err != nil {
		t.Fatal(err)
	}
	if want := []string{"sha256:kept"}; !slices.Equal(left, want) {
		t.Errorf("after a has gone: %v, want %v", left, want)
	}
}

func TestPolicyValidate(t *testing.T) {
	for _, tc := range []struct {
		mutate func(*Policy)
		err    string
	}{
		{func(*Policy) {}, ""},
		{func(p *Policy) { p.HighThresholdPercent, p.LowThresholdPercent = 1, 0 }, ""},
		{func(p *Policy) { p.HighThresholdPercent = 101 }, "--image-gc-high-threshold 101 must be between 0 and 100"},
		{func(p *Policy) { p.LowThresholdPercent = -1 }, "--image-gc-low-threshold -1 must be between 0 and 100"},
		{func(p *Policy) { p.LowThresholdPercent = 85 }, "--image-gc-low-threshold 85 must be less than --image-gc-high-threshold 85"},
		{func(p *Policy) { p.MaxAge = -time.Second }, "--image-maximum-gc-age -1s must not be negative"},
		{func(p *Policy) { p.MaxAge = time.Minute }, "--image-maximum-gc-age 1m0s must be greater than --image-minimum-gc-age 2m0s"},
	} {
		p := DefaultPolicy()
		tc.mutate(&p)
		err := p.Validate()
		if (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%+v: err = %v, want %q", p, err, tc.err)
		}
	}
}

func TestRunCollectsEveryPeriod(t *testing.T) {
	f := newFixture(t, DefaultPolicy())
	f.image(t, "a", 60, false)
	f.disk.set(0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for !f.clock.HasWaiters() {
		time.Sleep(time.Millisecond) // the first round runs before the ticker waits
	}
	f.clock.Step(DefaultPeriod)
	deadline := time.Now().Add(10 * time.Second)
	for len(f.removed()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no image removed after a period")
		}
		time.Sleep(time.Millisecond)
	}
}
