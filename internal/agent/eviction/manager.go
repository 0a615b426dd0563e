package eviction

import (
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
)

// DefaultPressureTransitionPeriod is kubelet's
// --eviction-pressure-transition-period: a pressure condition stays this
// long after its threshold was last met.
const DefaultPressureTransitionPeriod = 5 * time.Minute

// Config is the manager's configuration.
type Config struct {
	Thresholds []Threshold
	// PressureTransitionPeriod: DefaultPressureTransitionPeriod when 0.
	PressureTransitionPeriod time.Duration
	// MaxPodGracePeriodSeconds bounds the grace period of a pod evicted
	// for a soft threshold (kubelet's --eviction-max-pod-grace-period).
	MaxPodGracePeriodSeconds int64
}

// Manager tracks which thresholds are met, since when, and which node
// conditions follow; safe for concurrent use.
type Manager struct {
	cfg Config

	mu sync.RWMutex
	// firstMet is when each threshold (by index) was first seen met in
	// the current run of observations.
	firstMet map[int]time.Time
	// acting are the thresholds met past their grace period last time:
	// they stay met until the signal recovers past their minimum reclaim.
	acting map[int]bool
	// condSeen is when each pressure condition was last observed.
	condSeen     map[v1.NodeConditionType]time.Time
	conditions   []v1.NodeConditionType
	observations Observations
}

// NewManager returns a manager with no condition yet.
func NewManager(cfg Config) *Manager {
	if cfg.PressureTransitionPeriod <= 0 {
		cfg.PressureTransitionPeriod = DefaultPressureTransitionPeriod
	}
	return &Manager{cfg: cfg, firstMet: map[int]time.Time{}, acting: map[int]bool{}, condSeen: map[v1.NodeConditionType]time.Time{}}
}

// Config returns the manager's configuration.
func (m *Manager) Config() Config { return m.cfg }

// Update takes one housekeeping pass's observations: it updates the node
// conditions and returns the thresholds to act on now (met for their grace
// period), memory first, as kubelet's synchronize does.
func (m *Manager) Update(obs Observations, now time.Time) []Threshold {
	m.mu.Lock()
	defer m.mu.Unlock()
	met := map[int]bool{}
	for i, t := range m.cfg.Thresholds {
		if isMet(t, obs, false) || (m.acting[i] && isMet(t, obs, true)) {
			met[i] = true
		}
	}
	for i := range m.firstMet {
		if !met[i] {
			delete(m.firstMet, i)
		}
	}
	for i := range met {
		if _, seen := m.firstMet[i]; !seen {
			m.firstMet[i] = now
		}
		m.condSeen[m.cfg.Thresholds[i].Signal.Condition()] = now
	}
	m.conditions = m.conditions[:0]
	for _, c := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
		if seen, ok := m.condSeen[c]; ok && now.Sub(seen) < m.cfg.PressureTransitionPeriod {
			m.conditions = append(m.conditions, c)
		}
	}
	m.acting = map[int]bool{}
	var act []Threshold
	for i := range met {
		t := m.cfg.Thresholds[i]
		if now.Sub(m.firstMet[i]) >= t.GracePeriod {
			m.acting[i] = true
			act = append(act, t)
		}
	}
	sort.SliceStable(act, func(i, j int) bool { return evictionOrder(act[i]) < evictionOrder(act[j]) })
	m.observations = obs
	return act
}

// evictionOrder puts memory first, as kubelet's byEvictionPriority does,
// then the other signals in their fixed order, hard before soft.
func evictionOrder(t Threshold) int {
	for i, s := range signals {
		if s == t.Signal {
			if t.Soft {
				return 2*i + 1
			}
			return 2 * i
		}
	}
	return len(signals) * 2
}

// isMet reports whether what is available is below the threshold (plus
// its minimum reclaim when withReclaim). An unobserved signal is not met.
func isMet(t Threshold, obs Observations, withReclaim bool) bool {
	o, ok := obs[t.Signal]
	if !ok {
		return false
	}
	limit := t.Value.bytes(o.Capacity)
	if withReclaim && t.MinReclaim != nil {
		limit += t.MinReclaim.bytes(o.Capacity)
	}
	return o.Available < limit
}

// StillMet reports whether t is met in obs (with its minimum reclaim):
// after node-level reclaim, whether pods must go too.
func StillMet(t Threshold, obs Observations) bool { return isMet(t, obs, true) }

// Conditions returns the pressure conditions in force (MemoryPressure,
// DiskPressure, PIDPressure, in that order).
func (m *Manager) Conditions() []v1.NodeConditionType {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return append([]v1.NodeConditionType(nil), m.conditions...)
}

// Observations returns the last pass's observations.
func (m *Manager) Observations() Observations {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(Observations, len(m.observations))
	for k, v := range m.observations {
		out[k] = v
	}
	return out
}

// HardValue is the hard threshold of a signal resolved against capacity
// (0 when there is none): node allocatable subtracts it, as kubelet does.
func (m *Manager) HardValue(s Signal, capacity int64) int64 {
	for _, t := range m.cfg.Thresholds {
		if t.Signal == s && !t.Soft {
			return t.Value.bytes(capacity)
		}
	}
	return 0
}

// EvictionGracePeriod is the grace period of a pod evicted for t:
// kubelet's 1 s for a hard threshold; for a soft one the pod's own,
// capped at MaxPodGracePeriodSeconds.
func (m *Manager) EvictionGracePeriod(t Threshold, pod *v1.Pod) int64 {
	if !t.Soft {
		return immediateGracePeriodSeconds
	}
	grace := m.cfg.MaxPodGracePeriodSeconds
	if pod.Spec.TerminationGracePeriodSeconds != nil && *pod.Spec.TerminationGracePeriodSeconds < grace {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	return max(grace, 0)
}

// immediateGracePeriodSeconds is kubelet's grace period for pods evicted
// for a hard threshold.
const immediateGracePeriodSeconds = 1
