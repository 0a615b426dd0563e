package testpki

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"slices"
	"testing"
)

func loadPair(t *testing.T, certPath, keyPath string) *x509.Certificate {
	t.Helper()
	for _, p := range []string{certPath, keyPath} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", p, st.Mode().Perm())
		}
	}
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	return pair.Leaf
}

func TestCAIssuesVerifiableCertificates(t *testing.T) {
	ca, err := NewCA(t.TempDir(), "test CA")
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(ca.CertPath)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("ca.crt is not a PEM certificate")
	}
	srvCert, srvKey := must2(t)(ca.Server("apiserver", "127.0.0.1", "localhost"))
	srv := loadPair(t, srvCert, srvKey)
	for _, host := range []string{"127.0.0.1", "localhost"} {
		if _, err := srv.Verify(x509.VerifyOptions{Roots: roots, DNSName: host}); err != nil {
			t.Errorf("serving certificate for %s: %v", host, err)
		}
	}
	if _, err := srv.Verify(x509.VerifyOptions{Roots: roots, DNSName: "example.org"}); err == nil {
		t.Error("serving certificate verifies for a host it was not issued for")
	}
	clCert, clKey := must2(t)(ca.Client("admin", "alice", "system:masters"))
	cl := loadPair(t, clCert, clKey)
	if _, err := cl.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}
	if cl.Subject.CommonName != "alice" || !slices.Equal(cl.Subject.Organization, []string{"system:masters"}) {
		t.Errorf("client subject = %v", cl.Subject)
	}
	if _, err := cl.Verify(x509.VerifyOptions{Roots: roots}); err == nil {
		t.Error("client certificate verifies as a serving certificate")
	}
}

func TestSelfSigned(t *testing.T) {
	certPEM, keyPEM, err := SelfSigned("127.0.0.1", "::1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(pair.Leaf)
	for _, host := range []string{"127.0.0.1", "::1", "localhost"} {
		if _, err := pair.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host}); err != nil {
			t.Errorf("%s: %v", host, err)
		}
	}
}

func must2(t *testing.T) func(a, b string, err error) (string, string) {
	return func(a, b string, err error) (string, string) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return a, b
	}
}
