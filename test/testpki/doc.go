// Package testpki makes the certificates root tests need: a CA of the
// test's own that issues serving and client certificates into files (the
// test cluster, the TLS registry), and self-signed pairs in memory (the
// agnhost conformance image). Keys are ECDSA P-256, files are 0600, and
// nothing is valid for more than a day.
package testpki
