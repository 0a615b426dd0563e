// Package agent is berth's node agent: the kubelet's role on one machine.
// It runs Kubernetes Pods (with the ConfigMaps and Secrets they use) on any
// CRI runtime, through the CRI client interfaces only (package criclient:
// Runtime, Images; CRIClient implements both over a unix socket), and
// implements agentapi.PodService, the agent API that `berth run`, `apply`,
// `delete`, `get`, `describe`, `logs`, `exec` and `debug` use (package agentapi:
// HTTP + JSON on <state>/agent.sock). It reads the time from, and waits
// on, Config.Clock (k8s.io/utils/clock), so tests step a fake one.
//
// It owns:
//
//   - the desired state (desired.go): pods by uid, the pod a name stands
//     for, and the ConfigMaps and Secrets pods refer to. Pods come from
//     Apply (a validated manifest bundle) or from watched directories
//     (watchdir.go, manifest.Watch; only directories no one but root can
//     change, manifest.CheckTrustedDir; a directory's workloads, Services
//     and claims are applied as Apply applies them, marked with
//     berth.dev/watch-dir and deleted when their file has been gone for
//     two scans absenceConfirmAfter apart, never by a scan that finds the
//     directory empty or unreadable, and a StatefulSet so deleted keeps its
//     claims until the directory's objects are deleted, watchdir_objects.go,
//     watchdir_absent.go, controllers_statefulset_claims.go): a pod whose manifest changed has a new
//     uid (package manifest derives it from the file and the content) and
//     replaces the old one; a ConfigMap or Secret change reaches the pods'
//     volumes in place;
//   - one worker per pod uid (worker.go): it sees only syncDeps (deps.go:
//     the runtime, volumes, sources store, probes, back-offs, clock, log,
//     node facts and directories), not the desired-state bookkeeping, so a
//     sync runs in a test without an Agent; workers and watches live in the
//     agent's lifetime context (New makes it, Run ends it), never in a
//     request's. Syncs run one at a time, woken by
//     runtime events (GetContainerEvents, resubscribed with a relist when
//     the stream breaks), the periodic relist (watch.go), probe results,
//     back-off timers and desired-state changes; wake-ups during a sync
//     coalesce into one more sync;
//   - the sync (sync.go): observe the pod in the runtime (observe.go: its
//     sandboxes and containers by the pod uid label, parsed back with
//     podspec), plan (plan.Compute), execute (executor.go, start.go,
//     images.go), hand running containers to the probe manager, remove old
//     containers (gc.go) and compute the status (podstatus.Compute; the
//     IPs of a ready sandbox go into the sources store, so that a completed
//     pod's status keeps them once its sandbox stops, across a restart too);
//   - the status's second writer (status.go), as the kubelet's status
//     manager: a probe result brings started/ready and the Ready conditions
//     up to date at once (podstatus.UpdateProbes), even while a sync is held
//     in a kill for a whole grace period; both writers read the probe
//     manager under the worker's lock, so no result is lost;
//   - the executor, in the kubelet's SyncPod order: kill the pod (containers
//     in plan.StopOrder, preStop hooks within the grace period, then the
//     sandbox) or the unwanted containers; create the sandbox (its log
//     directory first; volumes are set up before, on the first sync and
//     after a sources change); start the next init container or sidecars
//     one by one; start the regular containers. Each start pulls per
//     imagePullPolicy (Always pulls, IfNotPresent pulls when the runtime
//     lacks the image, Never refuses: ErrImageNeverPull; a failed pull is
//     ErrImagePull, then ImagePullBackOff while its back-off runs; the
//     credentials are the pod's imagePullSecrets matching the image, each
//     tried in turn, else the node's credential provider plugins, as in
//     pullcreds.go; each pull is tracked for GET /v1/pulls, package
//     pulltrack, with its layers and bytes when the Images is a
//     criclient.PullWatcher), builds
//     the CRI config with podspec (restart count = highest seen + 1, a
//     termination-message file per instance), creates, starts and runs the
//     postStart hook (its failure kills the container: FailedPostStartHook);
//   - deletion (terminate.go): the pod is marked with a deletion timestamp
//     (now + grace); containers stop regular ones first, then sidecars in
//     reverse order, each after its preStop hook, within what is left of the
//     grace period (at least 2 s for the stop itself, as in the kubelet);
//     then every sandbox is stopped and removed, the volumes torn down, the
//     pod's log directory, agent directory and cgroup removed (podcgroup.go:
//     empty cgroupfs directories rmdir'ed; under a runtime whose cgroup
//     driver is systemd, as CRI RuntimeConfig says at start, pods get slices
//     (podspec.PodSlice) and the empty pod slice is stopped over systemd's
//     private D-Bus socket);
//   - container log rotation (logs.go, package logrotate): every
//     Config.LogRotation interval, the logs of its pods' running containers
//     larger than the max size are renamed and reopened through CRI
//     ReopenContainerLog, older rotated files gzipped and the oldest
//     removed beyond the max files (as kubelet's containerLogMax*
//     settings); gc.go removes a removed container's rotated files with
//     its log;
//   - garbage collection: kubelet's container GC (gc.go: one rule, run
//     after each sync and every GC.ContainerPeriod over every pod,
//     containergc.go) and its image GC (package imagegc, run beside the
//     workers; the images the pods name are kept); ContainerGC and ImageGC
//     give the eviction manager DeleteAllUnusedContainers and
//     DeleteUnusedImages;
//   - events (record.go): kubelet's reasons (Scheduled, Pulling, Pulled,
//     Created, Started, Killing, BackOff, Unhealthy, FailedPostStartHook,
//     FailedPreStopHook, FailedCreatePodSandBox, FailedMount, ...) kept per
//     pod in memory, bounded, repeats counted, for `berth describe`;
//   - the pods' ConfigMaps and Secrets (package sourcestore): kept in a
//     root-only store of the agent's, <RootDir>/sources/<uid>.json, saved
//     before a pod's sandbox is made and whenever they change, removed with
//     the pod; the sandbox carries only their names and keyed digests
//     (podspec.SourceRefs), never their contents; each workload keeps the
//     sources its pod template refers to there too, under its own uid
//     (workload_sources.go), for the pods its controller makes later;
//   - workloads (workloads.go, controllers.go, workloads_api.go): apps/v1
//     Deployments and ReplicaSets, saved in package workloadstore before
//     the agent acts on them, driven by package workload's pure reconcile
//     functions every second and on API changes: ReplicaSets make pods
//     (<rs>-<5 chars>, controller ownerReference) through the same path as
//     applied pods and delete surplus or finished ones; Deployments make,
//     scale and prune ReplicaSets per strategy. Deletion is background: the
//     object is marked (saved), hidden, its dependents stopped, then its
//     record removed; recovery reloads the records with the pods; batch/v1
//     Jobs and CronJobs the same way (controllers_job.go,
//     controllers_cronjob.go, workloads_job.go): a Job makes its pods
//     (<job>-<5 chars>, Indexed <job>-<index>-<5 chars>) and keeps the
//     finished ones until it goes (ttlSecondsAfterFinished deletes it); a
//     CronJob saves the Job of a scheduled time before its own status;
//     DaemonSets (controllers_daemonset.go) make their one pod on this
//     node when it fits the node's labels and taints;
//   - the node (nodestatus.go, capacity.go): its labels, taints and pods
//     capacity (Config.NodeLabels, NodeTaints, MaxPods; package nodefit)
//     on GET /v1/node, and admission of every new pod after the eviction
//     manager's (admitLocked) against the room the admitted pods leave
//     (nodeRoomLocked), then the labels and taints: a pod that does not
//     fit is rejected as kubelet rejects one (OutOfpods, ...); the
//     controllers make their pods in slow-start batches, the agent's lock
//     released between batches (podbatches.go);
//   - StatefulSets and claims (controllers_statefulset*.go,
//     statefulsets_api.go, pvcs.go): a StatefulSet's pass makes the claims
//     of an ordinal (package claims, under <root>/claims) before its pod
//     "<set>-<ordinal>", adopting by name those a set of its name left
//     that its pods use, and records a ControllerRevision per template in
//     the set's record; the claimSet is the volume manager's ClaimResolver
//     (FailedMount until a claim exists, ReadWriteOncePod), keeps which
//     pods mounted which claim until their teardown, and releases a
//     Terminating claim once no pod uses it (pvc-protection);
//   - Services (services*.go): saved in workloadstore with their ClusterIP
//     and nodePorts; every controller pass computes their endpoints
//     (workload.ServiceEndpoints) and brings the host side up to date:
//     the service interface (svcnet, behind the serviceLink seam), the
//     cluster DNS table (clusterdns), the proxy's listeners (svcproxy),
//     and the cluster DNS new ClusterFirst sandboxes get; all of it goes
//     with the last Service;
//   - ephemeral containers (ephemeral.go): UpdateEphemeralContainers, the
//     ephemeralcontainers subresource of the API server, adds them to a
//     running pod (manifest.ValidateEphemeralContainersUpdate: only
//     added, never changed or removed); they are saved in the pod's agent
//     directory (<root>/pods/<uid>/ephemeral-containers.json, since the
//     sandbox's pod annotation cannot change) and read back at recovery;
//     the planner starts each once, never restarting it, in the process
//     namespace of its targetContainerName (CRI NamespaceMode TARGET);
//   - recovery (recover.go): on start the agent lists the sandboxes
//     labelled berth.dev/agent=true and reads each pod back from the newest
//     sandbox's annotations (the pod as applied, the refs to its ConfigMaps
//     and Secrets, which come back from the store — one missing is
//     reported and the pod left as it is until applied again —, the
//     watched directory it came from, which
//     it watches again unless manifest.CheckTrustedDir refuses it: then it
//     is logged and not watched, and its pods are left as they are; so are
//     the directories the stored workloads, Services and claims came from,
//     by their berth.dev/watch-dir annotation). Restart counts come from the container annotations;
//     back-off starts afresh. A sandbox whose pod cannot be read back is
//     removed. The volumes of pods no sandbox carries are torn down, unless
//     the runtime quarantined records (berth's verbose Status): a pod it no
//     longer lists may then still run on them. The relist adopts sandboxes
//     that appear without a worker the same way.
//   - node pressure (pressure.go, with package eviction deciding): every
//     HousekeepingPeriod the signals are measured (Config.Observer), the
//     node conditions updated (GET /v1/node: Node, nodestatus.go), and a
//     threshold to act on first reclaims node-level disk for disk signals
//     (Config.Reclaimer, a NodeReclaimer), then evicts one pod by
//     kubelet's ranking; Apply refuses new pods under pressure as kubelet's
//     admission does. A rejected or evicted pod keeps its worker and a
//     final Failed/Evicted status (failed.go) until deleted.
//
// Deliberate differences from the kubelet:
//
//   - regular containers are started in parallel (the kubelet starts them
//     one after the other); init containers and sidecars stay sequential;
//   - a pod applied again unchanged while it is being deleted is started
//     afresh once its termination completes;
//   - a pod from a watched directory cannot be deleted by name (remove its
//     file, or `berth delete -f DIR` to stop the watch);
//   - a deletion cut short by an agent crash is not resumed: the restarted
//     agent finds the pod in the runtime and runs it again;
//   - ConfigMaps and Secrets live on the node only as the pods and the
//     workloads' templates using them need them: after a restart, each
//     pod's (and workload's) copy in the agent's store is
//     used until the manifests are applied again (a watched directory is
//     reread);
//   - no mirror pods or API server; the node status is served, not posted;
//   - pods are not static pods to the eviction manager: they may be
//     evicted (critical ones, by priority, are not); a failed pod is kept
//     in memory only, so an agent restart forgets it.
package agent
