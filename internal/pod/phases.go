package pod

import "time"

// PhaseObserver receives the duration of each step of a start operation,
// whether the step succeeded or not (the daemon's metrics).
type PhaseObserver interface {
	ObservePhase(op, phase string, d time.Duration)
}

// Operations whose phases are observed.
const (
	opRunSandbox      = "run_sandbox"
	opCreateContainer = "create_container"
	opStartContainer  = "start_container"
)

// phase starts timing one step of op; the returned func ends it:
// `defer s.phase(op, "cni")()` times the rest of the enclosing function.
func (s *Service) phase(op, name string) func() {
	if s.cfg.Phases == nil {
		return func() {}
	}
	start := time.Now()
	return func() { s.cfg.Phases.ObservePhase(op, name, time.Since(start)) }
}
