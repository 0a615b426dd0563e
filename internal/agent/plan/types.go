package plan

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// ContainerType is the role a container plays in its pod. The agent stores it in the
// berth.dev/container-type annotation; the values match that annotation's values.
type ContainerType string

// The container types.
const (
	TypeInit      ContainerType = "init"      // init container that runs to completion
	TypeSidecar   ContainerType = "sidecar"   // init container with restartPolicy: Always
	TypeRegular   ContainerType = "regular"   // entry of spec.containers
	TypeEphemeral ContainerType = "ephemeral" // entry of spec.ephemeralContainers
)

// ContainerState is the CRI state of a container.
type ContainerState string

// The container states, as CRI reports them.
const (
	StateCreated ContainerState = "created"
	StateRunning ContainerState = "running"
	StateExited  ContainerState = "exited"
	StateUnknown ContainerState = "unknown"
)

// Observed is what the runtime holds for one pod uid.
type Observed struct {
	Sandboxes  []Sandbox   // every sandbox of this pod uid, any order (sorted by the planner)
	Containers []Container // every container of those sandboxes, any order
}

// Sandbox is one pod sandbox as CRI reports it.
type Sandbox struct {
	ID      string
	Attempt uint32 // metadata.attempt
	Ready   bool   // state SANDBOX_READY
	IP      string // primary pod IP from the sandbox status ("" when none)
	// AdditionalIPs are the other pod IPs (dual stack), in the runtime's order.
	AdditionalIPs []string
	// HostNetwork is true when the sandbox's network namespace mode is NODE. It must be
	// filled from the sandbox status (linux.namespaces.options.network): a sandbox whose
	// mode differs from pod.spec.hostNetwork is recreated.
	HostNetwork bool
	CreatedAt   time.Time
}

// Container is one container as CRI reports it, with the agent's labels parsed.
type Container struct {
	ID, SandboxID, Name string
	Type                ContainerType
	State               ContainerState
	ExitCode            int32
	Reason, Message     string // CRI status reason (Completed, Error, OOMKilled, ...) and message
	CreatedAt           time.Time
	StartedAt           time.Time
	FinishedAt          time.Time
	RestartCount        int    // io.kubernetes.container.restartCount annotation
	Hash                string // io.kubernetes.container.hash annotation ("" = unknown, never "changed")
	Image               string // image as the runtime reports it (optional)
	ImageRef            string // image digest reference (optional), reported as imageID
}

// ProbeStatus is the latest probe outcome for one container name.
type ProbeStatus struct {
	// ContainerID is the container instance these results belong to. When it is set and
	// differs from the instance being judged, the results are ignored (they are stale).
	ContainerID    string
	Started        bool // the startup probe has succeeded
	Ready          bool // the readiness probe's latest result is success
	LivenessFailed bool // the liveness probe reached its failure threshold
	StartupFailed  bool // the startup probe reached its failure threshold
}

// Input is everything the planner looks at. Nothing else is read: no clock, no runtime.
type Input struct {
	Pod      *v1.Pod // required; with the API server's defaults applied
	Observed Observed
	// Probes holds probe results per container name.
	Probes map[string]ProbeStatus
	// Backoff holds, per container name, the earliest time the container may be started
	// again after a crash (zero or absent = no back-off). The agent fills it from package
	// backoff with the newest exited instance's FinishedAt.
	Backoff map[string]time.Time
	// Hash returns the spec hash that the agent stores in the container hash annotation.
	// Nil disables spec-change detection.
	Hash func(*v1.Container) string
	Now  time.Time
}

// KillReason says why a container is killed.
type KillReason string

// The kill reasons. The first four are the kubelet's.
const (
	KillLivenessProbe  KillReason = "LivenessProbe"
	KillStartupProbe   KillReason = "StartupProbe"
	KillUnknownState   KillReason = "Unknown"
	KillSpecChanged    KillReason = "SpecChanged"
	KillNeverStarted   KillReason = "NeverStarted"   // Created but never started (agent restarted mid-start)
	KillOldSandbox     KillReason = "OldSandbox"     // still alive in a sandbox that is not the current one
	KillSandboxChanged KillReason = "SandboxChanged" // the pod's sandbox is being replaced
	KillPodDone        KillReason = "PodDone"        // the pod is done: nothing of it is wanted running
)

// PodKillReason says why the whole pod (every container and sandbox) is killed.
type PodKillReason string

// The pod kill reasons.
const (
	PodSandboxMissing        PodKillReason = "SandboxMissing" // containers exist without any sandbox
	PodSandboxNotReady       PodKillReason = "SandboxNotReady"
	PodSandboxMultipleReady  PodKillReason = "MultipleSandboxesReady"
	PodSandboxNetworkChanged PodKillReason = "SandboxNetworkChanged"
	PodSandboxNoIP           PodKillReason = "SandboxHasNoIP"
	PodInitFailed            PodKillReason = "InitContainerFailed"
	PodNothingToRun          PodKillReason = "NothingToRun" // no container runs or is to be started
)

// StartReason says why a container is started.
type StartReason string

// The start reasons.
const (
	StartFirst   StartReason = "FirstStart"       // no instance of it was ever seen
	StartRestart StartReason = "RestartAfterExit" // its newest instance exited
	StartReplace StartReason = "Replace"          // its newest instance is killed in this plan
)

// ReasonCrashLoopBackOff is the reason of every Wait.
const ReasonCrashLoopBackOff = "CrashLoopBackOff"

// Kill is one container to stop.
type Kill struct {
	ID      string
	Name    string
	Type    ContainerType
	Reason  KillReason
	Message string
}

// Start is one container to create and start.
type Start struct {
	Name string
	Type ContainerType
	// RestartCount is the value for the new container's restartCount annotation (and
	// for its CRI metadata attempt): 0 for the first instance, else the highest count
	// seen for this name plus one, so that the CRI name never collides.
	RestartCount int
	Reason       StartReason
}

// Wait is a container that should be started but whose crash back-off has not elapsed.
type Wait struct {
	Name    string
	Type    ContainerType
	Until   time.Time
	Reason  string // always ReasonCrashLoopBackOff
	Message string // "back-off 20s restarting failed container=x pod=name_ns(uid)"
}

// Reset is one container instance that RestartAllContainers removes from the runtime.
type Reset struct {
	ID   string
	Name string
	Type ContainerType
	// Kill is set when the instance is not exited: it is stopped (no grace: kubelet's
	// minimum of 2 s, no preStop hook) before it is removed.
	Kill bool
	// Source is set when this instance's exit matched a RestartAllContainers rule.
	Source bool
}

// Actions is the plan for one sync of one pod, in the order the executor applies it:
// kill the pod (or the listed containers), create the sandbox, start the init
// containers, start the regular containers.
type Actions struct {
	// KillPod asks to stop every container in ContainersToKill and then every sandbox in
	// StopSandboxes (the executor uses StopOrder for the container order).
	KillPod       bool
	KillPodReason PodKillReason
	StopSandboxes []string
	// CreateSandbox asks for a new sandbox with metadata attempt Attempt.
	CreateSandbox bool
	Attempt       uint32
	// SandboxID is the existing sandbox to start containers in ("" with CreateSandbox).
	SandboxID string
	// ContainersToKill lists the containers to stop, in spec order.
	ContainersToKill []Kill
	// InitToStart lists init containers and sidecars to start, in spec order.
	InitToStart []Start
	// ContainersToStart lists regular (and ephemeral) containers to start, in spec order.
	ContainersToStart []Start
	// Waits lists containers held back by crash back-off, in spec order.
	Waits []Wait
	// RestartAll says why every init and regular container of the pod is restarted in
	// place ("" when they are not): the executor removes ContainersToReset, in that
	// order, and nothing else happens in this sync; the next one starts the pod over
	// in its sandbox, from the first init container.
	RestartAll string
	// ContainersToReset lists every instance of the pod's init and regular containers,
	// in kubelet's order: those that did not trigger the restart (regular, then init),
	// then those that did (regular, then init), so that an agent stopped midway
	// finds the trigger again.
	ContainersToReset []Reset
	// Done marks a pod that has finished under its restart policy: nothing will be
	// started again; the executor stops what is left and the pod worker can stop syncing.
	Done       bool
	DoneReason string
}
