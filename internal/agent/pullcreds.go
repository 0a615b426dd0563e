package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/podspec"
	"github.com/berth-dev/berth/internal/agent/pullrecords"
	"github.com/berth-dev/berth/internal/dockerauth"
)

// CredentialSource gives node-wide registry credentials for an image
// (kubelet's credential provider plugins, package credprovider); the
// agent asks it only when none of the pod's imagePullSecrets match.
type CredentialSource interface {
	Lookup(ctx context.Context, image string) []dockerauth.Credential
}

// pullCredential is a credential to pull with and, for one from an image
// pull secret, that secret as the image pull records know it; nil: a
// node-wide credential (a credential provider plugin's).
type pullCredential struct {
	dockerauth.Credential
	secret *pullrecords.Secret
}

// pullCredentials are the credentials to try, in order, for image: the
// entries of the pod's imagePullSecrets that match it (most specific
// first, secrets in the pod's order), else the node's credential
// providers'. None means one pull without credentials. Secrets that are
// missing or not registry credentials are skipped and described in
// skipped (reported as kubelet reports them); a registry Secret that does
// not parse fails the pull.
func (w *podWorker) pullCredentials(ctx context.Context, pod *v1.Pod, sources podspec.Sources, image string) (creds []pullCredential, skipped []string, err error) {
	creds, skipped, err = w.secretCredentials(pod, sources, image)
	if err != nil || len(creds) > 0 || w.deps.credentials == nil {
		return creds, skipped, err
	}
	for _, c := range w.deps.credentials.Lookup(ctx, image) {
		creds = append(creds, pullCredential{Credential: c})
	}
	return creds, skipped, nil
}

// secretCredentials are the entries of the pod's imagePullSecrets that
// match image, each with its secret (pullCredentials' first half).
func (w *podWorker) secretCredentials(pod *v1.Pod, sources podspec.Sources, image string) (creds []pullCredential, skipped []string, err error) {
	var keyring dockerauth.Keyring
	bySource := map[string]*v1.Secret{}
	for _, ref := range pod.Spec.ImagePullSecrets {
		s, ok := sources.Secret(ref.Name)
		if !ok {
			skipped = append(skipped, fmt.Sprintf("%q: not found", ref.Name))
			continue
		}
		source := fmt.Sprintf("image pull secret %q", ref.Name)
		entries, err := dockerauth.ParseSecret(string(s.Type), podspec.SecretData(s), source)
		if errors.Is(err, dockerauth.ErrNotRegistrySecret) {
			skipped = append(skipped, err.Error())
			continue
		}
		if err != nil {
			return nil, skipped, err
		}
		bySource[source] = s
		for _, key := range keyring.Add(entries) {
			skipped = append(skipped, fmt.Sprintf("image pull secret %q: entry %q is not a registry host", ref.Name, key))
		}
	}
	for _, c := range keyring.Lookup(image) {
		creds = append(creds, pullCredential{Credential: c, secret: w.recordedSecret(pod, bySource[c.Source], c)})
	}
	return creds, skipped, nil
}

// recordedSecret is a secret's credential as the image pull records keep
// it: the secret's coordinates and the credential's keyed hash (the
// sources store's key: sourcestore.Store.Digest), never the credential.
func (w *podWorker) recordedSecret(pod *v1.Pod, s *v1.Secret, c dockerauth.Credential) *pullrecords.Secret {
	ns := pod.Namespace
	if ns == "" {
		ns = "default"
	}
	rec := &pullrecords.Secret{Namespace: ns, Name: c.Source} // not node-wide, whatever happens below
	if s == nil {
		return rec
	}
	rec.Name, rec.UID = s.Name, string(s.UID)
	if w.deps.sources == nil {
		return rec
	}
	hash, err := w.deps.sources.Digest(struct {
		Username, Password, IdentityToken, RegistryToken string
	}{c.Username, c.Password, c.IdentityToken, c.RegistryToken})
	if err != nil {
		w.deps.log.Warn("image pull secret: no credential hash, the secret matches by name only", "pod", w.key, "secret", s.Name, "error", err)
		return rec
	}
	rec.CredentialHash = hash
	return rec
}

// recordedCredentials are what a pull with c is recorded as: the secret,
// or node-wide for a plugin's credential or none.
func recordedCredentials(c *pullCredential) pullrecords.Credentials {
	if c == nil || c.secret == nil {
		return pullrecords.NodeWideCredentials()
	}
	return pullrecords.SecretCredentials(*c.secret)
}

// reportSkippedSecrets records kubelet's event for pull secrets it could
// not use.
func (w *podWorker) reportSkippedSecrets(skipped []string) {
	if len(skipped) == 0 {
		return
	}
	w.record(agentapi.EventWarning, "FailedToRetrieveImagePullSecret", "",
		"Unable to retrieve some image pull secrets ("+strings.Join(skipped, "; ")+"); attempting to pull the image may not succeed.")
}

// pullWith pulls image with each credential in turn until one succeeds, as
// kubelet does, and returns the one that did; without credentials it
// pulls once with none (used: nil). The error names each credential's
// source (never its secret) with its failure.
func (w *podWorker) pullWith(ctx context.Context, image string, creds []pullCredential, sandbox *runtimeapi.PodSandboxConfig) (ref string, used *pullCredential, err error) {
	if len(creds) == 0 {
		ref, err := w.deps.images.PullImage(ctx, image, nil, sandbox)
		return ref, nil, err
	}
	var failures []string
	for i := range creds {
		c := &creds[i]
		auth := &runtimeapi.AuthConfig{Username: c.Username, Password: c.Password, IdentityToken: c.IdentityToken, RegistryToken: c.RegistryToken}
		ref, err := w.deps.images.PullImage(ctx, image, auth, sandbox)
		if err == nil {
			return ref, c, nil
		}
		failures = append(failures, fmt.Sprintf("with credentials of %s: %v", c.Credential, err))
		if ctx.Err() != nil {
			break
		}
	}
	return "", nil, errors.New(strings.Join(failures, "; "))
}
