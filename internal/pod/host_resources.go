package pod

import (
	"slices"
	"sync"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/berth-dev/berth/internal/oci"
)

// droppedResources remembers the resource settings left out of specs
// because the host lacks their cgroup controller, for Status and the log.
type droppedResources struct {
	mu   sync.Mutex
	seen map[string]bool
}

// fitResources leaves out of r what the host's cgroup controllers cannot
// apply (oci.FitResources); each kind of setting is logged once, at debug
// level, and reported by DroppedResources.
func (s *Service) fitResources(r *specs.LinuxResources, object string) {
	dropped := oci.FitResources(r, s.cfg.Controllers)
	if len(dropped) == 0 {
		return
	}
	s.dropped.mu.Lock()
	defer s.dropped.mu.Unlock()
	if s.dropped.seen == nil {
		s.dropped.seen = map[string]bool{}
	}
	for _, d := range dropped {
		if !s.dropped.seen[d] {
			s.dropped.seen[d] = true
			s.log.Debug("resource setting left out: the host has no such cgroup controller", "setting", d, "first", object)
		}
	}
}

// CgroupControllers lists the host's usable cgroup controllers.
func (s *Service) CgroupControllers() []string { return s.cfg.Controllers.Names() }

// DroppedResources lists the resource settings left out of some spec
// since the daemon started, because the host lacks their controller.
func (s *Service) DroppedResources() []string {
	s.dropped.mu.Lock()
	defer s.dropped.mu.Unlock()
	out := make([]string, 0, len(s.dropped.seen))
	for d := range s.dropped.seen {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}
