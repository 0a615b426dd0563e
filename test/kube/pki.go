package kube

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is the test cluster's certificate authority: it signs the serving
// certificates of the API server and kubelet and every client's
// certificate; its key also signs CSRs in the controller manager.
type CA struct {
	Dir      string // where every certificate and key is written
	CertPath string
	KeyPath  string

	cert *x509.Certificate
	key  crypto.Signer
}

// Identity is the subject of a client certificate: the user and its
// groups as the API server sees them.
type Identity struct {
	User   string
	Groups []string
}

// NewCA makes a CA and writes ca.crt and ca.key into dir.
func NewCA(dir string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "berth-test-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	ca := &CA{Dir: dir, cert: cert, key: key,
		CertPath: filepath.Join(dir, "ca.crt"), KeyPath: filepath.Join(dir, "ca.key")}
	return ca, writePair(ca.CertPath, ca.KeyPath, der, key)
}

// Client issues a client certificate for id into <name>.crt and
// <name>.key.
func (ca *CA) Client(name string, id Identity) (certPath, keyPath string, err error) {
	subject := pkix.Name{CommonName: id.User, Organization: id.Groups}
	return ca.issue(name, subject, x509.ExtKeyUsageClientAuth, nil)
}

// Server issues a serving certificate for hosts (names or IP addresses).
func (ca *CA) Server(name string, hosts ...string) (certPath, keyPath string, err error) {
	return ca.issue(name, pkix.Name{CommonName: name}, x509.ExtKeyUsageServerAuth, hosts)
}

func (ca *CA) issue(name string, subject pkix.Name, usage x509.ExtKeyUsage, hosts []string) (string, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return "", "", fmt.Errorf("issue %s: %w", name, err)
	}
	certPath, keyPath := filepath.Join(ca.Dir, name+".crt"), filepath.Join(ca.Dir, name+".key")
	return certPath, keyPath, writePair(certPath, keyPath, der, key)
}

// ServiceAccountKey writes a key pair for signing service account tokens.
func (ca *CA) ServiceAccountKey() (pubPath, keyPath string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return "", "", err
	}
	pubPath, keyPath = filepath.Join(ca.Dir, "sa.pub"), filepath.Join(ca.Dir, "sa.key")
	if err := writePEM(pubPath, "PUBLIC KEY", pub); err != nil {
		return "", "", err
	}
	return pubPath, keyPath, writeKey(keyPath, key)
}

func writePair(certPath, keyPath string, der []byte, key crypto.Signer) error {
	if err := writePEM(certPath, "CERTIFICATE", der); err != nil {
		return err
	}
	return writeKey(keyPath, key)
}

func writeKey(path string, key crypto.Signer) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "PRIVATE KEY", der)
}

func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err)
	}
	return n
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
