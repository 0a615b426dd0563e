package agent

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/berth-dev/berth/internal/agent/pullrecords"
)

// PullVerificationConfig is kubelet's "ensure secret pulled images"
// (KEP-2535) configuration: imagePullCredentialsVerificationPolicy and
// preloadedImagesVerificationAllowlist (package pullrecords).
type PullVerificationConfig struct {
	// Policy: which present images a pod must show credentials for;
	// "": pullrecords.DefaultPolicy (NeverVerifyPreloadedImages).
	Policy pullrecords.Policy
	// Allowlist: images never verified, for NeverVerifyAllowlistedImages
	// only ("registry/path/app" or "registry/path/*").
	Allowlist []string
}

// pullRecordsDir is where the image pull records live, under RootDir.
const pullRecordsDir = "pullrecords"

// openPullRecords opens the image pull records under the agent's root.
func openPullRecords(cfg Config, log *slog.Logger) (*pullrecords.Manager, error) {
	v, err := pullrecords.NewVerification(cfg.PullVerification.Policy, cfg.PullVerification.Allowlist)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	m, err := pullrecords.Open(pullrecords.Config{
		Dir: filepath.Join(cfg.RootDir, pullRecordsDir), Verification: v, Now: cfg.Clock.Now, Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return m, nil
}

// recoverPullRecords turns the pull intents a crash left into records,
// and drops the records of images that went while the agent was down
// (pullrecords.Manager.Recover). It runs before any pod syncs; a runtime
// that cannot list its images leaves the records as they are.
func (a *Agent) recoverPullRecords(ctx context.Context) {
	listedAt := a.cfg.Clock.Now()
	images, err := a.cfg.Images.ListImages(ctx)
	if err != nil {
		a.log.Warn("image pull records: cannot list the runtime's images; intents left by a crash stay", "error", err)
		return
	}
	if err := a.deps.pullRecords.Recover(images, listedAt); err != nil {
		a.log.Warn("image pull records: recovery incomplete (unreadable records stay, and are verified against)", "error", err)
	}
}

// prunePullRecords drops the records of images garbage collection found
// gone or removed (imagegc.Config.Collected).
func (a *Agent) prunePullRecords(remaining []string, listedAt time.Time) {
	if err := a.deps.pullRecords.Prune(remaining, listedAt); err != nil {
		a.log.Warn("image pull records: pruning incomplete", "error", err)
	}
}

// verifyPresentImage decides whether the pod may use a present image
// (imageRef: its id) as it is, or must pull it with its own credentials
// (kubelet's MustAttemptImagePull): the pod's secrets are those of its
// imagePullSecrets that match the image, with their credential hashes.
func (w *podWorker) verifyPresentImage(d desiredPod, image, imageRef string) (pullrecords.Decision, error) {
	return w.deps.pullRecords.MustPull(image, imageRef, func() ([]pullrecords.Secret, error) {
		creds, _, err := w.secretCredentials(d.pod, d.sources, image)
		if err != nil {
			return nil, err
		}
		out := make([]pullrecords.Secret, 0, len(creds))
		for _, c := range creds {
			out = append(out, *c.secret)
		}
		return out, nil
	})
}
