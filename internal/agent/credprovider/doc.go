// Package credprovider runs kubelet's image credential provider plugins
// (the exec plugin protocol, credentialprovider.kubelet.k8s.io/v1) for the
// node agent: node-wide registry credentials for images that none of a
// pod's imagePullSecrets match.
//
// The configuration is kubelet's CredentialProviderConfig
// (kubelet.config.k8s.io/v1, --image-credential-provider-config); each
// provider is the executable <bin dir>/<name>
// (--image-credential-provider-bin-dir), run for an image that one of its
// matchImages globs matches, with the provider's args and env (added to the
// agent's), a CredentialProviderRequest on stdin and a
// CredentialProviderResponse expected on stdout. Answers are cached as
// kubelet caches them: per image, per registry or globally (cacheKeyType),
// for cacheDuration or else the provider's defaultCacheDuration (0: not
// cached).
//
// Rules:
//   - A configuration error (unknown field, bad name, missing binary,
//     unsupported apiVersion or service account tokens) fails Load: the
//     agent does not start with half its providers.
//   - A plugin that fails, times out (1 minute) or answers nonsense gives
//     no credentials; the failure is logged with the provider's name and
//     the image, never the plugin's answer.
//   - The config file, the bin dir and each plugin are held to the
//     registry auth_file's rule (package trusted: owned by root or the
//     agent's user, not writable by group or others), at Load and, for
//     the plugin, before each run: whoever can write them chooses what
//     the agent runs as root.
//   - A plugin runs in a process group of its own, killed at the timeout
//     and after the plugin exits; Wait gives a child that holds the
//     plugin's output one second (WaitDelay), so nothing it leaves
//     behind hangs the pull.
//   - Matching is package dockerauth's (kubelet's).
package credprovider
