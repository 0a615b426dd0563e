package agent

import (
	"fmt"
	"regexp"

	"github.com/berth-dev/berth/internal/agent/manifest"
	"github.com/berth-dev/berth/internal/errdefs"
)

// A pod's identity is its namespace/name; its uid is the agent's: the
// manifest package derives it from the pod's content and source (a
// metadata.uid in a manifest is ignored, as the API server ignores it on
// create), and a bundle a client built by hand may not name another pod's
// uid. Workloads, Services and claims get random uids on create and keep
// them on update (applyWorkloadLocked, applyServiceLocked,
// applyClaimsLocked); ConfigMaps and Secrets are keyed by namespace/name.

// uidPattern is what a pod uid may look like: it names directories.
var uidPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$`)

// checkUIDs refuses pod uids a client set that are not usable as names
// (manifest gives pods without one a hex digest).
func checkUIDs(b *manifest.Bundle) error {
	for _, p := range b.Pods {
		if !uidPattern.MatchString(string(p.UID)) {
			return fmt.Errorf("%s: Pod %s/%s: metadata.uid %q: want lower-case letters, digits and '-' (at most 64): %w",
				p.Source, p.Namespace, p.Name, p.UID, errdefs.ErrInvalidArgument)
		}
	}
	return nil
}

// checkPodIdentitiesLocked refuses a bundle in which a pod carries the uid
// of another pod (one the agent runs or one earlier in the bundle): the
// two would be one worker, and deleting either would delete the other.
// Bundles decoded by the manifest package never do; a hand-built one may.
func (a *Agent) checkPodIdentitiesLocked(b *manifest.Bundle) error {
	seen := map[string]string{}
	for _, p := range b.Pods {
		uid, key := string(p.UID), p.Namespace+"/"+p.Name
		other, found := seen[uid]
		if w := a.workers[uid]; !found && w != nil {
			other, found = w.key, true
		}
		if found && other != key {
			return fmt.Errorf("%s: Pod %s: metadata.uid %q is pod %s's: pod uids are assigned by the agent: %w",
				p.Source, key, uid, other, errdefs.ErrAlreadyExists)
		}
		seen[uid] = key
	}
	return nil
}

// ignoredUIDMessage is the warning apply gives for a pod whose manifest
// set a metadata.uid the agent ignored.
func ignoredUIDMessage(p *manifest.Pod) string {
	if p.IgnoredUID == "" {
		return ""
	}
	return fmt.Sprintf("metadata.uid %q ignored: pod uids are assigned by the agent (this pod's is %s)", p.IgnoredUID, p.UID)
}
