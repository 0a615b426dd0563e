package monitord

import (
	"io"
	"sync"

	"github.com/berth-dev/berth/internal/monitor"
)

// attachBuffer is how many output chunks wait for one attached client
// before later ones are dropped for it.
const attachBuffer = 64

// outputChunk is one read of a container's stdout or stderr.
type outputChunk struct {
	kind byte // monitor.FrameStdout or monitor.FrameStderr
	data []byte
}

// fanout hands a container's output to its attached clients. Publishing
// never blocks: a client whose buffer is full misses the chunk, so a slow
// client cannot hold up the container or its log.
type fanout struct {
	mu     sync.Mutex
	subs   map[*subscriber]struct{}
	closed bool
}

// subscriber is one attached client's queue of output.
type subscriber struct {
	stdout, stderr bool
	chunks         chan outputChunk
	dropped        int // guarded by fanout.mu
}

func newFanout() *fanout {
	return &fanout{subs: map[*subscriber]struct{}{}}
}

// subscribe adds a client; false once the output has ended.
func (f *fanout) subscribe(stdout, stderr bool) (*subscriber, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, false
	}
	s := &subscriber{stdout: stdout, stderr: stderr, chunks: make(chan outputChunk, attachBuffer)}
	f.subs[s] = struct{}{}
	return s, true
}

// unsubscribe removes a client and closes its queue; it may be called
// after close.
func (f *fanout) unsubscribe(s *subscriber) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.subs[s]; ok {
		delete(f.subs, s)
		close(s.chunks)
	}
}

// publish queues a copy of p for every client that wants kind.
func (f *fanout) publish(kind byte, p []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var data []byte
	for s := range f.subs {
		if (kind == monitor.FrameStdout && !s.stdout) || (kind == monitor.FrameStderr && !s.stderr) {
			continue
		}
		if data == nil {
			data = append([]byte(nil), p...)
		}
		select {
		case s.chunks <- outputChunk{kind: kind, data: data}:
		default:
			s.dropped++
		}
	}
}

// close ends every client's queue once the output has ended; later
// subscribes fail.
func (f *fanout) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for s := range f.subs {
		delete(f.subs, s)
		close(s.chunks)
	}
}

// teeReader publishes what it reads to a fanout.
type teeReader struct {
	r    io.Reader
	kind byte
	fan  *fanout
}

func (t teeReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		t.fan.publish(t.kind, p[:n])
	}
	return n, err
}
