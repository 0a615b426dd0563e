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
// its exit file then says the status is unknown. When its output FIFOs are
// in its bundle, the monitor reads them on into its log (and to attached
// clients), from where the dead monitor stopped; without them (a terminal)
// its output is not held here.
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
	c, err := s.adoptedContainer(r)
	if err != nil {
		_ = proc.Close()
		return fmt.Errorf("container %s: %w", r.ID, err)
	}
	s.mu.Lock()
	s.containers[r.ID] = c
	s.mu.Unlock()
	go s.watchAdopted(c, proc)
	s.log.Printf("pod %s: container %s: adopted, pid %d, output held: %v", s.cfg.Pod, r.ID, r.Pid, c.stdio.stdout != nil)
	return nil
}

// adoptedContainer opens an adopted container's output FIFOs and log, and
// starts copying; a container without FIFOs gets no output.
func (s *Server) adoptedContainer(r monitor.AdoptRequest) (*container, error) {
	c := &container{id: r.ID, pid: r.Pid, stdio: &stdio{}, oom: &oomCounter{}, fan: newFanout(), started: r.Started}
	if r.Bundle != "" {
		out, err := monitor.OpenFIFO(r.Bundle, monitor.StdoutFIFO)
		if err == nil {
			c.stdio.stdout = out
			c.stdio.stderr, err = monitor.OpenFIFO(r.Bundle, monitor.StderrFIFO)
		}
		if err != nil && !errdefs.IsNotFound(err) {
			c.stdio.closeMonitorSide()
			return nil, err
		}
	}
	var err error
	if c.stdio.stdout != nil {
		c.log, err = openLog(monitor.CreateRequest{ID: r.ID, LogDirectory: r.LogDirectory, LogRelPath: r.LogRelPath})
	} else {
		c.log, err = crilog.Discard()
	}
	if err != nil {
		c.stdio.closeMonitorSide()
		return nil, err
	}
	c.copied = c.copyOutput()
	return c, nil
}

// watchAdopted waits for an adopted container's init to end, drains its
// output as watch does, then writes its exit file (status unknown) and
// keeps the record.
func (s *Server) watchAdopted(c *container, proc *procwatch.Process) {
	_ = proc.Wait() // never closed while waiting
	_ = proc.Close()
	finished := time.Now()
	s.drainOutput(c)
	rec := monitor.ExitRecord{
		Version: monitor.ExitRecordVersion, ID: c.id, Pid: c.pid,
		ExitCode: 255, Unknown: true, FinishedAt: finished,
	}
	if err := monitor.WriteExitFile(s.cfg.ExitDir, rec); err != nil {
		s.log.Printf("pod %s: container %s: %v", s.cfg.Pod, c.id, err)
	}
	s.mu.Lock()
	c.exit = &rec
	s.mu.Unlock()
	s.log.Printf("pod %s: container %s: adopted container ended, status unknown", s.cfg.Pod, c.id)
}
