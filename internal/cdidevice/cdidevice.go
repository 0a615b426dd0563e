package cdidevice

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"tags.cncf.io/container-device-interface/pkg/cdi"
	"tags.cncf.io/container-device-interface/pkg/parser"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/trusted"
)

// DefaultSpecDirs are where CDI spec files are looked for, in increasing
// priority (a later directory's device of the same name wins), as the CDI
// library and containerd default them.
var DefaultSpecDirs = []string{"/etc/cdi", "/var/run/cdi"}

// Request is one device a container asks for, and where it asked.
type Request struct {
	Name  string // fully qualified: vendor.com/class=name
	Field string // "cdi_devices[0]" or "annotations[cdi.k8s.io/...]"
}

// Requested lists the CDI devices cfg asks for, CDIDevices first, then the
// annotations' (sorted by key), each once. A name that is not fully
// qualified is InvalidArgument naming it and its field.
func Requested(cfg *runtimeapi.ContainerConfig) ([]Request, error) {
	var out []Request
	seen := map[string]bool{}
	add := func(name, field string) error {
		if _, _, _, err := parser.ParseQualifiedName(name); err != nil {
			return fmt.Errorf("%s: CDI device %q: %v: %w", field, name, err, errdefs.ErrInvalidArgument)
		}
		if !seen[name] {
			seen[name] = true
			out = append(out, Request{Name: name, Field: field})
		}
		return nil
	}
	for i, d := range cfg.GetCDIDevices() {
		if err := add(d.GetName(), fmt.Sprintf("cdi_devices[%d]", i)); err != nil {
			return nil, err
		}
	}
	keys := make([]string, 0, len(cfg.GetAnnotations()))
	for k := range cfg.GetAnnotations() {
		if strings.HasPrefix(k, cdi.AnnotationPrefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		for name := range strings.SplitSeq(cfg.GetAnnotations()[k], ",") {
			if err := add(strings.TrimSpace(name), "annotations["+k+"]"); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// Registry resolves CDI devices from the spec files of its directories.
type Registry struct {
	cache     *cdi.Cache
	dirs      []string // as configured, for the errors
	untrusted []string // directories left out, and why
}

// New reads the spec files of dirs (DefaultSpecDirs when empty) and
// watches the directories, those missing now included, for changes. A
// spec can make berth run hooks and mount host paths as root, so a
// directory (or, where it is missing, its parent) that someone other than
// root could write, or that lies below such a directory, is left out and
// reported by Errors (package trusted's rule). A spec file that cannot be
// read leaves its devices out and is reported too; neither fails New.
func New(dirs []string) (*Registry, error) {
	if len(dirs) == 0 {
		dirs = DefaultSpecDirs
	}
	r := &Registry{dirs: slices.Clone(dirs)}
	var use []string
	for _, dir := range dirs {
		if err := checkTrusted(dir); err != nil {
			r.untrusted = append(r.untrusted, fmt.Sprintf("%s: left out: %v", dir, err))
			continue
		}
		use = append(use, dir)
	}
	if len(use) == 0 {
		return r, nil // no cache: the library would fall back to its own default dirs
	}
	cache, err := cdi.NewCache(cdi.WithSpecDirs(use...), cdi.WithAutoRefresh(true))
	if err != nil && cache == nil {
		return nil, fmt.Errorf("CDI spec dirs %s: %w", strings.Join(use, ", "), err)
	}
	r.cache = cache
	return r, nil
}

// checkTrusted applies package trusted's rule to dir's real path, or to
// its parent's while dir does not exist (only root can make it there).
func checkTrusted(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("not an absolute path")
	}
	real, err := filepath.EvalSymlinks(dir)
	if errors.Is(err, fs.ErrNotExist) {
		real, err = filepath.EvalSymlinks(filepath.Dir(dir))
	}
	if err != nil {
		return err
	}
	return trusted.CheckDirPath(real, "could make berth run any program as root through a CDI hook")
}

// Errors lists the directories left out and the spec files that could
// not be read, and why, for the log.
func (r *Registry) Errors() []string {
	out := slices.Clone(r.untrusted)
	var files []string
	if r.cache == nil {
		return out
	}
	for path, errs := range r.cache.GetErrors() {
		for _, err := range errs {
			if errors.Is(err, fs.ErrNotExist) {
				continue // a directory not made yet: watched, not wrong
			}
			files = append(files, fmt.Sprintf("%s: %v", path, err))
		}
	}
	sort.Strings(files)
	return append(out, files...)
}

// Devices lists every device the spec files name.
func (r *Registry) Devices() []string {
	if r.cache == nil {
		return nil
	}
	return r.cache.ListDevices()
}

// Check reports the first request no spec file resolves, as
// InvalidArgument naming the device, its field and the directories
// searched; nil when every device resolves. It has no side effect.
func (r *Registry) Check(reqs []Request) error {
	for _, req := range reqs {
		if r.cache == nil || r.cache.GetDevice(req.Name) == nil {
			return r.unresolved(req)
		}
	}
	return nil
}

// Inject applies the requested devices' edits to spec.
func (r *Registry) Inject(spec *specs.Spec, reqs []Request) error {
	if len(reqs) == 0 {
		return nil
	}
	if r.cache == nil {
		return r.unresolved(reqs[0])
	}
	names := make([]string, len(reqs))
	for i, req := range reqs {
		names[i] = req.Name
	}
	unresolved, err := r.cache.InjectDevices(spec, names...)
	if len(unresolved) > 0 {
		for _, req := range reqs {
			if req.Name == unresolved[0] {
				return r.unresolved(req)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("CDI devices %s: %w", strings.Join(names, ", "), err)
	}
	return nil
}

func (r *Registry) unresolved(req Request) error {
	return fmt.Errorf("%s: CDI device %q: no spec in %s defines it: %w",
		req.Field, req.Name, strings.Join(r.dirs, ", "), errdefs.ErrInvalidArgument)
}
