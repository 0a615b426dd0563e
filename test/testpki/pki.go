package testpki

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

// validity is how long every certificate is valid, from an hour ago.
const validity = 24 * time.Hour

// CA is a certificate authority of the test's own; its certificate and key
// are ca.crt and ca.key in Dir, beside every pair it issues.
type CA struct {
	Dir      string
	CertPath string
	KeyPath  string

	cert *x509.Certificate
	key  crypto.Signer
}

// NewCA makes a CA named commonName and writes ca.crt and ca.key into dir.
func NewCA(dir, commonName string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	tmpl := template(pkix.Name{CommonName: commonName})
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	tmpl.BasicConstraintsValid, tmpl.IsCA = true, true
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	ca := &CA{Dir: dir, cert: cert, key: key,
		CertPath: filepath.Join(dir, "ca.crt"), KeyPath: filepath.Join(dir, "ca.key")}
	return ca, writePair(ca.CertPath, ca.KeyPath, der, key)
}

// Client issues a client certificate for user, in groups (the subject's
// organizations, as the Kubernetes API server reads them), into
// <name>.crt and <name>.key.
func (ca *CA) Client(name, user string, groups ...string) (certPath, keyPath string, err error) {
	return ca.issue(name, pkix.Name{CommonName: user, Organization: groups}, x509.ExtKeyUsageClientAuth, nil)
}

// Server issues a serving certificate for hosts (names or IP addresses)
// into <name>.crt and <name>.key.
func (ca *CA) Server(name string, hosts ...string) (certPath, keyPath string, err error) {
	return ca.issue(name, pkix.Name{CommonName: name}, x509.ExtKeyUsageServerAuth, hosts)
}

func (ca *CA) issue(name string, subject pkix.Name, usage x509.ExtKeyUsage, hosts []string) (string, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", fmt.Errorf("key of %s: %w", name, err)
	}
	tmpl := leaf(subject, usage, hosts)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return "", "", fmt.Errorf("issue %s: %w", name, err)
	}
	certPath, keyPath := filepath.Join(ca.Dir, name+".crt"), filepath.Join(ca.Dir, name+".key")
	return certPath, keyPath, writePair(certPath, keyPath, der, key)
}

// KeyPair writes a bare key pair (no certificate) as <name>.pub (PKIX) and
// <name>.key, e.g. for signing service account tokens.
func (ca *CA) KeyPair(name string) (pubPath, keyPath string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", fmt.Errorf("key %s: %w", name, err)
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return "", "", fmt.Errorf("key %s: %w", name, err)
	}
	pubPath, keyPath = filepath.Join(ca.Dir, name+".pub"), filepath.Join(ca.Dir, name+".key")
	if err := writePEM(pubPath, "PUBLIC KEY", pub); err != nil {
		return "", "", err
	}
	return pubPath, keyPath, writeKey(keyPath, key)
}

// SelfSigned makes a self-signed serving certificate for hosts and its key,
// both PEM, in memory.
func SelfSigned(hosts ...string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("self-signed key: %w", err)
	}
	tmpl := leaf(pkix.Name{CommonName: hosts[0]}, x509.ExtKeyUsageServerAuth, hosts)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("self-signed certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("self-signed key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

func template(subject pkix.Name) *x509.Certificate {
	now := time.Now()
	return &x509.Certificate{SerialNumber: serial(), Subject: subject,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(validity)}
}

// leaf is the template of a certificate for usage, valid for hosts.
func leaf(subject pkix.Name, usage x509.ExtKeyUsage, hosts []string) *x509.Certificate {
	tmpl := template(subject)
	tmpl.KeyUsage, tmpl.ExtKeyUsage = x509.KeyUsageDigitalSignature, []x509.ExtKeyUsage{usage}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return tmpl
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
		return fmt.Errorf("key %s: %w", path, err)
	}
	return writePEM(path, "PRIVATE KEY", der)
}

func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}

// serial is a random positive serial number: crypto/rand failing is not
// something a test can go on from.
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(fmt.Sprintf("certificate serial: %v", err))
	}
	return n
}
