package pod

import (
	"context"
	"fmt"
	"slices"
	"syscall"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/runc"
)

// DefaultHandler is the runtime handler of sandboxes that name none (""):
// the runc of Config.RuncPath, with its state under Config.RuncRoot.
const DefaultHandler = "runc"

// Runtime is a runtime handler beside the default one: another runc, with
// a state directory of its own ([runtimes.<name>] in the config).
type Runtime struct {
	RuncPath string // the runc executable, resolved
	RuncRoot string // its --root
}

// handlerName is the handler a record names, "" read as the default.
func handlerName(h string) string {
	if h == "" {
		return DefaultHandler
	}
	return h
}

// Handlers lists the runtime handlers berth serves, "" first (the default
// under its empty name, as kubelet asks for it), then DefaultHandler, then
// the others by name.
func (s *Service) Handlers() []string {
	out := []string{"", DefaultHandler}
	extra := make([]string, 0, len(s.cfg.Runtimes))
	for name := range s.cfg.Runtimes {
		extra = append(extra, name)
	}
	slices.Sort(extra)
	return append(out, extra...)
}

// runcOf is the runc executable and state directory of handler h.
func (s *Service) runcOf(h string) Runtime {
	if r, ok := s.cfg.Runtimes[handlerName(h)]; ok {
		return r
	}
	return Runtime{RuncPath: s.cfg.RuncPath, RuncRoot: s.cfg.RuncRoot}
}

// runtimeFor is the runc client of handler h. A handler no longer in the
// configuration (a sandbox made before a restart that dropped it) gets a
// runtime that fails every call with FailedPrecondition: its containers
// are never taken for gone because the wrong runc does not know them.
func (s *Service) runtimeFor(h string) containerRuntime {
	h = handlerName(h)
	if h == DefaultHandler {
		return s.runtime
	}
	if rt, ok := s.runtimes[h]; ok {
		return rt
	}
	return unavailableRuntime{handler: h}
}

// allRuntimes are the runc clients of every configured handler, the
// default first: for a bundle no record owns, whose handler is unknown.
func (s *Service) allRuntimes() []containerRuntime {
	out := []containerRuntime{s.runtime}
	for _, name := range s.Handlers()[2:] {
		if rt, ok := s.runtimes[name]; ok {
			out = append(out, rt)
		}
	}
	return out
}

// newRuntimes builds the runc clients of the configured extra handlers.
func newRuntimes(cfg Config) map[string]containerRuntime {
	out := make(map[string]containerRuntime, len(cfg.Runtimes))
	for name, r := range cfg.Runtimes {
		out[name] = &runc.Runc{Path: r.RuncPath, Root: r.RuncRoot, SystemdCgroup: cfg.SystemdCgroup}
	}
	return out
}

// unavailableRuntime stands in for a handler that is not configured.
type unavailableRuntime struct{ handler string }

func (u unavailableRuntime) err() error {
	return fmt.Errorf("runtime handler %q is not configured (any more): %w", u.handler, errdefs.ErrFailedPrecondition)
}

func (u unavailableRuntime) State(context.Context, string) (*runc.State, error) { return nil, u.err() }
func (u unavailableRuntime) Kill(context.Context, string, syscall.Signal, bool) error {
	return u.err()
}
func (u unavailableRuntime) Delete(context.Context, string, bool) error { return u.err() }
func (u unavailableRuntime) Update(context.Context, string, []byte) error {
	return u.err()
}
func (u unavailableRuntime) StartExec(string, runc.ExecOpts) (*runc.Execution, error) {
	return nil, u.err()
}
