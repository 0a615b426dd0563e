package main

import (
	"log/slog"

	"github.com/berth-dev/berth/internal/cdidevice"
	"github.com/berth-dev/berth/internal/config"
)

// openCDI opens the CDI registry of [cdi] spec_dirs and logs what it found
// and what it left out.
func openCDI(cfg config.Config, log *slog.Logger) (*cdidevice.Registry, error) {
	devices, err := cdidevice.New(cfg.CDI.SpecDirs)
	if err != nil {
		return nil, err
	}
	for _, e := range devices.Errors() {
		log.Warn("CDI", "error", e)
	}
	log.Info("CDI", "spec_dirs", cfg.CDI.SpecDirs, "devices", len(devices.Devices()))
	return devices, nil
}
