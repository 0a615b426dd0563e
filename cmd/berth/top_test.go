package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestCPURate(t *testing.T) {
	rate := uint64(250_000_000)
	for _, tc := range []struct {
		name          string
		first, second cpuSample
		haveFirst     bool
		want          uint64
		ok            bool
	}{
		{name: "the runtime's rate", second: cpuSample{nanoCores: &rate}, want: rate, ok: true},
		{name: "one sample, no rate"},
		{name: "two samples", haveFirst: true, first: cpuSample{cumulative: 1e9, at: 10e9}, second: cpuSample{cumulative: 1.5e9, at: 12e9}, want: 250_000_000, ok: true},
		{name: "counter went back", haveFirst: true, first: cpuSample{cumulative: 2e9, at: 10e9}, second: cpuSample{cumulative: 1e9, at: 11e9}},
		{name: "same time", haveFirst: true, first: cpuSample{cumulative: 1e9, at: 10e9}, second: cpuSample{cumulative: 2e9, at: 10e9}},
	} {
		if got, ok := cpuRate(tc.first, tc.second, tc.haveFirst); got != tc.want || ok != tc.ok {
			t.Errorf("%s: cpuRate = %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestWriteTopPods(t *testing.T) {
	rows := []usage{
		{namespace: "default", pod: "web", container: "app", nanoCores: 1_500_001, workingSet: 3<<20 + 5},
		{namespace: "kube", pod: "db", container: "pg", nanoCores: 250_000_000, workingSet: 100 << 20},
		{namespace: "default", pod: "api", container: "app", nanoCores: 0, workingSet: 1 << 30},
	}
	for _, tc := range []struct {
		o    topOptions
		want string
	}{
		{o: topOptions{namespace: "default"}, want: `
NAME   CPU(cores)   MEMORY(bytes)
api    0m           1024Mi
web    2m           3Mi
`},
		{o: topOptions{allNamespaces: true, sortBy: "cpu"}, want: `
NAMESPACE   NAME   CPU(cores)   MEMORY(bytes)
kube        db     250m         100Mi
default     web    2m           3Mi
default     api    0m           1024Mi
`},
		{o: topOptions{namespace: "default", containers: true, sortBy: "memory", noHeaders: true}, want: `
api   app   0m   1024Mi
web   app   2m   3Mi
`},
	} {
		var out bytes.Buffer
		if err := writeTopPods(&out, selectUsage(rows, tc.o, nil), tc.o); err != nil || out.String() != strings.TrimPrefix(tc.want, "\n") {
			t.Errorf("%+v: %v\n%s\nwant\n%s", tc.o, err, out.String(), tc.want)
		}
	}
	if got := selectUsage(rows, topOptions{namespace: "default"}, []string{"web"}); len(got) != 1 || got[0].pod != "web" {
		t.Errorf("selectUsage of pod web: %+v", got)
	}
}

const procStatSample = `cpu  100 0 100 700 100 0 0 0 50 0
cpu0 50 0 50 350 50 0 0 0 25 0
cpu1 50 0 50 350 50 0 0 0 25 0
intr 12345
ctxt 678
`

func TestProcStatAndMeminfo(t *testing.T) {
	first, err := parseProcStat(strings.NewReader(procStatSample))
	if err != nil || first.total != 1000 || first.idle != 800 || first.cpus != 2 {
		t.Fatalf("parseProcStat = %+v, %v; want total 1000, idle 800, 2 cpus", first, err)
	}
	// 100 more ticks, 50 of them busy: half of two CPUs is one core.
	second := procStat{total: 1100, idle: 850, cpus: 2}
	if got := second.coresSince(first); got != 1e9 {
		t.Errorf("coresSince = %d; want 1e9", got)
	}
	if got := first.coresSince(second); got != 0 {
		t.Errorf("coresSince backwards = %d; want 0", got)
	}
	for _, bad := range []string{"intr 1\n", "cpu 1 2 x 4 5\ncpu0 1\n", "cpu 1 2\n"} {
		if _, err := parseProcStat(strings.NewReader(bad)); err == nil {
			t.Errorf("parseProcStat(%q) accepted it", bad)
		}
	}
	m, err := parseMeminfo(strings.NewReader("MemTotal:        2048 kB\nMemFree:          100 kB\nMemAvailable:    1024 kB\n"))
	if err != nil || m.total != 2048*1024 || m.used() != 1024*1024 {
		t.Errorf("parseMeminfo = %+v, %v", m, err)
	}
	if _, err := parseMeminfo(strings.NewReader("MemTotal: 1 kB\n")); err == nil {
		t.Error("parseMeminfo without MemAvailable accepted it")
	}
}

func TestWriteTopNode(t *testing.T) {
	var out bytes.Buffer
	u := nodeUsage{name: "n1", nanoCores: 500_000_000, cpus: 2, memUsed: 512 << 20, memTotal: 2 << 30, imageFS: 300 << 20}
	want := "NAME   CPU(cores)   CPU(%)   MEMORY(bytes)   MEMORY(%)   IMAGE-FS(bytes)\nn1     500m         25%      512Mi           25%         300Mi\n"
	if err := writeTopNode(&out, u, false); err != nil || out.String() != want {
		t.Errorf("writeTopNode: %v\n%q\nwant\n%q", err, out.String(), want)
	}
}
