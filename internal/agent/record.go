package agent

import (
	"sync"
	"time"

	"github.com/berth-dev/berth/internal/agent/agentapi"
)

// maxEventsPerPod bounds each pod's event log; the oldest go first.
const maxEventsPerPod = 100

// eventLog is one pod's bounded event history; safe for concurrent use.
type eventLog struct {
	mu     sync.Mutex
	events []agentapi.Event
	now    func() time.Time
}

func newEventLog(now func() time.Time) *eventLog { return &eventLog{now: now} }

// record adds an event, or counts a repeat of the latest event with the
// same type, reason, object and message; it returns the event's count.
func (l *eventLog) record(typ, reason, object, message string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for i := len(l.events) - 1; i >= 0; i-- {
		e := &l.events[i]
		if e.Type == typ && e.Reason == reason && e.Object == object && e.Message == message {
			e.Count++
			e.LastTime = now
			// Keep the log in order of last occurrence.
			moved := *e
			l.events = append(l.events[:i], l.events[i+1:]...)
			l.events = append(l.events, moved)
			return moved.Count
		}
	}
	l.events = append(l.events, agentapi.Event{
		Type: typ, Reason: reason, Object: object, Message: message, Count: 1, FirstTime: now, LastTime: now,
	})
	if len(l.events) > maxEventsPerPod {
		l.events = append([]agentapi.Event(nil), l.events[len(l.events)-maxEventsPerPod:]...)
	}
	return 1
}

// list returns a copy of the events, oldest first.
func (l *eventLog) list() []agentapi.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]agentapi.Event(nil), l.events...)
}
