package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/berth-dev/berth/internal/errdefs"
)

// maxManifestSize bounds manifests, indexes and configs read into memory.
const maxManifestSize = 4 << 20

// endpointTimeout bounds the resolution of a reference (manifests and
// config) on one endpoint, so that a hung endpoint gives way to the next.
var endpointTimeout = 2 * time.Minute

// Client resolves references and fetches blobs. It is safe for concurrent
// use; the zero value reads no hosts files.
type Client struct {
	hostsDir   string
	transports transports
}

// New returns a client that reads <hostsDir>/<host>/hosts.toml.
func New(hostsDir string) *Client { return &Client{hostsDir: hostsDir} }

// Options are per-request settings.
type Options struct {
	Credentials *Credentials // nil: anonymous unless UseKeychain
	UseKeychain bool         // docker-style config.json when Credentials is nil
	// AuthFile is the node-wide docker config.json ([registry] auth_file),
	// read at each connection when neither Credentials nor UseKeychain
	// applies. It must be owned by root and not writable by others.
	AuthFile string
	OS, Arch string // platform to pick from an index; default linux/GOARCH
	Variant  string // optional CPU variant
	// LocalBlob, when set, returns a blob the caller already holds verified
	// (the image store's), so that it is not fetched again.
	LocalBlob func(digest string) ([]byte, bool)
}

// Manifest is a verified manifest or index blob.
type Manifest struct {
	Digest    string
	MediaType string
	Raw       []byte
}

// Resolved is a reference resolved on one endpoint to the image manifest
// for the wanted platform and its verified config.
type Resolved struct {
	Digest    string      // digest of what the reference names (index or manifest)
	Manifests []Manifest  // the named manifest, then the platform's one for an index
	Manifest  v1.Manifest // the image manifest
	Config    []byte      // the config blob, verified against Manifest.Config
	Endpoint  string      // URL of the endpoint that answered
	source    *source

	// Where a blob missing on source is looked for: the pull-capable
	// endpoints after it, connected on first use.
	client    *Client
	ref       name.Reference
	opts      Options
	fallbacks []Endpoint
	mu        sync.Mutex
	connected map[string]*source
}

// source is one endpoint with its authenticated transport.
type source struct {
	endpoint string // URL, for messages
	repo     name.Repository
	rt       http.RoundTripper
}

// Resolve resolves ref (as parsed by go-containerregistry) through the
// endpoints of its registry: mirrors in order, then the upstream. The first
// endpoint that yields a verified manifest and config wins; the error of a
// failure names every endpoint tried.
func (c *Client) Resolve(ctx context.Context, ref name.Reference, opts Options) (*Resolved, error) {
	reg := ref.Context().Registry
	familiar := reg.RegistryStr()
	if familiar == name.DefaultRegistry {
		familiar = strings.TrimPrefix(name.DefaultRegistry, "index.")
	}
	eps, err := Endpoints(c.hostsDir, familiar, reg.RegistryStr())
	if err != nil {
		return nil, err
	}
	_, byDigest := ref.(name.Digest)
	var errs []error
	for i, ep := range eps {
		if !ep.Pull || (!byDigest && !ep.Resolve) {
			continue
		}
		res, err := c.resolveWithin(ctx, ep, ref, opts)
		if err == nil {
			res.client, res.ref, res.opts = c, ref, opts
			res.fallbacks = pullEndpoints(eps[i+1:])
			return res, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("image %q: %w", ref.String(), context.Cause(ctx))
		}
		errs = append(errs, fmt.Errorf("endpoint %s: %w", ep.URL(), err))
	}
	return nil, joinEndpointErrors(ref.String(), errs)
}

// resolveWithin resolves on one endpoint within endpointTimeout.
func (c *Client) resolveWithin(ctx context.Context, ep Endpoint, ref name.Reference, opts Options) (*Resolved, error) {
	ectx, cancel := context.WithTimeout(ctx, endpointTimeout)
	defer cancel()
	res, err := c.resolveOn(ectx, ep, ref, opts)
	if err != nil && ctx.Err() == nil && ectx.Err() != nil {
		return nil, fmt.Errorf("no answer within %s: %w", endpointTimeout, errdefs.ErrUnavailable)
	}
	return res, err
}

func pullEndpoints(eps []Endpoint) []Endpoint {
	var out []Endpoint
	for _, ep := range eps {
		if ep.Pull {
			out = append(out, ep)
		}
	}
	return out
}

// joinEndpointErrors reports every endpoint's failure; the class is the
// last endpoint's (the upstream's when it was tried).
func joinEndpointErrors(ref string, errs []error) error {
	switch len(errs) {
	case 0:
		return fmt.Errorf("image %q: no endpoint may resolve it (check capabilities in hosts.toml): %w", ref, errdefs.ErrFailedPrecondition)
	case 1:
		return fmt.Errorf("image %q: %w", ref, errs[0])
	}
	msgs := make([]string, 0, len(errs)-1)
	for _, e := range errs[:len(errs)-1] {
		msgs = append(msgs, e.Error())
	}
	return fmt.Errorf("image %q: %s; %w", ref, strings.Join(msgs, "; "), errs[len(errs)-1])
}

func (c *Client) resolveOn(ctx context.Context, ep Endpoint, ref name.Reference, opts Options) (*Resolved, error) {
	src, err := c.connect(ctx, ep, ref, opts)
	if err != nil {
		return nil, err
	}
	res := &Resolved{Endpoint: ep.URL(), source: src}
	if err := res.resolveManifest(ctx, ref, opts); err != nil {
		return nil, err
	}
	cfg, ok := []byte(nil), false
	if opts.LocalBlob != nil {
		cfg, ok = opts.LocalBlob(res.Manifest.Config.Digest.String())
	}
	if !ok {
		if cfg, err = src.readBlob(ctx, res.Manifest.Config); err != nil {
			return nil, fmt.Errorf("config %s: %w", res.Manifest.Config.Digest, err)
		}
	}
	res.Config = cfg
	if len(res.Manifests) == 1 {
		if err := checkConfigPlatform(cfg, opts); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// connect pings the endpoint and sets up its authenticated transport.
func (c *Client) connect(ctx context.Context, ep Endpoint, ref name.Reference, opts Options) (*source, error) {
	rt, err := c.transports.forEndpoint(ep)
	if err != nil {
		return nil, err
	}
	var regOpts []name.Option
	if ep.Scheme == "http" {
		regOpts = append(regOpts, name.Insecure)
	}
	reg, err := name.NewRegistry(ep.Host, regOpts...)
	if err != nil {
		return nil, fmt.Errorf("host %q: %v: %w", ep.Host, err, errdefs.ErrInvalidArgument)
	}
	repo := reg.Repo(applyRewrites(ep.Rewrites, ref.Context().RepositoryStr()))
	auth, err := authenticator(ctx, opts, ep, ref.Context())
	if errors.Is(err, errdefs.ErrFailedPrecondition) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("credentials: %v: %w", err, errdefs.ErrInvalidArgument)
	}
	wrapped, err := transport.NewWithContext(ctx, reg, auth, rt, []string{repo.Scope(transport.PullScope)})
	if err != nil {
		return nil, classify(err)
	}
	return &source{endpoint: ep.URL(), repo: repo, rt: wrapped}, nil
}

func (s *source) options(ctx context.Context) []remote.Option {
	return []remote.Option{remote.WithTransport(s.rt), remote.WithContext(ctx)}
}

// readBlob fetches a small blob and verifies its digest and size.
func (s *source) readBlob(ctx context.Context, desc v1.Descriptor) ([]byte, error) {
	if desc.Size < 0 || desc.Size > maxManifestSize {
		return nil, fmt.Errorf("size %d: want at most %d bytes: %w", desc.Size, maxManifestSize, errdefs.ErrUnavailable)
	}
	rc, err := s.Blob(ctx, desc.Digest.String())
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, desc.Size+1))
	if err != nil {
		return nil, classify(err)
	}
	return data, verifyBytes(data, desc)
}

// Blob opens the compressed stream of the blob digest on the endpoint that
// resolved the image or, when that one does not have it, on the next
// pull-capable endpoint that does (the content is the digest's whatever
// host serves it). The caller hashes what it reads; a stream whose content
// does not match digest also fails at EOF. A blob no endpoint has is
// Unavailable: the manifest promised it.
func (r *Resolved) Blob(ctx context.Context, digest string) (io.ReadCloser, error) {
	rc, err := r.source.Blob(ctx, digest)
	var missing *blobMissingError
	if !errors.As(err, &missing) || len(r.fallbacks) == 0 {
		return rc, err
	}
	errs := []error{err}
	for _, ep := range r.fallbacks {
		src, err := r.fallbackSource(ctx, ep)
		if err == nil {
			if rc, err = src.Blob(ctx, digest); err == nil {
				return rc, nil
			}
		}
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		errs = append(errs, fmt.Errorf("endpoint %s: %w", ep.URL(), err))
	}
	msgs := make([]string, 0, len(errs)-1)
	for _, e := range errs[:len(errs)-1] {
		msgs = append(msgs, e.Error())
	}
	return nil, fmt.Errorf("%s; %w", strings.Join(msgs, "; "), errs[len(errs)-1])
}

// fallbackSource connects to ep once per resolved image.
func (r *Resolved) fallbackSource(ctx context.Context, ep Endpoint) (*source, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if src, ok := r.connected[ep.URL()]; ok {
		return src, nil
	}
	cctx, cancel := context.WithTimeout(ctx, endpointTimeout)
	defer cancel()
	src, err := r.client.connect(cctx, ep, r.ref, r.opts)
	if err != nil {
		return nil, err
	}
	if r.connected == nil {
		r.connected = map[string]*source{}
	}
	r.connected[ep.URL()] = src
	return src, nil
}

func (s *source) Blob(ctx context.Context, digest string) (io.ReadCloser, error) {
	l, err := remote.Layer(s.repo.Digest(digest), s.options(ctx)...)
	if err == nil {
		var rc io.ReadCloser
		if rc, err = l.Compressed(); err == nil {
			return &classifyingReader{rc: rc}, nil
		}
	}
	classified := classify(err)
	if errors.Is(classified, errdefs.ErrNotFound) {
		return nil, &blobMissingError{digest: digest, endpoint: s.endpoint, detail: oneLine(err.Error())}
	}
	return nil, classified
}

// blobMissingError is a blob a manifest names that its endpoint does not
// serve: the endpoint is incomplete (a partial mirror), not the image
// unknown, hence Unavailable.
type blobMissingError struct{ digest, endpoint, detail string }

func (e *blobMissingError) Error() string {
	return fmt.Sprintf("blob %s missing on endpoint %s: %s", e.digest, e.endpoint, e.detail)
}

func (e *blobMissingError) Unwrap() error { return errdefs.ErrUnavailable }

// classifyingReader gives read errors their class.
type classifyingReader struct{ rc io.ReadCloser }

func (r *classifyingReader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = classify(err)
	}
	return n, err
}

func (r *classifyingReader) Close() error { return r.rc.Close() }

// classify wraps a go-containerregistry or network error in its class.
func classify(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var te *transport.Error
	if errors.As(err, &te) {
		msg := oneLine(err.Error()) // registries put their response body in it
		switch {
		case te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden:
			return fmt.Errorf("unauthorized: %s: %w", msg, errdefs.ErrFailedPrecondition)
		case te.StatusCode == http.StatusNotFound || hasCode(te, transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode, transport.BlobUnknownErrorCode):
			return fmt.Errorf("%s: %w", msg, errdefs.ErrNotFound)
		}
	}
	for _, class := range []error{errdefs.ErrNotFound, errdefs.ErrFailedPrecondition, errdefs.ErrInvalidArgument, errdefs.ErrUnavailable} {
		if errors.Is(err, class) {
			return err
		}
	}
	return fmt.Errorf("%v: %w", err, errdefs.ErrUnavailable)
}

// oneLine folds a multi-line message into one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func hasCode(te *transport.Error, codes ...transport.ErrorCode) bool {
	for _, d := range te.Errors {
		for _, c := range codes {
			if d.Code == c {
				return true
			}
		}
	}
	return false
}

// HostPlatform is linux and the architecture berth was built for.
func HostPlatform() (os, arch string) { return "linux", runtime.GOARCH }
