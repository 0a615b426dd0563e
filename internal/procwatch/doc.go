// Package procwatch tells when a process ends that is not the caller's
// child (its exit status cannot be read): through a pidfd, waited on in
// Go's poller, so no thread is held per watched process.
//
// Rules: a Process refers to one process for good (a pidfd, unlike a pid,
// is never reused); Open of a process that is gone is errdefs.ErrNotFound;
// Close ends a Wait with ErrClosed.
package procwatch
