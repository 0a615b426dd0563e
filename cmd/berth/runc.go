package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-dev/berth/internal/config"
	"github.com/berth-dev/berth/internal/criserver"
	"github.com/berth-dev/berth/internal/pod"
	"github.com/berth-dev/berth/internal/runc"
)

// resolveRunc fixes cfg.RuncPath to the runc berth runs (the pinned
// berth-runc beside berth, else the system's: config.RuncBinary), logs
// which one and its version, and returns both for Status. A runc that
// cannot say its version still runs; the fallback to the system's runc is
// a warning, since berth then lacks what the pinned one brings.
func resolveRunc(ctx context.Context, cfg *config.Config, log *slog.Logger) (criserver.OCIRuntime, error) {
	path, err := cfg.RuncBinary()
	if err != nil {
		return criserver.OCIRuntime{}, err
	}
	cfg.RuncPath = path
	info := criserver.OCIRuntime{Path: path}
	vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := (&runc.Runc{Path: path}).Version(vctx)
	if err != nil {
		log.Warn("runc: version unknown", "path", path, "error", err)
		return info, nil
	}
	info.Version = v.Version
	if !isPinnedRunc(path) {
		log.Warn("runc: not the pinned berth-runc (make install puts it beside berth); running this one", "path", path, "runc", v.String())
	} else {
		log.Info("runc", "path", path, "runc", v.String())
	}
	return info, nil
}

// runcLine is berth version's second line: the runc berth serve would run
// with this config and flags, its version and path, or why it is unknown.
func runcLine(ctx context.Context, opts *globalOptions, cmd *cobra.Command) string {
	cfg, err := opts.load(cmd)
	if err != nil {
		return fmt.Sprintf("runc: unknown (config: %v)", err)
	}
	path, err := cfg.RuncBinary()
	if err != nil {
		return fmt.Sprintf("runc: none (%v)", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := (&runc.Runc{Path: path}).Version(ctx)
	if err != nil {
		return fmt.Sprintf("runc: %s (version unknown: %v)", path, err)
	}
	pinned := "the pinned berth-runc"
	if !isPinnedRunc(path) {
		pinned = "not the pinned berth-runc"
	}
	return fmt.Sprintf("%s at %s, %s", v, path, pinned)
}

// runtimeHandlers resolves the runc of each [runtimes.<name>] handler; a
// handler whose runc cannot be found is left out, with a warning, so that
// a missing system runc does not stop berth.
func runtimeHandlers(cfg config.Config, log *slog.Logger) map[string]pod.Runtime {
	out := map[string]pod.Runtime{}
	for name := range cfg.Runtimes {
		path, err := cfg.RuntimeBinary(name)
		if err != nil {
			log.Warn("runtime handler left out: its runc is missing", "handler", name, "error", err)
			continue
		}
		out[name] = pod.Runtime{RuncPath: path, RuncRoot: cfg.RuntimeRoot(name)}
	}
	return out
}

// criHandlers describes the extra handlers for Status: each runc's version,
// whether it makes recursive read-only mounts (features, runcFeatures') and
// whether its pods may run in user namespaces (usernsOK, usernsSupport's).
func criHandlers(ctx context.Context, handlers map[string]pod.Runtime, features map[string]handlerFeatures, usernsOK map[string]error,
	log *slog.Logger) []criserver.Handler {
	names := slices.Sorted(maps.Keys(handlers))
	out := make([]criserver.Handler, 0, len(names))
	for _, name := range names {
		r := handlers[name]
		rt := &runc.Runc{Path: r.RuncPath, Root: r.RuncRoot}
		err, probed := usernsOK[name]
		h := criserver.Handler{Name: name, OCIRuntime: criserver.OCIRuntime{Path: r.RuncPath}, UserNamespaces: probed && err == nil}
		vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if v, err := rt.Version(vctx); err == nil {
			h.OCIRuntime.Version = v.Version
			log.Info("runtime handler", "handler", name, "path", r.RuncPath, "runc", v.String())
		} else {
			log.Warn("runtime handler: runc version unknown", "handler", name, "error", err)
		}
		h.RecursiveReadOnlyMounts = features[name].mountOption("rro")
		cancel()
		out = append(out, h)
	}
	return out
}

// isPinnedRunc reports whether path is the pinned runc make installs
// (berth-runc), not a system's.
func isPinnedRunc(path string) bool { return filepath.Base(path) == config.DefaultRunc }
