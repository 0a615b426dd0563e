package main

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/berth-dev/berth/internal/config"
	"github.com/berth-dev/berth/internal/pod"
	"github.com/berth-dev/berth/internal/runc"
	"github.com/berth-dev/berth/internal/userns"
)

// usernsRange reads where pods' user namespace mappings may lie.
func usernsRange(cfg config.Config, log *slog.Logger) (userns.Range, error) {
	u := cfg.UserNamespaces
	r, err := userns.ReadRange(u.SubUIDFile, u.SubGIDFile, u.SubIDUser)
	if err != nil {
		return r, fmt.Errorf("[user_namespaces]: %w", err)
	}
	if r.Restricted() {
		log.Info("user namespaces: host ids limited to the subordinate ids of "+u.SubIDUser, "uids", r.UIDs, "gids", r.GIDs)
	}
	return r, nil
}

// handlerFeatures is what `runc features` said of a handler's runc, or
// why it said nothing.
type handlerFeatures struct {
	path string
	f    *runc.Features
	err  error
}

// runcFeatures asks each handler's runc (the default one's at runcPath)
// `runc features` once, at start: Status's recursive read-only mounts and
// user namespaces both read the answer.
func runcFeatures(ctx context.Context, runcPath string, handlers map[string]pod.Runtime) map[string]handlerFeatures {
	all := map[string]string{pod.DefaultHandler: runcPath}
	for name, r := range handlers {
		all[name] = r.RuncPath
	}
	out := make(map[string]handlerFeatures, len(all))
	for name, path := range all {
		fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		f, err := (&runc.Runc{Path: path}).Features(fctx)
		cancel()
		out[name] = handlerFeatures{path: path, f: f, err: err}
	}
	return out
}

// mountOption says whether the runc accepts a mount option ("rro").
func (h handlerFeatures) mountOption(option string) bool {
	return h.err == nil && slices.Contains(h.f.MountOptions, option)
}

// usernsSupport says, per runtime handler, whether a pod may run in a
// user namespace: the kernel must idmap mounts of the filesystem the image
// layers are on (for the rootfs' lower layers) and the handler's runc must
// make idmapped mounts (runc 1.2 and later: volumes). The reason is kept
// for the handlers that cannot.
func usernsSupport(cfg config.Config, pausePath string, features map[string]handlerFeatures, log *slog.Logger) map[string]error {
	fsErr := userns.CanIDMap(cfg.RootDir, []string{pausePath})
	out := make(map[string]error, len(features))
	for name, h := range features {
		err := fsErr
		switch {
		case err != nil:
		case h.err != nil:
			err = fmt.Errorf("runc %s: features: %w", h.path, h.err)
		case !h.f.Linux.MountExtensions.IDMap.Enabled:
			err = fmt.Errorf("runc %s makes no idmapped mounts (runc 1.2 and later do)", h.path)
		}
		out[name] = err
		if err != nil {
			log.Info("user namespaces: not offered by runtime handler", "handler", name, "reason", err)
		}
	}
	return out
}
