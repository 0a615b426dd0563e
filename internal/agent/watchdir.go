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

// watchDirectory applies a directory's pods now and watches it: files
// added, changed or removed later add, replace or remove pods, as the
// kubelet's static pod directory does. A directory already watched is
// only applied again.
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
	results := append(skippedResults(b), a.applyDirLocked(dir, b, nil)...)
	a.startWatchLocked(dir)
	return agentapi.ApplyResponse{Objects: results}, nil
}

// startWatchLocked starts watching dir unless it is watched already.
func (a *Agent) startWatchLocked(dir string) {
	if _, watched := a.watches[dir]; watched || !a.started || a.stopping {
		return
	}
	ctx, cancel := context.WithCancel(a.life)
	a.watches[dir] = cancel
	a.running.Add(1)
	go func() {
		defer a.running.Done()
		manifest.Watch(ctx, dir, a.cfg.WatchInterval, func(b *manifest.Bundle, err error) {
			a.onDirChange(ctx, dir, b, err)
		})
	}()
	a.log.Info("watching manifest directory", "dir", dir)
}

// onDirChange applies what a watched directory holds now. Pods of files
// that have problems keep running as they are; an unreadable directory
// changes nothing.
func (a *Agent) onDirChange(ctx context.Context, dir string, b *manifest.Bundle, err error) {
	if ctx.Err() != nil {
		return
	}
	if b == nil {
		a.log.Warn("watched directory unreadable; its pods are left as they are", "dir", dir, "error", err)
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
	if _, watched := a.watches[dir]; !watched {
		return // unwatched meanwhile
	}
	for _, r := range a.applyDirLocked(dir, b, broken) {
		if r.Kind == agentapi.KindPod && r.Outcome != agentapi.OutcomeUnchanged {
			a.log.Info("watched directory: pod "+r.Outcome, "dir", dir, "pod", r.Namespace+"/"+r.Name, "uid", r.UID)
		}
	}
}

// applyDirLocked applies the directory's bundle and deletes the pods that
// came from the directory but are no longer in it, except those of files
// listed in keep (files with problems).
func (a *Agent) applyDirLocked(dir string, b *manifest.Bundle, keep []string) []agentapi.ApplyResult {
	for _, w := range b.Workloads() {
		// Like the kubelet's static pods: a watched directory runs pods.
		a.log.Warn("watched directory: workloads are applied with 'berth apply -f FILE', not watched; ignored",
			"dir", dir, "file", w.Source, "object", w.Kind+" "+w.Meta.Namespace+"/"+w.Meta.Name)
	}
	results := a.applyBundleLocked(b, dir)
	wanted := map[string]bool{}
	for _, p := range b.Pods {
		wanted[p.Namespace+"/"+p.Name] = true
	}
	for key, uid := range a.current {
		w := a.workers[uid]
		d := w.snapshot()
		if d.watchDir != dir || wanted[key] || d.terminating() || slices.Contains(keep, d.source) {
			continue
		}
		w.beginTermination(nil, "Killing", "its manifest was removed from "+dir)
		results = append(results, agentapi.ApplyResult{Kind: agentapi.KindPod, Namespace: d.pod.Namespace, Name: d.pod.Name, UID: w.uid, Outcome: agentapi.OutcomeDeleted})
	}
	return results
}

// Unwatch stops watching a directory and deletes the pods that came from
// it.
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
	stop, watched := a.watches[dir]
	if !watched && !a.hasPodsFromLocked(dir) {
		return agentapi.DeleteResponse{}, fmt.Errorf("directory %s is not watched: %w", dir, errdefs.ErrNotFound)
	}
	if watched { // else refused at recovery: its pods still go
		stop()
		delete(a.watches, dir)
	}
	resp := agentapi.DeleteResponse{Pods: []agentapi.ApplyResult{}}
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
	return resp, nil
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
