package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/berth-dev/berth/internal/store"
)

// load reads the pair name: nil when neither file is there. A pair it
// cannot use (one file of two, unreadable PEM, a key that is not the
// certificate's) is renamed aside, reported, and read as missing.
func (k *keeper) load(name string) (*pair, error) {
	certPEM, certErr := os.ReadFile(k.path(name, ".crt"))
	keyPEM, keyErr := os.ReadFile(k.path(name, ".key"))
	if errors.Is(certErr, fs.ErrNotExist) && errors.Is(keyErr, fs.ErrNotExist) {
		return nil, nil
	}
	why := errors.Join(certErr, keyErr)
	var p *pair
	if why == nil {
		p, why = parsePair(certPEM, keyPEM)
	}
	if why == nil {
		return p, nil
	}
	return nil, k.setAside(name, why)
}

// setAside renames what there is of the pair name to
// <file>.unreadable-<unix time>, and reports it.
func (k *keeper) setAside(name string, why error) error {
	for _, ext := range []string{".crt", ".key"} {
		from := k.path(name, ext)
		to := from + ".unreadable-" + strconv.FormatInt(k.now.Unix(), 10)
		if err := os.Rename(from, to); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return fmt.Errorf("api server certificates: %s: set aside %s: %w", name, from, err)
		}
		k.res.SetAside = append(k.res.SetAside, to)
		k.log.Warn("api server certificates: a file could not be used; it is set aside and its pair made again",
			"file", from, "now", to, "error", why)
	}
	return nil
}

// parsePair parses a PEM certificate and its PEM private key.
func parsePair(certPEM, keyPEM []byte) (*pair, error) {
	cb, _ := pem.Decode(certPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("certificate: %w", err)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, errors.New("no PEM key")
	}
	parsed, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	key, ok := parsed.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("key: a %T cannot sign", parsed)
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil || !bytes.Equal(pub, cert.RawSubjectPublicKeyInfo) {
		return nil, errors.New("the key is not the certificate's")
	}
	return &pair{cert: cert, key: key, certPEM: certPEM, keyPEM: keyPEM}, nil
}

// save writes the pair name, key first: a crash between the two leaves a
// pair that does not match, which the next load sets aside and makes again.
func (k *keeper) save(name string, p *pair) error {
	for _, f := range []struct {
		ext  string
		data []byte
	}{{".key", p.keyPEM}, {".crt", p.certPEM}} {
		if err := store.WriteFileAtomic(k.path(name, f.ext), f.data, 0o600); err != nil {
			return fmt.Errorf("api server certificates: %s: %w", name, err)
		}
	}
	k.res.Issued = append(k.res.Issued, name)
	k.log.Info("api server certificates: made", "pair", name, "subject", p.cert.Subject.String(),
		"until", p.cert.NotAfter.UTC().Format("2006-01-02"))
	return nil
}

// newCA makes a self-signed CA valid for caValidity from now.
func newCA(cn string, now time.Time) (*pair, error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: cn},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	return issue(tmpl, nil, now, caValidity)
}

// newLeaf makes the leaf spec describes, signed by ca, valid for
// leafValidity from now.
func newLeaf(spec leafSpec, ca *pair, now time.Time) (*pair, error) {
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: spec.cn, Organization: nonEmpty(spec.org)},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{spec.usage},
	}
	for _, h := range spec.hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return issue(tmpl, ca, now, leafValidity)
}

// issue gives tmpl a new P-256 key, a random serial and its validity (from
// an hour before now, for clocks a little behind), and signs it with
// parent (nil: itself).
func issue(tmpl *x509.Certificate, parent *pair, now time.Time, validity time.Duration) (*pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	if tmpl.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127)); err != nil {
		return nil, fmt.Errorf("serial: %w", err)
	}
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour).UTC(), now.Add(validity).UTC()
	signerCert, signerKey := tmpl, crypto.Signer(key)
	if parent != nil {
		signerCert, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, key.Public(), signerKey)
	if err != nil {
		return nil, fmt.Errorf("certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	return &pair{
		cert: cert, key: key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}
