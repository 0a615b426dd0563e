package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	remotecommandconsts "k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	"k8s.io/streaming/pkg/httpstream/wsstream"
	utilexec "k8s.io/utils/exec"
)

// The channels of the remote command protocol, numbered as on the wire.
const (
	chanStdin = iota
	chanStdout
	chanStderr
	chanError
	chanResize
)

// serveV5 runs an exec or attach over a WebSocket speaking
// v5.channel.k8s.io: v4's channels and status, plus the client's signal
// that it closed one of its streams (here: stdin), which wsstream turns
// into the end of that channel's reader.
func (h *router) serveV5(w http.ResponseWriter, r *http.Request, req streamRequest) {
	conn := wsstream.NewConn(map[string]wsstream.ChannelProtocolConfig{
		remotecommandconsts.StreamProtocolV5Name: {Binary: true, Channels: v5Channels(req)},
	})
	conn.SetIdleTimeout(h.idle)
	_, streams, err := conn.Open(w, r)
	if err != nil {
		h.log.Warn("stream: websocket upgrade", "kind", req.kind, "container", req.containerID, "error", err)
		return
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer h.sessions.add(cancel)()
	go func() {
		// The client never writes on the error channel: its reader ends
		// when the connection does, and then so does the session.
		_, _ = io.Copy(io.Discard, streams[chanError]) // any end is a hang-up
		cancel()
	}()
	announce(streams, req)
	err = h.run(ctx, req, streams)
	if err != nil && !isExit(err) {
		h.log.Warn("stream: "+req.kind, "container", req.containerID, "error", err)
	}
	writeStatus(streams[chanError], req.kind, err)
}

// v5Channels lays out the channels a request uses; the others are ignored.
func v5Channels(req streamRequest) []wsstream.ChannelType {
	ch := make([]wsstream.ChannelType, chanResize+1)
	if req.stdin {
		ch[chanStdin] = wsstream.ReadChannel
	}
	if req.stdout {
		ch[chanStdout] = wsstream.WriteChannel
	}
	if req.stderr {
		ch[chanStderr] = wsstream.WriteChannel
	}
	ch[chanError] = wsstream.ReadWriteChannel
	if req.tty {
		ch[chanResize] = wsstream.ReadChannel
	}
	return ch
}

// announce sends an empty frame on the first channel the client reads, as
// the library does for the older protocols, to tell it the stream is up.
func announce(streams []io.ReadWriteCloser, req streamRequest) {
	ch := chanError
	switch {
	case req.stdout:
		ch = chanStdout
	case req.stderr:
		ch = chanStderr
	}
	_, _ = streams[ch].Write(nil) // a dead connection shows at the next write
}

// run hands the request's streams to the runtime the library uses.
func (h *router) run(ctx context.Context, req streamRequest, streams []io.ReadWriteCloser) error {
	var in io.Reader
	if req.stdin {
		in = streams[chanStdin]
	}
	var out, errOut io.WriteCloser
	if req.stdout {
		out = streams[chanStdout]
	}
	if req.stderr {
		errOut = streams[chanStderr]
	}
	var resize <-chan remotecommand.TerminalSize
	if req.tty {
		resize = decodeResizes(ctx, streams[chanResize])
	}
	if req.kind == kindExec {
		return h.rt.Exec(ctx, req.containerID, req.cmd, in, out, errOut, req.tty, resize)
	}
	return h.rt.Attach(ctx, req.containerID, in, out, errOut, req.tty, resize)
}

// decodeResizes turns the resize channel's JSON terminal sizes into
// events until the channel or ctx ends. After a message it cannot decode
// it keeps reading, without effect, so that the connection never stalls.
func decodeResizes(ctx context.Context, r io.Reader) <-chan remotecommand.TerminalSize {
	sizes := make(chan remotecommand.TerminalSize)
	go func() {
		defer close(sizes)
		dec := json.NewDecoder(r)
		for {
			var size remotecommand.TerminalSize
			if err := dec.Decode(&size); err != nil {
				_, _ = io.Copy(io.Discard, r) // ends with the connection
				return
			}
			select {
			case sizes <- size:
			case <-ctx.Done():
				_, _ = io.Copy(io.Discard, r) // ends with the connection
				return
			}
		}
	}()
	return sizes
}

func isExit(err error) bool {
	var exit utilexec.ExitError
	return errors.As(err, &exit) && exit.Exited()
}

// writeStatus reports how the session ended the way the v4 and v5
// protocols do: a JSON metav1.Status on the error channel, whose failure
// carries an exec's non-zero exit code as a cause.
func writeStatus(w io.Writer, kind string, err error) {
	b, merr := json.Marshal(statusOf(kind, err))
	if merr != nil {
		return
	}
	_, _ = w.Write(b) // the client is gone
}

func statusOf(kind string, err error) metav1.Status {
	var exit utilexec.ExitError
	switch {
	case err == nil:
		return metav1.Status{Status: metav1.StatusSuccess}
	case kind == kindExec && errors.As(err, &exit) && exit.Exited():
		code := exit.ExitStatus()
		return metav1.Status{
			Status:  metav1.StatusFailure,
			Reason:  remotecommandconsts.NonZeroExitCodeReason,
			Message: fmt.Sprintf("command terminated with non-zero exit code: %d", code),
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{
				{Type: remotecommandconsts.ExitCodeCauseType, Message: strconv.Itoa(code)},
			}},
		}
	default:
		return metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    http.StatusInternalServerError,
			Reason:  metav1.StatusReasonInternalError,
			Message: failure(kind, err),
		}
	}
}

func failure(kind string, err error) string {
	if kind == kindExec {
		return fmt.Sprintf("error executing command in container: %v", err)
	}
	return fmt.Sprintf("error attaching to container: %v", err)
}
