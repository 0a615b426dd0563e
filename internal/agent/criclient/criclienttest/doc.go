// Package criclienttest is an in-memory CRI runtime for tests: a
// criclient.Runtime and criclient.Images that records every call, so
// tests of packages built on the CRI client assert what was asked of the
// runtime, in order, without a daemon.
package criclienttest
