package plan

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "k8s.io/api/core/v1"
)

// RestartAllContainers (KEP-5532): a container's exit matching such a rule restarts every
// init and regular container of the pod in place.

func restartAllScenarios() []scenario {
	ready := sandboxes(sb("sb0", 0, true))
	source := withRule(ctr("app"), ActionRestartAllContainers, opIn, 42)
	full := newPod(always, inits(ctr("setup"), side("proxy")), source, ctr("log"))
	return []scenario{{
		name: "restartall_regular_source",
		desc: "app exited 42 (its RestartAllContainers rule): every instance of every init and regular container is removed, the live ones killed first, app last; the sandbox stays",
		pod:  full,
		obs: observed(ready,
			exited("c-setup", "sb0", "setup", 0, 0, 1), running("c-proxy", "sb0", "proxy", 0, 2),
			exited("c-app", "sb0", "app", 42, 0, 3),
			exited("c-log-0", "sb0", "log", 1, 0, 3), running("c-log-1", "sb0", "log", 1, 4)),
	}, {
		name: "restartall_no_match",
		desc: "app exited 1, matching no rule: its own Never keeps it exited, nothing is reset",
		pod:  full,
		obs: observed(ready,
			exited("c-setup", "sb0", "setup", 0, 0, 1), running("c-proxy", "sb0", "proxy", 0, 2),
			exited("c-app", "sb0", "app", 1, 0, 3), running("c-log", "sb0", "log", 0, 3)),
	}, {
		name: "restartall_init_source",
		desc: "an init container exited 42 (its RestartAllContainers rule) under a Never pod: it and the init container before it are removed",
		pod: newPod(never, inits(ctr("first"), withRule(ctr("second"), ActionRestartAllContainers, opIn, 42)),
			ctr("app")),
		obs: observed(ready,
			exited("c-first", "sb0", "first", 0, 0, 1), exited("c-second", "sb0", "second", 42, 0, 2)),
	}, {
		name: "restartall_newer_instance",
		desc: "app's older instance exited 42 but a newer one runs: nothing to reset",
		pod:  newPod(always, nil, withPolicy(withRule(ctr("app"), ActionRestartAllContainers, opIn, 42), cAlways)),
		obs: observed(ready,
			exited("c-app-0", "sb0", "app", 42, 0, 1), running("c-app-1", "sb0", "app", 1, 2)),
	}, {
		name: "restartall_sandbox_not_ready",
		desc: "the sandbox died with the trigger: the containers are reset first, the sandbox is replaced in the next sync",
		pod:  newPod(always, nil, source),
		obs: observed(sandboxes(sb("sb0", 0, false)),
			exited("c-app", "sb0", "app", 42, 0, 1)),
	}, {
		name: "restartall_old_sandbox_instances",
		desc: "instances in an older sandbox are removed too",
		pod:  newPod(always, nil, source, ctr("log")),
		obs: observed(sandboxes(sb("sb0", 0, false), sb("sb1", 1, true)),
			exited("c-log-0", "sb0", "log", 137, 0, 1), running("c-log-1", "sb1", "log", 1, 11),
			exited("c-app", "sb1", "app", 42, 1, 12)),
	}, {
		name: "restartall_deleting",
		desc: "a pod being deleted restarts nothing, whatever its rules",
		pod: func() *v1.Pod {
			p := newPod(always, nil, source, ctr("log"))
			deleted := metav1.NewTime(now.Add(-time.Minute))
			p.DeletionTimestamp = &deleted
			return p
		}(),
		obs: observed(ready, exited("c-app", "sb0", "app", 42, 0, 1), running("c-log", "sb0", "log", 0, 1)),
	}, {
		name: "restartall_after_reset",
		desc: "after the reset nothing is left in the sandbox: the pod starts over from its first init container",
		pod:  full,
		obs:  observed(ready),
	}}
}
