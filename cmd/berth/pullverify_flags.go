package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/berth-dev/berth/internal/agent"
	"github.com/berth-dev/berth/internal/agent/pullrecords"
)

// pullVerificationFlags are kubelet's "ensure secret pulled images"
// settings (imagePullCredentialsVerificationPolicy,
// preloadedImagesVerificationAllowlist), on `berth serve` and `berth
// agent`.
type pullVerificationFlags struct {
	policy    string
	allowlist []string
}

func (f *pullVerificationFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.policy, "image-pull-credentials-verification-policy", string(pullrecords.DefaultPolicy),
		"which images already on the node a pod must show its own pull credentials for (kubelet's imagePullCredentialsVerificationPolicy): "+
			"NeverVerify, NeverVerifyPreloadedImages (those the agent pulled), NeverVerifyAllowlistedImages (all but the allowlist's), AlwaysVerify")
	fs.StringSliceVar(&f.allowlist, "preloaded-images-verification-allowlist", nil,
		"with NeverVerifyAllowlistedImages: images never verified, comma-separated, each registry/path/app or registry/path/* (kubelet's preloadedImagesVerificationAllowlist)")
}

// config is the agent's verification configuration; it fails as
// kubelet's configuration validation does.
func (f *pullVerificationFlags) config() (agent.PullVerificationConfig, error) {
	cfg := agent.PullVerificationConfig{Policy: pullrecords.Policy(f.policy), Allowlist: f.allowlist}
	if _, err := pullrecords.NewVerification(cfg.Policy, cfg.Allowlist); err != nil {
		return agent.PullVerificationConfig{}, fmt.Errorf("--image-pull-credentials-verification-policy, --preloaded-images-verification-allowlist: %w", err)
	}
	return cfg, nil
}
