package probe

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Execer runs a command in a container and waits for it: CRI ExecSync. A
// timeout of zero means no timeout (lifecycle hooks). A runtime that stops
// the command at its timeout reports it as an error that is, or wraps,
// context.DeadlineExceeded or carries gRPC code DeadlineExceeded.
type Execer interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, exitCode int32, err error)
}

// Target is the container a probe or hook acts on.
type Target struct {
	// PodIP is where httpGet, tcpSocket and grpc connect when the handler names
	// no host.
	PodIP string
	// HostNetwork marks a pod in the host's network namespace; with no PodIP
	// such a pod is reached on 127.0.0.1.
	HostNetwork bool
	// ContainerID is the CRI container ID exec handlers run in.
	ContainerID string
	// Container is the container's spec: its probes (for the Manager), its
	// named ports and its env.
	Container *v1.Container
	// Env resolves $(VAR) references in exec probe commands. Nil means the
	// kubelet's rule: the container's env entries by name, with their literal
	// value (an entry set through valueFrom expands to the empty string).
	Env func(name string) (string, bool)
}

// Result is the outcome of a probe.
type Result int

const (
	// Unknown: the probe could not be performed, or has not run yet.
	Unknown Result = iota
	// Success: the probe passed.
	Success
	// Failure: the probe ran and failed.
	Failure
)

func (r Result) String() string {
	switch r {
	case Success:
		return "Success"
	case Failure:
		return "Failure"
	default:
		return "Unknown"
	}
}

// Kind is the role of a probe in a container.
type Kind int

// The three probe kinds, in the order the Manager keeps them.
const (
	Liveness Kind = iota
	Readiness
	Startup
	kindCount
)

func (k Kind) String() string {
	switch k {
	case Liveness:
		return "Liveness"
	case Readiness:
		return "Readiness"
	case Startup:
		return "Startup"
	default:
		return "Kind(?)"
	}
}

// spec returns the container's probe of kind k, or nil.
func (k Kind) spec(c *v1.Container) *v1.Probe {
	switch k {
	case Liveness:
		return c.LivenessProbe
	case Readiness:
		return c.ReadinessProbe
	case Startup:
		return c.StartupProbe
	}
	return nil
}

// initial is the result a probe of kind k has before it first crosses a
// threshold: not ready, alive, not started.
func (k Kind) initial() Result {
	switch k {
	case Readiness:
		return Failure
	case Liveness:
		return Success
	}
	return Unknown
}

// Update reports that the thresholded result of one probe changed.
type Update struct {
	PodUID        string
	ContainerName string
	ContainerID   string
	Kind          Kind
	Result        Result
	// Message is the output of the probe attempt that decided the change.
	Message string
	At      time.Time
}

// Attempt is one probe attempt, reported to Options.OnAttempt whatever its
// result (for "Unhealthy" and "ProbeWarning" events).
type Attempt struct {
	PodUID        string
	ContainerName string
	ContainerID   string
	Kind          Kind
	Result        Result
	// Warning marks a Success that deserves a warning: an HTTP probe that
	// stopped at a redirect to another host.
	Warning bool
	Message string
	At      time.Time
}

// Status is what the probes say about one container.
type Status struct {
	// Started: the startup probe has succeeded, or there is none.
	Started bool
	// Ready: started, and the readiness probe has succeeded (or there is none).
	Ready bool
	// LivenessFailed: the liveness probe crossed its failure threshold; the
	// container must be killed and restarted under its restart policy.
	LivenessFailed bool
	// StartupFailed: the startup probe crossed its failure threshold; same
	// consequence as LivenessFailed.
	StartupFailed bool
	// Results holds the thresholded result of each kind (indexed by Kind);
	// kinds the container has no probe for read Unknown.
	Results [kindCount]Result
}
