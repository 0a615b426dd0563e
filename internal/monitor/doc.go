// Package monitor owns the protocol between berth serve and its per-pod
// monitor process (berth-monitor, written in C: native/berth-monitor), the
// daemon-side client and launcher, and the exit files monitors leave behind.
// The C monitor serves exactly what this package defines; test/monitor
// drives the built binary through this package's client.
//
// Wire format (version ProtocolVersion): over the monitor's unix socket, one
// connection carries one JSON Request and one JSON Response, each a single
// line. A failed call's Response names an error class (not_found,
// already_exists, ...) that the client maps back to the internal/errdefs
// sentinel, so callers test it with errors.Is. A client that cannot reach
// the monitor reports ErrUnavailable.
//
// Attach (OpAttach) is the one exception: after a successful Response line
// the connection stays open and carries frames both ways until either side
// closes it. The monitor streams on the connection rather than handing out
// fds with SCM_RIGHTS, so that it keeps sole ownership of the container's
// stdio: the log keeps every line whatever the clients do, the stdin pipe is
// never closed by a client's process, and the session dies with its socket.
// A frame is one kind byte, a big-endian uint32 payload length (at most
// MaxFramePayload) and the payload. The monitor sends FrameStdout and
// FrameStderr (a tty container's output is all FrameStdout); the client
// sends FrameStdin, FrameStdinClose when its stdin ends, and FrameResize
// (width, height as big-endian uint16) for tty containers. The client sends
// nothing before it has read the Response. The monitor closes the session
// when the container's output ends, and when the client's stdin ends if the
// container was not created with StdinOnce; with StdinOnce, the first
// attached client to detach (stdin ended or connection gone) closes the
// container's stdin (a tty gets the EOF character, ^D, since the monitor
// cannot close the terminal's slave side). Stdin reaches the container only
// if it was created with Stdin. Output goes to each client through a
// bounded queue: a client that falls behind misses output, it never blocks
// the container or its log. Attach was added without a version change: a
// monitor started by an older berth answers it not_implemented, and every
// other operation is unchanged.
//
// Exit files (<exit-dir>/<container-id>.json) are written atomically, so a
// reader sees a whole record or none; they outlive both processes.
package monitor
