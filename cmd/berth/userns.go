package main

import (
	"context"
	"fmt"
	"log/slog"
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

// usernsSupport probes, per runtime handler, whether a pod may run in a
// user namespace: the kernel must idmap mounts of the filesystem the image
// layers are on (for the rootfs' lower layers) and the handler's runc must
// make idmapped mounts (runc 1.2 and later: volumes). The reason is kept
// for the handlers that cannot.
func usernsSupport(ctx context.Context, cfg config.Config, runcPath, pausePath string, handlers map[string]pod.Runtime, log *slog.Logger) map[string]error {
	fsErr := userns.CanIDMap(cfg.RootDir, []string{pausePath})
	all := map[string]string{pod.DefaultHandler: runcPath}
	for name, r := range handlers {
		all[name] = r.RuncPath
	}
	out := make(map[string]error, len(all))
	for name, path := range all {
		err := fsErr
		if err == nil {
			err = runcIDMaps(ctx, path)
		}
		out[name] = err
		if err != nil {
			log.Info("user namespaces: not offered by runtime handler", "handler", name, "reason", err)
		}
	}
	return out
}

// runcIDMaps says whether the runc at path makes idmapped mounts.
func runcIDMaps(ctx context.Context, path string) error {
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	f, err := (&runc.Runc{Path: path}).Features(fctx)
	if err != nil {
		return fmt.Errorf("runc %s: features: %w", path, err)
	}
	if !f.Linux.MountExtensions.IDMap.Enabled {
		return fmt.Errorf("runc %s makes no idmapped mounts (runc 1.2 and later do)", path)
	}
	return nil
}
