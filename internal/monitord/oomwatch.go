package monitord

import (
	"log"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// inotifyInit makes an inotify instance; a test replaces it to make one
// unavailable.
var inotifyInit = unix.InotifyInit1

// oomWatcher is the monitor's one inotify instance, shared by the OOM
// counters of all its containers: one watch per container's memory.events.
// Instances are few (fs.inotify.max_user_instances, 128 by default, per uid
// and shared by every root process), watches are plentiful. The instance is
// made at the first add; when it cannot be made the failure is logged once
// and the counters go without a watch (the read at exit still counts).
type oomWatcher struct {
	log *log.Logger
	pod string

	mu       sync.Mutex
	file     *os.File // nil until the first add succeeds; never closed
	fd       int      // file's descriptor (File.Fd would make it blocking)
	counters map[int32][]*oomCounter
	warned   bool
}

func newOOMWatcher(logger *log.Logger, pod string) *oomWatcher {
	return &oomWatcher{log: logger, pod: pod, counters: map[int32][]*oomCounter{}}
}

// add watches c's file for changes; it reports whether a watch was made.
func (w *oomWatcher) add(c *oomCounter) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.file == nil {
		fd, err := inotifyInit(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
		if err != nil {
			if !w.warned {
				w.warned = true
				w.log.Printf("pod %s: OOM watch of memory.events: inotify instance: %v; OOM kills are read at exit only", w.pod, err)
			}
			return false
		}
		w.file, w.fd = os.NewFile(uintptr(fd), "inotify memory.events"), fd // non-blocking: reads park in the poller
		go w.follow(w.file)
	}
	wd, err := unix.InotifyAddWatch(w.fd, c.file, unix.IN_MODIFY)
	if err != nil { // no file (no memory controller), or no watches left
		return false
	}
	w.counters[int32(wd)] = append(w.counters[int32(wd)], c)
	c.wd = int32(wd)
	return true
}

// remove ends c's watch; the watch stays while another counter shares it.
func (w *oomWatcher) remove(c *oomCounter) {
	w.mu.Lock()
	defer w.mu.Unlock()
	list := w.counters[c.wd]
	for i, other := range list {
		if other == c {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) > 0 {
		w.counters[c.wd] = list
		return
	}
	delete(w.counters, c.wd)
	if w.file != nil { // a removed file's watch is already gone: EINVAL is expected
		_, _ = unix.InotifyRmWatch(w.fd, uint32(c.wd))
	}
}

// follow reads events for as long as the monitor lives and updates the
// counter of each watch that reported a change.
func (w *oomWatcher) follow(f *os.File) {
	buf := make([]byte, 4096)
	for {
		n, err := f.Read(buf)
		if err != nil {
			w.log.Printf("pod %s: OOM watch of memory.events: %v; OOM kills are read at exit only", w.pod, err)
			return
		}
		for _, wd := range eventWatches(buf[:n]) {
			w.mu.Lock()
			counters := append([]*oomCounter(nil), w.counters[wd]...)
			w.mu.Unlock()
			for _, c := range counters {
				c.update()
			}
		}
	}
}

// eventWatches returns the watch descriptor of each event in a read.
func eventWatches(buf []byte) []int32 {
	var wds []int32
	for off := 0; off+unix.SizeofInotifyEvent <= len(buf); {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off])) //nolint:gosec // G103: the loop bound keeps a whole event header within the bytes read
		wds = append(wds, ev.Wd)
		off += unix.SizeofInotifyEvent + int(ev.Len)
	}
	return wds
}
