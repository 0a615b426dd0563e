package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// cycleTimes are the CRI calls of one pod's life, as the client saw them,
// and what each call cost in store fsyncs and processes forked (the
// calls' order: run, create, start, stop, remove; untimed readings).
type cycleTimes struct {
	run, create, start, stop, remove time.Duration
	fsyncs, forks                    [5]uint64
}

// counts are the runtime's store fsyncs (0 without a counter) and the
// machine's processes forked so far; a failed reading is 0.
type counts struct{ fsyncs, forks uint64 }

func (c criClient) counts() counts {
	var n counts
	if c.fsyncs != nil {
		n.fsyncs, _ = c.fsyncs()
	}
	if s, err := readHostStat(); err == nil {
		n.forks = s.forks
	}
	return n
}

// marker records the counts' rise over each call of a cycle.
type marker struct {
	c    criClient
	t    *cycleTimes
	prev counts
}

func (m *marker) mark(call int) {
	now := m.c.counts()
	m.t.fsyncs[call], m.t.forks[call] = now.fsyncs-m.prev.fsyncs, now.forks-m.prev.forks
	m.prev = now
}

// latencies are the cycles of one PID namespace mode.
type latencies struct {
	mode   string // "CONTAINER" or "POD"
	cycles []cycleTimes
}

func (l latencies) column(pick func(cycleTimes) time.Duration) []time.Duration {
	out := make([]time.Duration, len(l.cycles))
	for i, c := range l.cycles {
		out[i] = pick(c)
	}
	return out
}

func (l latencies) runs() []time.Duration {
	return l.column(func(c cycleTimes) time.Duration { return c.run })
}
func (l latencies) creates() []time.Duration {
	return l.column(func(c cycleTimes) time.Duration { return c.create })
}
func (l latencies) starts() []time.Duration {
	return l.column(func(c cycleTimes) time.Duration { return c.start })
}
func (l latencies) stops() []time.Duration {
	return l.column(func(c cycleTimes) time.Duration { return c.stop })
}
func (l latencies) removes() []time.Duration {
	return l.column(func(c cycleTimes) time.Duration { return c.remove })
}
func (l latencies) createStarts() []time.Duration { return sumPairs(l.creates(), l.starts()) }
func (l latencies) wholes() []time.Duration {
	return l.column(func(c cycleTimes) time.Duration { return c.run + c.create + c.start + c.stop + c.remove })
}

// measureLatencies runs 1 discarded warm-up cycle plus n measured ones,
// serially, with the given PID namespace mode.
func (c criClient) measureLatencies(ctx context.Context, pid runtimeapi.NamespaceMode, n int) (latencies, error) {
	l := latencies{mode: pid.String()}
	for i := 0; i <= n; i++ {
		name := fmt.Sprintf("lat-%s-%d", modeTag(pid), i)
		t, err := c.cycle(ctx, name, pid)
		if err != nil {
			return l, err
		}
		if i > 0 {
			l.cycles = append(l.cycles, t)
		}
	}
	return l, nil
}

func modeTag(pid runtimeapi.NamespaceMode) string {
	if pid == runtimeapi.NamespaceMode_POD {
		return "pod"
	}
	return "ctr"
}

// cycle is one pod's life on the client's endpoint and runtime handler:
// run, create + start sleep, stop, remove. On an error the pod is removed
// untimed.
func (c criClient) cycle(ctx context.Context, name string, pid runtimeapi.NamespaceMode) (t cycleTimes, err error) {
	cfg, err := c.e.podConfig(name, pid)
	if err != nil {
		return t, err
	}
	m := marker{c: c, t: &t, prev: c.counts()}
	var podID string
	podID, t.run, err = c.runPod(ctx, cfg)
	if err != nil {
		return t, err
	}
	m.mark(0)
	removed := false
	defer func() {
		if !removed {
			if rerr := c.removePod(context.WithoutCancel(ctx), podID); rerr != nil {
				warnf("pod %s: %v", podID, rerr)
			}
		}
	}()
	var ctrID string
	if ctrID, t.create, err = c.createContainer(ctx, podID, cfg); err != nil {
		return t, err
	}
	m.mark(1)
	if t.start, err = c.startContainer(ctx, ctrID); err != nil {
		return t, err
	}
	m.mark(2)
	if t.stop, err = c.stopPod(ctx, podID); err != nil {
		return t, err
	}
	m.mark(3)
	if t.remove, err = c.removePodTimed(ctx, podID); err != nil {
		return t, err
	}
	m.mark(4)
	removed = true
	return t, nil
}

// medianCount is the median over the cycles of call's fsyncs (or forks).
func (l latencies) medianCount(call int, fsyncs bool) uint64 {
	if len(l.cycles) == 0 {
		return 0
	}
	vs := make([]uint64, len(l.cycles))
	for i, c := range l.cycles {
		vs[i] = c.forks[call]
		if fsyncs {
			vs[i] = c.fsyncs[call]
		}
	}
	slices.Sort(vs)
	return vs[len(vs)/2]
}
