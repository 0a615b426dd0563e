package pki_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth-dev/berth/internal/apiserver/pki"
	"github.com/berth-dev/berth/internal/errdefs"
)

var start = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

func ensure(t *testing.T, dir string, now time.Time, hosts ...string) *pki.Result {
	t.Helper()
	r, err := pki.Ensure(pki.Options{Dir: dir, Hosts: hosts, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A fresh directory gets both CAs, the serving and the admin pair, all
// root-only; a client with the admin certificate and the server CA is
// served over TLS by a server with the serving pair that asks for
// certificates of the client CA, and one without a certificate is not.
func TestEnsureMakesAServerAndAnAdminThatTrustEachOther(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	r := ensure(t, dir, time.Now(), "127.0.0.1", "localhost")
	if want := []string{"server-ca", "client-ca", "serving", "admin"}; !slices.Equal(r.Issued, want) {
		t.Errorf("issued %v; want %v", r.Issued, want)
	}
	checkModes(t, dir)

	seen := make(chan string, 2) // the subjects of the clients served
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(_ http.ResponseWriter, req *http.Request) {
		subject := req.TLS.PeerCertificates[0].Subject
		seen <- subject.CommonName + " " + strings.Join(subject.Organization, ",")
	}))
	serving, err := tls.LoadX509KeyPair(r.ServingCertFile, r.ServingKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serving}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool(t, r.ClientCAFile)}
	srv.StartTLS()
	defer srv.Close()

	admin, err := tls.X509KeyPair(r.AdminCert, r.AdminKey)
	if err != nil {
		t.Fatal(err)
	}
	roots := pool(t, r.ServerCAFile)
	get(t, &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{admin}}, srv.URL)
	if got, want := <-seen, pki.AdminUser+" "+pki.AdminGroup; got != want {
		t.Errorf("the server saw %q; want %q", got, want)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	if resp, err := client.Get(srv.URL); err == nil {
		resp.Body.Close()
		t.Errorf("a client without a certificate was served: %s", resp.Status)
	}
	get(t, &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{admin}}, strings.Replace(srv.URL, "127.0.0.1", "localhost", 1))
	if got := <-seen; got == "" {
		t.Error("not served by the name localhost")
	}
}

func pool(t *testing.T, file string) *x509.CertPool {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(data) {
		t.Fatalf("%s: no certificate", file)
	}
	return p
}

// get asks url with cfg, and fails the test unless it is served.
func get(t *testing.T, cfg *tls.Config, url string) {
	t.Helper()
	resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
}

// checkModes: the directory is 0700 and every file in it 0600.
func checkModes(t *testing.T, dir string) {
	t.Helper()
	info, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o700 {
		t.Errorf("%s: mode %v; want 0700", dir, info.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if info, _ := e.Info(); info.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v; want 0600", e.Name(), info.Mode().Perm())
		}
	}
}

// What is right is kept; a new host remakes the serving pair only; 90
// days before a leaf ends both leaves are made again, the CAs kept; 90
// days before a CA ends, it and every leaf are.
func TestEnsureKeepsWhatIsRightAndRenewsWhatEnds(t *testing.T) {
	dir := t.TempDir()
	first := ensure(t, dir, start, "127.0.0.1")
	again := ensure(t, dir, start.Add(time.Hour), "127.0.0.1", "127.0.0.1")
	if len(again.Issued) != 0 || string(again.AdminCert) != string(first.AdminCert) || string(again.ServerCA) != string(first.ServerCA) {
		t.Errorf("a second Ensure made %v; want nothing", again.Issued)
	}
	for _, tc := range []struct {
		name  string
		now   time.Time
		hosts []string
		want  []string
	}{
		{"a new host", start, []string{"127.0.0.1", "node-1"}, []string{"serving"}},
		{"the same hosts in another order", start, []string{"node-1", "127.0.0.1"}, nil},
		{"276 days on", start.Add(276 * 24 * time.Hour), []string{"127.0.0.1", "node-1"}, []string{"serving", "admin"}},
		{"the next day", start.Add(277 * 24 * time.Hour), []string{"127.0.0.1", "node-1"}, nil},
		{"9.8 years on", start.Add(3560 * 24 * time.Hour), []string{"127.0.0.1", "node-1"}, []string{"server-ca", "client-ca", "serving", "admin"}},
	} {
		r := ensure(t, dir, tc.now, tc.hosts...)
		if !slices.Equal(r.Issued, tc.want) {
			t.Errorf("%s: issued %v; want %v", tc.name, r.Issued, tc.want)
		}
	}
	checkModes(t, dir)
}

// A pair it cannot use is set aside, never deleted, and made again: a
// certificate that is not PEM, a key that is not its certificate's, a
// certificate without its key. A leaf signed by another CA is made again.
func TestEnsureSetsAsideWhatItCannotUse(t *testing.T) {
	dir := t.TempDir()
	ensure(t, dir, start, "127.0.0.1")
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	adminKey, _ := os.ReadFile(filepath.Join(dir, "admin.key"))
	write("serving.crt", "not a certificate")
	write("admin.key", "")
	if err := os.Remove(filepath.Join(dir, "client-ca.key")); err != nil {
		t.Fatal(err)
	}
	r := ensure(t, dir, start, "127.0.0.1")
	if want := []string{"client-ca", "serving", "admin"}; !slices.Equal(r.Issued, want) {
		t.Errorf("issued %v; want %v", r.Issued, want)
	}
	suffix := ".unreadable-" + "1795867200"
	want := []string{"client-ca.crt", "serving.crt", "serving.key", "admin.crt", "admin.key"}
	for i := range want {
		want[i] = filepath.Join(dir, want[i]+suffix)
	}
	if !slices.Equal(r.SetAside, want) {
		t.Errorf("set aside %v; want %v", r.SetAside, want)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "serving.crt"+suffix)); string(got) != "not a certificate" {
		t.Errorf("the set-aside serving.crt holds %q", got)
	}

	write("serving.key", string(adminKey)) // the key of another certificate
	later := start.Add(time.Minute)
	if r := ensure(t, dir, later, "127.0.0.1"); !slices.Equal(r.Issued, []string{"serving"}) || len(r.SetAside) != 2 {
		t.Errorf("with a key not the certificate's: issued %v, set aside %v", r.Issued, r.SetAside)
	}

	if err := os.Remove(filepath.Join(dir, "server-ca.crt")); err != nil {
		t.Fatal(err)
	}
	if r := ensure(t, dir, later.Add(time.Minute), "127.0.0.1"); !slices.Equal(r.Issued, []string{"server-ca", "serving"}) {
		t.Errorf("a new server CA: issued %v; want it and the serving pair it signs", r.Issued)
	}
}

func TestEnsureRefusesBadOptions(t *testing.T) {
	for _, o := range []pki.Options{
		{Dir: "relative", Hosts: []string{"127.0.0.1"}},
		{Dir: t.TempDir()},
		{Dir: t.TempDir(), Hosts: []string{"http://x"}},
		{Dir: t.TempDir(), Hosts: []string{""}},
	} {
		if _, err := pki.Ensure(o); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("Ensure(%+v): %v; want invalid argument", o, err)
		}
	}
}

// The kubeconfig reaches the server as the admin, is 0600, replaces an
// earlier one and sets aside a file that is not a kubeconfig.
func TestWriteKubeconfig(t *testing.T) {
	dir := t.TempDir()
	r := ensure(t, filepath.Join(dir, "pki"), start, "127.0.0.1")
	path := filepath.Join(dir, "etc", "berth", "kubeconfig")
	for range 2 {
		if err := pki.WriteKubeconfig(path, "https://127.0.0.1:6443", r, start, nil); err != nil {
			t.Fatal(err)
		}
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig: %v %v; want mode 0600", info, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:6443" || string(cfg.CAData) != string(r.ServerCA) || string(cfg.CertData) != string(r.AdminCert) {
		t.Errorf("kubeconfig's client config: host %q, CA and client certificate as Ensure's: %v %v", cfg.Host,
			string(cfg.CAData) == string(r.ServerCA), string(cfg.CertData) == string(r.AdminCert))
	}

	if err := os.WriteFile(path, []byte("\x00 not yaml: ["), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := pki.WriteKubeconfig(path, "https://127.0.0.1:6443", r, start, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path + ".unreadable-1795867200"); string(got) != "\x00 not yaml: [" {
		t.Errorf("the foreign file set aside holds %q", got)
	}
	for _, server := range []string{"http://127.0.0.1:6443", "https://", "https://127.0.0.1:6443/api"} {
		if err := pki.WriteKubeconfig(path, server, r, start, nil); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("server %q: %v; want invalid argument", server, err)
		}
	}
}
