package podspec

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestExpandVars is the table for the one $(VAR) expansion: the agent's
// command, args, env values and subPathExpr, and the probe package's exec
// probe commands all go through ExpandVars.
func TestExpandVars(t *testing.T) {
	vars := map[string]string{"A": "alpha", "B": "$(A)", "EMPTY": ""}
	cases := []struct{ in, want string }{
		{"plain", "plain"},
		{"$(A)", "alpha"},
		{"x-$(A)-y", "x-alpha-y"},
		{"$(A)$(A)", "alphaalpha"},
		{"$$(A)", "$(A)"},
		{"$$$(A)", "$alpha"},
		{"$$$$(A)", "$$(A)"},
		{"$(MISSING)", "$(MISSING)"},
		{"pre $(MISSING) post $(A)", "pre $(MISSING) post alpha"},
		{"$(B)", "$(A)"}, // replacements are not expanded again
		{"$(EMPTY)x", "x"},
		{"$(A", "$(A"},
		{"$(", "$("},
		{"$", "$"},
		{"a$", "a$"},
		{"$A", "$A"},
		{"$x$(A)", "$xalpha"},
		{"$()", "$()"},
		{"$(A)$", "alpha$"},
		{"$((A))", "$((A))"},
		{"$$", "$"},
		{"cost: 5$", "cost: 5$"},
		{"$(A)$(B", "alpha$(B"},
		{"$($(A))", "$($(A))"},
		{"ünï$(A)cödé", "ünïalphacödé"},
		{"trailing $(A) ", "trailing alpha "},
	}
	for _, tc := range cases {
		if got := ExpandVars(tc.in, mapLookup(vars)); got != tc.want {
			t.Errorf("ExpandVars(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestExpandCommandStatic(t *testing.T) {
	env := []v1.EnvVar{
		{Name: "PORT", Value: "8080"},
		{Name: "FROM_CM", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{Key: "k"}}},
	}
	got := ExpandCommandStatic([]string{"curl", "localhost:$(PORT)", "$(FROM_CM)", "$(NOPE)"}, env)
	want := []string{"curl", "localhost:8080", "", "$(NOPE)"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := ExpandCommandStatic([]string{"$(PORT)"}, append(env, v1.EnvVar{Name: "PORT", Value: "9090"})); got[0] != "9090" {
		t.Errorf("repeated name: got %q, want the last entry's 9090", got)
	}
	if ExpandCommandStatic(nil, env) != nil {
		t.Fatal("nil command must stay nil")
	}
}
