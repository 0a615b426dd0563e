package userns

import (
	"fmt"

	hostuserns "github.com/berth-dev/berth/internal/userns"
)

// Defaults.
const (
	// BlockLength is how many ids a pod's user namespace maps (kubelet's
	// default idsPerPod, and its unit).
	BlockLength = 65536
	// DefaultSubUIDFile and DefaultSubGIDFile are where the agent's range
	// is read from.
	DefaultSubUIDFile = "/etc/subuid"
	DefaultSubGIDFile = "/etc/subgid"
	// DefaultUser is the user whose entries name the agent's range.
	DefaultUser = "berth"
)

// Range is the host ids the pods' blocks come from: First to
// First+Length-1.
type Range struct {
	First  uint32
	Length uint32
	// Source says where it came from, for messages: "/etc/subuid and
	// /etc/subgid (user berth)" or "kubelet's default".
	Source string
}

// DefaultRange is kubelet's range when the kubelet user has no subordinate
// ids: every id from 65536 on.
func DefaultRange() Range {
	return Range{First: BlockLength, Length: uint32((1 << 32) - uint64(BlockLength)), Source: "kubelet's default"}
}

// String is "65536-4294967295 (kubelet's default)".
func (r Range) String() string {
	last := uint64(r.First) + uint64(r.Length) - 1
	return fmt.Sprintf("%d-%d (%s)", r.First, last, r.Source)
}

// blocks is how many pod blocks the range holds.
func (r Range) blocks() uint32 { return r.Length / BlockLength }

// validate applies kubelet's rules to the range, for maxPods pods.
func (r Range) validate(maxPods int) error {
	switch {
	case r.First%BlockLength != 0:
		return fmt.Errorf("first id %d is not a multiple of %d", r.First, BlockLength)
	case r.First < BlockLength:
		return fmt.Errorf("first id %d is below %d: ids 0-%d are never mapped", r.First, BlockLength, BlockLength-1)
	case r.Length == 0 || r.Length%BlockLength != 0:
		return fmt.Errorf("length %d is not a positive multiple of %d", r.Length, BlockLength)
	case uint64(r.First)+uint64(r.Length) > 1<<32:
		return fmt.Errorf("ids %d + %d run past 4294967295", r.First, r.Length)
	case maxPods > 0 && uint64(r.blocks()) < uint64(maxPods):
		return fmt.Errorf("%d ids hold %d blocks of %d, fewer than the node's %d max pods", r.Length, r.blocks(), BlockLength, maxPods)
	}
	return nil
}

// ReadRange is the range of user's entries in subuidFile and subgidFile
// (read as the runtime reads them: internal/userns.ReadRange): each must
// hold at most one entry for user ("name:first:count"), and both the same
// one; neither file having one gives DefaultRange. A file that does not
// exist has no entry. The range is checked for maxPods pods (0: not
// checked).
func ReadRange(subuidFile, subgidFile, user string, maxPods int) (Range, error) {
	ids, err := hostuserns.ReadRange(subuidFile, subgidFile, user)
	if err != nil {
		return Range{}, fmt.Errorf("user namespaces: %w", err)
	}
	var r Range
	switch {
	case !ids.Restricted():
		r = DefaultRange()
	case len(ids.UIDs) > 1 || len(ids.GIDs) > 1:
		return Range{}, fmt.Errorf("user namespaces: user %q has more than one entry in %s or %s: give it one range", user, subuidFile, subgidFile)
	case len(ids.UIDs) == 0 || len(ids.GIDs) == 0:
		return Range{}, fmt.Errorf("user namespaces: user %q has an entry in only one of %s and %s: the two must agree",
			user, subuidFile, subgidFile)
	case ids.UIDs[0] != ids.GIDs[0]:
		return Range{}, fmt.Errorf("user namespaces: user %q has %d:%d in %s but %d:%d in %s: the two must agree",
			user, ids.UIDs[0].Start, ids.UIDs[0].Length, subuidFile, ids.GIDs[0].Start, ids.GIDs[0].Length, subgidFile)
	default:
		r = Range{First: uint32(ids.UIDs[0].Start), Length: uint32(ids.UIDs[0].Length)}
		r.Source = fmt.Sprintf("%s and %s, user %s", subuidFile, subgidFile, user)
	}
	if err := r.validate(maxPods); err != nil {
		return Range{}, fmt.Errorf("user namespaces: range %s: %w", r, err)
	}
	return r, nil
}
