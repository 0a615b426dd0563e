package pod

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// migrateContainerConfigV1 turns the config of a version 1 container record
// (CRI v0.34's protojson) into the current shape (v0.37): KeyValue.value
// became bytes, which protojson writes in base64, and every Signal name
// gained a SIGNAL_ prefix. Decoding a v1 config as it is would fail on an
// env value ("hello world") or, worse, silently garble one that happens to
// be valid base64, and lose the stop signal.
func migrateContainerConfigV1(raw json.RawMessage) (json.RawMessage, error) {
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("version 1 config: %w", err)
	}
	if envs, ok := cfg["envs"].([]any); ok {
		for _, e := range envs {
			if kv, ok := e.(map[string]any); ok {
				if v, ok := kv["value"].(string); ok {
					kv["value"] = base64.StdEncoding.EncodeToString([]byte(v))
				}
			}
		}
	}
	if sig, ok := cfg["stopSignal"].(string); ok && !strings.HasPrefix(sig, "SIGNAL_") {
		cfg["stopSignal"] = "SIGNAL_" + sig
	}
	out, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("version 1 config: %w", err)
	}
	return out, nil
}
