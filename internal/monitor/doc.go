// Package monitor owns the protocol between berth serve and its per-pod
// monitor process (berth-monitor), the daemon-side client and launcher, and
// the exit files monitors leave behind.
//
// Wire format (version ProtocolVersion): over the monitor's unix socket, one
// connection carries one JSON Request and one JSON Response, each a single
// line. A failed call's Response names an error class (not_found,
// already_exists, ...) that the client maps back to the internal/errdefs
// sentinel, so callers test it with errors.Is. A client that cannot reach
// the monitor reports ErrUnavailable.
//
// Exit files (<exit-dir>/<container-id>.json) are written atomically, so a
// reader sees a whole record or none; they outlive both processes.
//
// The package uses only the standard library, x/sys, internal/errdefs and
// internal/store (itself standard library only):
// it is linked into berth-monitor.
package monitor
