package userns

import (
	"fmt"
	"slices"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/errdefs"
)

// maxID is one past the largest id a mapping may reach: ids are 32-bit and
// 4294967295 is (uid_t)-1, never a valid id.
const maxID = 1 << 32

// IDMap maps Length ids from ContainerID (inside) to HostID (outside).
type IDMap struct {
	ContainerID uint32 `json:"containerID"`
	HostID      uint32 `json:"hostID"`
	Length      uint32 `json:"length"`
}

// end is one past the last host id of m.
func (m IDMap) end() uint64 { return uint64(m.HostID) + uint64(m.Length) }

// String is the uid_map line of m.
func (m IDMap) String() string { return fmt.Sprintf("%d %d %d", m.ContainerID, m.HostID, m.Length) }

// Mapping is a pod's user namespace: its uid and gid mappings (one each).
type Mapping struct {
	UIDs []IDMap `json:"uids"`
	GIDs []IDMap `json:"gids"`
}

// Equal reports whether m and o map the same ids.
func (m Mapping) Equal(o Mapping) bool {
	return slices.Equal(m.UIDs, o.UIDs) && slices.Equal(m.GIDs, o.GIDs)
}

// RootUID and RootGID are the host ids of the namespace's root (id 0).
func (m Mapping) RootUID() uint32 { return m.UIDs[0].HostID }

// RootGID is the host gid of the namespace's root group.
func (m Mapping) RootGID() uint32 { return m.GIDs[0].HostID }

// Check validates a pod's mapping: exactly one uid and one gid mapping,
// each from container id 0, non-empty, within 32 bits, never mapping the
// host's root (id 0), and inside allowed where allowed is set. field names
// the request's field in errors.
func (m Mapping) Check(field string, allowed Range) error {
	for _, kind := range []struct {
		name string
		maps []IDMap
		in   []Span
	}{{"uids", m.UIDs, allowed.UIDs}, {"gids", m.GIDs, allowed.GIDs}} {
		f := field + "." + kind.name
		if len(kind.maps) != 1 {
			return fmt.Errorf("%s: %d mappings: exactly one is supported: %w", f, len(kind.maps), errdefs.ErrInvalidArgument)
		}
		im := kind.maps[0]
		switch {
		case im.ContainerID != 0:
			return fmt.Errorf("%s: container id %d: the mapping must start at container id 0 (root in the pod): %w", f, im.ContainerID, errdefs.ErrInvalidArgument)
		case im.Length == 0:
			return fmt.Errorf("%s: length 0: %w", f, errdefs.ErrInvalidArgument)
		case im.HostID == 0:
			return fmt.Errorf("%s: host id 0: the host's root is never mapped into a pod: %w", f, errdefs.ErrInvalidArgument)
		case im.end() >= maxID:
			return fmt.Errorf("%s: host ids %d+%d: past the 32-bit id space: %w", f, im.HostID, im.Length, errdefs.ErrInvalidArgument)
		}
		if kind.in != nil && !within(im, kind.in) {
			return fmt.Errorf("%s: host ids %d-%d: outside the subordinate range %s allowed here: %w",
				f, im.HostID, im.end()-1, spans(kind.in), errdefs.ErrInvalidArgument)
		}
	}
	return nil
}

// Overlaps reports whether m and o share a host uid or gid.
func (m Mapping) Overlaps(o Mapping) bool {
	return overlap(m.UIDs, o.UIDs) || overlap(m.GIDs, o.GIDs)
}

func overlap(a, b []IDMap) bool {
	for _, x := range a {
		for _, y := range b {
			if uint64(x.HostID) < y.end() && uint64(y.HostID) < x.end() {
				return true
			}
		}
	}
	return false
}

func within(m IDMap, in []Span) bool {
	for _, s := range in {
		if uint64(m.HostID) >= s.Start && m.end() <= s.Start+s.Length {
			return true
		}
	}
	return false
}

func spans(in []Span) string {
	parts := make([]string, len(in))
	for i, s := range in {
		parts[i] = fmt.Sprintf("%d-%d", s.Start, s.Start+s.Length-1)
	}
	return strings.Join(parts, ", ")
}

// FromCRI is the mapping of a CRI UserNamespace (its uids and gids).
func FromCRI(u *runtimeapi.UserNamespace) Mapping {
	conv := func(in []*runtimeapi.IDMapping) []IDMap {
		out := make([]IDMap, len(in))
		for i, m := range in {
			out[i] = IDMap{ContainerID: m.GetContainerId(), HostID: m.GetHostId(), Length: m.GetLength()}
		}
		return out
	}
	return Mapping{UIDs: conv(u.GetUids()), GIDs: conv(u.GetGids())}
}

// FromCRIMaps is the mapping of a CRI mount's uid and gid mappings.
func FromCRIMaps(uids, gids []*runtimeapi.IDMapping) Mapping {
	return FromCRI(&runtimeapi.UserNamespace{Uids: uids, Gids: gids})
}
