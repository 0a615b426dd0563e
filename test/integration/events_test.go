package integration

import (
	"context"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// eventWatch collects GetContainerEvents into a channel.
type eventWatch struct {
	events chan *runtimeapi.ContainerEventResponse
	cancel context.CancelFunc
}

func (d *daemon) watchEvents() *eventWatch {
	d.T.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := d.RT.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	if err != nil {
		cancel()
		d.T.Fatalf("GetContainerEvents: %v", err)
	}
	if _, err := stream.Header(); err != nil { // sent once the daemon subscribed
		cancel()
		d.T.Fatalf("GetContainerEvents header: %v", err)
	}
	w := &eventWatch{events: make(chan *runtimeapi.ContainerEventResponse, 100), cancel: cancel}
	d.T.Cleanup(cancel)
	go func() {
		defer close(w.events)
		for {
			ev, err := stream.Recv()
			if err != nil {
				return
			}
			w.events <- ev
		}
	}()
	return w
}

// next waits for the next event about id, skipping events of other ids.
func (w *eventWatch) next(t *testing.T, id string) *runtimeapi.ContainerEventResponse {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-w.events:
			if !ok {
				t.Fatalf("event stream ended while waiting for an event of %s", id)
			}
			if ev.GetContainerId() == id {
				return ev
			}
		case <-timeout:
			t.Fatalf("no event of %s within 20s", id)
		}
	}
}

func wantEvent(t *testing.T, ev *runtimeapi.ContainerEventResponse, typ runtimeapi.ContainerEventType) {
	t.Helper()
	if ev.GetContainerEventType() != typ {
		t.Fatalf("event %v of %s, want %v", ev.GetContainerEventType(), ev.GetContainerId(), typ)
	}
	if ev.GetCreatedAt() == 0 || ev.GetPodSandboxStatus().GetId() == "" {
		t.Errorf("event %v: no time or no sandbox status: %v", typ, ev)
	}
}

// statusOf finds a container's status in an event.
func statusOf(ev *runtimeapi.ContainerEventResponse, id string) *runtimeapi.ContainerStatus {
	for _, st := range ev.GetContainersStatuses() {
		if st.GetId() == id {
			return st
		}
	}
	return nil
}

// TestContainerEventsFollowTheLifecycle: a subscriber sees the sandbox and a
// container created, started, stopped (the process exits on its own) and
// deleted, in order, each with the statuses of that moment.
func TestContainerEventsFollowTheLifecycle(t *testing.T) {
	d := startDaemon(t)
	w := d.watchEvents()
	podCfg := podConfig(t, "events")
	podID := d.runPod(podCfg)
	wantEvent(t, w.next(t, podID), runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT)
	ev := w.next(t, podID)
	wantEvent(t, ev, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	if ev.GetPodSandboxStatus().GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Errorf("sandbox started event: state %v", ev.GetPodSandboxStatus().GetState())
	}

	ctrID := d.create(podID, podCfg, shell("brief", "sleep 1; exit 7"))
	ev = w.next(t, ctrID)
	wantEvent(t, ev, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT)
	if st := statusOf(ev, ctrID); st.GetState() != runtimeapi.ContainerState_CONTAINER_CREATED {
		t.Errorf("created event: container status %v", st)
	}
	d.startContainer(ctrID)
	wantEvent(t, w.next(t, ctrID), runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	ev = w.next(t, ctrID) // nobody polls status: the exit watcher must report it
	wantEvent(t, ev, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
	if st := statusOf(ev, ctrID); st.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || st.GetExitCode() != 7 {
		t.Errorf("stopped event: container status %v", st)
	}
	if _, err := d.RT.RemoveContainer(d.ctx(), &runtimeapi.RemoveContainerRequest{ContainerId: ctrID}); err != nil {
		t.Fatalf("RemoveContainer: %v", err)
	}
	wantEvent(t, w.next(t, ctrID), runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT)

	d.stopAndRemovePod(podID)
	ev = w.next(t, podID)
	wantEvent(t, ev, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
	if ev.GetPodSandboxStatus().GetState() != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Errorf("sandbox stopped event: state %v", ev.GetPodSandboxStatus().GetState())
	}
	wantEvent(t, w.next(t, podID), runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT)
}

// TestContainerEventsOfStopContainer: StopContainer of a running container
// reports STOPPED once, then RemovePodSandbox reports DELETED for it.
func TestContainerEventsOfStopContainer(t *testing.T) {
	d := startDaemon(t)
	podCfg := podConfig(t, "events-stop")
	podID := d.runPod(podCfg)
	ctrID := d.run(podID, podCfg, shell("long", "sleep 1000"))
	w := d.watchEvents()
	if _, err := d.RT.StopContainer(d.ctx(), &runtimeapi.StopContainerRequest{ContainerId: ctrID, Timeout: 1}); err != nil {
		t.Fatalf("StopContainer: %v", err)
	}
	wantEvent(t, w.next(t, ctrID), runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
	d.stopAndRemovePod(podID)
	wantEvent(t, w.next(t, ctrID), runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT)
}
