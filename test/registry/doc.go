// Package registry runs Debian's docker-registry (/usr/bin/docker-registry,
// the CNCF distribution registry) on 127.0.0.1 for tests and the bench, and
// pushes test images into it with go-containerregistry.
//
// A Registry listens on a free loopback port with its storage, config and
// log in one directory. Variants: plain HTTP, htpasswd basic auth (bcrypt
// file written in Go) and TLS with a test CA generated in Go (CAFile is
// the CA certificate a client must trust). The registry's access log is
// captured to a file, so that a test can count blob GETs per digest
// (BlobGets) — the proof that a pull fetched each blob once.
//
// Images: single-arch busybox images from test/testimage (OCI or Docker
// schema 2 media types), a multi-arch index (the host platform plus a fake
// variant of another architecture), two images sharing their base layers,
// and generated images of filler files (pseudo-random, partly compressible
// content; BuildImage writes one as an OCI layout, once) such as the
// ~190 MB LargeImage of the pull benchmark.
//
// Rules: only processes this package started are signalled, by pid; Stop is
// idempotent and StartT registers it with t.Cleanup, so a failing test never
// leaves a registry running. Nothing here talks to a host other than the
// 127.0.0.1 registry it started. Test-only code: never linked into berth.
package registry
