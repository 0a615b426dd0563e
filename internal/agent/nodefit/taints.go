package nodefit

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ParseTaints reads --register-with-taints ("key=value:Effect,key:Effect"),
// validated as kubelet validates its registerWithTaints: qualified keys,
// valid values, a known effect, no key and effect twice. Errors name the
// flag and the taint.
func ParseTaints(flag string) ([]v1.Taint, error) {
	var out []v1.Taint
	if strings.TrimSpace(flag) == "" {
		return out, nil
	}
	seen := map[string]bool{}
	for _, spec := range strings.Split(flag, ",") {
		spec = strings.TrimSpace(spec)
		t, err := parseTaint(spec)
		if err != nil {
			return nil, fmt.Errorf("--register-with-taints: %q: %w", spec, err)
		}
		if key := t.Key + ":" + string(t.Effect); seen[key] {
			return nil, fmt.Errorf("--register-with-taints: %q: taint key %q and effect %s given twice", spec, t.Key, t.Effect)
		}
		seen[t.Key+":"+string(t.Effect)] = true
		out = append(out, t)
	}
	return out, nil
}

// parseTaint reads one "key[=value]:Effect".
func parseTaint(spec string) (v1.Taint, error) {
	keyValue, effect, found := strings.Cut(spec, ":")
	if !found || effect == "" {
		return v1.Taint{}, fmt.Errorf("want key[=value]:effect")
	}
	key, value, _ := strings.Cut(keyValue, "=")
	t := v1.Taint{Key: key, Value: value, Effect: v1.TaintEffect(effect)}
	switch t.Effect {
	case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
	default:
		return v1.Taint{}, fmt.Errorf("effect %q: want NoSchedule, PreferNoSchedule or NoExecute", effect)
	}
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return v1.Taint{}, fmt.Errorf("key %q: %s", key, strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
		return v1.Taint{}, fmt.Errorf("value %q: %s", value, strings.Join(errs, "; "))
	}
	return t, nil
}
