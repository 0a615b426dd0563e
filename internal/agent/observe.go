package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/agent/criclient"
	"github.com/berth-dev/berth/internal/agent/plan"
	"github.com/berth-dev/berth/internal/agent/podspec"
)

// observation is what the runtime holds for one pod uid: the planner's
// view, plus the raw statuses the executor and `berth logs` need.
type observation struct {
	plan       plan.Observed
	sandboxes  map[string]*runtimeapi.PodSandboxStatus // by id; only ready sandboxes have one
	containers map[string]*runtimeapi.ContainerStatus  // by id
	// foreign lists containers of this pod uid whose labels do not parse:
	// nothing of the agent's, but in its sandboxes; they are removed with
	// the pod.
	foreign []string
}

// observe lists one pod's sandboxes and containers with their statuses.
// An object removed between the list and its status is skipped.
func (deps *syncDeps) observe(ctx context.Context, uid string) (observation, error) {
	obs := observation{
		sandboxes:  map[string]*runtimeapi.PodSandboxStatus{},
		containers: map[string]*runtimeapi.ContainerStatus{},
	}
	selector := map[string]string{podspec.LabelPodUID: uid}
	sandboxes, err := deps.runtime.ListPodSandbox(ctx, selector)
	if err != nil {
		return obs, fmt.Errorf("list sandboxes of pod %s: %w", uid, err)
	}
	for _, sb := range sandboxes {
		observed, status, err := deps.observeSandbox(ctx, sb)
		if criclient.IsNotFound(err) {
			continue
		}
		if err != nil {
			return obs, err
		}
		obs.plan.Sandboxes = append(obs.plan.Sandboxes, observed)
		if status != nil {
			obs.sandboxes[sb.GetId()] = status
		}
	}
	containers, err := deps.runtime.ListContainers(ctx, selector)
	if err != nil {
		return obs, fmt.Errorf("list containers of pod %s: %w", uid, err)
	}
	for _, c := range containers {
		status, err := deps.runtime.ContainerStatus(ctx, c.GetId())
		if criclient.IsNotFound(err) {
			continue
		}
		if err != nil {
			return obs, fmt.Errorf("status of container %s of pod %s: %w", c.GetId(), uid, err)
		}
		observed, meta, err := observedContainer(c.GetPodSandboxId(), status)
		if err != nil {
			deps.log.Debug("container without the agent's labels", "pod", uid, "container", c.GetId(), "error", err)
			obs.foreign = append(obs.foreign, c.GetId())
			continue
		}
		if observed.State == plan.StateExited && observed.Message == "" {
			observed.Message = deps.terminationMessage(uid, meta, observed.ExitCode, status.GetLogPath())
		}
		obs.plan.Containers = append(obs.plan.Containers, observed)
		obs.containers[c.GetId()] = status
	}
	return obs, nil
}

// observeSandbox converts a listed sandbox; a ready one's status is read
// for its IPs and network mode.
func (deps *syncDeps) observeSandbox(ctx context.Context, sb *runtimeapi.PodSandbox) (plan.Sandbox, *runtimeapi.PodSandboxStatus, error) {
	observed := plan.Sandbox{
		ID:        sb.GetId(),
		Attempt:   sb.GetMetadata().GetAttempt(),
		Ready:     sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY,
		CreatedAt: fromNanos(sb.GetCreatedAt()),
	}
	if !observed.Ready {
		return observed, nil, nil
	}
	status, err := deps.runtime.PodSandboxStatus(ctx, sb.GetId())
	if err != nil {
		return observed, nil, fmt.Errorf("status of sandbox %s: %w", sb.GetId(), err)
	}
	observed.Ready = status.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY
	observed.IP = status.GetNetwork().GetIp()
	for _, ip := range status.GetNetwork().GetAdditionalIps() {
		observed.AdditionalIPs = append(observed.AdditionalIPs, ip.GetIp())
	}
	observed.HostNetwork = status.GetLinux().GetNamespaces().GetOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE
	return observed, status, nil
}

// observedContainer converts a container's CRI status, with the agent's
// labels and annotations parsed.
func observedContainer(sandboxID string, st *runtimeapi.ContainerStatus) (plan.Container, podspec.ContainerMeta, error) {
	meta, err := podspec.ParseContainerMeta(st.GetLabels(), st.GetAnnotations())
	if err != nil {
		return plan.Container{}, meta, err
	}
	return plan.Container{
		ID: st.GetId(), SandboxID: sandboxID, Name: meta.Name,
		Type:         plan.ContainerType(meta.Type),
		State:        containerState(st.GetState()),
		ExitCode:     st.GetExitCode(),
		Reason:       st.GetReason(),
		Message:      st.GetMessage(),
		CreatedAt:    fromNanos(st.GetCreatedAt()),
		StartedAt:    fromNanos(st.GetStartedAt()),
		FinishedAt:   fromNanos(st.GetFinishedAt()),
		RestartCount: meta.RestartCount,
		Hash:         meta.Hash,
		Image:        st.GetImage().GetImage(),
		ImageRef:     st.GetImageRef(),
	}, meta, nil
}

func containerState(s runtimeapi.ContainerState) plan.ContainerState {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return plan.StateCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return plan.StateRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return plan.StateExited
	}
	return plan.StateUnknown
}

// fromNanos converts a CRI timestamp; 0 is the zero time.
func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// logPaths maps every observed container to its log file: CRI's log path
// is relative to the sandbox's log directory unless absolute.
func (obs observation) logPaths(logDir string) map[string]string {
	out := map[string]string{}
	for id, st := range obs.containers {
		p := st.GetLogPath()
		if p == "" {
			continue
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(logDir, p)
		}
		out[id] = p
	}
	return out
}

// current returns the newest sandbox, if any.
func (obs observation) current() (plan.Sandbox, bool) { return obs.plan.Current() }
