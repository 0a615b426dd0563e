package agent

import (
	"context"
	"fmt"
	"time"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/manifest"
)

// absenceConfirmAfter is how long an object must stay missing from its
// watched directory before a scan deletes it: the first scan that finds
// its file gone only notes it, and a later scan at least this long after
// (on the agent's clock) deletes it if it is still gone. An editor's save,
// a checkout, a file renamed away and back or read half written leaves an
// object missing for less; a few seconds, as the kubelet's few-second
// waits, leaves a removed file's objects running that much longer.
const absenceConfirmAfter = 5 * time.Second

// Reasons of the Warning events of a watched directory's scan that
// deletes nothing although the directory held objects.
const (
	reasonWatchedDirectoryEmpty      = "WatchedDirectoryEmpty"
	reasonWatchedDirectoryUnreadable = "WatchedDirectoryUnreadable"
)

// dirWatch is the watch of one directory (manifest.Watch's goroutine).
type dirWatch struct {
	stop    context.CancelFunc
	recheck chan struct{} // asks the watch for a scan reported even unchanged
}

// dirAbsences is what a directory's scans found missing: object key
// ("Kind namespace/name") → the time of the first scan that found it so.
type dirAbsences struct {
	since     map[string]time.Time
	scheduled bool // a recheck is on its way
}

// absenceScan notes the absences one scan finds.
type absenceScan struct {
	now        time.Time
	prev, next map[string]time.Time
}

// beginAbsenceScanLocked starts noting a scan of dir's absences.
func (a *Agent) beginAbsenceScanLocked(dir string) *absenceScan {
	s := &absenceScan{now: a.deps.clock.Now(), next: map[string]time.Time{}}
	if g := a.gone[dir]; g != nil {
		s.prev = g.since
	}
	return s
}

// confirmed notes that the object of kind, namespace and name is missing
// from this scan and reports whether a scan absenceConfirmAfter or more
// before found it missing too: then it may be deleted.
func (s *absenceScan) confirmed(kind, namespace, name string) bool {
	key := kind + " " + manifest.ObjectKey(namespace, name)
	since, seen := s.prev[key]
	if !seen {
		since = s.now
	}
	if s.now.Sub(since) >= absenceConfirmAfter {
		return true
	}
	s.next[key] = since
	return false
}

// endAbsenceScanLocked keeps what this scan found missing and not yet
// deleted (an object back in the directory is forgotten), and asks the
// watch for a scan when the first of them is due.
func (a *Agent) endAbsenceScanLocked(dir string, s *absenceScan) {
	g := a.gone[dir]
	if len(s.next) == 0 {
		delete(a.gone, dir)
		return
	}
	if g == nil {
		g = &dirAbsences{}
		a.gone[dir] = g
	}
	g.since = s.next
	due := absenceConfirmAfter
	for key, since := range s.next {
		due = min(due, since.Add(absenceConfirmAfter).Sub(s.now))
		a.log.Info("watched directory: an object's manifest is gone; it is deleted if still gone at a scan "+absenceConfirmAfter.String()+" after the first that missed it",
			"dir", dir, "object", key, "missing since", since)
	}
	if !g.scheduled && a.started && !a.stopping {
		g.scheduled = true
		a.running.Add(1)
		go a.recheckAfter(dir, g, a.deps.clock.NewTimer(max(due, 0))) // the timer counts from this scan
	}
}

// recheckAfter asks dir's watch for a scan when timer fires.
func (a *Agent) recheckAfter(dir string, g *dirAbsences, timer clock.Timer) {
	defer a.running.Done()
	defer timer.Stop()
	fired := false
	select {
	case <-a.life.Done():
	case <-timer.C():
		fired = true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	g.scheduled = false
	if w := a.watches[dir]; fired && w != nil {
		select {
		case w.recheck <- struct{}{}:
		default: // one is waiting already
		}
	}
}

// heldObjectsLocked counts what came from dir and is not being deleted:
// pods, workloads, Services and claims.
func (a *Agent) heldObjectsLocked(dir string) int {
	n := len(a.dirObjectsLocked(dir))
	for _, w := range a.workers {
		if d := w.snapshot(); d.watchDir == dir && !d.terminating() {
			n++
		}
	}
	return n
}

// holdsNothing says whether a scan's bundle holds no object the agent
// applies (skipped cluster kinds do not count).
func holdsNothing(b *manifest.Bundle) bool {
	applied := *b
	applied.Skipped = nil
	return applied.Empty()
}

// refuseEmptyScanLocked says whether dir's scan must delete nothing: it
// found no object while objects came from the directory (a mount not there
// yet, a checkout under way, an agent started before its filesystem).
// Then a Warning event names the directory, and its noted absences are
// dropped: the next scan that finds objects starts them again.
func (a *Agent) refuseEmptyScanLocked(dir string, b *manifest.Bundle) bool {
	held := a.heldObjectsLocked(dir)
	if !holdsNothing(b) || held == 0 {
		return false
	}
	delete(a.gone, dir)
	a.dirWarning(dir, reasonWatchedDirectoryEmpty, fmt.Sprintf(
		"Watched directory %s holds no object, though %d came from it: nothing is deleted (to delete them, 'berth delete -f %s')", dir, held, dir))
	return true
}

// dirWarning records a Warning event about a watched directory on the
// node, and logs it.
func (a *Agent) dirWarning(dir, reason, message string) {
	a.pressure.events.record(agentapi.EventWarning, reason, "", message)
	a.log.Warn("watched directory: "+message, "dir", dir, "reason", reason)
}
