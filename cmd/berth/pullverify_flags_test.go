package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/berth-dev/berth/internal/agent/pullrecords"
)

func TestPullVerificationFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{nil, ""},
		{[]string{"--image-pull-credentials-verification-policy=AlwaysVerify"}, ""},
		{[]string{"--image-pull-credentials-verification-policy=NeverVerifyAllowlistedImages", "--preloaded-images-verification-allowlist=reg.example/team/*,reg.example/app"}, ""},
		{[]string{"--image-pull-credentials-verification-policy=Sometimes"}, `policy "Sometimes": want one of NeverVerify,`},
		{[]string{"--preloaded-images-verification-allowlist=reg.example/app"}, "only to policy NeverVerifyAllowlistedImages, not NeverVerifyPreloadedImages"},
		{[]string{"--image-pull-credentials-verification-policy=NeverVerifyAllowlistedImages", "--preloaded-images-verification-allowlist=reg.example/app:v1"}, "without tag or digest"},
	} {
		var f pullVerificationFlags
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		f.bind(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		cfg, err := f.config()
		if (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.err)
			continue
		}
		if err == nil && len(tc.args) == 0 && (cfg.Policy != pullrecords.NeverVerifyPreloadedImages || cfg.Allowlist != nil) {
			t.Errorf("defaults: %+v", cfg)
		}
		if len(tc.args) == 2 && err == nil && !slices.Equal(cfg.Allowlist, []string{"reg.example/team/*", "reg.example/app"}) {
			t.Errorf("allowlist %v", cfg.Allowlist)
		}
	}
}
