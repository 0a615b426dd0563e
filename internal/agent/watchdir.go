package agent

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/manifest"
	"github.com/berth-dev/berth/internal/errdefs"
)

// watchDirectory applies a directory's objects now and watches it: files
// added, changed or removed later add, update or remove their objects, as
// the kubelet's static pod directory does for pods. A directory already
// watched is only applied again. The watch starts even when some objects
// could not be applied (the error says which); their files are retried
// when they change.
func (a *Agent) watchDirectory(dir string) (agentapi.ApplyResponse, error) {
	if !filepath.IsAbs(dir) {
		return agentapi.ApplyResponse{}, fmt.Errorf("watchDir %q: want an absolute path: %w", dir, errdefs.ErrInvalidArgument)
	}
	// The real path is the one the watch keys on and rereads;
	// LoadTrustedDir checks that no one but root can change it.
	real, err := filepath.EvalSymlinks(filepath.Clean(dir))
	var b *manifest.Bundle
	if err == nil {
		dir = real
		b, err = manifest.LoadTrustedDir(dir)
	}
	if err == nil {
		err = b.Validate()
	}
	if err != nil {
		return agentapi.ApplyResponse{}, fmt.Errorf("watch %s: %w: %w", dir, errdefs.ErrInvalidArgument, err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	results, err := a.applyDirLocked(dir, b, nil)
	a.startWatchLocked(dir)
	if err != nil {
		err = fmt.Errorf("watch %s: %w", dir, err)
	}
	return agentapi.ApplyResponse{Objects: append(skippedResults(b), results...)}, err
}

// startWatchLocked starts watching dir unless it is watched already.
func (a *Agent) startWatchLocked(dir string) {
	if _, watched := a.watches[dir]; watched || !a.started || a.stopping {
		return
	}
	ctx, cancel := context.WithCancel(a.life)
	w := &dirWatch{stop: cancel, recheck: make(chan struct{}, 1)}
	a.watches[dir] = w
	a.running.Add(1)
	go func() {
		defer a.running.Done()
		manifest.Watch(ctx, dir, a.cfg.WatchInterval, w.recheck, func(b *manifest.Bundle, err error) {
			a.onDirChange(ctx, dir, b, err)
		})
	}()
	a.log.Info("watching manifest directory", "dir", dir)
}

// onDirChange applies what a watched directory holds now. Pods of files
// that have problems keep running as they are; an unreadable directory
// changes nothing (a Warning event says so when objects came from it).
func (a *Agent) onDirChange(ctx context.Context, dir string, b *manifest.Bundle, err error) {
	if ctx.Err() != nil {
		return
	}
	if b == nil {
		a.onDirUnreadable(ctx, dir, err)
		return
	}
	var broken []string
	if err != nil {
		a.log.Warn("watched directory: files left out", "dir", dir, "error", err)
		var invalid *manifest.InvalidError
		if errors.As(err, &invalid) {
			broken = invalid.Sources()
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, watched := a.watches[dir]; !watched || ctx.Err() != nil {
		return // unwatched meanwhile (and maybe watched again: the new watch scans for itself)
	}
	results, err := a.applyDirLocked(dir, b, broken)
	if err != nil {
		a.log.Warn("watched directory: objects left as they are", "dir", dir, "error", err)
	}
	for _, r := range results {
		if r.Message != "" && (r.Outcome == agentapi.OutcomeCreated || r.Outcome == agentapi.OutcomeConfigured) {
			a.log.Warn("watched directory: "+r.Kind+": "+r.Message, "dir", dir, "object", r.Namespace+"/"+r.Name)
		}
		if r.Outcome != agentapi.OutcomeUnchanged && r.Outcome != agentapi.OutcomeSkipped {
			a.log.Info("watched directory: "+r.Kind+" "+r.Outcome, "dir", dir, "object", r.Namespace+"/"+r.Name, "uid", r.UID)
		}
	}
}

// onDirUnreadable logs a scan that could not read dir, and records a
// Warning event when objects came from it: they are left as they are.
func (a *Agent) onDirUnreadable(ctx context.Context, dir string, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, watched := a.watches[dir]; !watched || ctx.Err() != nil {
		return
	}
	delete(a.gone, dir) // what is missing is counted again from a scan that reads it
	if held := a.heldObjectsLocked(dir); held > 0 {
		a.dirWarning(dir, reasonWatchedDirectoryUnreadable, fmt.Sprintf(
			"Watched directory %s cannot be read (%v): nothing of the %d objects that came from it is deleted", dir, err, held))
		return
	}
	a.log.Warn("watched directory unreadable", "dir", dir, "error", err)
}

// applyDirLocked applies the directory's bundle as 'berth apply -f' does,
// its workloads, Services and claims marked as the directory's
// (markFromDir), and deletes what came from the directory but has been
// missing from it since a scan absenceConfirmAfter ago or more, except
// what files listed in keep (files with problems) hold. A scan that finds
// no object while objects came from the directory deletes nothing
// (refuseEmptyScanLocked). A file whose objects the agent refuses (an
// immutable field changed) is left out as those are, and named in the
// error; when applying fails, nothing but pods is deleted.
func (a *Agent) applyDirLocked(dir string, b *manifest.Bundle, keep []string) ([]agentapi.ApplyResult, error) {
	markFromDir(b, dir)
	if a.refuseEmptyScanLocked(dir, b) {
		return nil, nil
	}
	refused := a.checkWorkloadUpdatesLocked(b)
	if invalid := (*manifest.InvalidError)(nil); errors.As(refused, &invalid) {
		b = b.Without(invalid.Sources())
		keep = append(slices.Clone(keep), invalid.Sources()...)
	}
	results, err := a.applyObjectsLocked(b, dir)
	gone := a.beginAbsenceScanLocked(dir)
	results = append(results, a.prunePodsLocked(dir, b, keep, gone)...)
	if err == nil { // else workloads are not noted missing: their wait restarts at each scan, so nothing is deleted (safe)
		results = append(results, a.pruneDirLocked(dir, b, keep, gone)...)
	}
	a.endAbsenceScanLocked(dir, gone)
	return results, errors.Join(refused, err)
}

// prunePodsLocked deletes the pods that came from the directory but have
// been missing from it long enough (gone), except those of files listed
// in keep.
func (a *Agent) prunePodsLocked(dir string, b *manifest.Bundle, keep []string, gone *absenceScan) []agentapi.ApplyResult {
	var results []agentapi.ApplyResult
	wanted := map[string]bool{}
	for _, p := range b.Pods {
		wanted[p.Namespace+"/"+p.Name] = true
	}
	for key, uid := range a.current {
		w := a.workers[uid]
		d := w.snapshot()
		if d.watchDir != dir || wanted[key] || d.terminating() || slices.Contains(keep, d.source) ||
			!gone.confirmed(agentapi.KindPod, d.pod.Namespace, d.pod.Name) {
			continue
		}
		w.beginTermination(nil, "Killing", "its manifest was removed from "+dir)
		results = append(results, agentapi.ApplyResult{Kind: agentapi.KindPod, Namespace: d.pod.Namespace, Name: d.pod.Name, UID: w.uid, Outcome: agentapi.OutcomeDeleted})
	}
	return results
}

// Unwatch stops watching a directory and deletes the pods, workloads,
// Services and claims that came from it (a workload's pods are in the
// response's pods too). The claims of StatefulSets a scan of it deleted
// and kept go as those sets' whenDeleted says (releaseKeptLocked).
func (a *Agent) Unwatch(_ context.Context, dir string) (agentapi.DeleteResponse, error) {
	if err := a.checkReady(); err != nil {
		return agentapi.DeleteResponse{}, err
	}
	dir = filepath.Clean(dir)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real // the watch keys on the real path
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	w, watched := a.watches[dir]
	objects, kept := a.dirObjectsLocked(dir), a.keptByScanLocked(dir)
	if !watched && !a.hasPodsFromLocked(dir) && len(objects)+len(kept.sets)+len(kept.claims) == 0 {
		return agentapi.DeleteResponse{}, fmt.Errorf("directory %s is not watched: %w", dir, errdefs.ErrNotFound)
	}
	if watched { // else refused at recovery: what came from it still goes
		w.stop()
		delete(a.watches, dir)
	}
	delete(a.gone, dir)
	resp := agentapi.DeleteResponse{Pods: []agentapi.ApplyResult{}}
	var errs []error
	for _, o := range objects {
		r, err := a.deleteDirObjectLocked(o, false)
		if err != nil {
			errs = append(errs, fmt.Errorf("unwatch %s: %s %s/%s: %w", dir, o.kind, o.namespace, o.name, err))
			continue
		}
		resp.Deleted = append(resp.Deleted, r.Deleted...)
		resp.Pods = append(resp.Pods, r.Pods...)
	}
	released, err := a.releaseKeptLocked(kept) // claims a scan kept after deleting their set
	if err != nil {
		errs = append(errs, fmt.Errorf("unwatch %s: %w", dir, err))
	}
	resp.Deleted = append(resp.Deleted, released...)
	for _, w := range a.workers {
		d := w.snapshot()
		if d.watchDir != dir {
			continue
		}
		w.setDesired(func(d *desiredPod) { d.watchDir = "" })
		if !d.terminating() {
			w.beginTermination(nil, "Killing", "the watch of "+dir+" stopped")
		}
		resp.Pods = append(resp.Pods, agentapi.ApplyResult{Kind: agentapi.KindPod, Namespace: d.pod.Namespace, Name: d.pod.Name, UID: w.uid, Outcome: agentapi.OutcomeDeleted})
	}
	return resp, errors.Join(errs...)
}

// hasPodsFromLocked reports whether a pod came from the directory.
func (a *Agent) hasPodsFromLocked(dir string) bool {
	for _, w := range a.workers {
		if w.snapshot().watchDir == dir {
			return true
		}
	}
	return false
}
