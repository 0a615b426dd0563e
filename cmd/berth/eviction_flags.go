package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/berth-dev/berth/internal/agent/eviction"
)

// defaultEvictionHard is kubelet's default --eviction-hard on Linux.
const defaultEvictionHard = "memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%,imagefs.inodesFree<5%"

// evictionFlags are kubelet's eviction flags, with its defaults and its
// rule that an --eviction-hard given replaces the defaults whole.
type evictionFlags struct {
	hard, soft, softGracePeriod, minimumReclaim string
	transitionPeriod                            time.Duration
	maxPodGracePeriod                           int64
}

func (f *evictionFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.hard, "eviction-hard", defaultEvictionHard, "thresholds (SIGNAL<QUANTITY or SIGNAL<PERCENT%, comma-separated) that evict pods at once when met; giving the flag replaces every default")
	fs.StringVar(&f.soft, "eviction-soft", "", "thresholds that evict pods once met for their --eviction-soft-grace-period")
	fs.StringVar(&f.softGracePeriod, "eviction-soft-grace-period", "", "grace periods of the soft thresholds (SIGNAL=DURATION, comma-separated)")
	fs.StringVar(&f.minimumReclaim, "eviction-minimum-reclaim", "", "how far past its threshold a signal must recover once met (SIGNAL=QUANTITY or SIGNAL=PERCENT%)")
	fs.DurationVar(&f.transitionPeriod, "eviction-pressure-transition-period", eviction.DefaultPressureTransitionPeriod, "how long a pressure condition stays after its threshold was last met")
	fs.Int64Var(&f.maxPodGracePeriod, "eviction-max-pod-grace-period", 0, "longest grace period, in seconds, of a pod evicted for a soft threshold")
}

// config parses the flags as kubelet does; errors name the flag and the
// signal.
func (f *evictionFlags) config() (eviction.Config, error) {
	var flags eviction.Flags
	for _, m := range []struct {
		name, value, sep string
		into             *map[string]string
	}{
		{"--eviction-hard", f.hard, "<", &flags.Hard},
		{"--eviction-soft", f.soft, "<", &flags.Soft},
		{"--eviction-soft-grace-period", f.softGracePeriod, "=", &flags.SoftGracePeriod},
		{"--eviction-minimum-reclaim", f.minimumReclaim, "=", &flags.MinimumReclaim},
	} {
		parsed, err := eviction.ParseMap(m.name, m.value, m.sep)
		if err != nil {
			return eviction.Config{}, err
		}
		*m.into = parsed
	}
	thresholds, err := eviction.Parse(flags)
	if err != nil {
		return eviction.Config{}, err
	}
	if f.transitionPeriod < 0 {
		return eviction.Config{}, fmt.Errorf("--eviction-pressure-transition-period: %s: must not be negative", f.transitionPeriod)
	}
	if f.maxPodGracePeriod < 0 {
		return eviction.Config{}, fmt.Errorf("--eviction-max-pod-grace-period: %d: must not be negative", f.maxPodGracePeriod)
	}
	return eviction.Config{Thresholds: thresholds, PressureTransitionPeriod: f.transitionPeriod, MaxPodGracePeriodSeconds: f.maxPodGracePeriod}, nil
}
