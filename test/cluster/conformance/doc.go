// Package conformance runs Kubernetes' own node conformance specs (the
// [NodeConformance] specs of k8s.io/kubernetes/test/e2e, built as e2e.test
// by `make e2e-bin`) against a cluster whose only runtime is berth, offline.
//
// The specs pull their images from registry.k8s.io. This package builds
// equivalents without network — agnhost from its Go source, the others
// from Debian's busybox (test/critest's base layer) and small Go programs —
// pushes them into Debian's docker-registry on 127.0.0.1 (test/registry)
// and writes berth's hosts.toml so that registry.k8s.io is served from it:
// the specs pull the very names they know. images.go says which images are
// stand-ins and what they do differently.
//
// skip.txt lists the specs that cannot pass offline on this host, each with
// its reason; results.txt is the committed list of the specs that ran,
// passed and were skipped. Run compares e2e.test's JUnit report against
// results.txt, so a spec that should pass and fails fails the test.
//
// Nothing here starts a cluster: test/cluster brings one up and calls Run.
// Test-only code: never linked into berth.
package conformance
