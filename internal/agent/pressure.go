package agent

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/eviction"
	"github.com/berth-dev/berth/internal/agent/imagegc"
	"github.com/berth-dev/berth/internal/agent/podspec"
)

// NodeReclaimer frees node-level disk before pods are evicted for a disk
// signal, as kubelet's image and container garbage collectors do.
type NodeReclaimer interface {
	DeleteUnusedImages(ctx context.Context) (freed int64, err error)
	DeleteAllUnusedContainers(ctx context.Context) error
}

// SignalObserver measures the node's eviction signals
// (eviction.HostObserver on the host).
type SignalObserver interface {
	Observe(ctx context.Context) (eviction.Observations, error)
}

// DefaultHousekeepingPeriod is how often the eviction signals are
// measured (kubelet's eviction monitoring period).
const DefaultHousekeepingPeriod = 10 * time.Second

// pressure is the agent's eviction manager state: the thresholds' manager,
// what measures, what reclaims, the node's conditions and its events.
type pressure struct {
	manager   *eviction.Manager
	observer  SignalObserver
	reclaimer NodeReclaimer
	events    *eventLog

	mu         sync.Mutex
	conditions []v1.NodeCondition

	// measured is closed after the first housekeeping pass: the
	// controllers wait for it, so that after a restart the scheduler sees
	// the node's pressure before it places their pods.
	measured     chan struct{}
	measuredOnce sync.Once
}

func newPressure(cfg Config) *pressure {
	return &pressure{
		manager: eviction.NewManager(cfg.Eviction), observer: cfg.Observer, reclaimer: cfg.Reclaimer,
		events: newEventLog(cfg.Clock.Now), measured: make(chan struct{}),
	}
}

// hostObserver measures this host: nodefs is RootDir's filesystem,
// imagefs the mountpoint the runtime's ImageFsInfo names.
func hostObserver(cfg Config) eviction.HostObserver {
	h := eviction.HostObserver{NodeFsPath: cfg.RootDir}
	if cfg.Stats != nil {
		h.ImageFsPath = func(ctx context.Context) (string, error) {
			resp, err := cfg.Stats.ImageFsInfo(ctx)
			if err != nil {
				return "", err
			}
			for _, fs := range resp.GetImageFilesystems() {
				if mp := fs.GetFsId().GetMountpoint(); mp != "" {
					return mp, nil
				}
			}
			return "", errors.New("the runtime names no image filesystem")
		}
	}
	return h
}

// gcReclaimer is the agent's own garbage collection, what the eviction
// manager reclaims node-level disk with, as kubelet's does.
type gcReclaimer struct {
	*imagegc.Manager
	*ContainerGC
}

// housekeepingLoop measures the signals now and every period until ctx
// ends.
func (a *Agent) housekeepingLoop(ctx context.Context) {
	ticker := a.deps.clock.NewTicker(a.cfg.HousekeepingPeriod)
	defer ticker.Stop()
	for {
		a.housekeep(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
	}
}

// housekeep is one pass of kubelet's eviction manager: observe, update
// the node conditions, and when a threshold is to be acted on, reclaim
// node-level disk first (disk signals), then evict one pod.
func (a *Agent) housekeep(ctx context.Context) {
	p := a.pressure
	obs, err := p.observer.Observe(ctx)
	if err != nil {
		a.log.Debug("eviction manager: signals", "error", err)
	}
	now := a.deps.clock.Now()
	act := p.manager.Update(obs, now)
	a.updateNodeConditions(now)
	p.measuredOnce.Do(func() { close(p.measured) })
	if len(act) == 0 || ctx.Err() != nil || a.evictionUnderWay() {
		return
	}
	t := act[0]
	a.log.Warn("eviction manager: threshold met", "threshold", t.String(), "available", obs[t.Signal].Available)
	a.nodeEvent(agentapi.EventWarning, "EvictionThresholdMet", fmt.Sprintf("Attempting to reclaim %s", t.Signal.Resource()))
	if t.Signal.IsDisk() {
		relieved, fresh := a.reclaimNode(ctx, t)
		if relieved {
			return
		}
		obs = fresh
	}
	a.evictOne(ctx, t, obs)
}

// reclaimNode removes unused containers and images, then measures again:
// relieved when t is no longer met.
func (a *Agent) reclaimNode(ctx context.Context, t eviction.Threshold) (bool, eviction.Observations) {
	r := a.pressure.reclaimer
	if err := r.DeleteAllUnusedContainers(ctx); err != nil {
		a.log.Warn("eviction manager: delete unused containers", "error", err)
	}
	freed, err := r.DeleteUnusedImages(ctx)
	if err != nil {
		a.log.Warn("eviction manager: delete unused images", "error", err)
	}
	obs, err := a.pressure.observer.Observe(ctx)
	if err != nil {
		a.log.Debug("eviction manager: signals after reclaim", "error", err)
	}
	if !eviction.StillMet(t, obs) {
		a.log.Info("eviction manager: node-level reclaim relieved the pressure", "threshold", t.String(), "imagesFreed", freed)
		return true, obs
	}
	return false, obs
}

// evictionUnderWay reports whether a pod evicted earlier is still being
// stopped: kubelet waits for it before evicting another.
func (a *Agent) evictionUnderWay() bool {
	for _, w := range a.workerList() {
		if failed, done := w.failedState(); failed && !done {
			return true
		}
	}
	return false
}

// evictOne evicts the pod ranked first for t among the pods that run
// (not deleted, not failed, not critical).
func (a *Agent) evictOne(ctx context.Context, t eviction.Threshold, obs eviction.Observations) {
	workers := map[string]*podWorker{}
	var cands []eviction.Candidate
	usage := a.podUsage(ctx)
	for _, w := range a.workerList() {
		d := w.snapshot()
		if d.terminating() || d.failure != nil || d.unscheduled != nil || eviction.IsCritical(d.pod) {
			continue
		}
		u, known := usage[w.uid]
		workers[w.uid] = w
		cands = append(cands, eviction.Candidate{Pod: d.pod, Usage: u, Known: known})
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].Pod.UID < cands[j].Pod.UID }) // a stable start for Rank
	eviction.Rank(t.Signal, cands)
	for _, c := range cands {
		w := workers[string(c.Pod.UID)]
		message := eviction.Message(t, obs, c)
		grace := a.pressure.manager.EvictionGracePeriod(t, c.Pod)
		if !w.fail(podFailure{reason: eviction.Reason, message: message, at: a.deps.clock.Now(), grace: grace}) {
			continue
		}
		w.record(agentapi.EventWarning, eviction.Reason, "", message)
		a.log.Warn("eviction manager: pod evicted", "pod", w.key, "threshold", t.String(), "grace", grace)
		return
	}
	a.log.Warn("eviction manager: no pod to evict", "threshold", t.String())
}

// podUsage sums the runtime's container stats per pod uid.
func (a *Agent) podUsage(ctx context.Context) map[string]eviction.PodUsage {
	out := map[string]eviction.PodUsage{}
	if a.cfg.Stats == nil {
		return out
	}
	stats, err := a.cfg.Stats.ListContainerStats(ctx, map[string]string{podspec.LabelAgent: "true"})
	if err != nil {
		a.log.Warn("eviction manager: container stats", "error", err)
		return out
	}
	for _, st := range stats {
		labels := st.GetAttributes().GetLabels()
		uid := labels[podspec.LabelPodUID]
		if uid == "" {
			continue
		}
		c := eviction.ContainerUsage{
			Name:   labels[podspec.LabelContainerName],
			Memory: clampInt64(st.GetMemory().GetWorkingSetBytes().GetValue()),
			Disk:   clampInt64(st.GetWritableLayer().GetUsedBytes().GetValue()),
		}
		u := out[uid]
		u.Memory += c.Memory
		u.Disk += c.Disk
		u.Inodes += clampInt64(st.GetWritableLayer().GetInodesUsed().GetValue())
		u.Containers = append(u.Containers, c)
		out[uid] = u
	}
	return out
}

func clampInt64(n uint64) int64 {
	if n > 1<<62 {
		return 1 << 62
	}
	return int64(n)
}

// updateNodeConditions recomputes the node's conditions; a change of
// status is a node event, as kubelet records it ("NodeHasDiskPressure").
func (a *Agent) updateNodeConditions(now time.Time) {
	p := a.pressure
	notReady := ""
	if err := a.checkReady(); err != nil {
		notReady = err.Error()
	}
	p.mu.Lock()
	prev := p.conditions
	next := eviction.NodeConditions(prev, p.manager.Conditions(), notReady, now)
	p.conditions = next
	p.mu.Unlock()
	for _, c := range next {
		changed := prev == nil
		for _, old := range prev {
			if old.Type == c.Type && old.Status != c.Status {
				changed = true
			}
		}
		if changed {
			a.wakeControllers() // pods waiting for the scheduler may fit now
			status := "Node" + strings.TrimPrefix(c.Reason, "Kubelet")
			a.nodeEvent(agentapi.EventNormal, status, fmt.Sprintf("Node %s status is now: %s", a.cfg.NodeName, status))
		}
	}
}

// nodeEvent records an event about the node.
func (a *Agent) nodeEvent(typ, reason, message string) {
	if count := a.pressure.events.record(typ, reason, "", message); count == 1 {
		a.log.Info(reason, "node", a.cfg.NodeName, "message", message)
	}
}
