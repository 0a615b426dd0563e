package kube

import (
	"fmt"
	"os"
)

// Identity is the subject of a client certificate: the user and its
// groups as the API server sees them.
type Identity struct {
	User   string
	Groups []string
}

// WriteKubeconfig writes a kubeconfig for a client of server that
// authenticates with a client certificate.
func WriteKubeconfig(path, server, caPath, certPath, keyPath string) error {
	return os.WriteFile(path, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: berth-test
  cluster: {server: %q, certificate-authority: %q}
users:
- name: berth-test
  user: {client-certificate: %q, client-key: %q}
contexts:
- name: berth-test
  context: {cluster: berth-test, user: berth-test, namespace: default}
current-context: berth-test
`, server, caPath, certPath, keyPath)), 0o600)
}
