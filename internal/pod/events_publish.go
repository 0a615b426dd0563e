package pod

import (
	"sort"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// SubscribeEvents starts delivering container and sandbox events; buffer
// bounds how far the subscriber may fall behind (0: DefaultEventBuffer).
func (s *Service) SubscribeEvents(buffer int) *EventSubscription {
	return s.events.SubscribeEvents(buffer)
}

// publishSandboxEvent sends an event about a sandbox with its records now.
func (s *Service) publishSandboxEvent(t runtimeapi.ContainerEventType, sb Sandbox) {
	if !s.events.active() {
		return
	}
	s.events.Publish(Event{Type: t, ID: sb.ID, Sandbox: sb, Containers: s.containerSnapshots(sb.ID), Time: time.Now()})
}

// publishContainerEvent sends an event about a container with the records
// of its sandbox and of the sandbox's containers now.
func (s *Service) publishContainerEvent(t runtimeapi.ContainerEventType, c Container) {
	if !s.events.active() {
		return
	}
	var sb Sandbox
	if e, err := s.findSandbox(c.SandboxID); err == nil {
		sb = e.snapshot()
	}
	containers := s.containerSnapshots(c.SandboxID)
	if t == runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT {
		containers = append(containers, c) // gone from the index: report its last state
	}
	s.events.Publish(Event{Type: t, ID: c.ID, Sandbox: sb, Containers: containers, Time: time.Now()})
}

func (s *Service) containerSnapshots(sandboxID string) []Container {
	entries := s.containersOf(sandboxID)
	out := make([]Container, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.snapshot())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out
}

// containerCreated is the hook of CreateContainer.
func (s *Service) containerCreated(id string) {
	if e, err := s.findContainer(id); err == nil {
		s.publishContainerEvent(runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, e.snapshot())
	}
}

// containerStarting is the hook of StartContainer, deferred: it returns the
// function that reports the start once it is recorded. Until then an exit
// seen by the watcher is held back, so that STOPPED never precedes STARTED.
func (s *Service) containerStarting(e *containerEntry) func() {
	id := e.snapshot().ID
	s.starts.begin(id)
	return func() {
		rec := e.snapshot()
		held := s.starts.end(id)
		if !rec.StartedAt.IsZero() {
			s.publishContainerEvent(runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, rec)
		}
		if held {
			s.publishContainerEvent(runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, e.snapshot())
		}
	}
}

// containerStopped is the hook of applyExit.
func (s *Service) containerStopped(e *containerEntry) {
	rec := e.snapshot()
	if s.starts.holdStop(rec.ID) {
		return
	}
	s.publishContainerEvent(runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, rec)
}

// containerDeleted is the hook of container removal; it also forgets the
// container's CPU sample.
func (s *Service) containerDeleted(rec Container) {
	s.cpuRates.Forget(rec.ID)
	s.publishContainerEvent(runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, rec)
}

// sandboxStarted is the hook of RunSandbox: a sandbox is created and
// started in one call, so both events are sent.
func (s *Service) sandboxStarted(id string) {
	e, err := s.findSandbox(id)
	if err != nil {
		return
	}
	s.publishSandboxEvent(runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, e.snapshot())
	s.publishSandboxEvent(runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, e.snapshot())
}

// sandboxMaybeStopped is the hook wherever a sandbox may turn not ready; it
// sends STOPPED once per sandbox.
func (s *Service) sandboxMaybeStopped(e *sandboxEntry) {
	rec := e.snapshot()
	if rec.State != SandboxNotReady || !s.starts.markSandboxStopped(rec.ID) {
		return
	}
	s.publishSandboxEvent(runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, rec)
}

// sandboxDeleted is the hook of RemoveSandbox.
func (s *Service) sandboxDeleted(rec Sandbox) {
	s.starts.forgetSandbox(rec.ID)
	s.cpuRates.Forget(rec.ID)
	s.publishSandboxEvent(runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, rec)
}
