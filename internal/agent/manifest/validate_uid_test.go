package manifest

import (
	"strings"
	"testing"
)

func TestValidatePodUID(t *testing.T) {
	for _, tc := range []struct {
		uid, wantErr string
	}{
		{"3f2b6c1e-9a1d-4f6e-8b1a-0c2d3e4f5a6b", ""},
		{"0123456789abcdef0123456789abcdef", ""},
		{"", "Required value"},
		{"../../etc", "Invalid value"},
		{"a/b", "Invalid value"},
		{strings.Repeat("a", 129), "Invalid value"},
	} {
		errs := validatePodUID(tc.uid, nil)
		got := errs.ToAggregate()
		switch {
		case tc.wantErr == "" && got != nil:
			t.Errorf("uid %q: %v, want valid", tc.uid, got)
		case tc.wantErr != "" && (got == nil || !strings.Contains(got.Error(), tc.wantErr)):
			t.Errorf("uid %q: %v, want %q", tc.uid, got, tc.wantErr)
		}
	}
}
