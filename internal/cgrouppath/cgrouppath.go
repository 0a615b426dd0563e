package cgrouppath

import (
	"fmt"
	"path"
	"strings"

	"github.com/berth-dev/berth/internal/errdefs"
)

const (
	sliceSuffix = ".slice"
	scopeSuffix = ".scope"
	// DefaultSlice is where runc's systemd driver puts a unit whose
	// cgroupsPath names no slice.
	DefaultSlice = "system.slice"
)

// ExpandSlice returns the directory of a systemd slice below the root of a
// hierarchy: "a-b-c.slice" is "/a.slice/a-b.slice/a-b-c.slice", "-.slice"
// is "/". The name must end in .slice and hold no "/", and no dash-separated
// part may be empty ("a--b.slice", "-a.slice", "a-.slice" are refused).
func ExpandSlice(slice string) (string, error) {
	base, ok := strings.CutSuffix(slice, sliceSuffix)
	if !ok || strings.Contains(slice, "/") {
		return "", fmt.Errorf("slice %q: want a name ending in %q without '/': %w", slice, sliceSuffix, errdefs.ErrInvalidArgument)
	}
	if base == "-" {
		return "/", nil
	}
	var dir, prefix strings.Builder
	for _, part := range strings.Split(base, "-") {
		if part == "" {
			return "", fmt.Errorf("slice %q: empty part between dashes: %w", slice, errdefs.ErrInvalidArgument)
		}
		prefix.WriteString(part)
		dir.WriteString("/" + prefix.String() + sliceSuffix)
		prefix.WriteString("-")
	}
	return dir.String(), nil
}

// ValidSlice reports whether slice is a slice name ExpandSlice accepts.
func ValidSlice(slice string) error {
	_, err := ExpandSlice(slice)
	return err
}

// SliceName is the slice a systemd-driver cgroup parent names: a slice
// name as it is ("kubepods-besteffort-pod1.slice"), or the path form
// kubelet's systemd driver sends ("/kubepods.slice/kubepods-besteffort.slice/
// kubepods-besteffort-pod1.slice", what containerd and CRI-O take the last
// element of), which must be exactly the expansion of its last element:
// a path that nests slices otherwise ("/a.slice/b.slice") is refused, not
// reinterpreted.
func SliceName(parent string) (string, error) {
	if !strings.HasPrefix(parent, "/") {
		return parent, ValidSlice(parent)
	}
	slice := path.Base(parent)
	dir, err := ExpandSlice(slice)
	if err != nil {
		return "", fmt.Errorf("slice path %q: %w", parent, err)
	}
	if dir != parent || slice == "-.slice" {
		return "", fmt.Errorf("slice path %q: not the expansion of %s (%s): %w", parent, slice, dir, errdefs.ErrInvalidArgument)
	}
	return slice, nil
}

// Systemd is the systemd-form cgroupsPath "<slice>:<prefix>:<name>" of a
// unit <prefix>-<name>.scope in slice. The slice must be valid (see
// ExpandSlice); prefix and name must be non-empty and hold neither ':' nor
// '/'.
func Systemd(slice, prefix, name string) (string, error) {
	if err := ValidSlice(slice); err != nil {
		return "", err
	}
	for _, part := range []struct{ what, value string }{{"prefix", prefix}, {"name", name}} {
		if err := unitPart(part.what, part.value); err != nil {
			return "", err
		}
	}
	return slice + ":" + prefix + ":" + name, nil
}

func unitPart(what, value string) error {
	if value == "" || value == "." || value == ".." || strings.ContainsAny(value, ":/") {
		return fmt.Errorf("unit %s %q: want a non-empty name without ':' or '/': %w", what, value, errdefs.ErrInvalidArgument)
	}
	return nil
}

// IsSystemd reports whether cgroupsPath is in systemd form (it holds a
// ':', which a cgroupfs path of berth's never does).
func IsSystemd(cgroupsPath string) bool { return strings.Contains(cgroupsPath, ":") }

// Dir is the directory of the cgroup cgroupsPath names, below the root of
// a hierarchy, starting with "/": the cleaned path in cgroupfs form, the
// expanded slice plus the unit in systemd form (as runc's systemd driver
// creates it).
func Dir(cgroupsPath string) (string, error) {
	if !IsSystemd(cgroupsPath) {
		if cgroupsPath == "" {
			return "", fmt.Errorf("cgroups path: empty: %w", errdefs.ErrInvalidArgument)
		}
		return path.Clean("/" + cgroupsPath), nil
	}
	parts := strings.Split(cgroupsPath, ":")
	if len(parts) != 3 {
		return "", fmt.Errorf("cgroups path %q: want <slice>:<prefix>:<name>: %w", cgroupsPath, errdefs.ErrInvalidArgument)
	}
	slice, prefix, name := parts[0], parts[1], parts[2]
	if slice == "" {
		slice = DefaultSlice
	}
	dir, err := ExpandSlice(slice)
	if err != nil {
		return "", fmt.Errorf("cgroups path %q: %w", cgroupsPath, err)
	}
	if err := unitPart("name", name); err != nil {
		return "", fmt.Errorf("cgroups path %q: %w", cgroupsPath, err)
	}
	unit := name
	if !strings.HasSuffix(name, sliceSuffix) {
		if strings.Contains(prefix, "/") {
			return "", fmt.Errorf("cgroups path %q: unit prefix %q holds '/': %w", cgroupsPath, prefix, errdefs.ErrInvalidArgument)
		}
		unit = prefix + "-" + name + scopeSuffix
	}
	return path.Join(dir, unit), nil
}
