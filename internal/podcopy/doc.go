// Package podcopy copies files between the host and a container's root
// filesystem without running anything in the container (`berth cp`: the
// image needs neither tar nor a shell).
//
// A Root is a directory tree opened as a file descriptor: the container's
// root is /proc/<pid>/root of its init process, as that process sees it
// (its mount namespace, so volumes are there too), opened by
// OpenProcessRoot, which holds a pidfd across the opening and checks both
// that the runtime still reports the container running with that pid and
// that the process is still alive afterwards, so a pid reused meanwhile is
// refused. The host side is a Root too (OpenRoot("/")).
//
// Every path given by the user is resolved beneath its Root with openat2
// and RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS: "..", absolute symlinks and
// symlinks with ".." are resolved as if the Root were "/", so they never
// lead out of it, and /proc magic links are refused. Below the named
// paths, trees are walked on directory descriptors one name at a time
// with O_NOFOLLOW: nothing found during a copy is followed.
//
// Copy copies a regular file, a directory recursively or a symlink (as a
// symlink, its target unchanged and never followed); devices, FIFOs and
// sockets are refused with an error naming them. As cp and kubectl cp do,
// a file copied onto an existing directory lands inside it under its own
// name; a directory is copied as (or merged into) the destination path. An
// existing non-directory at a destination is replaced (unlinked first, as
// tar does), never written through.
//
// Modes are kept, masked by Options.Perm (`berth cp` keeps no set-id or
// sticky bit on the host). Options.Owner picks the owner: the copying
// process's (OwnerCopier), the source's uid and gid (OwnerPreserve) or 0:0
// (OwnerRoot), both as ids seen beneath the destination root: they go
// through the uid_map/gid_map of a user-namespaced container's process. A
// directory that exists already keeps its owner and mode.
//
// Errors name the step (resolve, open, create, copy, chown) and the path
// on each side.
package podcopy
