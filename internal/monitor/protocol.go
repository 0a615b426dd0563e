package monitor

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/berth-dev/berth/internal/errdefs"
)

// ProtocolVersion is the version of Request and Response.
const ProtocolVersion = 1

// ExitRecordVersion is the version of ExitRecord.
const ExitRecordVersion = 1

// The operations of the protocol.
const (
	OpCreate    = "create"
	OpStart     = "start"
	OpList      = "list"
	OpForget    = "forget"
	OpReopenLog = "reopen-log"
	OpShutdown  = "shutdown"
	OpPing      = "ping"
	// OpAttach turns the connection into an attach session (see doc.go).
	OpAttach = "attach"
	// OpAdopt hands a monitor a container whose monitor died.
	OpAdopt = "adopt"
)

// AdoptRequest hands a monitor a container another monitor created and
// lost (it died): its init is not the new monitor's child, so its exit
// status cannot be read; the monitor watches the pid through a pidfd and,
// when it ends, writes an exit file with ExitCode 255 and Unknown.
type AdoptRequest struct {
	ID  string `json:"id"`
	Pid int    `json:"pid"`
	// Bundle is the container's bundle directory: its output FIFOs
	// (StdoutFIFO, StderrFIFO) are there when the monitor that created
	// it made them; the new monitor then reads them on into the log
	// (LogDirectory, LogRelPath, as in CreateRequest).
	Bundle       string `json:"bundle,omitempty"`
	LogDirectory string `json:"logDirectory,omitempty"`
	LogRelPath   string `json:"logRelPath,omitempty"`
	// Started says runc start already ran (a created container can still
	// be started through the new monitor).
	Started bool `json:"started,omitempty"`
}

// CreateRequest asks the monitor to create a container with runc create,
// or to create and start it with runc run --detach (Run).
type CreateRequest struct {
	ID     string `json:"id"`
	Bundle string `json:"bundle"`
	// LogDirectory (the sandbox's log_directory, absolute) and LogRelPath
	// (the container's log_path beneath it) name the log; the monitor
	// opens it beneath the directory without following symlinks. LogPath
	// is the two joined, for monitors that predate them (an older
	// monitor still running a pod); a monitor reads it only when
	// LogDirectory is empty. All empty: no log.
	LogPath      string `json:"logPath"`
	LogDirectory string `json:"logDirectory,omitempty"`
	LogRelPath   string `json:"logRelPath,omitempty"`
	Stdin        bool   `json:"stdin,omitempty"`
	StdinOnce    bool   `json:"stdinOnce,omitempty"`
	Terminal     bool   `json:"terminal,omitempty"`
	// CgroupPath is the container's cgroup (as in the OCI spec), used to
	// tell whether the kernel OOM-killed something in it.
	CgroupPath string `json:"cgroupPath,omitempty"`
	// SystemdCgroup runs runc with --systemd-cgroup (CgroupPath is
	// then <slice>:<prefix>:<name>). It travels with each container, so a
	// monitor started before a change of cgroup_driver creates each
	// container the way its spec was built.
	SystemdCgroup bool `json:"systemdCgroup,omitempty"`
	// Run creates and starts the container in one `runc run --detach`
	// (StartContainer of a container CreateContainer only prepared). A
	// monitor that predates Run creates it only and answers without
	// Started: the caller starts it then.
	Run bool `json:"run,omitempty"`
}

// The named pipes, in a container's bundle directory, that carry its
// stdout and stderr (a container without a terminal). Unlike a pipe, a
// FIFO can be opened again by path: the daemon holds a read end of each
// (it never reads), so that the container's writes do not fail while its
// monitor is gone, and a new monitor opens them to read on.
const (
	StdoutFIFO = "stdout.fifo"
	StderrFIFO = "stderr.fifo"
)

// ExitRecord is how a container's init process ended. A process killed by
// a signal has ExitCode 128+Signal.
type ExitRecord struct {
	Version    int       `json:"version"`
	ID         string    `json:"id"`
	Pid        int       `json:"pid"`
	ExitCode   int32     `json:"exitCode"`
	Signal     int       `json:"signal,omitempty"`
	OOMKilled  bool      `json:"oomKilled,omitempty"`
	FinishedAt time.Time `json:"finishedAt"`
	// Unknown says the exit status could not be read (an adopted
	// container: AdoptRequest); ExitCode is then 255.
	Unknown bool `json:"unknown,omitempty"`
}

// ContainerInfo is what a monitor knows about one of its containers.
type ContainerInfo struct {
	ID      string      `json:"id"`
	Pid     int         `json:"pid"`
	Running bool        `json:"running"`
	Exit    *ExitRecord `json:"exit,omitempty"`
}

// Request is one call to the monitor.
type Request struct {
	Version int            `json:"version"`
	Op      string         `json:"op"`
	ID      string         `json:"id,omitempty"`
	Create  *CreateRequest `json:"create,omitempty"`
	Attach  *AttachRequest `json:"attach,omitempty"`
	Adopt   *AdoptRequest  `json:"adopt,omitempty"`
}

// AttachRequest says which of a container's streams an attach session
// carries. TTY must match how the container was created.
type AttachRequest struct {
	Stdin  bool `json:"stdin,omitempty"`
	Stdout bool `json:"stdout,omitempty"`
	Stderr bool `json:"stderr,omitempty"`
	TTY    bool `json:"tty,omitempty"`
}

// Response answers one Request. Error is empty on success.
type Response struct {
	Version    int    `json:"version"`
	Error      string `json:"error,omitempty"`
	ErrorClass string `json:"errorClass,omitempty"`
	Pid        int    `json:"pid,omitempty"`
	// Started answers a CreateRequest with Run: the container runs.
	Started    bool            `json:"started,omitempty"`
	Containers []ContainerInfo `json:"containers,omitempty"`
}

var errorClasses = []struct {
	name string
	err  error
}{
	{"not_found", errdefs.ErrNotFound},
	{"already_exists", errdefs.ErrAlreadyExists},
	{"invalid_argument", errdefs.ErrInvalidArgument},
	{"failed_precondition", errdefs.ErrFailedPrecondition},
	{"unavailable", errdefs.ErrUnavailable},
	{"not_implemented", errdefs.ErrNotImplemented},
}

// Err returns the error a Response carries, wrapping its class, or nil.
func (r Response) Err() error {
	if r.Error == "" {
		return nil
	}
	for _, c := range errorClasses {
		if r.ErrorClass == c.name {
			// The message already names the class; do not repeat it.
			msg := strings.TrimSuffix(r.Error, ": "+c.err.Error())
			return fmt.Errorf("%s: %w", msg, c.err)
		}
	}
	return errors.New(r.Error)
}

// ValidID reports whether id can name a container's files: not empty, not
// a dot name, and without a path separator or NUL.
func ValidID(id string) error {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, "/\x00") || len(id) > 255 {
		return fmt.Errorf("container id %q: %w", id, errdefs.ErrInvalidArgument)
	}
	return nil
}
