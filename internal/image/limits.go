package image

import (
	"fmt"
	"io"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/errdefs"
)

// Limits bound what unpacking may take; they guard against decompression
// bombs, absurd size headers and a full disk. The names in parentheses
// are the keys of berth's config file ([images]) that set them.
type Limits struct {
	MaxEntrySize int64   // bytes of one file (logical size, sparse files count fully) (max_file_size)
	MaxLayerSize int64   // bytes of one layer's uncompressed tar stream, and of its files together (max_layer_size)
	MaxImageSize int64   // bytes of the uncompressed streams of all layers one pull or import unpacks for an image (max_image_size)
	MaxEntries   int     // tar entries in one layer (max_layer_entries)
	MinFree      Reserve // left free on the store's filesystem while unpacking (min_free_space)
}

// Reserve is space that unpacking leaves free: Bytes, or Percent of the
// filesystem's size when Percent > 0. The zero Reserve reserves nothing.
type Reserve struct {
	Bytes   int64
	Percent float64
}

// bytesOf returns the reserve on a filesystem of total bytes.
func (r Reserve) bytesOf(total int64) int64 {
	if r.Percent > 0 {
		return int64(float64(total) * r.Percent / 100)
	}
	return r.Bytes
}

func (r Reserve) String() string {
	if r.Percent > 0 {
		return fmt.Sprintf("%g%% of the filesystem", r.Percent)
	}
	return fmt.Sprintf("%d bytes", r.Bytes)
}

// DefaultLimits are the limits of a store that was not configured: no
// real image comes near the size bounds, and 1 GiB stays free.
var DefaultLimits = Limits{
	MaxEntrySize: 16 << 30,
	MaxLayerSize: 64 << 30,
	MaxImageSize: 128 << 30,
	MaxEntries:   1 << 20,
	MinFree:      Reserve{Bytes: 1 << 30},
}

// SetLimits sets the unpack limits of later imports and pulls. A size or
// count left zero takes its DefaultLimits value; MinFree is taken as given.
func (s *Store) SetLimits(lim Limits) {
	if lim.MaxEntrySize <= 0 {
		lim.MaxEntrySize = DefaultLimits.MaxEntrySize
	}
	if lim.MaxLayerSize <= 0 {
		lim.MaxLayerSize = DefaultLimits.MaxLayerSize
	}
	if lim.MaxImageSize <= 0 {
		lim.MaxImageSize = DefaultLimits.MaxImageSize
	}
	if lim.MaxEntries <= 0 {
		lim.MaxEntries = DefaultLimits.MaxEntries
	}
	s.lim.Store(&lim)
}

// limits returns the configured limits, DefaultLimits when never set.
func (s *Store) limits() Limits {
	if lim := s.lim.Load(); lim != nil {
		return *lim
	}
	return DefaultLimits
}

// imageBudget counts the uncompressed bytes unpacked for one image, across
// its layers (which may unpack in parallel).
type imageBudget struct {
	limit int64
	used  atomic.Int64
}

func newImageBudget(lim Limits) *imageBudget {
	return &imageBudget{limit: lim.MaxImageSize}
}

func (b *imageBudget) charge(n int64) error {
	if b == nil {
		return nil
	}
	if b.used.Add(n) > b.limit {
		return fmt.Errorf("the image's layers unpack to more than %d bytes (limit max_image_size): %w", b.limit, errdefs.ErrInvalidArgument)
	}
	return nil
}

// spaceCheckEvery is how many bytes a layer may unpack between two
// free-space checks.
const spaceCheckEvery = 16 << 20

// spaceGuard checks the free space of the filesystem holding dir (the
// store's root: staging is beneath it).
type spaceGuard struct {
	dir     string
	reserve Reserve
	statfs  func(string, *unix.Statfs_t) error
	since   int64
}

func (s *Store) spaceGuard() *spaceGuard {
	statfs := unix.Statfs
	if s.statfs != nil {
		statfs = s.statfs
	}
	return &spaceGuard{dir: s.root, reserve: s.limits().MinFree, statfs: statfs}
}

// ensure fails when writing need more bytes would eat into the reserve.
func (g *spaceGuard) ensure(need int64) error {
	if g == nil {
		return nil
	}
	var st unix.Statfs_t
	if err := g.statfs(g.dir, &st); err != nil {
		return fmt.Errorf("free space of %s: statfs: %w", g.dir, err)
	}
	unit := st.Frsize
	if unit <= 0 {
		unit = st.Bsize
	}
	avail, total := int64(st.Bavail)*unit, int64(st.Blocks)*unit
	if reserve := g.reserve.bytesOf(total); avail-need < reserve {
		return fmt.Errorf("filesystem of %s: %d bytes available, %d more needed, %s must stay free (min_free_space): %w",
			g.dir, avail, need, g.reserve, errdefs.ErrFailedPrecondition)
	}
	return nil
}

// charge counts n unpacked bytes, checking the free space every
// spaceCheckEvery bytes.
func (g *spaceGuard) charge(n int64) error {
	if g == nil {
		return nil
	}
	if g.since += n; g.since < spaceCheckEvery {
		return nil
	}
	g.since = 0
	return g.ensure(0)
}

// layerUnpack is what one layer's unpack is bounded by and charged to.
type layerUnpack struct {
	lim   Limits
	image *imageBudget // nil: not part of an image budget
	space *spaceGuard  // nil: nothing is written (diff id checks)
}

// meter passes a layer's uncompressed stream through, failing once it
// exceeds the layer's limit, its image's budget or the free space.
type meter struct {
	r    io.Reader
	u    layerUnpack
	read int64
}

func (u layerUnpack) meter(r io.Reader) *meter { return &meter{r: r, u: u} }

func (m *meter) Read(p []byte) (int, error) {
	if left := m.u.lim.MaxLayerSize - m.read; int64(len(p)) > left+1 {
		p = p[:left+1] // one byte past the limit tells "over" from "exactly"
	}
	n, err := m.r.Read(p)
	m.read += int64(n)
	if m.read > m.u.lim.MaxLayerSize {
		return 0, fmt.Errorf("uncompressed layer larger than %d bytes (limit max_layer_size): %w", m.u.lim.MaxLayerSize, errdefs.ErrInvalidArgument)
	}
	if cerr := m.u.image.charge(int64(n)); cerr != nil {
		return 0, cerr
	}
	if cerr := m.u.space.charge(int64(n)); cerr != nil {
		return 0, cerr
	}
	return n, err
}
