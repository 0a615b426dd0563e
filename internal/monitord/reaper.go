package monitord

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"sync"

	"golang.org/x/sys/unix"
)

// Exit is one reaped child.
type Exit struct {
	Pid    int
	Status unix.WaitStatus
}

// Subscription collects every exit nobody waited for, from Subscribe until
// Claim or Unsubscribe.
type Subscription struct {
	exits []Exit // guarded by Reaper.mu
}

// Reaper reaps every child of the process and hands exits to waiters by
// pid. Exits nobody waits for are dropped (orphans).
type Reaper struct {
	mu      sync.Mutex
	waiters map[int]chan Exit
	subs    map[*Subscription]struct{}
}

// NewReaper returns a reaper; call Run to start reaping.
func NewReaper() *Reaper {
	return &Reaper{waiters: map[int]chan Exit{}, subs: map[*Subscription]struct{}{}}
}

// Run reaps on every SIGCHLD until ctx is done; once it is, it reaps
// nothing more, even when a SIGCHLD came at the same time.
func (r *Reaper) Run(ctx context.Context) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, unix.SIGCHLD)
	defer signal.Stop(sigs)
	r.reap()
	for {
		select {
		case <-sigs:
			if ctx.Err() != nil {
				return
			}
			r.reap()
		case <-ctx.Done():
			return
		}
	}
}

func (r *Reaper) reap() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		var status unix.WaitStatus
		pid, err := unix.Wait4(-1, &status, unix.WNOHANG, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
		r.dispatch(Exit{Pid: pid, Status: status})
	}
}

// dispatch runs with r.mu held.
func (r *Reaper) dispatch(e Exit) {
	if ch, ok := r.waiters[e.Pid]; ok {
		delete(r.waiters, e.Pid)
		ch <- e
		return
	}
	for s := range r.subs {
		s.exits = append(s.exits, e)
	}
}

// Start starts cmd and returns its pid and a channel that receives its
// exit. The waiter is registered before the reaper can see the exit.
func (r *Reaper) Start(cmd *exec.Cmd) (int, <-chan Exit, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return 0, nil, err
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release() // frees its pidfd; the reaper waits
	ch := make(chan Exit, 1)
	r.waiters[pid] = ch
	return pid, ch, nil
}

// Exec starts cmd, waits for it through the reaper, and returns an error
// unless it exited 0. When ctx is done the command is killed. It fits
// runc.Runc.Exec.
func (r *Reaper) Exec(ctx context.Context, cmd *exec.Cmd) error {
	pid, ch, err := r.Start(cmd)
	if err != nil {
		return err
	}
	select {
	case e := <-ch:
		return statusError(e.Status)
	case <-ctx.Done():
		_ = unix.Kill(pid, unix.SIGKILL) // not reaped yet: still ours
		<-ch
		return ctx.Err()
	}
}

func statusError(s unix.WaitStatus) error {
	switch {
	case s.Exited() && s.ExitStatus() == 0:
		return nil
	case s.Signaled():
		return fmt.Errorf("killed by signal %d", int(s.Signal()))
	default:
		return fmt.Errorf("exit status %d", s.ExitStatus())
	}
}

// Subscribe starts collecting unclaimed exits.
func (r *Reaper) Subscribe() *Subscription {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &Subscription{}
	r.subs[s] = struct{}{}
	return s
}

// Unsubscribe stops collecting exits for s.
func (r *Reaper) Unsubscribe(s *Subscription) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.subs, s)
}

// Claim ends s and returns a channel receiving pid's exit: at once when s
// saw it already, otherwise when the reaper reaps it.
func (r *Reaper) Claim(s *Subscription, pid int) <-chan Exit {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.subs, s)
	ch := make(chan Exit, 1)
	for _, e := range s.exits {
		if e.Pid == pid {
			ch <- e
			return ch
		}
	}
	r.waiters[pid] = ch
	return ch
}
