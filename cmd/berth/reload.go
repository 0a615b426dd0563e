package main

import (
	"log/slog"
	"strings"

	"github.com/berth-dev/berth/internal/config"
	"github.com/berth-dev/berth/internal/image"
	"github.com/berth-dev/berth/internal/sdnotify"
)

// reloadable reports whether SIGHUP applies a changed key: the log level,
// and the image store's pull ([registry]) and unpack ([images]) settings,
// which it reads at each pull and import. Every other key is read once at
// start (directories, socket, runc and helper binaries, cgroup driver,
// CNI, the stream and metrics listeners): a change waits for a restart.
func reloadable(key string) bool {
	return key == "log_level" || strings.HasPrefix(key, "registry.") || strings.HasPrefix(key, "images.")
}

// imageSettings is what a reload changes in the image store.
type imageSettings interface {
	ConfigurePull(image.PullConfig)
	SetLimits(image.Limits)
}

// reloader re-reads the configuration on SIGHUP and applies the reloadable
// keys to the running daemon.
type reloader struct {
	load    func() (config.Config, error) // the config file, then the command line's flags, as at start
	running config.Config                 // what the daemon runs with
	level   *slog.LevelVar                // the level of log
	images  imageSettings
	log     *slog.Logger
	notify  *sdnotify.Notifier
}

// reload loads the configuration again; an invalid one is logged and the
// running one kept. The service manager hears RELOADING=1, then READY=1
// either way.
func (r *reloader) reload() {
	r.notify.Reloading("reloading the configuration")
	defer r.notify.Ready("berth ready")
	next, err := r.load()
	if err != nil {
		r.log.Error("config reload failed; the running configuration is kept", "error", err)
		return
	}
	var applied, restart []string
	for _, key := range config.ChangedKeys(r.running, next) {
		if reloadable(key) {
			applied = append(applied, key)
		} else {
			restart = append(restart, key)
		}
	}
	r.running.LogLevel = next.LogLevel
	r.running.Registry = next.Registry
	r.running.Images = next.Images
	r.level.Set(r.running.SlogLevel())
	r.images.ConfigurePull(pullConfig(r.running))
	r.images.SetLimits(imageLimits(r.running))
	warnAuthFile(r.running, r.log)
	r.log.Info("config reloaded", "changed", applied, "log_level", r.running.LogLevel)
	if len(restart) > 0 {
		r.log.Warn("config reload: changed keys take effect only at the next start of berth serve", "keys", restart)
	}
}
