// Package pki makes and keeps the certificates of the node agent's
// Kubernetes API server, and writes the kubeconfig that reaches it, as k3s
// keeps its own: a CA for serving and one for clients (ten years), the
// server's certificate for the addresses it listens on and an admin client
// certificate (system:admin in system:masters), each for a year and made
// again 90 days before it ends, or at once when its CA changed or the
// serving addresses did. Everything lives in one root-only directory
// (0700, files 0600); a file it cannot read is renamed aside and reported,
// never deleted, and its pair made again. The kubeconfig is written whole
// (temp file and rename), 0600. It uses the standard library's crypto and
// client-go's kubeconfig types; it serves nothing itself.
package pki
