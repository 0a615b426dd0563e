package agent

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/nodefit"
	"github.com/berth-dev/berth/internal/agent/podspec"
	"github.com/berth-dev/berth/internal/agent/podstatus"
	"github.com/berth-dev/berth/internal/agent/pulltrack"
)

// podWorker owns one pod uid: one goroutine runs its syncs one at a time.
// Anything that may change what the pod needs (a runtime event, a relist,
// a probe result, a back-off timer, a new desired spec) calls trigger;
// triggers that arrive during a sync coalesce into one more sync.
type podWorker struct {
	deps   *syncDeps
	uid    string
	key    string // namespace/name: fixed for a uid, read without mu
	wake   chan struct{}
	events *eventLog
	pulls  *pulltrack.Pulls // its image pulls, for GET /v1/pulls
	done   chan struct{}    // closed when the goroutine has returned
	// requests is what the pod takes of the node once admitted (its
	// resources are fixed for its uid): counted without recomputing it
	// for every admission (capacity.go).
	requests nodefit.Resources
	// seq is the order the agent took the pod in (startWorkerLocked): the
	// scheduler queue's order among pods made at the same time.
	seq uint64

	mu      sync.Mutex
	desired desiredPod
	status  v1.PodStatus // computed at the end of the last sync
	synced  bool         // status holds a computed status
	// waiting holds why a container could not be started in the last
	// sync (ErrImagePull, CreateContainerError, CrashLoopBackOff, ...).
	waiting map[string]podstatus.Waiting
	// volumesVersion is the desired sourcesVersion the volumes were last
	// set up for (-1: not set up).
	volumesVersion int
	volumePaths    podspec.VolumePaths
	probed         map[string]bool // container ids handed to the probe manager
	// keptIPs are the pod IPs in the agent's store: a status computed
	// before the first sync starts from them.
	keptIPs  []string
	logPaths map[string]string // container id → log file, from the last sync
	// failedDone: the pod failed (desired.failure) and nothing of it is
	// left in the runtime; status is final.
	failedDone bool
	// cancelSync cancels the sync under way: a deletion does not wait for
	// a pull or a start of the pod it deletes.
	cancelSync context.CancelFunc
}

// idleResync is how often a worker syncs when nothing wakes it, on top of
// the relist, so that a lost wake-up costs little.
const idleResync = time.Minute

func newPodWorker(deps *syncDeps, desired desiredPod) *podWorker {
	return &podWorker{
		deps: deps, uid: string(desired.pod.UID), key: desired.key(), desired: desired,
		wake: make(chan struct{}, 1), done: make(chan struct{}),
		events:         newEventLog(deps.clock.Now),
		pulls:          pulltrack.New(deps.clock),
		volumesVersion: -1,
		waiting:        map[string]podstatus.Waiting{},
		keptIPs:        desired.podIPs,
		requests:       nodefit.Requests(desired.pod),
	}
}

// trigger asks for a sync soon.
func (w *podWorker) trigger() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run syncs until the pod is gone (terminated and removed: it reports
// true, and the caller forgets the worker) or ctx ends.
func (w *podWorker) run(ctx context.Context) bool {
	defer close(w.done)
	timer := w.deps.clock.NewTimer(idleResync)
	defer timer.Stop()
	w.trigger() // the first sync runs at once, on a fake clock too
	for {
		select {
		case <-ctx.Done():
			return false
		case <-w.wake:
		case <-timer.C():
		}
		syncCtx, cancel := context.WithCancel(ctx)
		w.mu.Lock()
		w.cancelSync = cancel
		w.mu.Unlock()
		next, finished := w.sync(syncCtx)
		cancel()
		if finished {
			return true
		}
		if next <= 0 || next > idleResync {
			next = idleResync
		}
		if !timer.Stop() {
			select {
			case <-timer.C():
			default:
			}
		}
		timer.Reset(next)
	}
}

// snapshot returns a copy of the desired state for one sync.
func (w *podWorker) snapshot() desiredPod {
	w.mu.Lock()
	defer w.mu.Unlock()
	d := w.desired
	d.pod = d.pod.DeepCopy()
	return d
}

// setDesired replaces the desired state (a new version of the sources, or
// a deletion) and wakes the worker.
func (w *podWorker) setDesired(update func(*desiredPod)) {
	w.mu.Lock()
	update(&w.desired)
	w.mu.Unlock()
	w.trigger()
}

// record adds an event about the pod (object "" ) or one of its
// containers (object "spec.containers{name}").
func (w *podWorker) record(typ, reason, object, message string) {
	count := w.events.record(typ, reason, object, message)
	switch {
	case count > 1:
		w.deps.log.Debug(reason, "pod", w.key, "object", object, "message", message, "count", count)
	case typ == agentapi.EventWarning:
		w.deps.log.Warn(reason, "pod", w.key, "object", object, "message", message)
	default:
		w.deps.log.Info(reason, "pod", w.key, "object", object, "message", message)
	}
}

func (w *podWorker) setWaiting(name string, r podstatus.Waiting) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.waiting[name] = r
}

func (w *podWorker) clearWaiting(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.waiting, name)
}
