package plan

import (
	"time"
)

func initScenarios() []scenario {
	ready := sandboxes(sb("sb0", 0, true))
	return []scenario{{
		name: "init_first_pending",
		desc: "sandbox ready, no init container ran yet: start the first",
		pod:  newPod(always, inits(ctr("setup"), ctr("migrate")), ctr("app")),
		obs:  observed(ready),
	}, {
		name: "init_running",
		desc: "the first init container runs: wait for it",
		pod:  newPod(always, inits(ctr("setup"), ctr("migrate")), ctr("app")),
		obs:  observed(ready, running("c-setup", "sb0", "setup", 0, 1)),
	}, {
		name: "init_next",
		desc: "the first init container exited 0: start the second",
		pod:  newPod(always, inits(ctr("setup"), ctr("migrate")), ctr("app")),
		obs:  observed(ready, exited("c-setup", "sb0", "setup", 0, 0, 1)),
	}, {
		name: "init_done_start_regulars",
		desc: "every init container exited 0: start every regular container",
		pod:  newPod(always, inits(ctr("setup"), ctr("migrate")), ctr("app"), ctr("log")),
		obs: observed(ready,
			exited("c-setup", "sb0", "setup", 0, 0, 1), exited("c-migrate", "sb0", "migrate", 0, 0, 2)),
	}, {
		name: "init_failed_always",
		desc: "an init container failed under Always: restart it (restartCount 1); regular containers wait",
		pod:  newPod(always, inits(ctr("setup"), ctr("migrate")), ctr("app")),
		obs: observed(ready,
			exited("c-setup", "sb0", "setup", 0, 0, 1), exited("c-migrate", "sb0", "migrate", 1, 0, 2)),
	}, {
		name: "init_failed_onfailure",
		desc: "an init container failed under OnFailure: restart it",
		pod:  newPod(onFailure, inits(ctr("setup")), ctr("app")),
		obs:  observed(ready, exited("c-setup-1", "sb0", "setup", 3, 1, 2), exited("c-setup-0", "sb0", "setup", 3, 0, 1)),
	}, {
		name: "init_failed_never",
		desc: "an init container failed under Never: the pod is done (Failed); kill everything, no restart",
		pod:  newPod(never, inits(side("proxy"), ctr("setup")), ctr("app")),
		obs: observed(ready,
			running("c-proxy", "sb0", "proxy", 0, 1), exited("c-setup", "sb0", "setup", 1, 0, 2)),
	}, {
		name: "init_oomkilled_never",
		desc: "an init container was OOM-killed (exit 0 reported) under Never: it failed, the pod is done",
		pod:  newPod(never, inits(ctr("setup")), ctr("app")),
		obs:  observed(ready, oomKilled(exited("c-setup", "sb0", "setup", 0, 0, 1))),
	}, {
		name:    "init_failed_backoff",
		desc:    "an init container failed 5 s ago and its 10 s back-off runs: wait",
		pod:     newPod(always, inits(ctr("setup")), ctr("app")),
		obs:     observed(ready, finishedAt(exited("c-setup", "sb0", "setup", 1, 0, 1), now.Add(-5*time.Second))),
		backoff: map[string]time.Time{"setup": now.Add(5 * time.Second)},
	}, {
		name: "init_unknown_onfailure",
		desc: "an init container is in unknown state under OnFailure: kill it and start it again",
		pod:  newPod(onFailure, inits(ctr("setup")), ctr("app")),
		obs:  observed(ready, unknown("c-setup", "sb0", "setup", 0, 1)),
	}, {
		name: "init_unknown_never",
		desc: "an init container is in unknown state under Never: it counts as failed, the pod is done",
		pod:  newPod(never, inits(ctr("setup")), ctr("app")),
		obs:  observed(ready, unknown("c-setup", "sb0", "setup", 0, 1)),
	}, {
		name: "init_created_never_started",
		desc: "the agent restarted between create and start of an init container: remove it, create it again",
		pod:  newPod(always, inits(ctr("setup")), ctr("app")),
		obs:  observed(ready, created("c-setup", "sb0", "setup", 0, 1)),
	}, {
		name: "init_removed_after_initialization",
		desc: "regular containers run and the init instances were removed: nothing to rerun",
		pod:  newPod(always, inits(ctr("setup")), ctr("app")),
		obs:  observed(ready, running("c-app", "sb0", "app", 0, 2)),
	}, {
		name: "sidecar_not_started",
		desc: "the first init container is a sidecar that never ran: start it",
		pod:  newPod(always, inits(side("proxy"), ctr("setup")), ctr("app")),
		obs:  observed(ready),
	}, {
		name: "sidecar_started_next_init",
		desc: "the sidecar runs (no startup probe): start the next init container",
		pod:  newPod(always, inits(side("proxy"), ctr("setup")), ctr("app")),
		obs:  observed(ready, running("c-proxy", "sb0", "proxy", 0, 1)),
	}, {
		name: "sidecar_started_init_running",
		desc: "the sidecar runs and the next init container runs too: nothing to start twice",
		pod:  newPod(always, inits(side("proxy"), ctr("setup")), ctr("app")),
		obs: observed(ready,
			running("c-proxy", "sb0", "proxy", 0, 1), running("c-setup", "sb0", "setup", 0, 2)),
	}, {
		name: "sidecar_startup_pending",
		desc: "the sidecar runs but its startup probe has not succeeded: the next init container waits",
		pod:  newPod(always, inits(withStartupProbe(side("proxy")), ctr("setup")), ctr("app")),
		obs:  observed(ready, running("c-proxy", "sb0", "proxy", 0, 1)),
	}, {
		name:   "sidecar_startup_succeeded",
		desc:   "the sidecar's startup probe succeeded: start the next init container",
		pod:    newPod(always, inits(withStartupProbe(side("proxy")), ctr("setup")), ctr("app")),
		obs:    observed(ready, running("c-proxy", "sb0", "proxy", 0, 1)),
		probes: map[string]ProbeStatus{"proxy": {ContainerID: "c-proxy", Started: true}},
	}, {
		name:   "sidecar_startup_failed",
		desc:   "the sidecar's startup probe failed: kill and restart it",
		pod:    newPod(always, inits(withStartupProbe(side("proxy")), ctr("setup")), ctr("app")),
		obs:    observed(ready, running("c-proxy", "sb0", "proxy", 0, 1)),
		probes: map[string]ProbeStatus{"proxy": {ContainerID: "c-proxy", StartupFailed: true}},
	}, {
		name: "sidecar_last_started_regulars",
		desc: "the last init container is a running sidecar: the pod is initialized, start the regular containers",
		pod:  newPod(always, inits(ctr("setup"), side("proxy")), ctr("app")),
		obs: observed(ready,
			exited("c-setup", "sb0", "setup", 0, 0, 1), running("c-proxy", "sb0", "proxy", 0, 2)),
	}, {
		name: "sidecar_crashed_under_never",
		desc: "a sidecar exited while the regular container runs under Never: sidecars restart whatever the policy",
		pod:  newPod(never, inits(side("proxy")), ctr("app")),
		obs: observed(ready,
			exited("c-proxy", "sb0", "proxy", 1, 0, 1), running("c-app", "sb0", "app", 0, 2)),
	}, {
		name: "sidecar_crashed_backoff",
		desc: "a sidecar crashed again 10 s ago; its back-off (40 s) has 30 s left: wait",
		pod:  newPod(always, inits(side("proxy")), ctr("app")),
		obs: observed(ready,
			finishedAt(exited("c-proxy-2", "sb0", "proxy", 1, 2, 5), now.Add(-10*time.Second)),
			exited("c-proxy-1", "sb0", "proxy", 1, 1, 3), running("c-app", "sb0", "app", 0, 2)),
		backoff: map[string]time.Time{"proxy": now.Add(30 * time.Second)},
	}, {
		name: "sidecar_removed_restarted",
		desc: "after initialization a sidecar's instance is gone: start it again",
		pod:  newPod(always, inits(side("proxy"), ctr("setup")), ctr("app")),
		obs: observed(ready,
			exited("c-setup", "sb0", "setup", 0, 0, 2), running("c-app", "sb0", "app", 0, 3)),
	}, {
		name: "sidecar_spec_changed",
		desc: "a running sidecar's spec hash changed: kill and restart it",
		pod:  newPod(always, inits(side("proxy")), ctr("app")),
		obs: observed(ready,
			withHash(running("c-proxy", "sb0", "proxy", 0, 1), "h-example/proxy:0"), running("c-app", "sb0", "app", 0, 2)),
	}, {
		name: "sidecar_liveness_failed",
		desc: "a running sidecar failed its liveness probe: kill and restart it",
		pod:  newPod(always, inits(withLivenessProbe(side("proxy"))), ctr("app")),
		obs: observed(ready,
			running("c-proxy", "sb0", "proxy", 0, 1), running("c-app", "sb0", "app", 0, 2)),
		probes: map[string]ProbeStatus{"proxy": {ContainerID: "c-proxy", LivenessFailed: true}},
	}, {
		name: "sidecars_killed_when_regulars_done_never",
		desc: "under Never the only regular container exited 0: the pod is done, both sidecars are killed",
		pod:  newPod(never, inits(side("proxy"), side("metrics")), ctr("job")),
		obs: observed(ready,
			running("c-proxy", "sb0", "proxy", 0, 1), running("c-metrics", "sb0", "metrics", 0, 1),
			exited("c-job", "sb0", "job", 0, 0, 2)),
	}, {
		name: "sidecars_kept_while_regulars_run_onfailure",
		desc: "under OnFailure one job succeeded and one still runs: sidecars are kept",
		pod:  newPod(onFailure, inits(side("proxy")), ctr("job-a"), ctr("job-b")),
		obs: observed(ready,
			running("c-proxy", "sb0", "proxy", 0, 1),
			exited("c-job-a", "sb0", "job-a", 0, 0, 2), running("c-job-b", "sb0", "job-b", 0, 2)),
	}}
}
