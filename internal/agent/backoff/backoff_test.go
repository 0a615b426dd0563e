package backoff

import (
	"strings"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)

// crashLoop simulates a container that runs for run after each restart and is restarted
// as soon as its back-off allows; it returns the wait before each restart.
func crashLoop(b *Backoff, key string, run time.Duration, restarts int) []time.Duration {
	var waits []time.Duration
	now := t0
	for range restarts {
		finished := now.Add(run)
		start := finished
		if until := b.Until(key, finished, finished); !until.IsZero() {
			start = until
		}
		waits = append(waits, start.Sub(finished))
		b.Next(key, finished, start)
		now = start
	}
	return waits
}

func TestDoublingSequence(t *testing.T) {
	b := New(Config{})
	var got []time.Duration
	finished := t0
	for range 7 {
		got = append(got, b.Next("k", finished, finished))
		finished = finished.Add(time.Second)
	}
	want := []time.Duration{10, 20, 40, 80, 160, 300, 300}
	for i := range want {
		if got[i] != want[i]*time.Second {
			t.Fatalf("delays %v, want %v seconds", got, want)
		}
	}
}

func TestCrashLoopWaits(t *testing.T) {
	waits := crashLoop(New(Config{}), "k", 2*time.Second, 8)
	want := []time.Duration{0, 10, 20, 40, 80, 160, 300, 300}
	for i := range want {
		if waits[i] != want[i]*time.Second {
			t.Fatalf("waits %v, want %v seconds", waits, want)
		}
	}
}

func TestResetAfterLongRun(t *testing.T) {
	b := New(Config{})
	crashLoop(b, "k", time.Second, 5) // five restarts: delay now 160 s
	if d := b.Delay("k"); d != 160*time.Second {
		t.Fatalf("delay %v, want 160s", d)
	}
	restarted := t0.Add(time.Hour)
	b.Next("k", restarted.Add(-time.Second), restarted)
	// It runs for exactly ResetAfter: no wait, and the next delay is back to Initial.
	finished := restarted.Add(10 * time.Minute)
	if until := b.Until("k", finished, finished); !until.IsZero() {
		t.Errorf("after a 10 min run: held until %v", until)
	}
	if d := b.Next("k", finished, finished); d != 10*time.Second {
		t.Errorf("after a 10 min run: delay %v, want 10s", d)
	}
}

func TestShortRunKeepsDoublingAfterLongPause(t *testing.T) {
	b := New(Config{})
	b.Next("k", t0, t0)                                      // 10 s
	b.Next("k", t0.Add(time.Second), t0.Add(20*time.Second)) // 20 s, run starts at +20 s
	// It crashes 1 s into the run, but nobody restarts it for an hour.
	finished := t0.Add(21 * time.Second)
	if until := b.Until("k", finished, finished.Add(time.Hour)); !until.IsZero() {
		t.Errorf("the delay elapsed long ago, held until %v", until)
	}
	if d := b.Next("k", finished, finished.Add(time.Hour)); d != 40*time.Second {
		t.Errorf("a short run keeps doubling whatever the pause: delay %v, want 40s", d)
	}
}

func TestUntilBoundaries(t *testing.T) {
	b := New(Config{})
	b.Next("k", t0, t0)
	finished := t0.Add(5 * time.Second)
	want := finished.Add(10 * time.Second)
	cases := []struct {
		now  time.Time
		want time.Time
	}{
		{finished, want},
		{want.Add(-time.Nanosecond), want},
		{want, time.Time{}},
		{want.Add(time.Second), time.Time{}},
	}
	for _, tc := range cases {
		if got := b.Until("k", finished, tc.now); !got.Equal(tc.want) {
			t.Errorf("now %v: until %v, want %v", tc.now, got, tc.want)
		}
	}
	if got := b.Until("other", finished, finished); !got.IsZero() {
		t.Errorf("unknown key held until %v", got)
	}
}

func TestConfigurable(t *testing.T) {
	b := New(Config{Initial: time.Second, Max: 5 * time.Second, ResetAfter: time.Minute})
	var got []time.Duration
	for i := range 5 {
		at := t0.Add(time.Duration(i) * time.Second)
		got = append(got, b.Next("k", at, at))
	}
	want := []time.Duration{1, 2, 4, 5, 5}
	for i := range want {
		if got[i] != want[i]*time.Second {
			t.Fatalf("delays %v, want %v seconds", got, want)
		}
	}
	last := t0.Add(4 * time.Second)
	if d := b.Next("k", last.Add(time.Minute), last.Add(time.Minute)); d != time.Second {
		t.Errorf("a 1 min run resets with ResetAfter 1m: delay %v", d)
	}
	if c := b.Config(); c != (Config{Initial: time.Second, Max: 5 * time.Second, ResetAfter: time.Minute}) {
		t.Errorf("config %+v", c)
	}
	if c := New(Config{}).Config(); c != (Config{Initial: DefaultInitial, Max: DefaultMax, ResetAfter: DefaultResetAfter}) {
		t.Errorf("defaults %+v", c)
	}
}

func TestZeroValueUsesDefaults(t *testing.T) {
	var b Backoff
	if d := b.Next("k", t0, t0); d != DefaultInitial {
		t.Errorf("zero Backoff: first delay %v", d)
	}
	if d := b.Next("k", t0.Add(time.Second), t0.Add(time.Second)); d != 2*DefaultInitial {
		t.Errorf("zero Backoff: second delay %v", d)
	}
}

func TestUntilRecorded(t *testing.T) {
	b := New(Config{})
	b.Next("img", t0, t0)
	if got := b.UntilRecorded("img", t0.Add(3*time.Second)); !got.Equal(t0.Add(10 * time.Second)) {
		t.Errorf("until %v", got)
	}
	if got := b.UntilRecorded("img", t0.Add(10*time.Second)); !got.IsZero() {
		t.Errorf("elapsed: until %v", got)
	}
	if got := b.UntilRecorded("none", t0); !got.IsZero() {
		t.Errorf("unknown key: until %v", got)
	}
}

func TestForgetAndGC(t *testing.T) {
	b := New(Config{})
	for _, k := range []string{Key("u1", "a", "h1"), Key("u1", "b", "h1"), Key("u2", "a", "h1")} {
		b.Next(k, t0, t0)
	}
	b.Forget(Key("u1", "b", "h1"))
	if d := b.Delay(Key("u1", "b", "h1")); d != 0 {
		t.Errorf("forgotten key has delay %v", d)
	}
	left := b.GC(t0.Add(time.Minute), func(key string) bool { return !strings.HasPrefix(key, "u2/") })
	if left != 1 || b.Delay(Key("u1", "a", "h1")) != DefaultInitial {
		t.Errorf("GC by keep: %d left", left)
	}
	if left := b.GC(t0.Add(DefaultResetAfter+DefaultMax-time.Second), nil); left != 1 {
		t.Errorf("GC dropped a recent entry: %d left", left)
	}
	if left := b.GC(t0.Add(DefaultResetAfter+DefaultMax), nil); left != 0 {
		t.Errorf("GC kept an idle entry: %d left", left)
	}
}

func TestKeyChangesWithHash(t *testing.T) {
	if Key("u", "c", "h1") == Key("u", "c", "h2") || Key("u", "c", "h1") != "u/c/h1" {
		t.Errorf("keys: %q %q", Key("u", "c", "h1"), Key("u", "c", "h2"))
	}
}

func TestConcurrentUse(t *testing.T) {
	b := New(Config{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			key := Key("u", string(rune('a'+i)), "h")
			for j := range 100 {
				at := t0.Add(time.Duration(j) * time.Second)
				b.Next(key, at, at)
				b.Until(key, at, at)
			}
		})
	}
	wg.Wait()
	if b.GC(t0, nil) != 8 {
		t.Error("entries lost")
	}
}

func TestValidateMaxContainerRestartPeriod(t *testing.T) {
	for _, d := range []time.Duration{time.Second, 2 * time.Second, 1500 * time.Millisecond, 300 * time.Second} {
		if err := ValidateMaxContainerRestartPeriod(d); err != nil {
			t.Errorf("%v: %v", d, err)
		}
	}
	for _, d := range []time.Duration{0, 999 * time.Millisecond, 301 * time.Second, -time.Second} {
		if err := ValidateMaxContainerRestartPeriod(d); err == nil || !strings.Contains(err.Error(), "between 1s and 5m0s") {
			t.Errorf("%v: %v; want refused", d, err)
		}
	}
}

func TestCrashLoopConfig(t *testing.T) {
	cases := []struct {
		cfg        Config
		maxRestart time.Duration
		want       Config
	}{
		{Config{}, 0, Config{Initial: 10 * time.Second, Max: 300 * time.Second, ResetAfter: 10 * time.Minute}},
		{Config{}, 2 * time.Second, Config{Initial: 2 * time.Second, Max: 2 * time.Second, ResetAfter: 10 * time.Minute}},
		{Config{}, 60 * time.Second, Config{Initial: 10 * time.Second, Max: 60 * time.Second, ResetAfter: 10 * time.Minute}},
		{Config{Initial: 500 * time.Millisecond, Max: 4 * time.Second}, 2 * time.Second,
			Config{Initial: 500 * time.Millisecond, Max: 2 * time.Second, ResetAfter: 10 * time.Minute}},
		{Config{Initial: 500 * time.Millisecond, Max: 4 * time.Second}, 0,
			Config{Initial: 500 * time.Millisecond, Max: 4 * time.Second, ResetAfter: 10 * time.Minute}},
	}
	for i, tc := range cases {
		if got := tc.cfg.CrashLoop(tc.maxRestart); got != tc.want {
			t.Errorf("case %d: %+v; want %+v", i, got, tc.want)
		}
	}
}

// With maxContainerRestartPeriod 2 s (kubelet's default first delay, 10 s,
// above it) a crash loop waits 2 s before every restart after the first.
func TestCrashLoopCappedAtMaxContainerRestartPeriod(t *testing.T) {
	waits := crashLoop(New(Config{}.CrashLoop(2*time.Second)), "k", time.Second, 8)
	for i, w := range waits {
		want := 2 * time.Second
		if i == 0 {
			want = 0
		}
		if w != want {
			t.Fatalf("waits %v; want 0 then 2s each", waits)
		}
	}
}
