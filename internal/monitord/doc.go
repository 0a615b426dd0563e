// Package monitord is the per-pod monitor process (berth-monitor): it runs
// runc create/start for the pod's containers, holds their stdio, writes
// their CRI logs and writes an exit file when each container's init exits.
//
// Rules:
//   - The process is a child subreaper, so every container init becomes its
//     child. One Reaper owns wait4(-1): nothing else waits for children.
//     runc commands are started through Reaper.Exec, never exec.Cmd.Wait.
//   - A container's init pid is known only after runc create returns, so a
//     create subscribes to exits before running runc and claims the pid
//     afterwards; an init that died in between is not lost.
//   - On exit, the OOM kill count of the container's cgroup is compared
//     with its value at create (on cgroup v2 the highest count an inotify
//     watch of memory.events saw counts too: under the systemd driver the
//     scope may be gone by then), stdio is drained for at most
//     DrainTimeout, and the exit file is written before the record is kept
//     for List.
//   - The monitor holds at most one inotify instance (instances are few
//     per uid and shared by every root process): all its containers'
//     watches are in it, and without it OOM kills are read at exit only.
//   - Output is read once, by the log copy; attached clients get copies
//     through a fanout that never blocks (a full client queue drops the
//     chunk for that client). Only the monitor writes the container's stdin
//     and only it closes the stdin pipe (StdinOnce, or the container's exit).
//   - A container's stdout and stderr are FIFOs in its bundle (not pipes),
//     so that they outlive the monitor: the daemon holds a read end, and a
//     monitor that adopts the container after this one died (adopt.go:
//     its init is then no child of it, a pidfd tells its end, and its
//     exit status is unknown) opens them by path and logs on.
//   - The daemon may die at any moment: the monitor never needs it, and
//     keeps logging and recording exits alone. It exits only on Shutdown or
//     SIGTERM/SIGINT; SIGHUP and SIGPIPE are ignored.
//   - Memory is paid per pod: standard library, x/sys and internal packages
//     that follow the same rule only; no large buffers.
package monitord
