package svcproxy

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// bufs are the copy buffers. A direction takes one only once its source
// is readable, for one read and its write: an idle connection holds none.
var bufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// errWrite ends a copy whose write failed or stalled: its bytes are lost,
// so the connection cannot go on.
var errWrite = errors.New("write failed")

// pipe is one proxied connection: the client's and the endpoint's
// sockets, when a byte last went either way, and how long it may idle:
// Limits.TCPFirstByte until a byte went either way, then TCPIdle, and
// TCPHalfClosed once a side has ended.
type pipe struct {
	a, b   *net.TCPConn
	lim    Limits
	last   atomic.Int64 // unix nanoseconds
	idle   atomic.Int64 // nanoseconds
	moved  atomic.Bool  // a byte went either way
	mu     sync.Mutex   // orders the read deadlines' arming and shortening
	closed int          // sides that ended, under mu
}

// splice copies both ways between a and b, passing each side's end of
// data on as a half close, until both directions are done; when the pipe
// idles (see pipe), or a side fails, both are closed. It copies through a
// buffer rather than io.Copy's splice(2), whose pipe would cost two more
// descriptors per direction while the connection idles: a proxied
// connection holds two descriptors, its sockets.
func splice(a, b *net.TCPConn, lim Limits) {
	defer b.Close()
	pp := &pipe{a: a, b: b, lim: lim}
	pp.idle.Store(int64(lim.TCPFirstByte))
	pp.touch()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pp.copy(a, b)
	}()
	pp.copy(b, a)
	<-done
}

func (pp *pipe) touch() { pp.last.Store(time.Now().UnixNano()) }

// deadline is when the pipe idles unless a byte goes either way.
func (pp *pipe) deadline() time.Time {
	return time.Unix(0, pp.last.Load()).Add(time.Duration(pp.idle.Load()))
}

// arm sets src's read deadline to the pipe's.
func (pp *pipe) arm(src *net.TCPConn) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	_ = src.SetReadDeadline(pp.deadline())
}

// copy moves src's bytes to dst until src's end, passed on as dst's half
// close; the pipe idling, an error or a failed write close both sides.
func (pp *pipe) copy(dst, src *net.TCPConn) {
	rc, err := src.SyscallConn()
	for err == nil {
		pp.arm(src)
		if err = waitReadable(rc); err == nil {
			err = pp.move(dst, src)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) && time.Now().Before(pp.deadline()) {
			err = nil // the other direction moved bytes meanwhile
		}
	}
	if errors.Is(err, io.EOF) {
		_ = dst.CloseWrite() // the peer may already be gone
		pp.halfClosed(dst)
		return
	}
	_ = pp.a.Close() // the other direction's read then ends too
	_ = pp.b.Close()
}

// halfClosed shortens the idle time to TCPHalfClosed once src's side has
// ended, and the read deadline of the other direction (reading from dst)
// with it.
func (pp *pipe) halfClosed(dst *net.TCPConn) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if pp.closed++; pp.closed == 1 {
		pp.idle.Store(int64(pp.lim.TCPHalfClosed))
		_ = dst.SetReadDeadline(pp.deadline())
	}
}

// firstByte lengthens the idle time to TCPIdle once a byte went, unless
// a side has ended already.
func (pp *pipe) firstByte() {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if pp.moved.Store(true); pp.closed == 0 {
		pp.idle.Store(int64(pp.lim.TCPIdle))
	}
}

// move reads what src has and writes it to dst.
func (pp *pipe) move(dst, src *net.TCPConn) error {
	bp := bufs.Get().(*[]byte)
	defer bufs.Put(bp)
	n, err := src.Read(*bp)
	if n > 0 {
		if !pp.moved.Load() {
			pp.firstByte()
		}
		pp.touch()
		_ = dst.SetWriteDeadline(time.Now().Add(time.Duration(pp.idle.Load())))
		if _, werr := dst.Write((*bp)[:n]); werr != nil {
			return errWrite
		}
		pp.touch()
	}
	return err
}

// waitReadable returns once the socket has data, its end or an error to
// read, without taking any of it (a peek of one byte), or when its read
// deadline passes.
func waitReadable(rc syscall.RawConn) error {
	var b [1]byte
	return rc.Read(func(fd uintptr) bool {
		for {
			_, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
			if err != unix.EINTR {
				return err != unix.EAGAIN
			}
		}
	})
}
