package image

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/errdefs"
)

// maxSmallBlob bounds manifests, indexes and configs read into memory.
const maxSmallBlob = 4 << 20

// staging holds verified blobs and unpacked layers of one import in a
// private directory under <root>/tmp until they are committed.
type staging struct {
	s      *Store
	dir    string
	lim    Limits
	budget *imageBudget    // of the image being staged; nil: none
	blobs  map[string]bool // hex of blobs staged in dir/blobs
	layers map[string]bool // chain id hex of layers staged in dir/layers
	held   *os.File        // flock on dir: clearTmp leaves held dirs alone
}

func newStaging(s *Store) (*staging, error) {
	lim := s.limits()
	dir, err := os.MkdirTemp(s.tmpDir(), "import-")
	if err != nil {
		return nil, fmt.Errorf("import staging: %w", err)
	}
	held, err := holdDir(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("import staging: %w", err)
	}
	for _, sub := range []string{"blobs", "layers"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o700); err != nil {
			held.Close()
			os.RemoveAll(dir)
			return nil, fmt.Errorf("import staging: %w", err)
		}
	}
	return &staging{s: s, dir: dir, lim: lim, blobs: map[string]bool{}, layers: map[string]bool{}, held: held}, nil
}

// holdDir takes a flock on dir for as long as the returned file is open.
func holdDir(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("flock %s: %w", dir, err)
	}
	return f, nil
}

// cleanup removes the staging dir and releases it. What it cannot remove
// is swept by the next clearTmp, which leaves only held dirs alone.
func (st *staging) cleanup() {
	_ = removeTree(st.dir)
	st.held.Close()
}

// layerUnpack bounds the unpack of one layer of the image being staged
// into dst ("": nothing is written, only decompressed).
func (st *staging) layerUnpack(dst string) layerUnpack {
	u := layerUnpack{lim: st.lim, image: st.budget}
	if dst != "" {
		u.space = st.s.spaceGuard()
	}
	return u
}

func (st *staging) stagedBlob(hex string) string  { return filepath.Join(st.dir, "blobs", hex) }
func (st *staging) stagedLayer(hex string) string { return filepath.Join(st.dir, "layers", hex) }

// haveBlob returns the path of a verified blob, staged or already stored.
func (st *staging) haveBlob(hex string) (string, bool) {
	if st.blobs[hex] {
		return st.stagedBlob(hex), true
	}
	p := st.s.blobPath(hex)
	if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
		return p, true
	}
	return "", false
}

func (st *staging) haveLayer(chainHex string) bool {
	if st.layers[chainHex] {
		return true
	}
	fi, err := os.Lstat(st.s.layerPath(chainHex))
	return err == nil && fi.IsDir()
}

// stageSmallBlob reads a manifest, index or config, verifies it against
// ref and stages it. It returns the content and its digest.
func (st *staging) stageSmallBlob(ref blobRef) ([]byte, string, error) {
	if ref.path == "" {
		return nil, "", fmt.Errorf("blob %q: only sha256 digests are supported: %w", ref.digest, errdefs.ErrInvalidArgument)
	}
	f, err := os.Open(ref.path)
	if err != nil {
		return nil, "", fmt.Errorf("blob %s: %w", ref.digest, errdefs.ErrInvalidArgument)
	}
	defer f.Close()
	data, err := readSmall(f)
	if err != nil {
		return nil, "", fmt.Errorf("blob %s: %w", ref.digest, err)
	}
	sum := sha256.Sum256(data)
	if err := checkBlob(ref, hex.EncodeToString(sum[:]), int64(len(data))); err != nil {
		return nil, "", err
	}
	digest, err := st.stageData(data)
	return data, digest, err
}

// stageData stages a verified in-memory blob and returns its digest.
func (st *staging) stageData(data []byte) (string, error) {
	sum := sha256.Sum256(data)
	hexSum := hex.EncodeToString(sum[:])
	if _, ok := st.haveBlob(hexSum); !ok {
		if err := os.WriteFile(st.stagedBlob(hexSum), data, 0o600); err != nil {
			return "", fmt.Errorf("blob sha256:%s: stage: %w", hexSum, err)
		}
		st.blobs[hexSum] = true
	}
	return digestPrefix + hexSum, nil
}

// stageBlob copies a layer blob into staging while verifying it. It
// returns the verified file, its digest and size, and whether it is new
// (not yet in the store), in which case its diff id still needs checking.
func (st *staging) stageBlob(ref blobRef) (path, digest string, size int64, fresh bool, err error) {
	if ref.digest != "" {
		hexSum, err := digestHex(ref.digest)
		if err != nil || ref.path == "" {
			return "", "", 0, false, fmt.Errorf("blob %q: only sha256 digests are supported: %w", ref.digest, errdefs.ErrInvalidArgument)
		}
		if p, ok := st.haveBlob(hexSum); ok {
			fi, err := os.Stat(p)
			if err != nil {
				return "", "", 0, false, fmt.Errorf("blob %s: %w", ref.digest, err)
			}
			return p, ref.digest, fi.Size(), false, nil
		}
	}
	hexSum, size, err := st.copyBlob(ref)
	if err != nil {
		return "", "", 0, false, err
	}
	return st.stagedBlob(hexSum), digestPrefix + hexSum, size, true, nil
}

func (st *staging) copyBlob(ref blobRef) (string, int64, error) {
	in, err := os.Open(ref.path)
	if err != nil {
		return "", 0, fmt.Errorf("blob %s: %w", blobName(ref), errdefs.ErrInvalidArgument)
	}
	defer in.Close()
	out, err := os.CreateTemp(filepath.Join(st.dir, "blobs"), ".in-*")
	if err != nil {
		return "", 0, fmt.Errorf("blob %s: stage: %w", blobName(ref), err)
	}
	defer func() { out.Close(); os.Remove(out.Name()) }()
	limit := st.lim.MaxLayerSize
	if ref.size >= 0 && ref.size < limit {
		limit = ref.size
	}
	h := sha256.New()
	size, err := io.Copy(io.MultiWriter(out, h), newBoundedReader(in, limit))
	if err != nil {
		return "", 0, fmt.Errorf("blob %s: %w", blobName(ref), err)
	}
	hexSum := hex.EncodeToString(h.Sum(nil))
	if err := checkBlob(ref, hexSum, size); err != nil {
		return "", 0, err
	}
	if st.blobs[hexSum] {
		return hexSum, size, nil
	}
	if err := os.Rename(out.Name(), st.stagedBlob(hexSum)); err != nil {
		return "", 0, fmt.Errorf("blob %s: stage: %w", blobName(ref), err)
	}
	st.blobs[hexSum] = true
	return hexSum, size, nil
}

// checkBlob compares what was read with what the descriptor promised.
func checkBlob(ref blobRef, hexSum string, size int64) error {
	if ref.digest != "" && ref.digest != digestPrefix+hexSum {
		return fmt.Errorf("blob %s: content digest is sha256:%s: %w", ref.digest, hexSum, errdefs.ErrInvalidArgument)
	}
	if ref.size >= 0 && ref.size != size {
		return fmt.Errorf("blob %s: size %d, descriptor says %d: %w", blobName(ref), size, ref.size, errdefs.ErrInvalidArgument)
	}
	return nil
}

func blobName(ref blobRef) string {
	if ref.digest != "" {
		return ref.digest
	}
	return filepath.Base(ref.path)
}

// readSmall reads at most maxSmallBlob bytes, failing on more.
func readSmall(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxSmallBlob+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxSmallBlob {
		return nil, fmt.Errorf("larger than %d bytes: %w", maxSmallBlob, errdefs.ErrInvalidArgument)
	}
	return data, nil
}

// removeTree deletes a directory tree, making read-only directories
// writable first when the plain removal is refused (non-root owners).
func removeTree(p string) error {
	err := os.RemoveAll(p)
	if err == nil || !errors.Is(err, os.ErrPermission) {
		return err
	}
	_ = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(path, 0o700) //nolint:gosec // G122: a staging tree only berth writes, after its own RemoveAll was refused
		}
		return nil
	})
	return os.RemoveAll(p)
}
