package podspec

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// ExpandVars replaces $(NAME) references in s with lookup(NAME), following
// the Kubernetes rules for command, args, env values and subPathExpr:
//
//   - "$$" is an escaped "$" (so "$$(X)" yields the literal "$(X)");
//   - "$(NAME)" whose NAME lookup does not know stays as written;
//   - a "$" followed by anything else, or a "$(" never closed, stays as written.
//
// Expansion is a single pass: a replacement is never expanded again.
func ExpandVars(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var out strings.Builder
	out.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			out.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			out.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				out.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if value, ok := lookup(name); ok {
				out.WriteString(value)
			} else {
				out.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			out.WriteByte('$')
		}
	}
	return out.String()
}

// ExpandCommandStatic expands $(NAME) in each element of cmd against the
// container's env entries as written (a valueFrom entry expands to ""), which
// is what the kubelet does for exec probes and lifecycle hooks.
func ExpandCommandStatic(cmd []string, env []v1.EnvVar) []string {
	return ExpandAll(cmd, StaticEnv(env))
}

// StaticEnv looks names up in env entries by their literal value: an entry
// set through valueFrom reads as "", and the last entry of a name wins.
func StaticEnv(env []v1.EnvVar) func(string) (string, bool) {
	static := make(map[string]string, len(env))
	for _, e := range env {
		static[e.Name] = e.Value
	}
	return mapLookup(static)
}

// ExpandAll applies ExpandVars to every element of in; nil stays nil.
func ExpandAll(in []string, lookup func(string) (string, bool)) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = ExpandVars(s, lookup)
	}
	return out
}

func mapLookup(m map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}
