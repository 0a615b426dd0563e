package pod

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/image"
	"github.com/berth-dev/berth/internal/monitor"
	"github.com/berth-dev/berth/internal/network"
)

const (
	evCreated = runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT
	evStarted = runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT
	evStopped = runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT
	evDeleted = runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT
)

func TestBrokerDeliversInOrderToEverySubscriber(t *testing.T) {
	var b EventBroker
	a, c := b.SubscribeEvents(8), b.SubscribeEvents(8)
	for i, typ := range []runtimeapi.ContainerEventType{evCreated, evStarted, evStopped} {
		b.Publish(Event{Type: typ, ID: string(rune('a' + i))})
	}
	for _, sub := range []*EventSubscription{a, c} {
		for _, want := range []runtimeapi.ContainerEventType{evCreated, evStarted, evStopped} {
			if got := (<-sub.Events()).Type; got != want {
				t.Fatalf("got %v, want %v", got, want)
			}
		}
	}
	a.Close()
	a.Close() // idempotent
	if _, ok := <-a.Events(); ok || a.Err() != nil {
		t.Fatalf("closed subscription: open channel or error %v", a.Err())
	}
	b.Publish(Event{Type: evDeleted})
	if got := (<-c.Events()).Type; got != evDeleted {
		t.Fatalf("remaining subscriber got %v", got)
	}
}

func TestBrokerDropsSlowSubscriberWithoutBlocking(t *testing.T) {
	var b EventBroker
	slow, fast := b.SubscribeEvents(2), b.SubscribeEvents(100)
	done := make(chan struct{})
	go func() {
		for i := 0; i < 50; i++ {
			b.Publish(Event{Type: evStarted})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Publish blocked on a slow subscriber")
	}
	n := 0
	for range slow.Events() {
		n++
	}
	if n != 2 {
		t.Errorf("slow subscriber read %d buffered events, want 2", n)
	}
	if !errors.Is(slow.Err(), errdefs.ErrUnavailable) {
		t.Errorf("slow subscriber error = %v, want ErrUnavailable", slow.Err())
	}
	if len(fast.Events()) != 50 || fast.Err() != nil {
		t.Errorf("fast subscriber: %d events, error %v", len(fast.Events()), fast.Err())
	}
	slow.Close() // after being dropped: harmless
}

func TestBrokerConcurrentPublishAndClose(t *testing.T) {
	var b EventBroker
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(2)
		sub := b.SubscribeEvents(4)
		go func() { defer wg.Done(); b.Publish(Event{Type: evCreated}) }()
		go func() { defer wg.Done(); sub.Close() }()
	}
	wg.Wait()
}

type noImages struct{}

func (noImages) Resolve(string) (image.Image, error)      { return image.Image{}, errdefs.ErrNotFound }
func (noImages) LayerPaths(image.Image) ([]string, error) { return nil, nil }

type noNetwork struct{}

func (noNetwork) Setup(context.Context, network.Attachment) (*network.Result, error) { return nil, nil }
func (noNetwork) Teardown(context.Context, network.Attachment) error                 { return nil }

func newTestService(t *testing.T) *Service {
	t.Helper()
	s, err := New(Config{RootDir: t.TempDir(), StateDir: t.TempDir(), Images: noImages{}, Network: noNetwork{},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func nextEvent(t *testing.T, sub *EventSubscription) Event {
	t.Helper()
	select {
	case ev, ok := <-sub.Events():
		if !ok {
			t.Fatalf("subscription closed: %v", sub.Err())
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
	}
	return Event{}
}

// TestContainerEventsCarryStatusesAndKeepLifecycleOrder drives the hooks
// directly: an exit seen while the start is being recorded must come after
// STARTED.
func TestContainerEventsCarryStatusesAndKeepLifecycleOrder(t *testing.T) {
	s := newTestService(t)
	sub := s.SubscribeEvents(16)
	defer sub.Close()
	s.addSandbox(Sandbox{ID: "sb1", State: SandboxReady, Config: goodSandboxConfig()})
	s.sandboxStarted("sb1")
	for _, want := range []runtimeapi.ContainerEventType{evCreated, evStarted} {
		if ev := nextEvent(t, sub); ev.Type != want || ev.ID != "sb1" || ev.Sandbox.State != SandboxReady {
			t.Fatalf("sandbox event %+v, want %v of sb1", ev, want)
		}
	}
	s.addContainer(Container{ID: "c1", SandboxID: "sb1", State: ContainerCreated, Dir: t.TempDir()})
	s.containerCreated("c1")
	if ev := nextEvent(t, sub); ev.Type != evCreated || ev.ID != "c1" || ev.Sandbox.ID != "sb1" || len(ev.Containers) != 1 {
		t.Fatalf("created event %+v", ev)
	}
	e, _ := s.findContainer("c1")
	finishStart := s.containerStarting(e)
	s.applyExit(e, &monitor.ExitRecord{ID: "c1", ExitCode: 3, FinishedAt: time.Now()}, "")
	select {
	case ev := <-sub.Events():
		t.Fatalf("event %v before the start was recorded", ev.Type)
	default:
	}
	if err := s.updateContainer(e, func(c *Container) bool { c.StartedAt = time.Now(); return true }); err != nil {
		t.Fatal(err)
	}
	finishStart()
	if ev := nextEvent(t, sub); ev.Type != evStarted {
		t.Fatalf("got %v, want STARTED", ev.Type)
	}
	ev := nextEvent(t, sub)
	if ev.Type != evStopped || ev.Containers[0].State != ContainerExited || ev.Containers[0].ExitCode != 3 {
		t.Fatalf("stopped event %+v", ev)
	}
	// A later exit of a running container is reported at once.
	s.addContainer(Container{ID: "c2", SandboxID: "sb1", State: ContainerRunning, Dir: t.TempDir()})
	e2, _ := s.findContainer("c2")
	s.applyExit(e2, &monitor.ExitRecord{ID: "c2", FinishedAt: time.Now()}, "")
	if ev := nextEvent(t, sub); ev.Type != evStopped || ev.ID != "c2" {
		t.Fatalf("got %+v, want STOPPED of c2", ev)
	}
	s.containerDeleted(e2.snapshot())
	if ev := nextEvent(t, sub); ev.Type != evDeleted || ev.ID != "c2" {
		t.Fatalf("got %+v, want DELETED of c2", ev)
	}
}

func TestSandboxStoppedIsReportedOnce(t *testing.T) {
	s := newTestService(t)
	sub := s.SubscribeEvents(16)
	defer sub.Close()
	s.addSandbox(Sandbox{ID: "sb2", State: SandboxNotReady, Config: goodSandboxConfig()})
	e, _ := s.findSandbox("sb2")
	s.sandboxMaybeStopped(e)
	s.sandboxMaybeStopped(e)
	s.sandboxDeleted(e.snapshot())
	if ev := nextEvent(t, sub); ev.Type != evStopped {
		t.Fatalf("got %v, want STOPPED", ev.Type)
	}
	if ev := nextEvent(t, sub); ev.Type != evDeleted {
		t.Fatalf("got %v, want DELETED (STOPPED only once)", ev.Type)
	}
}
