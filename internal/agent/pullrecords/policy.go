package pullrecords

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/berth-dev/berth/internal/dockerauth"
)

// Policy is kubelet's imagePullCredentialsVerificationPolicy: which
// present images a pod must show credentials for.
type Policy string

// The policies, with kubelet's names.
const (
	// NeverVerify: any pod may use any present image (kubelet before
	// KEP-2535).
	NeverVerify Policy = "NeverVerify"
	// NeverVerifyPreloadedImages (the default): images the agent did not
	// pull (imported, pulled by hand or before the agent kept records)
	// are not verified; those it pulled are.
	NeverVerifyPreloadedImages Policy = "NeverVerifyPreloadedImages"
	// NeverVerifyAllowlistedImages: images of the allowlist are not
	// verified; every other one is, preloaded or not.
	NeverVerifyAllowlistedImages Policy = "NeverVerifyAllowlistedImages"
	// AlwaysVerify: every present image is verified; one the agent has
	// no record of is pulled again with the pod's credentials.
	AlwaysVerify Policy = "AlwaysVerify"
)

// DefaultPolicy is kubelet's default.
const DefaultPolicy = NeverVerifyPreloadedImages

// Policies are the valid policies, in kubelet's order.
var Policies = []Policy{NeverVerify, NeverVerifyPreloadedImages, NeverVerifyAllowlistedImages, AlwaysVerify}

// Verification is a policy with its allowlist, checked.
type Verification struct {
	policy   Policy
	exact    map[string]bool // repositories, without tag or digest
	prefixes []string        // patterns "<prefix>/*", without the "*"
}

// NewVerification checks a policy ("" is DefaultPolicy) and its
// allowlist, as kubelet's configuration validation does: an allowlist
// only with NeverVerifyAllowlistedImages, each pattern a repository
// without tag or digest ("registry/path/app") or a prefix ending in "/*"
// ("registry/path/*"), no spaces around it and no other "*".
func NewVerification(policy Policy, allowlist []string) (Verification, error) {
	if policy == "" {
		policy = DefaultPolicy
	}
	known := false
	for _, p := range Policies {
		known = known || p == policy
	}
	if !known {
		return Verification{}, fmt.Errorf("image pull credentials verification policy %q: want one of %s", policy, policyNames())
	}
	if len(allowlist) > 0 && policy != NeverVerifyAllowlistedImages {
		return Verification{}, fmt.Errorf("an image allowlist applies only to policy %s, not %s", NeverVerifyAllowlistedImages, policy)
	}
	v := Verification{policy: policy, exact: map[string]bool{}}
	for _, pattern := range allowlist {
		norm, prefix, err := allowlistPattern(pattern)
		if err != nil {
			return Verification{}, fmt.Errorf("image allowlist pattern %q: %w", pattern, err)
		}
		if prefix {
			v.prefixes = append(v.prefixes, norm)
		} else {
			v.exact[norm] = true
		}
	}
	return v, nil
}

// Policy is the verification's policy.
func (v Verification) Policy() Policy {
	if v.policy == "" {
		return DefaultPolicy
	}
	return v.policy
}

func policyNames() string {
	names := make([]string, len(Policies))
	for i, p := range Policies {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

// allowlistPattern checks one pattern and returns what images are matched
// against: the repository, or the prefix up to and with its final "/".
func allowlistPattern(pattern string) (string, bool, error) {
	if pattern != strings.TrimSpace(pattern) {
		return "", false, fmt.Errorf("spaces around it")
	}
	trimmed, prefix := strings.CutSuffix(pattern, "/*")
	switch {
	case trimmed == "":
		return "", false, fmt.Errorf("too short: a prefix needs at least a registry host")
	case strings.Contains(trimmed, "*"):
		return "", false, fmt.Errorf(`only a final "/*" may be a wildcard`)
	case prefix:
		return trimmed + "/", true, nil
	}
	if _, err := name.NewRepository(trimmed, name.WeakValidation); err != nil {
		return "", false, fmt.Errorf("not a repository without tag or digest: %w", err)
	}
	return trimmed, false, nil
}

// Required reports whether a pod must show credentials for a present
// image: image is the container's image as the pod names it,
// pulledByAgent whether the agent holds a record or an intent for it.
func (v Verification) Required(image string, pulledByAgent bool) bool {
	switch v.Policy() {
	case NeverVerify:
		return false
	case NeverVerifyPreloadedImages:
		return pulledByAgent
	case NeverVerifyAllowlistedImages:
		return !v.allowlisted(image)
	}
	return true
}

// allowlisted matches the image without tag or digest, as the pod names
// it (kubelet's rule) or as its full repository (busybox is
// docker.io/library/busybox), against the allowlist.
func (v Verification) allowlisted(image string) bool {
	var names []string
	if repo, ok := trimTagDigest(image); ok {
		names = append(names, repo)
	}
	if repo, ok := dockerauth.RepoToPull(image); ok {
		names = append(names, repo)
	}
	for _, n := range names {
		if v.exact[n] {
			return true
		}
		for _, p := range v.prefixes {
			if strings.HasPrefix(n, p) {
				return true
			}
		}
	}
	return false
}

// trimTagDigest is the image as written, less its tag and digest.
func trimTagDigest(image string) (string, bool) {
	rest, _, _ := strings.Cut(image, "@")
	slash := strings.LastIndex(rest, "/")
	if colon := strings.LastIndex(rest, ":"); colon > slash {
		rest = rest[:colon]
	}
	return rest, rest != ""
}
