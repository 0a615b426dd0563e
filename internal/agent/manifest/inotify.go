package manifest

import (
	"encoding/binary"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// directoryEventMask: entries created, removed, renamed, written or
// re-linked, and the directory itself going away.
const directoryEventMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// dirEvents signals changes in one directory through inotify. Every event
// counts, dotfiles included, because a directory of symbolic links (a
// mounted ConfigMap) changes by swapping its hidden "..data" link; the scan
// that follows decides whether anything that matters changed. Without
// inotify, or while the directory does not exist, it stays silent and Watch
// relies on its rescans.
type dirEvents struct {
	changed  chan struct{} // holds a value when the directory may have changed
	dir      string
	inotify  *os.File // nil when inotify is unavailable
	fd       int
	watching atomic.Bool
	reader   sync.WaitGroup
}

func watchDirectory(dir string) *dirEvents {
	e := &dirEvents{changed: make(chan struct{}, 1), dir: dir}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return e
	}
	// A non-blocking descriptor goes through the runtime poller, so that
	// Close interrupts a pending Read.
	e.fd, e.inotify = fd, os.NewFile(uintptr(fd), "inotify")
	e.rearm()
	e.reader.Add(1)
	go e.read()
	return e
}

// rearm watches the directory again if it was not watched (it did not
// exist, or it was removed or moved away).
func (e *dirEvents) rearm() {
	if e.inotify == nil || e.watching.Load() {
		return
	}
	if _, err := unix.InotifyAddWatch(e.fd, e.dir, directoryEventMask); err == nil {
		e.watching.Store(true)
	}
}

func (e *dirEvents) read() {
	defer e.reader.Done()
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := e.inotify.Read(buf)
		if err != nil {
			return // closed
		}
		e.handle(buf[:n])
	}
}

// handle reads a batch of events: any event is a change; the directory
// going away ends the watch until rearm.
func (e *dirEvents) handle(batch []byte) {
	for offset := 0; offset+unix.SizeofInotifyEvent <= len(batch); {
		event := batch[offset:]
		wd := int32(binary.NativeEndian.Uint32(event[0:4]))
		mask := binary.NativeEndian.Uint32(event[4:8])
		nameLength := binary.NativeEndian.Uint32(event[12:16])
		if mask&unix.IN_MOVE_SELF != 0 {
			_, _ = unix.InotifyRmWatch(e.fd, uint32(wd)) // it now watches another path
		}
		if mask&(unix.IN_IGNORED|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 {
			e.watching.Store(false)
		}
		offset += unix.SizeofInotifyEvent + int(nameLength)
	}
	select {
	case e.changed <- struct{}{}:
	default: // a change is already signalled
	}
}

func (e *dirEvents) close() {
	if e.inotify == nil {
		return
	}
	_ = e.inotify.Close()
	e.reader.Wait()
}
