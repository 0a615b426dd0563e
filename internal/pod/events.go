package pod

import (
	"fmt"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/errdefs"
)

// DefaultEventBuffer is the number of events a subscriber may fall behind
// before it is disconnected.
const DefaultEventBuffer = 256

// Event is a lifecycle change of a container or a sandbox, with copies of
// the records as they were when it happened. For sandbox events ID is the
// sandbox id (as containerd reports them).
type Event struct {
	Type       runtimeapi.ContainerEventType
	ID         string
	Sandbox    Sandbox
	Containers []Container // the sandbox's containers
	Time       time.Time
}

// EventSubscription receives events until it is closed or falls behind.
type EventSubscription struct {
	broker *EventBroker
	ch     chan Event
	once   sync.Once
	mu     sync.Mutex
	err    error
}

// Events delivers the events; it is closed when the subscription ends.
func (sub *EventSubscription) Events() <-chan Event { return sub.ch }

// Err says why the events channel was closed: nil after Close, an
// ErrUnavailable error when the subscriber fell behind and events were lost.
func (sub *EventSubscription) Err() error {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	return sub.err
}

// Close ends the subscription; it is safe to call more than once.
func (sub *EventSubscription) Close() { sub.broker.remove(sub, nil) }

// EventBroker fans events out to subscribers. Publishing never blocks: a
// subscriber whose buffer is full is disconnected with an error, and must
// subscribe again (and list, to resynchronize). The zero value is ready.
type EventBroker struct {
	mu   sync.Mutex
	subs map[*EventSubscription]struct{}
}

// SubscribeEvents adds a subscriber that may fall buffer events behind
// (0: DefaultEventBuffer).
func (b *EventBroker) SubscribeEvents(buffer int) *EventSubscription {
	if buffer <= 0 {
		buffer = DefaultEventBuffer
	}
	sub := &EventSubscription{broker: b, ch: make(chan Event, buffer)}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs == nil {
		b.subs = map[*EventSubscription]struct{}{}
	}
	b.subs[sub] = struct{}{}
	return sub
}

func (b *EventBroker) remove(sub *EventSubscription, reason error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.removeLocked(sub, reason)
}

func (b *EventBroker) removeLocked(sub *EventSubscription, reason error) {
	if _, ok := b.subs[sub]; !ok {
		return
	}
	delete(b.subs, sub)
	sub.once.Do(func() {
		sub.mu.Lock()
		sub.err = reason
		sub.mu.Unlock()
		close(sub.ch)
	})
}

func (b *EventBroker) active() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs) > 0
}

// Publish hands ev to every subscriber without waiting for any.
func (b *EventBroker) Publish(ev Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for sub := range b.subs {
		select {
		case sub.ch <- ev:
		default:
			b.removeLocked(sub, fmt.Errorf("event subscription: %d events unread, later events dropped: %w",
				cap(sub.ch), errdefs.ErrUnavailable))
		}
	}
}
