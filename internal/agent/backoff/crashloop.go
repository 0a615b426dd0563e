package backoff

import (
	"fmt"
	"time"
)

// The range kubelet allows for crashLoopBackOff.maxContainerRestartPeriod
// (KEP-4603, KubeletCrashLoopBackOffMax, beta and on by default since
// 1.35), and its default.
const (
	MinContainerRestartPeriod     = time.Second
	MaxContainerRestartPeriod     = 300 * time.Second
	DefaultContainerRestartPeriod = MaxContainerRestartPeriod
)

// ValidateMaxContainerRestartPeriod checks a maxContainerRestartPeriod as
// kubelet's configuration validation does: 1 s to 300 s.
func ValidateMaxContainerRestartPeriod(d time.Duration) error {
	if ms := d.Milliseconds(); ms < MinContainerRestartPeriod.Milliseconds() || ms > MaxContainerRestartPeriod.Milliseconds() {
		return fmt.Errorf("maxContainerRestartPeriod %v: must be between %v and %v", d, MinContainerRestartPeriod, MaxContainerRestartPeriod)
	}
	return nil
}

// CrashLoop is the configuration of the containers' crash back-off with
// its delay capped at maxRestart (0: the default, 300 s), as kubelet's
// newCrashLoopBackOff: the cap is the smaller of c's Max and maxRestart,
// and a first delay longer than the cap is the cap.
func (c Config) CrashLoop(maxRestart time.Duration) Config {
	c = c.withDefaults()
	if maxRestart <= 0 {
		maxRestart = DefaultContainerRestartPeriod
	}
	c.Max = min(c.Max, maxRestart)
	c.Initial = min(c.Initial, c.Max)
	return c
}
