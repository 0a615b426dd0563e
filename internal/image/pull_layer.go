package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/registry"
)

// stagedLayer is a layer blob fetched and unpacked into a private,
// locked staging dir, shared by every pull that needs it until the last
// one released it.
type stagedLayer struct {
	st      *staging
	digest  string // blob digest
	blobHex string
	diffID  string // digest of the uncompressed stream, as read
	size    int64

	budget   *imageBudget // the image budget charged while unpacking
	unpacked int64        // bytes of the uncompressed stream

	mu      sync.Mutex
	claimed bool // the unpacked dir was moved into a pull's staging
}

func (l *stagedLayer) blobPath() string  { return l.st.stagedBlob(l.blobHex) }
func (l *stagedLayer) layerPath() string { return l.st.stagedLayer(l.blobHex) }

// claim hands the unpacked dir to the first caller only.
func (l *stagedLayer) claim() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.claimed {
		return false
	}
	l.claimed = true
	return true
}

// layerJob is what a layer flight needs to fetch one layer.
type layerJob struct {
	res   *registry.Resolved
	desc  v1.Descriptor
	cfg   PullConfig
	slots chan struct{}
	hub   *progressHub
	auth  string // authKey of the pull: layer flights are per credentials

	budget *imageBudget // of the pull that starts the flight
}

// unpack bounds the unpack of l into its staging dir.
func (s *Store) unpack(job layerJob, l *stagedLayer) layerUnpack {
	return layerUnpack{lim: l.st.lim, image: job.budget, space: s.spaceGuard()}
}

// fetchLayer stages one layer: from the store's blob when it is there
// (another chain holds it), else downloaded and unpacked as it arrives,
// once a download slot is free (a waiting layer has no staging yet).
func (s *Store) fetchLayer(ctx context.Context, job layerJob) (*stagedLayer, error) {
	digest := job.desc.Digest.String()
	hexSum, err := digestHex(digest)
	if err != nil {
		return nil, fmt.Errorf("layer %s: %w", digest, err)
	}
	if stored := s.blobPath(hexSum); fileExists(stored) {
		return s.stageLayer(job, hexSum, func(l *stagedLayer) error { return s.unpackStoredBlob(l, stored, job) })
	}
	job.hub.emit(PullProgress{Layer: digest, State: PullWaiting, Total: job.desc.Size})
	select {
	case job.slots <- struct{}{}:
		defer func() { <-job.slots }()
	case <-ctx.Done():
		return nil, fmt.Errorf("layer %s: %w", digest, context.Cause(ctx))
	}
	return s.stageLayer(job, hexSum, func(l *stagedLayer) error { return s.downloadLayer(ctx, l, job) })
}

// stageLayer creates the layer's held staging dir and fills it; on failure
// the dir is removed.
func (s *Store) stageLayer(job layerJob, hexSum string, fill func(*stagedLayer) error) (*stagedLayer, error) {
	digest := job.desc.Digest.String()
	st, err := newStaging(s)
	if err != nil {
		return nil, fmt.Errorf("layer %s: %w", digest, err)
	}
	l := &stagedLayer{st: st, digest: digest, blobHex: hexSum, size: job.desc.Size, budget: job.budget}
	if err := os.Mkdir(l.layerPath(), 0o755); err != nil {
		st.cleanup()
		return nil, fmt.Errorf("layer %s: staging: %w", digest, err)
	}
	if err := fill(l); err != nil {
		st.cleanup()
		return nil, fmt.Errorf("layer %s: %w", digest, err)
	}
	return l, nil
}

func (s *Store) unpackStoredBlob(l *stagedLayer, stored string, job layerJob) error {
	job.hub.emit(PullProgress{Layer: l.digest, State: PullUnpacking, Done: l.size, Total: l.size})
	f, err := os.Open(stored)
	if err != nil {
		return fmt.Errorf("blob: %w", err)
	}
	defer f.Close()
	diffID, n, err := unpackStream(f, l.layerPath(), s.unpack(job, l), 0)
	if err != nil {
		return err
	}
	l.unpacked = n
	if err := os.Link(stored, l.blobPath()); err != nil {
		return fmt.Errorf("blob: stage: %w", err)
	}
	l.diffID = diffID
	return nil
}

// downloadLayer streams the blob into the staged blob file and the
// unpacked dir at once, under the stall watchdog, which runs from before
// the request: a registry that never answers moves zero bytes.
func (s *Store) downloadLayer(ctx context.Context, l *stagedLayer, job layerJob) error {
	job.hub.emit(PullProgress{Layer: l.digest, State: PullDownloading, Total: l.size})
	dctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	m := &meteredReader{total: l.size, report: func(done int64) {
		job.hub.emit(PullProgress{Layer: l.digest, State: PullDownloading, Done: done, Total: l.size})
	}}
	stop := watchStall(dctx, cancel, &m.n, job.cfg.MinThroughput, job.cfg.StallWindow)
	defer stop()
	body, err := job.res.Blob(dctx, l.digest)
	if err != nil {
		return stallCause(dctx, fmt.Errorf("download: %w", err))
	}
	defer body.Close()
	m.r = io.LimitReader(body, l.size+1)
	return stallCause(dctx, s.streamBlob(m, l, s.unpack(job, l)))
}

// stallCause returns the stall watchdog's error (which says why) in place
// of the error the cancellation caused.
func stallCause(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); err != nil && cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}

// streamBlob writes the compressed stream to the staged blob while it is
// unpacked, then checks size, digest and (by returning it) the diff id.
func (s *Store) streamBlob(r io.Reader, l *stagedLayer, u layerUnpack) error {
	out, err := os.OpenFile(l.blobPath(), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("blob: stage: %w", err)
	}
	defer out.Close()
	h := sha256.New()
	counted := &countingWriter{}
	tee := io.TeeReader(r, io.MultiWriter(out, h, counted))
	diffID, n, unpackErr := unpackStream(tee, l.layerPath(), u, l.size)
	_, drainErr := io.Copy(io.Discard, tee) // the rest, so the digest covers every byte
	if err := checkDownload(l, counted.n, h, unpackErr, drainErr); err != nil {
		return err
	}
	l.diffID, l.unpacked = diffID, n
	return nil
}

// checkDownload decides what went wrong: a transfer failure or a blob
// that is not what the manifest promised wins over the tar error it causes.
func checkDownload(l *stagedLayer, n int64, h hash.Hash, unpackErr, drainErr error) error {
	if n > l.size {
		return fmt.Errorf("download: more than the %d bytes the manifest says: %w", l.size, errdefs.ErrUnavailable)
	}
	readErr := drainErr
	if readErr == nil && unpackErr != nil && !errors.Is(unpackErr, errdefs.ErrInvalidArgument) {
		readErr = unpackErr
	}
	if readErr != nil && n < l.size {
		return fmt.Errorf("download: truncated at %d of %d bytes: %w", n, l.size, asUnavailable(readErr))
	}
	if n < l.size {
		return fmt.Errorf("download: truncated at %d of %d bytes: %w", n, l.size, errdefs.ErrUnavailable)
	}
	if got := digestPrefix + hex.EncodeToString(h.Sum(nil)); got != l.digest {
		return fmt.Errorf("download: digest mismatch: content is %s: %w", got, errdefs.ErrUnavailable)
	}
	if readErr != nil {
		return fmt.Errorf("download: %w", asUnavailable(readErr))
	}
	return unpackErr
}

func asUnavailable(err error) error {
	for _, class := range []error{errdefs.ErrUnavailable, errdefs.ErrFailedPrecondition, errdefs.ErrNotFound, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, class) {
			return err
		}
	}
	return fmt.Errorf("%v: %w", err, errdefs.ErrUnavailable)
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// unpackStream decompresses r (gzip, zstd or plain tar), unpacks it into
// dst and returns the digest and size of the uncompressed stream. need is
// what is written besides (the blob) for the free-space check before.
func unpackStream(r io.Reader, dst string, u layerUnpack, need int64) (string, int64, error) {
	if err := u.space.ensure(need); err != nil {
		return "", 0, err
	}
	stream, closeStream, err := decompress(r)
	if err != nil {
		return "", 0, err
	}
	defer closeStream()
	h := sha256.New()
	m := u.meter(stream)
	ur := io.TeeReader(m, h)
	if err := applyTar(ur, dst, u.lim); err != nil {
		return "", 0, err
	}
	if _, err := io.Copy(io.Discard, ur); err != nil {
		return "", 0, fmt.Errorf("layer stream: %w", err)
	}
	return digestPrefix + hex.EncodeToString(h.Sum(nil)), m.read, nil
}
