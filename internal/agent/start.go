package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/backoff"
	"github.com/berth-dev/berth/internal/agent/plan"
	"github.com/berth-dev/berth/internal/agent/podspec"
	"github.com/berth-dev/berth/internal/agent/podstatus"
	"github.com/berth-dev/berth/internal/agent/probe"
)

// sandboxInfo is the sandbox containers are started in.
type sandboxInfo struct {
	id          string
	config      *runtimeapi.PodSandboxConfig
	ips         []string // primary first
	hostNetwork bool
}

func (s sandboxInfo) ip() string {
	if len(s.ips) == 0 {
		return ""
	}
	return s.ips[0]
}

// sandbox returns the current sandbox, creating it when the plan asks.
func (w *podWorker) sandbox(ctx context.Context, d desiredPod, obs observation, acts plan.Actions) (sandboxInfo, error) {
	cfg, err := w.sandboxConfig(d, acts.Attempt)
	if err != nil {
		w.record(agentapi.EventWarning, "FailedCreatePodSandBox", "", "Failed to build the pod sandbox config: "+err.Error())
		return sandboxInfo{}, err
	}
	if !acts.CreateSandbox {
		return sandboxFromStatus(acts.SandboxID, cfg, obs.sandboxes[acts.SandboxID]), nil
	}
	if err := ensureLogDirectory(cfg); err != nil {
		w.record(agentapi.EventWarning, "FailedCreatePodSandBox", "", err.Error())
		return sandboxInfo{}, err
	}
	if pc := w.deps.podCgroups; pc != nil {
		if err := pc.Ensure(ctx, d.pod); err != nil {
			if ctx.Err() != nil {
				return sandboxInfo{}, err // deleted or stopping meanwhile
			}
			w.record(agentapi.EventWarning, "FailedCreatePodContainer", "", "unable to ensure pod container exists: "+err.Error())
			return sandboxInfo{}, err
		}
		w.deps.log.Debug("pod cgroup ready", "pod", d.key())
	}
	id, err := w.runPodSandbox(ctx, cfg, runtimeHandler(d.pod))
	if err != nil && ctx.Err() != nil {
		return sandboxInfo{}, err // deleted or stopping meanwhile: not a failure of the sandbox
	}
	if err != nil {
		w.record(agentapi.EventWarning, "FailedCreatePodSandBox", "", "Failed to create pod sandbox: "+err.Error())
		return sandboxInfo{}, err
	}
	status, err := w.deps.runtime.PodSandboxStatus(ctx, id)
	if err != nil {
		w.record(agentapi.EventWarning, "FailedCreatePodSandBox", "", fmt.Sprintf("Failed to get the status of sandbox %s: %v", id, err))
		return sandboxInfo{}, err
	}
	info := sandboxFromStatus(id, cfg, status)
	if !info.hostNetwork {
		if err := w.deps.svcPods.sandboxStarted(ctx, w.uid, info.ips); err != nil {
			w.deps.log.Warn("services: letting the pod's addresses in", "pod", d.key(), "error", err) // the next Services sync does
		}
	}
	return info, nil
}

// sandboxesAtOnce is how many sandboxes the workers make at once: twice
// the CPUs, at least 4. Making a sandbox (its namespaces, its network
// through CNI, its pause process) is the heaviest CRI call; 110 pods
// admitted together would otherwise make 110 at once and starve the
// runtime's other calls (berth serve runs CRI in the agent's process).
// kubelet bounds none; the pods wait their turn in their own syncs.
func sandboxesAtOnce() int { return max(4, 2*runtime.NumCPU()) }

// runPodSandbox makes a sandbox in one of the slots, waiting for one
// (or ctx's end: a deleted pod does not wait its turn); no slots (a
// syncDeps built without them): no bound.
func (w *podWorker) runPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	if slots := w.deps.sandboxSlots; slots != nil {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		defer func() { <-slots }()
	}
	return w.deps.runtime.RunPodSandbox(ctx, cfg, handler)
}

func sandboxFromStatus(id string, cfg *runtimeapi.PodSandboxConfig, st *runtimeapi.PodSandboxStatus) sandboxInfo {
	info := sandboxInfo{id: id, config: cfg}
	if ip := st.GetNetwork().GetIp(); ip != "" {
		info.ips = append(info.ips, ip)
	}
	for _, ip := range st.GetNetwork().GetAdditionalIps() {
		info.ips = append(info.ips, ip.GetIp())
	}
	info.hostNetwork = st.GetLinux().GetNamespaces().GetOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE
	return info
}

// sandboxConfig is the pod's CRI sandbox config for a given attempt.
func (w *podWorker) sandboxConfig(d desiredPod, attempt uint32) (*runtimeapi.PodSandboxConfig, error) {
	refs, err := w.deps.sources.Refs(d.sources)
	if err != nil {
		return nil, err
	}
	userNS, err := w.userNamespace(d)
	if err != nil {
		return nil, err
	}
	cfg, err := podspec.SandboxConfig(d.pod, attempt, refs, podspec.SandboxOptions{
		LogRoot:       w.deps.podLogDir,
		SystemdCgroup: w.deps.systemdCgroup,
		HostDNS:       w.deps.node.dns,
		ClusterDNS:    w.deps.clusterDNS.Load(),
		Seccomp:       w.deps.seccomp(),
		ConfigSource:  "file",
		ConfigSeen:    d.pod.CreationTimestamp.Time,
		UserNamespace: userNS,
	})
	if err != nil {
		return nil, err
	}
	if d.watchDir != "" {
		cfg.Annotations[AnnotationWatchDir] = d.watchDir
	}
	return cfg, nil
}

// seccomp are the node's seccomp settings: Localhost profiles under
// <root>/seccomp, Unconfined by default as in the kubelet.
func (deps *syncDeps) seccomp() podspec.SeccompSettings {
	return podspec.SeccompSettings{ProfileRoot: filepath.Join(deps.rootDir, "seccomp")}
}

// startContainer pulls the image as the pull policy says, creates and
// starts one container, and runs its postStart hook. A failure is shown as
// the container's waiting reason and an event.
func (w *podWorker) startContainer(ctx context.Context, d desiredPod, sb sandboxInfo, obs observation, s plan.Start) error {
	pod := d.pod
	spec, typ, ok := podspec.FindContainer(pod, s.Name)
	if !ok {
		return fmt.Errorf("container %q: not in the pod spec", s.Name)
	}
	object := containerObject(pod, s.Name)
	s.RestartCount = restartCount(s, obs.plan, filepath.Join(podspec.PodLogDirectory(w.deps.podLogDir, pod.Namespace, pod.Name, w.uid), s.Name))
	if last := newestExited(obs.plan, s.Name); last != nil {
		w.deps.crashBackoff.Next(backoff.Key(w.uid, s.Name, podspec.ContainerHash(spec)), last.FinishedAt, w.deps.clock.Now())
	}
	img, err := w.ensureImage(ctx, d, spec, object, sb.config)
	if err != nil {
		return err
	}
	if img.volumes, err = w.ensureImageVolumes(ctx, d, spec, object, sb.config); err != nil {
		return err
	}
	target, err := ephemeralTarget(pod, s.Name, sb, obs)
	if err != nil {
		return w.failStart(s.Name, object, "CreateContainerConfigError", err)
	}
	cfg, err := w.containerConfig(d, sb, spec, typ, s.RestartCount, img, target)
	if err != nil {
		return w.failStart(s.Name, object, "CreateContainerConfigError", err)
	}
	id, err := w.deps.runtime.CreateContainer(ctx, sb.id, cfg, sb.config)
	if err != nil {
		return w.failStart(s.Name, object, "CreateContainerError", err)
	}
	w.record(agentapi.EventNormal, "Created", object, "Created container "+s.Name)
	if err := w.deps.runtime.StartContainer(ctx, id); err != nil {
		return w.failStart(s.Name, object, "RunContainerError", err)
	}
	w.record(agentapi.EventNormal, "Started", object, "Started container "+s.Name)
	w.clearWaiting(s.Name)
	if spec.Lifecycle != nil && spec.Lifecycle.PostStart != nil {
		return w.runPostStart(ctx, pod, sb, obs, spec, id)
	}
	return nil
}

// ephemeralTarget is, for an ephemeral container with a
// targetContainerName, the id of the target's running instance in the
// current sandbox: the ephemeral container joins its process namespace,
// as the kubelet does. Other containers have no target ("").
func ephemeralTarget(pod *v1.Pod, name string, sb sandboxInfo, obs observation) (string, error) {
	var target string
	for _, ec := range pod.Spec.EphemeralContainers {
		if ec.Name == name {
			target = ec.TargetContainerName
		}
	}
	if target == "" {
		return "", nil
	}
	for _, c := range obs.plan.Instances(target) {
		if c.SandboxID == sb.id && c.State == plan.StateRunning {
			return c.ID, nil
		}
	}
	return "", fmt.Errorf("ephemeral container %q: target container %q is not running", name, target)
}

// failStart records why a container could not be started.
func (w *podWorker) failStart(name, object, reason string, err error) error {
	w.setWaiting(name, podstatus.Waiting{Reason: reason, Message: err.Error()})
	w.record(agentapi.EventWarning, "Failed", object, "Error: "+err.Error())
	return err
}

// runPostStart runs the postStart hook; when it fails the container is
// killed (the restart policy then decides), as the kubelet does.
func (w *podWorker) runPostStart(ctx context.Context, pod *v1.Pod, sb sandboxInfo, obs observation, spec *v1.Container, id string) error {
	target := probe.Target{PodIP: sb.ip(), HostNetwork: sb.hostNetwork, ContainerID: id, Container: spec}
	err := probe.RunHook(ctx, spec.Lifecycle.PostStart, target, w.deps.runtime)
	if err == nil {
		return nil
	}
	object := containerObject(pod, spec.Name)
	w.record(agentapi.EventWarning, "FailedPostStartHook", object, "PostStartHook failed: "+err.Error())
	kill := plan.Kill{ID: id, Name: spec.Name, Reason: "FailedPostStartHook", Message: err.Error()}
	w.killContainer(ctx, pod, obs, kill, podGrace(pod))
	return fmt.Errorf("container %q: postStart hook: %w", spec.Name, err)
}

// runHook runs a lifecycle hook against a container of the current
// sandbox.
func (w *podWorker) runHook(ctx context.Context, h *v1.LifecycleHandler, pod *v1.Pod, obs observation, id string, spec *v1.Container) error {
	target := probe.Target{ContainerID: id, Container: spec, HostNetwork: pod.Spec.HostNetwork}
	if sb, ok := obs.current(); ok {
		target.PodIP = sb.IP
	}
	return probe.RunHook(ctx, h, target, w.deps.runtime)
}

// containerConfig builds the CRI config of one container instance; its
// termination-message file is created here. target is an ephemeral
// container's target container id (see ephemeralTarget), else "".
func (w *podWorker) containerConfig(d desiredPod, sb sandboxInfo, spec *v1.Container, typ podspec.ContainerType, restartCount int, img imageInfo, target string) (*runtimeapi.ContainerConfig, error) {
	if err := podspec.VerifyRunAsNonRoot(d.pod, spec, img.user); err != nil {
		return nil, err
	}
	msgPath, err := w.terminationMessageFile(spec.Name, restartCount)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	volumes := w.volumePaths
	w.mu.Unlock()
	return podspec.ContainerConfig(d.pod, spec, typ, restartCount, podspec.ContainerOptions{
		Sources: d.sources,
		Downward: podspec.Downward{
			PodIPs: sb.ips, HostIPs: w.deps.node.hostIPs, Allocatable: w.deps.node.allocatable,
		},
		Seccomp:                    w.deps.seccomp(),
		TerminationMessageHostPath: msgPath,
		TargetContainerID:          target,
		ImageUser:                  img.user,
		RecursiveReadOnlySupported: w.deps.rroHandlers[runtimeHandler(d.pod)],
		ResolveSubPath:             w.deps.volumes.MountSubPath,
		UserNamespace:              sb.config.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions(),
		ImageVolumes:               img.volumes,
	}, volumes)
}

// podDir is the agent's directory of a pod: <root>/pods/<uid>.
func (deps *syncDeps) podDir(uid string) string {
	return filepath.Join(deps.rootDir, "pods", uid)
}

// terminationMessageFile creates the empty host file a container instance
// writes its termination message to: <pod dir>/containers/<name>/<restart>.
func (w *podWorker) terminationMessageFile(name string, restartCount int) (string, error) {
	dir := filepath.Join(w.deps.podDir(w.uid), "containers", name)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("termination message file: %w", err)
	}
	path := filepath.Join(dir, strconv.Itoa(restartCount))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o666)
	if err != nil {
		return "", fmt.Errorf("termination message file: %w", err)
	}
	f.Close()
	// The container may run as any user: let it write its message.
	if err := os.Chmod(path, 0o666); err != nil {
		return "", fmt.Errorf("termination message file: %w", err)
	}
	return path, nil
}

// newestExited is the newest exited instance of a container, in any
// sandbox.
func newestExited(o plan.Observed, name string) *plan.Container {
	for _, c := range o.Instances(name) {
		if c.State == plan.StateExited {
			return &c
		}
	}
	return nil
}

// backoffKey identifies a container of a pod in the back-off tables.
func backoffKey(uid, name string) string { return uid + "/" + name }

// runtimeHandler is the CRI runtime handler of pod's runtimeClassName: the
// class's name itself (the agent has no RuntimeClass objects: a class is
// the runtime's handler of that name), "" (the default) without one. An
// unknown handler fails the sandbox with the runtime's message.
func runtimeHandler(pod *v1.Pod) string {
	if name := pod.Spec.RuntimeClassName; name != nil {
		return *name
	}
	return ""
}
