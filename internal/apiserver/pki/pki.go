package pki

import (
	"crypto"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/store"
)

const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 365 * 24 * time.Hour
	// renewBefore: a certificate that ends sooner than this is made again
	// (k3s's 90 days).
	renewBefore = 90 * 24 * time.Hour

	// AdminUser and AdminGroup name the admin client certificate's subject:
	// Kubernetes' superuser group.
	AdminUser  = "system:admin"
	AdminGroup = "system:masters"
)

// The pairs, by file name (<name>.crt, <name>.key) in Options.Dir.
const (
	serverCAName = "server-ca"
	clientCAName = "client-ca"
	servingName  = "serving"
	adminName    = "admin"
)

// Options says where the certificates live and what they name.
type Options struct {
	// Dir is the directory of the certificates and keys: made 0700 (an
	// existing one is given 0700), files 0600.
	Dir string
	// Hosts are the DNS names and IP addresses the serving certificate
	// names: those clients reach the server by.
	Hosts []string
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// Log receives what was made and set aside; nil: discarded.
	Log *slog.Logger
}

// Result is what Ensure leaves in Options.Dir.
type Result struct {
	// ServerCAFile, ClientCAFile, ServingCertFile and ServingKeyFile are
	// the paths the server is configured with.
	ServerCAFile, ClientCAFile, ServingCertFile, ServingKeyFile string
	// ServerCA, AdminCert and AdminKey are PEM, for a kubeconfig.
	ServerCA, AdminCert, AdminKey []byte
	// Issued names the pairs this call made ("server-ca", "serving", ...).
	Issued []string
	// SetAside are the files this call could not read and renamed aside.
	SetAside []string
}

// Ensure makes what is missing, unreadable, ending within 90 days or no
// longer right in o.Dir, keeps the rest, and says where it all is.
func Ensure(o Options) (*Result, error) {
	hosts, err := o.validate()
	if err != nil {
		return nil, err
	}
	if err := store.MkdirPrivate(o.Dir); err != nil {
		return nil, fmt.Errorf("api server certificates: %w", err)
	}
	k := &keeper{dir: o.Dir, now: o.Now(), log: o.Log, res: &Result{}}
	serverCA, err := k.ensureCA(serverCAName, "berth-server-ca")
	if err != nil {
		return nil, err
	}
	clientCA, err := k.ensureCA(clientCAName, "berth-client-ca")
	if err != nil {
		return nil, err
	}
	serving := leafSpec{name: servingName, cn: "berth-apiserver", hosts: hosts, usage: x509.ExtKeyUsageServerAuth}
	if _, err := k.ensureLeaf(serving, serverCA); err != nil {
		return nil, err
	}
	admin := leafSpec{name: adminName, cn: AdminUser, org: AdminGroup, usage: x509.ExtKeyUsageClientAuth}
	adminPair, err := k.ensureLeaf(admin, clientCA)
	if err != nil {
		return nil, err
	}
	r := k.res
	r.ServerCAFile, r.ClientCAFile = k.path(serverCAName, ".crt"), k.path(clientCAName, ".crt")
	r.ServingCertFile, r.ServingKeyFile = k.path(servingName, ".crt"), k.path(servingName, ".key")
	r.ServerCA, r.AdminCert, r.AdminKey = serverCA.certPEM, adminPair.certPEM, adminPair.keyPEM
	return r, nil
}

// validate checks o, fills its defaults and returns its hosts, sorted and
// without repeats.
func (o *Options) validate() ([]string, error) {
	if o.Dir == "" || !filepath.IsAbs(o.Dir) {
		return nil, fmt.Errorf("api server certificates: directory %q: not an absolute path: %w", o.Dir, errdefs.ErrInvalidArgument)
	}
	if len(o.Hosts) == 0 {
		return nil, fmt.Errorf("api server certificates: no host to name in the serving certificate: %w", errdefs.ErrInvalidArgument)
	}
	var hosts []string
	for _, h := range o.Hosts {
		if h == "" || strings.ContainsAny(h, " /:@") && net.ParseIP(h) == nil {
			return nil, fmt.Errorf("api server certificates: host %q: not a DNS name or an IP address: %w", h, errdefs.ErrInvalidArgument)
		}
		if ip := net.ParseIP(h); ip != nil {
			h = ip.String()
		}
		hosts = append(hosts, h)
	}
	slices.Sort(hosts)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return slices.Compact(hosts), nil
}

// pair is a certificate and its key, parsed and as PEM.
type pair struct {
	cert            *x509.Certificate
	key             crypto.Signer
	certPEM, keyPEM []byte
}

// keeper loads, checks and makes the pairs of one Ensure.
type keeper struct {
	dir string
	now time.Time
	log *slog.Logger
	res *Result
}

func (k *keeper) path(name, ext string) string { return filepath.Join(k.dir, name+ext) }

// ensureCA keeps the CA name if it is readable, a CA, and ends more than
// renewBefore from now; otherwise it makes a new one.
func (k *keeper) ensureCA(name, cn string) (*pair, error) {
	p, err := k.load(name)
	if err != nil {
		return nil, err
	}
	if p != nil && p.cert.IsCA && k.now.Add(renewBefore).Before(p.cert.NotAfter) {
		return p, nil
	}
	p, err = newCA(cn, k.now)
	if err != nil {
		return nil, fmt.Errorf("api server certificates: %s: %w", name, err)
	}
	return p, k.save(name, p)
}

// leafSpec is what a leaf certificate must say.
type leafSpec struct {
	name, cn, org string
	hosts         []string
	usage         x509.ExtKeyUsage
}

// ensureLeaf keeps the leaf of spec if it is readable, signed by ca (a new
// CA's leaves are made again), says
// what spec says and ends more than renewBefore from now; otherwise it
// makes a new one.
func (k *keeper) ensureLeaf(spec leafSpec, ca *pair) (*pair, error) {
	p, err := k.load(spec.name)
	if err != nil {
		return nil, err
	}
	if p != nil && spec.satisfiedBy(p.cert, ca.cert, k.now) {
		return p, nil
	}
	p, err = newLeaf(spec, ca, k.now)
	if err != nil {
		return nil, fmt.Errorf("api server certificates: %s: %w", spec.name, err)
	}
	return p, k.save(spec.name, p)
}

// satisfiedBy says whether cert, issued by ca, is what spec asks for and
// lasts more than renewBefore from now.
func (spec leafSpec) satisfiedBy(cert, ca *x509.Certificate, now time.Time) bool {
	if cert.CheckSignatureFrom(ca) != nil || !now.Add(renewBefore).Before(cert.NotAfter) {
		return false
	}
	if cert.Subject.CommonName != spec.cn || !slices.Equal(cert.Subject.Organization, nonEmpty(spec.org)) {
		return false
	}
	if !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{spec.usage}) {
		return false
	}
	return slices.Equal(certHosts(cert), spec.hosts)
}

// certHosts lists the DNS names and IP addresses cert names, sorted.
func certHosts(cert *x509.Certificate) []string {
	hosts := slices.Clone(cert.DNSNames)
	for _, ip := range cert.IPAddresses {
		hosts = append(hosts, ip.String())
	}
	slices.Sort(hosts)
	return hosts
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}
