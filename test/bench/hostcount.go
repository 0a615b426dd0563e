package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of /proc/stat's CPU times: USER_HZ, 100 on every
// Linux architecture the bench runs on.
const userHZ = 100

// hostStat is the machine-wide part of /proc/stat the concurrency
// section reads: CPU time spent busy (user, nice, system, irq, softirq,
// steal; not idle nor iowait), in USER_HZ ticks, and processes forked
// since boot.
type hostStat struct {
	busyTicks uint64
	forks     uint64
}

// readHostStat reads /proc/stat.
func readHostStat() (hostStat, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return hostStat{}, err
	}
	return parseHostStat(string(b))
}

// parseHostStat reads the aggregate "cpu" line and the "processes" line
// of /proc/stat's text.
func parseHostStat(text string) (hostStat, error) {
	var s hostStat
	var sawCPU, sawForks bool
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "cpu":
			// user nice system idle iowait irq softirq steal ...
			for i, v := range f[1:] {
				n, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					return s, fmt.Errorf("/proc/stat cpu line: %w", err)
				}
				if i != 3 && i != 4 && i < 8 {
					s.busyTicks += n
				}
			}
			sawCPU = true
		case "processes":
			n, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return s, fmt.Errorf("/proc/stat processes line: %w", err)
			}
			s.forks, sawForks = n, true
		}
	}
	if !sawCPU || !sawForks {
		return s, fmt.Errorf("/proc/stat: no cpu or processes line")
	}
	return s, nil
}

// meter adds up wall time, busy CPU time and forks over the intervals
// between its start and stop calls: a phase's starts, less the pauses in
// which the bench itself reads memory.
type meter struct {
	wall  time.Duration
	busy  time.Duration
	forks uint64
	t0    time.Time
	s0    hostStat
	err   error // the first failed read of /proc/stat or of count
	// count, when set, is a runtime's own counter (berth's store fsyncs);
	// fsyncs adds up its rise over the intervals.
	count  func() (uint64, error)
	fsyncs uint64
	f0     uint64
}

// start opens an interval.
func (m *meter) start() {
	m.s0, m.err = m.read()
	if m.count != nil && m.err == nil {
		m.f0, m.err = m.count()
	}
	m.t0 = time.Now()
}

// stop closes the interval opened by start and adds it up.
func (m *meter) stop() {
	m.wall += time.Since(m.t0)
	s, err := m.read()
	if err != nil || m.err != nil {
		return
	}
	m.busy += time.Duration(s.busyTicks-m.s0.busyTicks) * time.Second / userHZ
	m.forks += s.forks - m.s0.forks
	if m.count != nil {
		f, err := m.count()
		if err != nil {
			m.err = err
			return
		}
		m.fsyncs += f - m.f0
	}
}

// read reads /proc/stat, keeping the first error.
func (m *meter) read() (hostStat, error) {
	s, err := readHostStat()
	if err != nil && m.err == nil {
		m.err = err
	}
	return s, m.err
}
