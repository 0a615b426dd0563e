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
	"github.com/berth-dev/berth/internal/dockerauth"
)

// CredentialSource gives node-wide registry credentials for an image
// (kubelet's credential provider plugins, package credprovider); the
// agent asks it only when none of the pod's imagePullSecrets match.
type CredentialSource interface {
	Lookup(ctx context.Context, image string) []dockerauth.Credential
}

// pullCredentials are the credentials to try, in order, for image: the
// entries of the pod's imagePullSecrets that match it (most specific
// first, secrets in the pod's order), else the node's credential
// providers'. None means one pull without credentials. Secrets that are
// missing or not registry credentials are skipped and described in
// skipped (reported as kubelet reports them); a registry Secret that does
// not parse fails the pull.
func (w *podWorker) pullCredentials(ctx context.Context, pod *v1.Pod, sources podspec.Sources, image string) (creds []dockerauth.Credential, skipped []string, err error) {
	var keyring dockerauth.Keyring
	for _, ref := range pod.Spec.ImagePullSecrets {
		s, ok := sources.Secret(ref.Name)
		if !ok {
			skipped = append(skipped, fmt.Sprintf("%q: not found", ref.Name))
			continue
		}
		entries, err := dockerauth.ParseSecret(string(s.Type), podspec.SecretData(s), fmt.Sprintf("image pull secret %q", ref.Name))
		if errors.Is(err, dockerauth.ErrNotRegistrySecret) {
			skipped = append(skipped, err.Error())
			continue
		}
		if err != nil {
			return nil, skipped, err
		}
		for _, key := range keyring.Add(entries) {
			skipped = append(skipped, fmt.Sprintf("image pull secret %q: entry %q is not a registry host", ref.Name, key))
		}
	}
	if creds = keyring.Lookup(image); len(creds) > 0 || w.deps.credentials == nil {
		return creds, skipped, nil
	}
	return w.deps.credentials.Lookup(ctx, image), skipped, nil
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
// kubelet does; without credentials it pulls once with none. The error
// names each credential's source (never its secret) with its failure.
func (w *podWorker) pullWith(ctx context.Context, image string, creds []dockerauth.Credential, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	if len(creds) == 0 {
		return w.deps.images.PullImage(ctx, image, nil, sandbox)
	}
	var failures []string
	for _, c := range creds {
		auth := &runtimeapi.AuthConfig{Username: c.Username, Password: c.Password, IdentityToken: c.IdentityToken, RegistryToken: c.RegistryToken}
		ref, err := w.deps.images.PullImage(ctx, image, auth, sandbox)
		if err == nil {
			return ref, nil
		}
		failures = append(failures, fmt.Sprintf("with credentials of %s: %v", c, err))
		if ctx.Err() != nil {
			break
		}
	}
	return "", errors.New(strings.Join(failures, "; "))
}
