package eviction

import (
	"strings"
	"testing"
	"time"
)

func TestDefaultsAreKubeletsHardThresholds(t *testing.T) {
	got := map[string]bool{}
	for _, th := range Defaults() {
		if th.Soft || th.GracePeriod != 0 {
			t.Errorf("%s: default thresholds are hard", th)
		}
		got[th.String()] = true
	}
	for _, want := range []string{"memory.available<100Mi", "nodefs.available<10%", "nodefs.inodesFree<5%", "imagefs.available<15%", "imagefs.inodesFree<5%"} {
		if !got[want] {
			t.Errorf("defaults lack %s (have %v)", want, got)
		}
	}
	if len(got) != 5 {
		t.Errorf("defaults: %v, want 5 thresholds", got)
	}
}

func TestParseReadsHardSoftGraceAndMinimumReclaim(t *testing.T) {
	hard, _ := ParseMap("--eviction-hard", "memory.available<1Gi, nodefs.available<20%", "<")
	soft, _ := ParseMap("--eviction-soft", "memory.available<2Gi", "<")
	grace, _ := ParseMap("--eviction-soft-grace-period", "memory.available=1m30s", "=")
	reclaim, _ := ParseMap("--eviction-minimum-reclaim", "nodefs.available=5%", "=")
	ts, err := Parse(Flags{Hard: hard, Soft: soft, SoftGracePeriod: grace, MinimumReclaim: reclaim})
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 3 {
		t.Fatalf("got %v, want 3 thresholds", ts)
	}
	var sawSoft bool
	for _, th := range ts {
		switch {
		case th.Soft:
			sawSoft = true
			if th.GracePeriod != 90*time.Second || th.Value.Quantity.String() != "2Gi" {
				t.Errorf("soft threshold %s grace %s, want 2Gi after 1m30s", th, th.GracePeriod)
			}
		case th.Signal == SignalNodeFsAvailable:
			if th.Value.Percentage != 0.2 || th.MinReclaim == nil || th.MinReclaim.Percentage != 0.05 {
				t.Errorf("nodefs threshold %+v, want 20%% with a 5%% minimum reclaim", th)
			}
		}
	}
	if !sawSoft {
		t.Error("no soft threshold parsed")
	}
}

func TestParseIgnoresZeroAndFullPercentages(t *testing.T) {
	ts, err := Parse(Flags{Hard: map[string]string{"nodefs.available": "0%", "imagefs.available": "100%"}})
	if err != nil || len(ts) != 0 {
		t.Fatalf("got %v, %v; want no threshold (kubelet ignores 0%% and 100%%)", ts, err)
	}
}

func TestParseErrorsNameFlagAndSignal(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags Flags
		want  []string
	}{
		{"unknown signal", Flags{Hard: map[string]string{"memory.free": "1Gi"}}, []string{"--eviction-hard", "memory.free"}},
		{"negative quantity", Flags{Hard: map[string]string{"memory.available": "-1Mi"}}, []string{"--eviction-hard", "memory.available", "positive"}},
		{"zero quantity", Flags{Soft: map[string]string{"memory.available": "0"}, SoftGracePeriod: map[string]string{"memory.available": "1m"}}, []string{"--eviction-soft", "positive"}},
		{"percentage over 100", Flags{Hard: map[string]string{"nodefs.available": "120%"}}, []string{"--eviction-hard", "nodefs.available", "100%"}},
		{"bad quantity", Flags{Hard: map[string]string{"nodefs.available": "lots"}}, []string{"--eviction-hard", "nodefs.available", "lots"}},
		{"soft without grace", Flags{Soft: map[string]string{"pid.available": "100"}}, []string{"--eviction-soft", "pid.available", "--eviction-soft-grace-period"}},
		{"negative grace", Flags{SoftGracePeriod: map[string]string{"pid.available": "-1s"}}, []string{"--eviction-soft-grace-period", "pid.available"}},
		{"bad reclaim", Flags{MinimumReclaim: map[string]string{"imagefs.available": "-2Gi"}}, []string{"--eviction-minimum-reclaim", "imagefs.available"}},
	} {
		_, err := Parse(tc.flags)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", tc.name, err, w)
			}
		}
	}
}

func TestParseMapRefusesMalformedAndDuplicateEntries(t *testing.T) {
	for _, in := range []string{"memory.available", "memory.available<", "<1Gi", "memory.available<1Gi,memory.available<2Gi"} {
		if _, err := ParseMap("--eviction-hard", in, "<"); err == nil || !strings.Contains(err.Error(), "--eviction-hard") {
			t.Errorf("ParseMap(%q): error %v, want one naming --eviction-hard", in, err)
		}
	}
	m, err := ParseMap("--eviction-hard", "", "<")
	if err != nil || len(m) != 0 {
		t.Errorf("empty flag: %v, %v", m, err)
	}
}
