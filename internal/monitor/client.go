package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/berth-dev/berth/internal/errdefs"
)

// maxResponseSize bounds what a client reads from a monitor.
const maxResponseSize = 8 << 20

// Client calls one monitor over its unix socket. Every call is bounded by
// its context. A Client is safe for concurrent use.
type Client struct {
	socket string
}

// NewClient returns a client of the monitor listening on socket.
func NewClient(socket string) *Client {
	return &Client{socket: socket}
}

// Create asks the monitor to run "runc create" for r and returns the pid of
// the container's init.
func (c *Client) Create(ctx context.Context, r CreateRequest) (int, error) {
	resp, err := c.call(ctx, Request{Op: OpCreate, ID: r.ID, Create: &r})
	if err != nil {
		return 0, err
	}
	return resp.Pid, nil
}

// Run asks the monitor to create and start r's container in one `runc run
// --detach` and returns the pid of its init; started is false when the
// monitor predates Run and only created it (Start it then).
func (c *Client) Run(ctx context.Context, r CreateRequest) (pid int, started bool, err error) {
	r.Run = true
	resp, err := c.call(ctx, Request{Op: OpCreate, ID: r.ID, Create: &r})
	if err != nil {
		return 0, false, err
	}
	return resp.Pid, resp.Started, nil
}

// Adopt hands the monitor a container whose monitor died (AdoptRequest).
// A pid that is gone is ErrNotFound.
func (c *Client) Adopt(ctx context.Context, r AdoptRequest) error {
	_, err := c.call(ctx, Request{Op: OpAdopt, ID: r.ID, Adopt: &r})
	return err
}

// Start asks the monitor to run "runc start" for container id.
func (c *Client) Start(ctx context.Context, id string) error {
	_, err := c.call(ctx, Request{Op: OpStart, ID: id})
	return err
}

// List returns every container the monitor holds.
func (c *Client) List(ctx context.Context) ([]ContainerInfo, error) {
	resp, err := c.call(ctx, Request{Op: OpList})
	if err != nil {
		return nil, err
	}
	return resp.Containers, nil
}

// Forget tells the monitor the container was deleted: it drops its record.
func (c *Client) Forget(ctx context.Context, id string) error {
	_, err := c.call(ctx, Request{Op: OpForget, ID: id})
	return err
}

// ReopenLog makes the monitor reopen the container's log file (rotation).
func (c *Client) ReopenLog(ctx context.Context, id string) error {
	_, err := c.call(ctx, Request{Op: OpReopenLog, ID: id})
	return err
}

// Shutdown makes the monitor exit once it has answered.
func (c *Client) Shutdown(ctx context.Context) error {
	_, err := c.call(ctx, Request{Op: OpShutdown})
	return err
}

// Ping checks that the monitor answers.
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.call(ctx, Request{Op: OpPing})
	return err
}

func (c *Client) call(ctx context.Context, req Request) (Response, error) {
	what := fmt.Sprintf("monitor %s: %s", c.socket, req.Op)
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.socket)
	if err != nil {
		return Response{}, fmt.Errorf("%s: connect: %v: %w", what, err, errdefs.ErrUnavailable)
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline) // a fresh conn accepts deadlines
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) }) // fails only on a closed conn: nothing left to unblock
	defer stop()

	req.Version = ProtocolVersion
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return Response{}, c.transportError(ctx, what, "request", err)
	}
	var resp Response
	if err := json.NewDecoder(io.LimitReader(conn, maxResponseSize)).Decode(&resp); err != nil {
		return Response{}, c.transportError(ctx, what, "response", err)
	}
	if resp.Version != ProtocolVersion {
		return Response{}, fmt.Errorf("%s: response version %d: %w", what, resp.Version, errdefs.ErrFailedPrecondition)
	}
	if err := resp.Err(); err != nil {
		return Response{}, fmt.Errorf("%s: %w", what, err)
	}
	return resp, nil
}

func (c *Client) transportError(ctx context.Context, what, step string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %s: %w", what, step, ctxErr)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// The conn's deadline is the context's: it may fire a moment before
		// the context reports its own expiry.
		return fmt.Errorf("%s: %s: %w", what, step, context.DeadlineExceeded)
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("%s: %s: %v: %w", what, step, err, errdefs.ErrUnavailable)
}
