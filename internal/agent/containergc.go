package agent

import (
	"context"
	"errors"
	"sort"

	"github.com/berth-dev/berth/internal/agent/plan"
)

// ContainerGC is the agent's periodic container garbage collection
// (kubelet's container GC): every ContainerGCPeriod, the dead containers
// of every pod the agent runs beyond its policy go, with their log files,
// and its superseded sandboxes left empty. The pods the agent deleted
// were removed whole by their termination; sandboxes of the agent's that
// no worker owns (a previous agent's) are the relist's: it adopts them or
// removes them, and the collection leaves them alone meanwhile.
type ContainerGC struct{ a *Agent }

// ContainerGC is the agent's container garbage collection, for the
// eviction manager.
func (a *Agent) ContainerGC() *ContainerGC { return &ContainerGC{a: a} }

// DeleteAllUnusedContainers collects now: every dead container the policy
// lets go is removed. Unlike kubelet's, it keeps the newest instance of
// each container of a finished pod: the agent reads the pod's status
// from it.
func (g *ContainerGC) DeleteAllUnusedContainers(ctx context.Context) error {
	return g.a.collectContainers(ctx)
}

// containerGCLoop collects containers every ContainerGCPeriod.
func (a *Agent) containerGCLoop(ctx context.Context) {
	ticker := a.deps.clock.NewTicker(a.cfg.GC.ContainerPeriod)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
		if err := a.collectContainers(ctx); err != nil && ctx.Err() == nil {
			a.log.Warn("container garbage collection", "error", err)
		}
	}
}

// podGC is one pod's share of a collection.
type podGC struct {
	w      *podWorker
	obs    observation
	remove []plan.Container
	spare  []plan.Container
}

// collectContainers is one collection over every pod that is not being
// deleted (its termination removes everything).
func (a *Agent) collectContainers(ctx context.Context) error {
	policy := a.deps.containerGC
	now := a.deps.clock.Now()
	var pods []*podGC
	var errs []error
	for _, w := range a.workerList() {
		if w.snapshot().terminating() {
			continue
		}
		obs, err := a.deps.observe(ctx, w.uid)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		remove, spare := containerGC(obs.plan, policy, now)
		pods = append(pods, &podGC{w: w, obs: obs, remove: remove, spare: spare})
	}
	if policy.MaxContainers >= 0 {
		enforceMaxContainers(pods, policy.MaxContainers)
	}
	for _, p := range pods {
		p.w.removeContainers(ctx, p.obs, p.remove)
	}
	return errors.Join(errs...)
}

// enforceMaxContainers moves spare containers to the removals until at
// most limit stay on the node, as kubelet does: each (pod, container
// name) keeps an equal share (at least one), then the oldest go.
func enforceMaxContainers(pods []*podGC, limit int) {
	type unit struct{ pod, name string }
	units := map[unit]int{}
	total := 0
	for _, p := range pods {
		for _, c := range p.spare {
			units[unit{p.w.uid, c.Name}]++
			total++
		}
	}
	if total <= limit {
		return
	}
	share := max(limit/len(units), 1)
	type left struct {
		p *podGC
		c plan.Container
	}
	var kept []left
	for _, p := range pods {
		seen := map[string]int{}
		for _, c := range p.spare { // newest first within each name
			if seen[c.Name]++; seen[c.Name] > share {
				p.remove = append(p.remove, c)
				continue
			}
			kept = append(kept, left{p, c})
		}
	}
	if len(kept) <= limit {
		return
	}
	sort.SliceStable(kept, func(i, j int) bool { return kept[i].c.CreatedAt.Before(kept[j].c.CreatedAt) })
	for _, k := range kept[:len(kept)-limit] {
		k.p.remove = append(k.p.remove, k.c)
	}
}
