package probe

import (
	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/podspec"
)

// expandCommand expands the $(VAR) references of every word of an exec
// probe's command with podspec.ExpandVars, the one implementation of the
// Kubernetes rules: against t.Env, or else the container's env as written.
func (t Target) expandCommand(cmd []string) []string {
	lookup := t.Env
	if lookup == nil {
		var env []v1.EnvVar
		if t.Container != nil {
			env = t.Container.Env
		}
		lookup = podspec.StaticEnv(env)
	}
	return podspec.ExpandAll(cmd, lookup)
}
