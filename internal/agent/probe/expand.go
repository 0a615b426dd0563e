package probe

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// expand replaces $(NAME) references in s with lookup(NAME), the way
// Kubernetes expands a container's command: "$$" is a literal "$", a
// reference lookup does not know stays as written, and a "$" that starts no
// reference is kept.
func expand(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch next := s[i+1]; next {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
			b.WriteByte(next)
			i++
		}
	}
	return b.String()
}

// staticEnv looks names up in a container's env entries by their literal
// value; an entry set through valueFrom reads as "".
func staticEnv(c *v1.Container) func(string) (string, bool) {
	return func(name string) (string, bool) {
		if c == nil {
			return "", false
		}
		found, value := false, ""
		for _, e := range c.Env {
			if e.Name == name {
				found, value = true, e.Value // the last entry of a name wins
			}
		}
		return value, found
	}
}

// expandCommand expands every word of an exec probe's command.
func (t Target) expandCommand(cmd []string) []string {
	lookup := t.Env
	if lookup == nil {
		lookup = staticEnv(t.Container)
	}
	out := make([]string, len(cmd))
	for i, word := range cmd {
		out[i] = expand(word, lookup)
	}
	return out
}
