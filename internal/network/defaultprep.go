package network

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
)

// PrepareDefault readies berth's default network when it is the network
// pods get: the first config in confDir, and berth's own. It programs the
// node-wide masquerade (MasqueradeNftables) and moves the file to the
// current format, so a config an older berth wrote (the plugin's ipMasq
// per pod) changes over at start; pods made before keep tearing down with
// the config libcni cached for them. When nftables cannot be programmed
// the config falls back to the plugin's ipMasq and the error says why:
// pods still get a working network, the caller logs it. own reports
// whether the network is berth's.
func PrepareDefault(ctx context.Context, confDir string) (own bool, err error) {
	path, err := firstConfigFile(confDir)
	if err != nil {
		return false, nil // no config: the network is not ready, Ready says why
	}
	d, own, err := readDefault(path)
	if err != nil || !own {
		return false, err
	}
	d.Masquerade = MasqueradeNftables
	return true, applyMasquerade(ctx, path, d)
}

// applyMasquerade programs d's masquerade when d asks for it, falling back
// to the plugin's ipMasq when it cannot, and writes the config at path if
// its content changes.
func applyMasquerade(ctx context.Context, path string, d DefaultNetwork) (fallback error) {
	if d.Masquerade == MasqueradeNftables {
		if err := ensureMasquerade(ctx, d); err != nil {
			fallback = fmt.Errorf("default network %s: masquerade by the bridge plugin, per pod: %w", d.Name, err)
			d.Masquerade = ""
		}
	}
	want, err := defaultConfig(d)
	if err != nil {
		return err
	}
	have, err := os.ReadFile(path)
	if err == nil && bytes.Equal(have, append(want, '\n')) {
		return fallback
	}
	if err := writeDefault(path, d); err != nil {
		return err
	}
	return fallback
}

// readDefault reads the inputs of berth's own config at path; own is false
// for a config someone else wrote.
func readDefault(path string) (d DefaultNetwork, own bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return d, false, fmt.Errorf("network config %s: %w", path, err)
	}
	d, own, err = parseDefault(data)
	if err != nil {
		return d, false, fmt.Errorf("network config %s: %w", path, err)
	}
	return d, own, nil
}

// parseDefault reads the inputs berth's marker key records in a config;
// own is false for a config without it (or not JSON: berth writes valid
// JSON).
func parseDefault(data []byte) (d DefaultNetwork, own bool, err error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return d, false, nil
	}
	raw, ok := doc[defaultMarkerKey]
	if !ok {
		return d, false, nil
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return d, false, fmt.Errorf("key %q: %w", defaultMarkerKey, err)
	}
	if err := d.validate(); err != nil {
		return d, false, err
	}
	return d, true, nil
}
