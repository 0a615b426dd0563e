package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/registry"
)

// PullState is where one layer (or the whole image) of a pull stands.
type PullState string

// The states a PullProgress reports.
const (
	PullWaiting     PullState = "waiting"     // queued for a download slot
	PullDownloading PullState = "downloading" // bytes arriving (and unpacked as they arrive)
	PullUnpacking   PullState = "unpacking"   // unpacking a blob already in the store
	PullDone        PullState = "done"        // layer verified and staged; image committed
	PullExists      PullState = "exists"      // layer already in the store
	PullFailed      PullState = "failed"
)

// PullProgress is one progress event of a pull.
type PullProgress struct {
	Ref   string    // the normalized reference being pulled
	Layer string    // layer digest; "" for events about the whole image
	State PullState // see PullState
	Done  int64     // compressed bytes of the layer fetched so far (image: of all layers)
	Total int64     // compressed bytes in all (0 = unknown)
}

// Auth carries the fields of a CRI AuthConfig. The credentials go to the
// registry's upstream endpoint only, never to its mirrors; when
// ServerAddress is set (host[:port], a scheme and path are tolerated) only
// to the host it names.
type Auth struct {
	Username, Password, Auth, IdentityToken, RegistryToken string
	ServerAddress                                          string
}

// PullOptions are the per-pull settings.
type PullOptions struct {
	Auth     *Auth              // nil: anonymous, unless DockerConfig
	Progress func(PullProgress) // optional; called from several goroutines, must be cheap
	// DockerConfig looks credentials up in docker-style config.json files
	// ($DOCKER_CONFIG/config.json, ~/.docker/config.json) when Auth is nil.
	DockerConfig bool
}

// PullConfig configures pulls; its zero value means the defaults.
type PullConfig struct {
	HostsDir               string        // hosts.toml directory; default /etc/berth/certs.d
	MaxConcurrentDownloads int           // layer downloads at a time in this process; default 3
	MinThroughput          int64         // bytes/s a layer download must reach over StallWindow; default 1024
	StallWindow            time.Duration // default 60s
	// AuthFile is the node-wide docker config.json used when a pull has
	// no credentials of its own (registry.Options.AuthFile); "" none.
	AuthFile string
}

// Pull defaults.
const (
	DefaultHostsDir               = "/etc/berth/certs.d"
	DefaultMaxConcurrentDownloads = 3
	DefaultMinThroughput          = 1024
	DefaultStallWindow            = 60 * time.Second
)

func (c PullConfig) withDefaults() PullConfig {
	if c.HostsDir == "" {
		c.HostsDir = DefaultHostsDir
	}
	if c.MaxConcurrentDownloads <= 0 {
		c.MaxConcurrentDownloads = DefaultMaxConcurrentDownloads
	}
	if c.MinThroughput <= 0 {
		c.MinThroughput = DefaultMinThroughput
	}
	if c.StallWindow <= 0 {
		c.StallWindow = DefaultStallWindow
	}
	return c
}

// puller is the pull machinery of one Store.
type puller struct {
	mu     sync.Mutex
	cfg    PullConfig
	client *registry.Client
	slots  chan struct{} // download slots

	images   flightGroup[Image]
	layers   flightGroup[*stagedLayer]
	watchers pullWatchers // WatchPulls
}

// ConfigurePull sets the pull configuration; pulls already running keep
// the one they started with.
func (s *Store) ConfigurePull(cfg PullConfig) {
	cfg = cfg.withDefaults()
	s.pull.mu.Lock()
	defer s.pull.mu.Unlock()
	s.pull.cfg = cfg
	s.pull.client = registry.New(cfg.HostsDir)
	s.pull.slots = make(chan struct{}, cfg.MaxConcurrentDownloads)
}

// pullSettings returns the configuration, the defaults when never configured.
func (s *Store) pullSettings() (PullConfig, *registry.Client, chan struct{}) {
	s.pull.mu.Lock()
	defer s.pull.mu.Unlock()
	if s.pull.client == nil {
		s.pull.cfg = PullConfig{}.withDefaults()
		s.pull.client = registry.New(s.pull.cfg.HostsDir)
		s.pull.slots = make(chan struct{}, s.pull.cfg.MaxConcurrentDownloads)
	}
	return s.pull.cfg, s.pull.client, s.pull.slots
}

// Pull fetches ref from its registry into the store and returns the image.
// ref is normalized (busybox → <default domain>/library/busybox:latest)
// and resolved through the registry hosts config: mirrors in order, then
// the upstream. From an index the linux/<GOARCH> manifest is taken. Every
// blob is verified; layers are fetched in parallel (bounded) and unpacked
// as they arrive; concurrent pulls of one image, and of one layer, are
// done once; a download slower than the minimum throughput over the stall
// window is cancelled. The image is committed atomically: on any failure
// nothing of it is visible. A pull always asks the registry for the
// manifest with the request's credentials, even for a digest the store
// holds (layers it holds are not fetched again): a pull is how a client
// proves it may use an image, as with containerd (the agent's
// ensure-secret-pulled check relies on it). Errors: bad reference
// InvalidArgument; unknown image NotFound; 401/403 FailedPrecondition; network, TLS, stall, digest
// mismatch, truncated blob Unavailable.
func (s *Store) Pull(ctx context.Context, ref string, opts PullOptions) (Image, error) {
	normalized, err := NormalizeRef(ref)
	if err != nil {
		return Image{}, err
	}
	parsed, err := name.ParseReference(normalized)
	if err != nil {
		return Image{}, fmt.Errorf("image reference %q: %v: %w", ref, err, errdefs.ErrInvalidArgument)
	}
	key := normalized + "\x00" + authKey(opts)
	f := s.pull.images.join(key, func(fctx context.Context, f *flight[Image]) (Image, error) {
		// One forwarder per flight, however many callers share it.
		unwatch := f.hub.subscribe(func(p PullProgress) { s.pull.watchers.emit(normalized, p) })
		defer unwatch()
		return s.pullImage(fctx, normalized, parsed, opts, &f.hub)
	}, nil)
	defer s.pull.images.leave(key, f)
	unsubscribe := f.hub.subscribe(opts.Progress)
	defer unsubscribe()
	img, err := f.wait(ctx)
	if err != nil {
		return Image{}, err
	}
	return cloneImage(img)
}

// authKey tells pulls with different credentials apart, so that one caller
// never shares a pull made with another's credentials.
func authKey(opts PullOptions) string {
	if opts.Auth == nil {
		return fmt.Sprintf("anonymous %t", opts.DockerConfig)
	}
	a := opts.Auth
	sum := sha256.Sum256([]byte(a.Username + "\x00" + a.Password + "\x00" + a.Auth + "\x00" + a.IdentityToken + "\x00" + a.RegistryToken + "\x00" + a.ServerAddress))
	return hex.EncodeToString(sum[:])
}

func (s *Store) registryOptions(opts PullOptions) registry.Options {
	cfg, _, _ := s.pullSettings()
	ro := registry.Options{UseKeychain: opts.DockerConfig, AuthFile: cfg.AuthFile, LocalBlob: s.readVerifiedBlob}
	if a := opts.Auth; a != nil {
		ro.Credentials = &registry.Credentials{
			Username: a.Username, Password: a.Password, Auth: a.Auth,
			IdentityToken: a.IdentityToken, RegistryToken: a.RegistryToken,
			ServerAddress: a.ServerAddress,
		}
	}
	return ro
}

// readVerifiedBlob returns a blob of the store: blobs are verified before
// they are renamed into place, so their content matches their name.
func (s *Store) readVerifiedBlob(digest string) ([]byte, bool) {
	hex, ok := strings.CutPrefix(digest, "sha256:")
	if !ok {
		return nil, false
	}
	b, err := os.ReadFile(s.blobPath(hex))
	return b, err == nil
}
