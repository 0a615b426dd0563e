package userns

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
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

// ReadRange is the range of user's entries in subuidFile and subgidFile:
// each must hold at most one entry for user ("name:first:count"), and
// both the same one; neither file having one gives DefaultRange. A file
// that does not exist has no entry. The range is checked for maxPods pods
// (0: not checked).
func ReadRange(subuidFile, subgidFile, user string, maxPods int) (Range, error) {
	uids, err := readSubIDs(subuidFile, user)
	if err != nil {
		return Range{}, err
	}
	gids, err := readSubIDs(subgidFile, user)
	if err != nil {
		return Range{}, err
	}
	var r Range
	switch {
	case uids == nil && gids == nil:
		r = DefaultRange()
	case uids == nil || gids == nil:
		return Range{}, fmt.Errorf("user namespaces: user %q has an entry in only one of %s and %s: the two must agree",
			user, subuidFile, subgidFile)
	case *uids != *gids:
		return Range{}, fmt.Errorf("user namespaces: user %q has %d:%d in %s but %d:%d in %s: the two must agree",
			user, uids.First, uids.Length, subuidFile, gids.First, gids.Length, subgidFile)
	default:
		r = *uids
		r.Source = fmt.Sprintf("%s and %s, user %s", subuidFile, subgidFile, user)
	}
	if err := r.validate(maxPods); err != nil {
		return Range{}, fmt.Errorf("user namespaces: range %s: %w", r, err)
	}
	return r, nil
}

// readSubIDs is user's one entry in file, nil without one.
func readSubIDs(file, user string) (*Range, error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("user namespaces: %w", err)
	}
	var found *Range
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		fields := strings.Split(strings.TrimSpace(sc.Text()), ":")
		if fields[0] != user {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("user namespaces: %s:%d: a second entry for user %q: give it one range", file, line, user)
		}
		r, err := parseSubIDs(fields)
		if err != nil {
			return nil, fmt.Errorf("user namespaces: %s:%d: %q: %w", file, line, sc.Text(), err)
		}
		found = &r
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("user namespaces: %s: %w", file, err)
	}
	return found, nil
}

// parseSubIDs reads "name:first:count".
func parseSubIDs(fields []string) (Range, error) {
	if len(fields) != 3 {
		return Range{}, errors.New("want name:first:count")
	}
	first, err := strconv.ParseUint(fields[1], 10, 32)
	if err != nil {
		return Range{}, fmt.Errorf("first id: %w", err)
	}
	count, err := strconv.ParseUint(fields[2], 10, 32)
	if err != nil {
		return Range{}, fmt.Errorf("count: %w", err)
	}
	return Range{First: uint32(first), Length: uint32(count)}, nil
}
