package monitord

import (
	"fmt"
	"time"

	"github.com/berth-dev/berth/internal/crilog"
	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/monitor"
	"github.com/berth-dev/berth/internal/procwatch"
)

// adopt takes over a container whose monitor died (monitor.AdoptRequest).
// Its init is not this process's child: a pidfd tells when it ends, and
// its exit file then says the status is unknown. Its output is not held
// here: it has no log and cannot be attached.
func (s *Server) adopt(r monitor.AdoptRequest) error {
	if err := monitor.ValidID(r.ID); err != nil {
		return err
	}
	if r.Pid <= 0 {
		return fmt.Errorf("container %s: pid %d: %w", r.ID, r.Pid, errdefs.ErrInvalidArgument)
	}
	if err := s.reserve(r.ID); err != nil {
		return err
	}
	defer s.release(r.ID)
	proc, err := procwatch.Open(r.Pid)
	if err != nil {
		return fmt.Errorf("container %s: %w", r.ID, err)
	}
	discard, err := crilog.Discard()
	if err != nil {
		_ = proc.Close()
		return fmt.Errorf("container %s: %w", r.ID, err)
	}
	c := &container{id: r.ID, pid: r.Pid, log: discard, stdio: &stdio{}, oom: &oomCounter{},
		fan: newFanout(), copied: make(chan struct{}), started: r.Started}
	c.fan.close()
	close(c.copied)
	s.mu.Lock()
	s.containers[r.ID] = c
	s.mu.Unlock()
	go s.watchAdopted(c, proc)
	s.log.Printf("pod %s: container %s: adopted, pid %d", s.cfg.Pod, r.ID, r.Pid)
	return nil
}

// watchAdopted waits for an adopted container's init to end, then writes
// its exit file (status unknown) and keeps the record.
func (s *Server) watchAdopted(c *container, proc *procwatch.Process) {
	_ = proc.Wait() // never closed while waiting
	_ = proc.Close()
	c.log.Close()
	rec := monitor.ExitRecord{
		Version: monitor.ExitRecordVersion, ID: c.id, Pid: c.pid,
		ExitCode: 255, Unknown: true, FinishedAt: time.Now(),
	}
	if err := monitor.WriteExitFile(s.cfg.ExitDir, rec); err != nil {
		s.log.Printf("pod %s: container %s: %v", s.cfg.Pod, c.id, err)
	}
	s.mu.Lock()
	c.exit = &rec
	s.mu.Unlock()
	s.log.Printf("pod %s: container %s: adopted container ended, status unknown", s.cfg.Pod, c.id)
}
