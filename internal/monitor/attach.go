package monitor

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/berth-dev/berth/internal/errdefs"
)

// attachHandshakeTimeout bounds the request and response of an attach.
const attachHandshakeTimeout = 10 * time.Second

// TerminalSize is a terminal window's size in characters.
type TerminalSize struct {
	Width  uint16
	Height uint16
}

// AttachStreams are the client's ends of an attach session. Nil streams
// are not attached; Resize, when not nil, carries window size changes.
type AttachStreams struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Resize <-chan TerminalSize
}

// Attach attaches st to container id's stdio through the monitor. It
// returns once the monitor ends the session (the container's output
// ended, or the client's stdin ended without StdinOnce) or ctx is done.
func (c *Client) Attach(ctx context.Context, id string, req AttachRequest, st AttachStreams) error {
	what := fmt.Sprintf("monitor %s: attach %s", c.socket, id)
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.socket)
	if err != nil {
		return fmt.Errorf("%s: connect: %v: %w", what, err, errdefs.ErrUnavailable)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	in, err := c.attachHandshake(ctx, conn, what, Request{Version: ProtocolVersion, Op: OpAttach, ID: id, Attach: &req})
	if err != nil {
		return err
	}
	out := &frameWriter{w: conn}
	done := make(chan struct{})
	defer close(done)
	if st.Stdin != nil {
		go sendStdin(out, st.Stdin)
	}
	go ForwardResizes(st.Resize, done, func(size TerminalSize) error {
		return out.write(FrameResize, ResizePayload(size.Width, size.Height))
	})
	err = receiveOutput(in, st)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", what, ctxErr)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// attachHandshake sends the request and reads the one-line response; the
// returned reader holds whatever frames followed it.
func (c *Client) attachHandshake(ctx context.Context, conn net.Conn, what string, req Request) (*bufio.Reader, error) {
	_ = conn.SetDeadline(time.Now().Add(attachHandshakeTimeout)) // a fresh conn accepts deadlines
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return nil, c.transportError(ctx, what, "request", err)
	}
	in := bufio.NewReaderSize(conn, 64<<10)
	line, err := in.ReadSlice('\n')
	if err != nil {
		return nil, c.transportError(ctx, what, "response", err)
	}
	var resp Response
	if err := json.Unmarshal(line, &resp); err != nil {
		return nil, fmt.Errorf("%s: response: %v: %w", what, err, errdefs.ErrUnavailable)
	}
	if resp.Version != ProtocolVersion {
		return nil, fmt.Errorf("%s: response version %d: %w", what, resp.Version, errdefs.ErrFailedPrecondition)
	}
	if err := resp.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	_ = conn.SetDeadline(time.Time{}) // the session lasts as long as the container; fails only on a closed conn
	return in, nil
}

// receiveOutput writes output frames to the client's streams until the
// monitor closes the session.
func receiveOutput(in io.Reader, st AttachStreams) error {
	for {
		kind, payload, err := ReadFrame(in)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("frame: %w", err)
		}
		w := st.Stdout
		if kind == FrameStderr {
			w = st.Stderr
		} else if kind != FrameStdout {
			return fmt.Errorf("frame kind %d: %w", kind, errdefs.ErrInvalidArgument)
		}
		if w == nil {
			continue
		}
		if _, err := w.Write(payload); err != nil {
			return fmt.Errorf("client stream: %w", err)
		}
	}
}

// frameWriter serializes frames from several goroutines.
type frameWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (f *frameWriter) write(kind byte, payload []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return WriteFrame(f.w, kind, payload)
}

// sendStdin forwards the client's stdin, then says it ended.
func sendStdin(out *frameWriter, stdin io.Reader) {
	buf := make([]byte, MaxFramePayload)
	for {
		n, err := stdin.Read(buf)
		if n > 0 {
			if out.write(FrameStdin, buf[:n]) != nil {
				return // the session is over
			}
		}
		if err != nil {
			_ = out.write(FrameStdinClose, nil) // the session may be over
			return
		}
	}
}
