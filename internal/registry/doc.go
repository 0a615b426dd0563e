// Package registry is the only package of berth that talks to image
// registries. It reads the registry hosts configuration (containerd's
// hosts.toml layout plus berth's rewrites), turns a reference into an
// ordered list of endpoints (mirrors, then the upstream), builds their
// transports (TLS with a private CA or skip_verify, plain HTTP where
// configured or for loopback registries), authenticates (CRI AuthConfig
// credentials, a docker-style config.json keychain, bearer tokens through
// go-containerregistry) and resolves a reference to a verified manifest and
// config for linux/<GOARCH>, falling back from one endpoint to the next.
//
// Rules:
//   - The protocol is go-containerregistry's (remote, transport); this
//     package only chooses endpoints and wires transports and credentials.
//   - hosts.toml is read on every resolve, so a change applies to the next
//     pull without a restart. A file that does not parse is an error, never
//     silently ignored.
//   - Errors wrap errdefs classes: 401/403 FailedPrecondition, unknown
//     image NotFound, a bad reference or hosts file InvalidArgument, and
//     network, TLS, timeouts and bad content Unavailable.
//   - Blob bodies are returned unverified-by-us but checked by the caller
//     (internal/image hashes every byte it keeps); so a blob missing on the
//     endpoint that resolved the image may come from the next ones.
//   - Explicit (CRI) credentials go to the upstream endpoint only, and only
//     to the host their server address names when they have one; a mirror
//     gets at most the config.json entry of its own host.
//   - The node-wide auth file ([registry] auth_file) serves requests
//     without credentials; it is matched with package dockerauth (kubelet's
//     rules), read at each connection, and refused unless it is a regular
//     file owned by root that group and others cannot write.
//   - Nothing waits forever: connections, TLS handshakes and response
//     headers have timeouts, resolution is bounded per endpoint, and
//     manifest bodies are bounded as they are read.
package registry
