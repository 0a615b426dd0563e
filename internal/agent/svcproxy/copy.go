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
// sockets, and when a byte last went either way.
type pipe struct {
	a, b *net.TCPConn
	idle time.Duration
	last atomic.Int64 // unix nanoseconds
}

// splice copies both ways between a and b, passing each side's end of
// data on as a half close, until both directions are done; when no byte
// goes either way for idle, or a side fails, both are closed. It copies
// through a buffer rather than io.Copy's splice(2), whose pipe would cost
// two more descriptors per direction while the connection idles: a
// proxied connection holds two descriptors, its sockets.
func splice(a, b *net.TCPConn, idle time.Duration) {
	defer b.Close()
	pp := &pipe{a: a, b: b, idle: idle}
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
func (pp *pipe) deadline() time.Time { return time.Unix(0, pp.last.Load()).Add(pp.idle) }

// copy moves src's bytes to dst until src's end, passed on as dst's half
// close; the pipe idling, an error or a failed write close both sides.
func (pp *pipe) copy(dst, src *net.TCPConn) {
	rc, err := src.SyscallConn()
	for err == nil {
		_ = src.SetReadDeadline(pp.deadline())
		if err = waitReadable(rc); err == nil {
			err = pp.move(dst, src)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) && time.Now().Before(pp.deadline()) {
			err = nil // the other direction moved bytes meanwhile
		}
	}
	if errors.Is(err, io.EOF) {
		_ = dst.CloseWrite() // the peer may already be gone
		return
	}
	_ = pp.a.Close() // the other direction's read then ends too
	_ = pp.b.Close()
}

// move reads what src has and writes it to dst.
func (pp *pipe) move(dst, src *net.TCPConn) error {
	bp := bufs.Get().(*[]byte)
	defer bufs.Put(bp)
	n, err := src.Read(*bp)
	if n > 0 {
		pp.touch()
		_ = dst.SetWriteDeadline(time.Now().Add(pp.idle))
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
