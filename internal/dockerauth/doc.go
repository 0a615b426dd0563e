// Package dockerauth is berth's registry keyring, as kubelet's
// credentialprovider: it reads docker credentials in their three forms — a
// config.json ({"auths": {...}}), a legacy .dockercfg (the map alone) and
// the kubernetes.io/dockerconfigjson and kubernetes.io/dockercfg Secrets
// that carry them — and matches an image to the entries that apply to it.
//
// Rules:
//   - Matching is kubelet's: an entry's key is a host with an optional
//     port and path (a scheme, and a /v1/ or /v2/ path, are dropped); its
//     host labels may be globs (*.example.com matches a.example.com, not
//     example.com nor a.b.example.com), the port must be equal and the
//     path a prefix of the image's repository. docker.io and
//     index.docker.io are one registry. Entries are returned most specific
//     first (keys in reverse order), several under one key in the order
//     they were added.
//   - Nothing here prints a password: errors name the source and the key,
//     and Credential's String leaves the secret fields out.
//   - The package only parses and matches; it neither reads Secrets from
//     anywhere nor talks to registries (internal/agent and
//     internal/registry do).
package dockerauth
