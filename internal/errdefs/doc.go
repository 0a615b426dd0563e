// Package errdefs owns berth's error classes.
//
// Services return one of the sentinel classes below wrapped with context
// (fmt.Errorf("sandbox %q: %w", id, errdefs.ErrNotFound)). Only the gRPC edge
// (internal/criserver) turns a class into a status code, exactly once.
// Messages read as a chain of nouns: "container abc: rootfs: mount overlay: ...".
package errdefs
