package metrics

import "github.com/prometheus/client_golang/prometheus"

// StateCounts returns how many objects there are per label value.
type StateCounts func() map[string]int

// countsCollector reports one gauge per label value, computed by counts at
// each scrape, so nothing has to keep gauges in step with state changes.
type countsCollector struct {
	desc   *prometheus.Desc
	counts StateCounts
}

func newCountsCollector(name, help, label string, counts StateCounts) *countsCollector {
	return &countsCollector{desc: prometheus.NewDesc(name, help, []string{label}, nil), counts: counts}
}

func (c *countsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *countsCollector) Collect(ch chan<- prometheus.Metric) {
	for value, n := range c.counts() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), value)
	}
}

// TrackStates exports berth_sandboxes{state} and berth_containers{state},
// computed by the given functions at each scrape. Call it at most once.
func (m *Metrics) TrackStates(sandboxes, containers StateCounts) {
	if m == nil {
		return
	}
	m.registry.MustRegister(
		newCountsCollector("berth_sandboxes", "Pod sandboxes by state.", "state", sandboxes),
		newCountsCollector("berth_containers", "Containers by state.", "state", containers))
}

// TrackQuarantined exports berth_quarantined_records{kind}: the sandbox and
// container records recovery set aside, computed by counts at each scrape.
// Call it at most once.
func (m *Metrics) TrackQuarantined(counts StateCounts) {
	if m == nil {
		return
	}
	m.registry.MustRegister(newCountsCollector("berth_quarantined_records",
		"Records recovery quarantined (left alone, with what depends on them) by kind.", "kind", counts))
}

// TrackFsyncs exports berth_store_fsyncs_total: the flushes (fsync of a
// file or a directory) berth's record store made since the daemon started,
// read from total at each scrape. Call it at most once.
func (m *Metrics) TrackFsyncs(total func() uint64) {
	if m == nil {
		return
	}
	m.registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Namespace: "berth",
		Name:      "store_fsyncs_total",
		Help:      "Flushes (fsync of a file or a directory) made through berth's store (records, image store) since the daemon started.",
	}, func() float64 { return float64(total()) }))
}
