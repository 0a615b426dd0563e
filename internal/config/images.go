package config

import (
	"fmt"
	"strconv"
	"strings"

	units "github.com/docker/go-units"
)

// Defaults of the [images] keys: size bounds no real image comes near,
// and a fixed reserve of free space.
const (
	DefaultMaxFileSize     = "16GiB"
	DefaultMaxLayerSize    = "64GiB"
	DefaultMaxImageSize    = "128GiB"
	DefaultMaxLayerEntries = 1 << 20
	DefaultMinFreeSpace    = "1GiB"
)

// maxSize bounds every size key (4 EiB: far past any disk, far from overflow).
const maxSize = 1 << 62

// Images bounds what unpacking an image (pull or import) may take. Sizes
// are bytes or a number with a binary unit: "512MiB", "64GiB" ("64G" and
// "64g" too).
type Images struct {
	MaxFileSize     string `toml:"max_file_size"`     // one file of a layer; default 16GiB
	MaxLayerSize    string `toml:"max_layer_size"`    // one layer's uncompressed tar stream; default 64GiB
	MaxImageSize    string `toml:"max_image_size"`    // all layers of one image, uncompressed; default 128GiB
	MaxLayerEntries int    `toml:"max_layer_entries"` // tar entries in one layer; default 1048576
	MinFreeSpace    string `toml:"min_free_space"`    // left free on the store's filesystem: a size or "N%"; "0" for none; default 1GiB
}

// ImageLimits are the [images] keys parsed (Validate checks they parse).
type ImageLimits struct {
	MaxFileSize, MaxLayerSize, MaxImageSize int64
	MaxLayerEntries                         int
	MinFreeBytes                            int64   // when MinFreePercent is 0
	MinFreePercent                          float64 // of the filesystem's size; 0: MinFreeBytes applies
}

// Limits returns the parsed [images] keys; a key that does not parse
// (which Validate rejects) reads as 0.
func (i Images) Limits() ImageLimits {
	l := ImageLimits{MaxLayerEntries: i.MaxLayerEntries}
	l.MaxFileSize, _ = ParseSize(i.MaxFileSize)
	l.MaxLayerSize, _ = ParseSize(i.MaxLayerSize)
	l.MaxImageSize, _ = ParseSize(i.MaxImageSize)
	l.MinFreeBytes, l.MinFreePercent, _ = parseReserve(i.MinFreeSpace)
	return l
}

func (i *Images) applyDefaults() {
	setDefault(&i.MaxFileSize, DefaultMaxFileSize)
	setDefault(&i.MaxLayerSize, DefaultMaxLayerSize)
	setDefault(&i.MaxImageSize, DefaultMaxImageSize)
	if i.MaxLayerEntries == 0 {
		i.MaxLayerEntries = DefaultMaxLayerEntries
	}
	setDefault(&i.MinFreeSpace, DefaultMinFreeSpace)
}

// ParseSize reads a size in bytes: a number, optionally with a binary
// unit (k, m, g, t, p; "KiB", "MB" and "G" mean the same powers of 1024).
func ParseSize(s string) (int64, error) {
	n, err := units.RAMInBytes(strings.TrimSpace(s))
	if err != nil || n < 0 || n > maxSize {
		return 0, fmt.Errorf("size %q: want a number of bytes with an optional unit, like \"512MiB\" or \"64GiB\"", s)
	}
	return n, nil
}

// parseReserve reads min_free_space: "N%" (0 ≤ N < 100) or a size.
func parseReserve(s string) (int64, float64, error) {
	if pct, ok := strings.CutSuffix(strings.TrimSpace(s), "%"); ok {
		p, err := strconv.ParseFloat(strings.TrimSpace(pct), 64)
		if err != nil || p < 0 || p >= 100 {
			return 0, 0, fmt.Errorf("%q: want a percentage from 0%% to below 100%%", s)
		}
		return 0, p, nil
	}
	n, err := ParseSize(s)
	return n, 0, err
}

func images(i Images) error {
	var errs []error
	sizes := map[string]string{"max_file_size": i.MaxFileSize, "max_layer_size": i.MaxLayerSize, "max_image_size": i.MaxImageSize}
	for _, key := range []string{"max_file_size", "max_layer_size", "max_image_size"} {
		if n, err := ParseSize(sizes[key]); err != nil || n == 0 {
			errs = append(errs, invalid("images."+key, "%q: want a size of at least 1 byte, like \"64GiB\"", sizes[key]))
		}
	}
	if i.MaxLayerEntries < 1 {
		errs = append(errs, invalid("images.max_layer_entries", "%d: want at least 1", i.MaxLayerEntries))
	}
	if _, _, err := parseReserve(i.MinFreeSpace); err != nil {
		errs = append(errs, invalid("images.min_free_space", "%v; or \"0\" for no reserve", err))
	}
	if len(errs) > 0 {
		return joinErrors(errs)
	}
	// A layer bound above the image bound would never apply: say so now
	// rather than refuse such a layer under another key's name later.
	if l := i.Limits(); l.MaxLayerSize > l.MaxImageSize {
		return invalid("images.max_layer_size", "%s is more than max_image_size %s", i.MaxLayerSize, i.MaxImageSize)
	}
	return nil
}
