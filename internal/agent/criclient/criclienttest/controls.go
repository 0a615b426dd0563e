package criclienttest

import (
	"maps"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Calls returns the recorded calls so far.
func (f *Runtime) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...)
}

// NamespaceOptions returns, by container id, the namespace options of
// every container of the given name the runtime holds.
func (f *Runtime) NamespaceOptions(name string) map[string]*runtimeapi.NamespaceOption {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]*runtimeapi.NamespaceOption{}
	for id, c := range f.containers {
		if c.config.GetMetadata().GetName() == name {
			out[id] = c.config.GetLinux().GetSecurityContext().GetNamespaceOptions()
		}
	}
	return out
}

// SandboxConfigs returns, by sandbox id, the config of every sandbox of
// the given pod name the runtime holds.
func (f *Runtime) SandboxConfigs(pod string) map[string]*runtimeapi.PodSandboxConfig {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]*runtimeapi.PodSandboxConfig{}
	for id, sb := range f.sandboxes {
		if sb.config.GetMetadata().GetName() == pod {
			out[id] = sb.config
		}
	}
	return out
}

// ContainerConfigs returns, by container id, the config of every
// container of the given name the runtime holds.
func (f *Runtime) ContainerConfigs(name string) map[string]*runtimeapi.ContainerConfig {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]*runtimeapi.ContainerConfig{}
	for id, c := range f.containers {
		if c.config.GetMetadata().GetName() == name {
			out[id] = c.config
		}
	}
	return out
}

// Counts returns how many sandboxes and containers the runtime holds.
func (f *Runtime) Counts() (sandboxes, containers int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sandboxes), len(f.containers)
}

// brokenStream is an event stream that fails at its first Recv, as a gRPC
// stream does when the server answered with an error status only.
type brokenStream struct{ err error }

func (b brokenStream) Recv() (*runtimeapi.ContainerEventResponse, error) { return nil, b.err }

// EventCalls counts ContainerEvents and ListPodSandbox calls.
func (f *Runtime) EventCalls() (subscribes, lists int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.subscribes, f.lists
}

// Metadata is every label and annotation of every sandbox and container,
// by "sandbox <name>" or "container <name>".
func (f *Runtime) Metadata() map[string]map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]map[string]string{}
	for id, sb := range f.sandboxes {
		m := maps.Clone(sb.config.GetLabels())
		maps.Copy(m, sb.config.GetAnnotations())
		out["sandbox "+sb.config.GetMetadata().GetName()+" "+id[60:]] = m
	}
	for id, c := range f.containers {
		m := maps.Clone(c.config.GetLabels())
		maps.Copy(m, c.config.GetAnnotations())
		out["container "+c.config.GetMetadata().GetName()+" "+id[60:]] = m
	}
	return out
}

// SetPullAuth makes PullImage fail with what check returns for its
// reference and credentials (a registry that wants a password).
func (f *Runtime) SetPullAuth(check func(ref string, auth *runtimeapi.AuthConfig) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pullAuth = check
}

// SetPullError makes every PullImage fail with err (nil: pulls succeed).
func (f *Runtime) SetPullError(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pullErr = err
}

// SetEventsError makes every event stream break at once with err.
func (f *Runtime) SetEventsError(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.eventsErr = err
}

// SetQuarantined sets what QuarantinedRecords reports.
func (f *Runtime) SetQuarantined(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.quarantined = n
}

// HoldStop makes StopContainer of the containers named name wait (still
// running) until release is closed or the call's context ends, as a
// container that ignores SIGTERM holds its kill for the grace period. The
// call is logged ("stop <name>") when it begins.
func (f *Runtime) HoldStop(name string, release <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopHolds == nil {
		f.stopHolds = map[string]<-chan struct{}{}
	}
	f.stopHolds[name] = release
}

// SetExecResult sets the exit code ExecSync returns (probes and hooks);
// nil: every exec exits 0.
func (f *Runtime) SetExecResult(run func(id string, cmd []string) int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.execResult = run
}

// SetClock makes the runtime stamp creations, starts, exits and events
// with now (a test's fake clock) instead of the real time.
func (f *Runtime) SetClock(now func() time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clock = now
}
