package pod

import "sync"

// eventOrder keeps events in lifecycle order: it holds back the STOPPED
// event of a container whose start is still being recorded, and remembers
// which sandboxes already reported STOPPED. The zero value is ready.
type eventOrder struct {
	mu               sync.Mutex
	starting         map[string]bool // container id → a STOPPED event is held
	stoppedSandboxes map[string]bool
}

func (o *eventOrder) begin(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.starting == nil {
		o.starting = map[string]bool{}
	}
	o.starting[id] = false
}

// end finishes a start and reports whether a STOPPED event was held.
func (o *eventOrder) end(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	held := o.starting[id]
	delete(o.starting, id)
	return held
}

// holdStop reports whether the container is starting, and if so holds its
// STOPPED event for end.
func (o *eventOrder) holdStop(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.starting[id]; !ok {
		return false
	}
	o.starting[id] = true
	return true
}

// markSandboxStopped reports whether this is the sandbox's first STOPPED.
func (o *eventOrder) markSandboxStopped(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stoppedSandboxes == nil {
		o.stoppedSandboxes = map[string]bool{}
	}
	if o.stoppedSandboxes[id] {
		return false
	}
	o.stoppedSandboxes[id] = true
	return true
}

func (o *eventOrder) forgetSandbox(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.stoppedSandboxes, id)
}
