package probe

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Options tune a Manager. The zero value suits the agent.
type Options struct {
	// SecondsUnit is how long one "second" of initialDelaySeconds,
	// periodSeconds and timeoutSeconds lasts. Zero means time.Second; tests
	// set a few milliseconds.
	SecondsUnit time.Duration
	// UpdateBuffer is the capacity of the Updates channel; zero means 64.
	UpdateBuffer int
	// OnAttempt, if set, is called from the worker after every probe attempt,
	// whatever its result; it must return promptly.
	OnAttempt func(Attempt)
}

// ErrClosed is returned by Add once the Manager is closed.
var ErrClosed = errors.New("probe manager closed")

// Manager runs the probe workers of every container it is given and keeps
// their thresholded results.
type Manager struct {
	execer    Execer
	unit      time.Duration
	onAttempt func(Attempt)
	created   time.Time
	ctx       context.Context
	cancel    context.CancelFunc
	updates   chan Update
	wg        sync.WaitGroup

	mu         sync.Mutex
	closed     bool
	containers map[string]*container // by container ID
}

// container is one tracked container; fields after the identity are guarded
// by Manager.mu.
type container struct {
	podUID, name, id string

	probes      [kindCount]bool
	results     [kindCount]Result
	workers     [kindCount]*worker
	terminating bool
}

// NewManager returns a Manager that runs exec probes through ex.
func NewManager(ex Execer, opts Options) *Manager {
	if opts.SecondsUnit <= 0 {
		opts.SecondsUnit = time.Second
	}
	if opts.UpdateBuffer <= 0 {
		opts.UpdateBuffer = 64
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{
		execer:     ex,
		unit:       opts.SecondsUnit,
		onAttempt:  opts.OnAttempt,
		created:    time.Now(),
		ctx:        ctx,
		cancel:     cancel,
		updates:    make(chan Update, opts.UpdateBuffer),
		containers: make(map[string]*container),
	}
}

// Updates delivers an Update each time a thresholded result changes. It is
// closed by Close. Updates are prompts to resync: Status is authoritative.
func (m *Manager) Updates() <-chan Update { return m.updates }

// Add tracks a running container and starts a worker for each of its probes
// (t.Container's liveness, readiness and startup probes). startedAt is when
// the container started; initial delays count from it. Adding a container ID
// already tracked does nothing, so the agent may call Add on every sync.
func (m *Manager) Add(podUID string, t Target, startedAt time.Time) error {
	if t.ContainerID == "" || t.Container == nil {
		return errors.New("probe manager: add: target needs a container ID and a container spec")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if _, tracked := m.containers[t.ContainerID]; tracked {
		return nil
	}
	c := &container{podUID: podUID, name: t.Container.Name, id: t.ContainerID}
	for k := Kind(0); k < kindCount; k++ {
		spec := k.spec(t.Container)
		if spec == nil {
			continue
		}
		c.probes[k] = true
		c.results[k] = k.initial()
		w := newWorker(m, c, k, spec, t, startedAt)
		c.workers[k] = w
		m.wg.Add(1)
		go w.loop()
	}
	m.containers[t.ContainerID] = c
	return nil
}

// Remove stops the workers of a container (cancelling a probe in flight) and
// forgets it. Call it when the container has exited or been removed.
func (m *Manager) Remove(containerID string) {
	m.mu.Lock()
	c := m.containers[containerID]
	delete(m.containers, containerID)
	m.mu.Unlock()
	c.stop()
}

// RemovePod removes every container of a pod.
func (m *Manager) RemovePod(podUID string) {
	m.mu.Lock()
	var gone []*container
	for id, c := range m.containers {
		if c.podUID == podUID {
			gone = append(gone, c)
			delete(m.containers, id)
		}
	}
	m.mu.Unlock()
	for _, c := range gone {
		c.stop()
	}
}

// SetTerminating marks a pod as being deleted: as in the kubelet, its
// liveness and startup probes stop and read Success from now on, so that a
// container being shut down is not also killed for failing them. Readiness
// keeps running.
func (m *Manager) SetTerminating(podUID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	var ups []Update
	for _, c := range m.containers {
		if c.podUID != podUID || c.terminating {
			continue
		}
		c.terminating = true
		for _, k := range []Kind{Liveness, Startup} {
			if !c.probes[k] {
				continue
			}
			c.workers[k].cancel()
			if c.results[k] != Success {
				c.results[k] = Success
				ups = append(ups, c.update(k, Success, "pod is terminating"))
			}
		}
	}
	if len(ups) > 0 {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			for _, u := range ups {
				m.publish(m.ctx, u)
			}
		}()
	}
}

// Status reports what the probes say about a container; false if the
// container is not tracked.
func (m *Manager) Status(containerID string) (Status, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.containers[containerID]
	if !ok {
		return Status{}, false
	}
	return c.status(), true
}

// Close stops every worker, waits for them, and closes Updates.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	m.containers = map[string]*container{}
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
	close(m.updates)
}

// record stores a thresholded result of w's probe and publishes it if it
// changed. A startup success wakes the container's other workers at once.
func (m *Manager) record(w *worker, o outcome) {
	c := w.c
	m.mu.Lock()
	if m.containers[c.id] != c || (c.terminating && w.kind != Readiness) || c.results[w.kind] == o.result {
		m.mu.Unlock()
		return
	}
	c.results[w.kind] = o.result
	var wake []*worker
	if w.kind == Startup && o.result == Success {
		wake = []*worker{c.workers[Liveness], c.workers[Readiness]}
	}
	u := c.update(w.kind, o.result, o.message)
	m.mu.Unlock()
	for _, other := range wake {
		other.poke()
	}
	m.publish(w.ctx, u)
}

// started reports whether c's startup probe has succeeded (or it has none).
func (m *Manager) started(c *container) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return c.status().Started
}

// publish sends u unless ctx ends first.
func (m *Manager) publish(ctx context.Context, u Update) {
	select {
	case m.updates <- u:
	case <-ctx.Done():
	}
}

func (c *container) status() Status {
	s := Status{Results: c.results}
	s.Started = !c.probes[Startup] || c.results[Startup] == Success
	s.Ready = s.Started && (!c.probes[Readiness] || c.results[Readiness] == Success)
	s.LivenessFailed = c.probes[Liveness] && c.results[Liveness] == Failure
	s.StartupFailed = c.probes[Startup] && c.results[Startup] == Failure
	return s
}

func (c *container) update(k Kind, r Result, msg string) Update {
	return Update{PodUID: c.podUID, ContainerName: c.name, ContainerID: c.id, Kind: k, Result: r, Message: msg, At: time.Now()}
}

// stop cancels c's workers; c may be nil.
func (c *container) stop() {
	if c == nil {
		return
	}
	for _, w := range c.workers {
		if w != nil {
			w.cancel()
		}
	}
}
