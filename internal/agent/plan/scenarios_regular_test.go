package plan

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func regularScenarios() []scenario {
	ready := sandboxes(sb("sb0", 0, true))
	return []scenario{{
		name: "regular_exit0_always",
		desc: "under Always a container that exited 0 is restarted",
		pod:  newPod(always, nil, ctr("app")),
		obs:  observed(ready, exited("c-app", "sb0", "app", 0, 0, 1)),
	}, {
		name: "regular_exit1_always",
		desc: "under Always a container that exited 1 is restarted (restartCount 4 after 3)",
		pod:  newPod(always, nil, ctr("app")),
		obs:  observed(ready, exited("c-app", "sb0", "app", 1, 3, 1)),
	}, {
		name: "regular_exit0_onfailure",
		desc: "under OnFailure the only container exited 0: the pod is done",
		pod:  newPod(onFailure, nil, ctr("app")),
		obs:  observed(ready, exited("c-app", "sb0", "app", 0, 0, 1)),
	}, {
		name: "regular_exit1_onfailure",
		desc: "under OnFailure a container that exited 1 is restarted",
		pod:  newPod(onFailure, nil, ctr("app")),
		obs:  observed(ready, exited("c-app", "sb0", "app", 1, 0, 1)),
	}, {
		name: "regular_exit0_never",
		desc: "under Never the only container exited 0: the pod is done (Succeeded)",
		pod:  newPod(never, nil, ctr("app")),
		obs:  observed(ready, exited("c-app", "sb0", "app", 0, 0, 1)),
	}, {
		name: "regular_exit1_never",
		desc: "under Never the only container exited 1: the pod is done (Failed)",
		pod:  newPod(never, nil, ctr("app")),
		obs:  observed(ready, exited("c-app", "sb0", "app", 1, 0, 1)),
	}, {
		name: "regular_mixed_never",
		desc: "under Never one container exited, the other runs: keep going, restart nothing",
		pod:  newPod(never, nil, ctr("app"), ctr("log")),
		obs: observed(ready,
			exited("c-app", "sb0", "app", 1, 0, 1), running("c-log", "sb0", "log", 0, 1)),
	}, {
		name: "regular_all_done_never_many",
		desc: "under Never every container exited (one failed): the pod is done",
		pod:  newPod(never, nil, ctr("app"), ctr("log")),
		obs: observed(ready,
			exited("c-app", "sb0", "app", 0, 0, 1), exited("c-log", "sb0", "log", 2, 0, 1)),
	}, {
		name:    "backoff_pending",
		desc:    "the container crashed 5 s ago, back-off 20 s: wait until the back-off elapses, keep the pod",
		pod:     newPod(always, nil, ctr("app")),
		obs:     observed(ready, finishedAt(exited("c-app", "sb0", "app", 1, 2, 1), now.Add(-5*time.Second))),
		backoff: map[string]time.Time{"app": now.Add(15 * time.Second)},
	}, {
		name:    "backoff_elapsed",
		desc:    "the container's back-off has elapsed: restart it",
		pod:     newPod(always, nil, ctr("app")),
		obs:     observed(ready, finishedAt(exited("c-app", "sb0", "app", 1, 2, 1), now.Add(-25*time.Second))),
		backoff: map[string]time.Time{"app": now.Add(-5 * time.Second)},
	}, {
		name:    "backoff_long_delay_format",
		desc:    "a 5-minute back-off is worded as the kubelet does (5m0s)",
		pod:     newPod(onFailure, nil, ctr("app")),
		obs:     observed(ready, finishedAt(exited("c-app", "sb0", "app", 1, 7, 1), now.Add(-time.Minute))),
		backoff: map[string]time.Time{"app": now.Add(4 * time.Minute)},
	}, {
		name:   "liveness_failed_always",
		desc:   "liveness probe failed under Always: kill and restart",
		pod:    newPod(always, nil, withLivenessProbe(ctr("app"))),
		obs:    observed(ready, running("c-app", "sb0", "app", 0, 1)),
		probes: map[string]ProbeStatus{"app": {ContainerID: "c-app", LivenessFailed: true}},
	}, {
		name: "liveness_failed_never",
		desc: "liveness probe failed under Never: kill without restart; the other container keeps the pod",
		pod:  newPod(never, nil, withLivenessProbe(ctr("app")), ctr("log")),
		obs: observed(ready,
			running("c-app", "sb0", "app", 0, 1), running("c-log", "sb0", "log", 0, 1)),
		probes: map[string]ProbeStatus{"app": {ContainerID: "c-app", LivenessFailed: true}},
	}, {
		name:   "liveness_failed_never_last",
		desc:   "liveness probe failed under Never on the only container: kill it, the pod is done",
		pod:    newPod(never, nil, withLivenessProbe(ctr("app"))),
		obs:    observed(ready, running("c-app", "sb0", "app", 0, 1)),
		probes: map[string]ProbeStatus{"app": {ContainerID: "c-app", LivenessFailed: true}},
	}, {
		name:   "startup_failed_onfailure",
		desc:   "startup probe failed under OnFailure: kill and restart",
		pod:    newPod(onFailure, nil, withStartupProbe(ctr("app"))),
		obs:    observed(ready, running("c-app", "sb0", "app", 1, 1)),
		probes: map[string]ProbeStatus{"app": {ContainerID: "c-app", StartupFailed: true}},
	}, {
		name:   "stale_probe_result",
		desc:   "a liveness failure recorded for a previous instance does not kill the new one",
		pod:    newPod(always, nil, withLivenessProbe(ctr("app"))),
		obs:    observed(ready, running("c-app-1", "sb0", "app", 1, 2), exited("c-app-0", "sb0", "app", 137, 0, 1)),
		probes: map[string]ProbeStatus{"app": {ContainerID: "c-app-0", LivenessFailed: true}},
	}, {
		name: "hash_changed_never",
		desc: "the spec hash changed: kill and restart even under Never",
		pod:  newPod(never, nil, ctr("app")),
		obs:  observed(ready, withHash(running("c-app", "sb0", "app", 0, 1), "h-example/app:0")),
	}, {
		name: "hash_unknown_kept",
		desc: "an instance without a hash annotation is not treated as changed",
		pod:  newPod(always, nil, ctr("app")),
		obs:  observed(ready, withHash(running("c-app", "sb0", "app", 0, 1), noHash)),
	}, {
		name: "unknown_state_regular",
		desc: "a regular container in unknown state is killed and started again, even under Never",
		pod:  newPod(never, nil, ctr("app")),
		obs:  observed(ready, unknown("c-app", "sb0", "app", 0, 1)),
	}, {
		name: "created_never_started_regular",
		desc: "the agent restarted between create and start: remove the created container and create it again",
		pod:  newPod(always, nil, ctr("app"), ctr("log")),
		obs: observed(ready,
			running("c-app", "sb0", "app", 0, 1), created("c-log", "sb0", "log", 0, 1)),
	}, {
		name: "regular_waits_for_init",
		desc: "an init container runs: regular containers are not looked at",
		pod:  newPod(always, inits(ctr("setup")), ctr("app")),
		obs:  observed(ready, running("c-setup", "sb0", "setup", 0, 1)),
	}, {
		name: "deleting_pod_no_restart",
		desc: "a pod with a deletion timestamp restarts nothing: with nothing running it is done",
		pod: func() *v1.Pod {
			p := newPod(always, nil, ctr("app"))
			deleted := metav1.NewTime(now.Add(-time.Minute))
			p.DeletionTimestamp = &deleted
			return p
		}(),
		obs: observed(ready, exited("c-app", "sb0", "app", 0, 0, 1)),
	}}
}
