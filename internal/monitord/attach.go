package monitord

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/monitor"
	"github.com/berth-dev/berth/internal/runc"
)

// ttyEOF is the terminal's end-of-file character (VEOF, ^D): a tty's
// stdin cannot be closed from the master side, so StdinOnce writes it.
const ttyEOF = "\x04"

// serveAttach runs one attach session on conn, whose request is read;
// in holds the bytes that follow it. See doc.go of internal/monitor.
func (s *Server) serveAttach(conn net.Conn, in io.Reader, req monitor.Request) {
	c, sub, err := s.openAttach(req)
	_ = conn.SetWriteDeadline(time.Now().Add(ioTimeout)) // fails only on a closed conn, which the next read or write reports
	if err != nil {
		s.log.Printf("pod %s: attach %s: %v", s.cfg.Pod, req.ID, err)
		_ = json.NewEncoder(conn).Encode(monitor.ErrorResponse(err)) // the client may be gone
		return
	}
	defer c.fan.unsubscribe(sub)
	if err := json.NewEncoder(conn).Encode(monitor.Response{Version: monitor.ProtocolVersion}); err != nil {
		return
	}
	_ = conn.SetDeadline(time.Time{}) // the session lasts as long as the container; fails only on a closed conn
	go sendOutput(conn, sub)
	wantsStdin := req.Attach.Stdin && c.stdin
	c.receiveInput(in, wantsStdin)
	if wantsStdin && c.stdinOnce {
		c.closeStdin()
	}
}

// openAttach subscribes a client to a running container's output.
func (s *Server) openAttach(req monitor.Request) (*container, *subscriber, error) {
	if req.Attach == nil {
		return nil, nil, fmt.Errorf("attach: body: %w", errdefs.ErrInvalidArgument)
	}
	s.mu.Lock()
	c, ok := s.containers[req.ID]
	exited := ok && c.exit != nil
	s.mu.Unlock()
	if !ok {
		return nil, nil, fmt.Errorf("container %s: %w", req.ID, errdefs.ErrNotFound)
	}
	if exited {
		return nil, nil, fmt.Errorf("container %s: exited: %w", req.ID, errdefs.ErrFailedPrecondition)
	}
	sub, ok := c.fan.subscribe(req.Attach.Stdout, req.Attach.Stderr && !c.tty)
	if !ok {
		return nil, nil, fmt.Errorf("container %s: output ended: %w", req.ID, errdefs.ErrFailedPrecondition)
	}
	return c, sub, nil
}

// sendOutput writes a client's queued output as frames until its queue
// ends, then closes the connection. A failed write closes it at once.
func sendOutput(conn net.Conn, sub *subscriber) {
	defer conn.Close()
	for chunk := range sub.chunks {
		for data := chunk.data; len(data) > 0; {
			n := min(len(data), monitor.MaxFramePayload)
			_ = conn.SetWriteDeadline(time.Now().Add(ioTimeout)) // as above: WriteFrame reports a closed conn
			if err := monitor.WriteFrame(conn, chunk.kind, data[:n]); err != nil {
				return
			}
			data = data[n:]
		}
	}
}

// receiveInput applies a client's frames until it hangs up or, without
// StdinOnce, its stdin ends.
func (c *container) receiveInput(in io.Reader, wantsStdin bool) {
	for {
		kind, payload, err := monitor.ReadFrame(in)
		if err != nil {
			return
		}
		switch kind {
		case monitor.FrameStdin:
			if wantsStdin {
				c.writeStdin(payload)
			}
		case monitor.FrameStdinClose:
			if !wantsStdin {
				continue
			}
			if !c.stdinOnce {
				return
			}
			c.closeStdin()
		case monitor.FrameResize:
			if width, height, err := monitor.ParseResize(payload); err == nil && c.tty {
				_ = runc.Resize(c.stdio.stdout, width, height) // a closed pty means the container ended
			}
		}
	}
}

// stdinFile is where the container's stdin is written: the pty master or
// the stdin pipe.
func (c *container) stdinFile() *os.File {
	if c.tty {
		return c.stdio.stdout
	}
	return c.stdio.stdinW
}

func (c *container) writeStdin(p []byte) {
	if f := c.stdinFile(); f != nil {
		_, _ = f.Write(p) // the container may have closed its stdin or exited
	}
}

// closeStdin ends the container's stdin once (StdinOnce).
func (c *container) closeStdin() {
	c.stdinClosed.Do(func() {
		f := c.stdinFile()
		switch {
		case f == nil:
		case c.tty:
			_, _ = f.WriteString(ttyEOF) // the container may have exited
		default:
			f.Close()
		}
	})
}
