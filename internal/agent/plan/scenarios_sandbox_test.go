package plan

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// scenario is one golden test case: its golden file is testdata/<name>.golden.
type scenario struct {
	name    string
	desc    string
	pod     *v1.Pod
	obs     Observed
	probes  map[string]ProbeStatus
	backoff map[string]time.Time
}

const (
	always    = v1.RestartPolicyAlways
	onFailure = v1.RestartPolicyOnFailure
	never     = v1.RestartPolicyNever
)

func sandboxScenarios() []scenario {
	return []scenario{{
		name: "fresh_pod",
		desc: "nothing exists yet: first sandbox (attempt 0), then every regular container",
		pod:  newPod(always, nil, ctr("app"), ctr("log")),
	}, {
		name: "fresh_pod_with_init",
		desc: "nothing exists yet and the pod has init containers: sandbox, then only the first init container",
		pod:  newPod(always, inits(ctr("setup"), ctr("migrate")), ctr("app")),
	}, {
		name: "steady_running",
		desc: "everything runs in a ready sandbox: nothing to do",
		pod:  newPod(always, inits(ctr("setup")), ctr("app")),
		obs: observed(sandboxes(sb("sb0", 0, true)),
			exited("c-setup", "sb0", "setup", 0, 0, 1), running("c-app", "sb0", "app", 0, 2)),
	}, {
		name: "sandbox_dead_always",
		desc: "the sandbox died; restartPolicy Always: kill the pod, new sandbox attempt 1, init starts over",
		pod:  newPod(always, inits(ctr("setup")), ctr("app")),
		obs: observed(sandboxes(sb("sb0", 0, false)),
			exited("c-setup", "sb0", "setup", 0, 0, 1), running("c-app", "sb0", "app", 2, 2)),
	}, {
		name: "sandbox_dead_no_init_backoff",
		desc: "the sandbox died, no init containers: new sandbox and restart the exited containers; one is still in back-off",
		pod:  newPod(always, nil, ctr("app"), ctr("log")),
		obs: observed(sandboxes(sb("sb0", 0, false)),
			finishedAt(exited("c-app", "sb0", "app", 137, 3, 2), now.Add(-5*time.Second)),
			exited("c-log", "sb0", "log", 137, 0, 2)),
		backoff: map[string]time.Time{"app": now.Add(35 * time.Second)},
	}, {
		name: "sandbox_dead_never_done",
		desc: "the sandbox died under restartPolicy Never after containers ran: no new sandbox, the pod is done",
		pod:  newPod(never, nil, ctr("app")),
		obs: observed(sandboxes(sb("sb0", 0, false)),
			exited("c-app", "sb0", "app", 137, 0, 2)),
	}, {
		name: "sandbox_dead_never_nothing_ran",
		desc: "the sandbox died under restartPolicy Never before any container was created: retry the sandbox",
		pod:  newPod(never, nil, ctr("app")),
		obs:  observed(sandboxes(sb("sb0", 0, false))),
	}, {
		name: "sandbox_dead_onfailure_all_succeeded",
		desc: "the sandbox died under OnFailure after every container succeeded: no new sandbox, done",
		pod:  newPod(onFailure, nil, ctr("app"), ctr("log")),
		obs: observed(sandboxes(sb("sb0", 0, false)),
			exited("c-app", "sb0", "app", 0, 0, 2), exited("c-log", "sb0", "log", 0, 0, 2)),
	}, {
		name: "sandbox_dead_onfailure_one_failed",
		desc: "the sandbox died under OnFailure: new sandbox, only the failed container is started again",
		pod:  newPod(onFailure, nil, ctr("app"), ctr("log")),
		obs: observed(sandboxes(sb("sb0", 0, false)),
			exited("c-app", "sb0", "app", 0, 0, 2), exited("c-log", "sb0", "log", 2, 1, 3)),
	}, {
		name: "sandbox_without_ip",
		desc: "the newest sandbox is ready but has no IP on the pod network: replace it",
		pod:  newPod(always, nil, ctr("app")),
		obs: observed(sandboxes(Sandbox{ID: "sb0", Ready: true, CreatedAt: at(0)}),
			running("c-app", "sb0", "app", 0, 1)),
	}, {
		name: "sandbox_network_changed",
		desc: "spec.hostNetwork is true but the sandbox has its own network namespace: replace it",
		pod: func() *v1.Pod {
			p := newPod(always, nil, ctr("app"))
			p.Spec.HostNetwork = true
			return p
		}(),
		obs: observed(sandboxes(sb("sb0", 0, true)), running("c-app", "sb0", "app", 0, 1)),
	}, {
		name: "host_network_without_ip",
		desc: "a host-network sandbox needs no IP of its own: nothing to do",
		pod: func() *v1.Pod {
			p := newPod(always, nil, ctr("app"))
			p.Spec.HostNetwork = true
			return p
		}(),
		obs: observed(sandboxes(Sandbox{ID: "sb0", Ready: true, HostNetwork: true, CreatedAt: at(0)}),
			running("c-app", "sb0", "app", 0, 1)),
	}, {
		name: "old_attempts_steady",
		desc: "sandbox attempts 0 and 1 are dead, attempt 2 is ready and runs everything: old instances are only history",
		pod:  newPod(always, inits(ctr("setup")), ctr("app")),
		obs: observed(sandboxes(sb("sb0", 0, false), sb("sb2", 2, true), sb("sb1", 1, false)),
			exited("c-setup-0", "sb0", "setup", 0, 0, 1), exited("c-app-0", "sb0", "app", 137, 0, 2),
			exited("c-setup-1", "sb1", "setup", 0, 0, 11), exited("c-app-1", "sb1", "app", 137, 1, 12),
			exited("c-setup-2", "sb2", "setup", 0, 0, 21), running("c-app-2", "sb2", "app", 2, 22)),
	}, {
		name: "old_attempts_new_sandbox_init_pending",
		desc: "attempt 1 was just created after attempt 0 died: its init container runs; old exited instances do not count as initialized",
		pod:  newPod(always, inits(ctr("setup")), ctr("app")),
		obs: observed(sandboxes(sb("sb0", 0, false), sb("sb1", 1, true)),
			exited("c-setup-0", "sb0", "setup", 0, 0, 1), exited("c-app-0", "sb0", "app", 137, 0, 2),
			running("c-setup-1", "sb1", "setup", 1, 11)),
	}, {
		name: "multiple_sandboxes_ready",
		desc: "two sandboxes are ready: kill everything, create attempt 2",
		pod:  newPod(always, nil, ctr("app")),
		obs: observed(sandboxes(sb("sb0", 0, true), sb("sb1", 1, true)),
			running("c-app-0", "sb0", "app", 0, 1), running("c-app-1", "sb1", "app", 1, 11)),
	}, {
		name: "old_sandbox_live_container",
		desc: "a container still runs in an old, not ready sandbox: kill it; the current sandbox is kept",
		pod:  newPod(always, nil, ctr("app"), ctr("log")),
		obs: observed(sandboxes(sb("sb0", 0, false), sb("sb1", 1, true)),
			running("c-log-0", "sb0", "log", 0, 1),
			running("c-app-1", "sb1", "app", 1, 11), running("c-log-1", "sb1", "log", 1, 11)),
	}, {
		name: "old_sandbox_only_instance",
		desc: "a container's only live instance is in an old sandbox: kill it there and start it in the current one",
		pod:  newPod(always, nil, ctr("app"), ctr("log")),
		obs: observed(sandboxes(sb("sb0", 0, false), sb("sb1", 1, true)),
			running("c-log-0", "sb0", "log", 0, 1), running("c-app-1", "sb1", "app", 1, 11)),
	}, {
		name: "new_sandbox_ignores_init_backoff",
		desc: "a new sandbox starts its first init container at once: back-off of old init instances does not apply",
		pod:  newPod(always, inits(ctr("setup")), ctr("app")),
		obs: observed(sandboxes(sb("sb0", 0, false)),
			finishedAt(exited("c-setup", "sb0", "setup", 1, 3, 1), now.Add(-time.Second))),
		backoff: map[string]time.Time{"setup": now.Add(time.Minute)},
	}, {
		name: "ephemeral_container",
		desc: "an ephemeral container was added: start it once, alongside the running pod",
		pod: func() *v1.Pod {
			p := newPod(always, nil, ctr("app"))
			p.Spec.EphemeralContainers = []v1.EphemeralContainer{{
				EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "busybox"},
			}}
			return p
		}(),
		obs: observed(sandboxes(sb("sb0", 0, true)), running("c-app", "sb0", "app", 0, 1)),
	}}
}
