package metrics

import "github.com/prometheus/client_golang/prometheus"

// StateCounts returns how many objects are in each state.
type StateCounts func() map[string]int

// stateCollector reports the sandbox and container counts by state when
// scraped, so nothing has to keep gauges in step with state changes.
type stateCollector struct {
	sandboxes, containers         StateCounts
	sandboxesDesc, containersDesc *prometheus.Desc
}

// TrackStates exports berth_sandboxes{state} and berth_containers{state},
// computed by the given functions at each scrape. Call it at most once.
func (m *Metrics) TrackStates(sandboxes, containers StateCounts) {
	if m == nil {
		return
	}
	m.registry.MustRegister(&stateCollector{
		sandboxes:      sandboxes,
		containers:     containers,
		sandboxesDesc:  prometheus.NewDesc("berth_sandboxes", "Pod sandboxes by state.", []string{"state"}, nil),
		containersDesc: prometheus.NewDesc("berth_containers", "Containers by state.", []string{"state"}, nil),
	})
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.sandboxesDesc
	ch <- c.containersDesc
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	for state, n := range c.sandboxes() {
		ch <- prometheus.MustNewConstMetric(c.sandboxesDesc, prometheus.GaugeValue, float64(n), state)
	}
	for state, n := range c.containers() {
		ch <- prometheus.MustNewConstMetric(c.containersDesc, prometheus.GaugeValue, float64(n), state)
	}
}
