package oci

import (
	"fmt"
	"strings"

	"github.com/berth-dev/berth/internal/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Command applies the Kubernetes rule for a container's argv: a request
// command replaces the image entrypoint and cmd (command+args); request args
// alone replace the image cmd (entrypoint+args); with neither the image's
// entrypoint+cmd runs. An empty result is ErrInvalidArgument.
func Command(imageEntrypoint, imageCmd, command, args []string) ([]string, error) {
	var argv []string
	switch {
	case len(command) > 0:
		argv = append(append(argv, command...), args...)
	case len(args) > 0:
		argv = append(append(argv, imageEntrypoint...), args...)
	default:
		argv = append(append(argv, imageEntrypoint...), imageCmd...)
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("process args: neither the request nor the image names a command: %w",
			errdefs.ErrInvalidArgument)
	}
	return argv, nil
}

// MergeEnv returns the image environment with the request's variables
// applied: a request key replaces the image entry of the same key in place,
// new keys are appended in request order, and the last of duplicate request
// keys wins.
func MergeEnv(imageEnv []string, envs []*runtimeapi.KeyValue) []string {
	overrides := make([]string, 0, len(envs))
	for _, kv := range envs {
		if kv.GetKey() == "" {
			continue
		}
		overrides = append(overrides, kv.GetKey()+"="+string(kv.GetValue()))
	}
	return mergeEnvEntries(imageEnv, overrides)
}

// mergeEnvEntries merges "KEY=value" entries; overrides win by key and keep
// the position of the entry they replace.
func mergeEnvEntries(base, overrides []string) []string {
	merged := make([]string, 0, len(base)+len(overrides))
	index := make(map[string]int, len(base)+len(overrides))
	for _, entries := range [][]string{base, overrides} {
		for _, entry := range entries {
			key := envKey(entry)
			if i, ok := index[key]; ok {
				merged[i] = entry
				continue
			}
			index[key] = len(merged)
			merged = append(merged, entry)
		}
	}
	return merged
}

func envKey(entry string) string {
	key, _, _ := strings.Cut(entry, "=")
	return key
}
