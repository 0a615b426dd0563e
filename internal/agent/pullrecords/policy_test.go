package pullrecords

import (
	"strings"
	"testing"
)

func TestNewVerificationRefusesAsKubeletDoes(t *testing.T) {
	cases := []struct {
		policy Policy
		allow  []string
		want   string // "" for valid
	}{
		{"", nil, ""},
		{NeverVerify, nil, ""},
		{AlwaysVerify, nil, ""},
		{NeverVerifyAllowlistedImages, []string{"reg.example/team/app", "reg.example:5000/*", "busybox"}, ""},
		{"Sometimes", nil, "want one of NeverVerify, NeverVerifyPreloadedImages, NeverVerifyAllowlistedImages, AlwaysVerify"},
		{NeverVerifyPreloadedImages, []string{"reg.example/app"}, "only to policy NeverVerifyAllowlistedImages"},
		{NeverVerifyAllowlistedImages, []string{" reg.example/app"}, "spaces"},
		{NeverVerifyAllowlistedImages, []string{"/*"}, "too short"},
		{NeverVerifyAllowlistedImages, []string{"reg.example/*/app"}, `only a final "/*"`},
		{NeverVerifyAllowlistedImages, []string{"reg.example/app:v1"}, "without tag or digest"},
		{NeverVerifyAllowlistedImages, []string{"reg.example/app@sha256:" + strings.Repeat("a", 64)}, "without tag or digest"},
	}
	for _, tc := range cases {
		_, err := NewVerification(tc.policy, tc.allow)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %v: %v", tc.policy, tc.allow, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s %v: error %v, want one with %q", tc.policy, tc.allow, err, tc.want)
		}
	}
}

func TestRequired(t *testing.T) {
	allow := mustVerification(t, NeverVerifyAllowlistedImages, "reg.example/team/*", "docker.io/library/busybox")
	cases := []struct {
		v       Verification
		image   string
		byAgent bool
		want    bool
	}{
		{Verification{}, "app", false, false}, // the zero value is the default
		{Verification{}, "app", true, true},
		{mustVerification(t, NeverVerify), "app", true, false},
		{mustVerification(t, AlwaysVerify), "app", false, true},
		{allow, "reg.example/team/app:v1", true, false},
		{allow, "reg.example/team/sub/app@sha256:" + strings.Repeat("b", 64), true, false},
		{allow, "reg.example/teamx/app:v1", false, true},
		{allow, "reg.example/team", false, true},
		{allow, "busybox:1.36", true, false}, // as its full repository
		{allow, "docker.io/library/busybox", true, false},
		{allow, "library/busybox2", true, true},
	}
	for _, tc := range cases {
		if got := tc.v.Required(tc.image, tc.byAgent); got != tc.want {
			t.Errorf("%s: Required(%q, pulled by the agent %t) = %t, want %t", tc.v.Policy(), tc.image, tc.byAgent, got, tc.want)
		}
	}
}
