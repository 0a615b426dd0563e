package userns

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Span is a run of host ids: Length ids from Start.
type Span struct {
	Start, Length uint64
}

// Range is where pods' host ids may lie: nil slices allow any id (no
// subordinate entry is configured), a non-nil empty one allows none.
type Range struct {
	UIDs, GIDs []Span
}

// Restricted reports whether the range limits anything.
func (r Range) Restricted() bool { return r.UIDs != nil || r.GIDs != nil }

// ReadRange reads the subordinate ids of user from a subuid and a subgid
// file (shadow-utils' "name:start:count" lines). When neither file names
// the user (or neither exists) the range is unrestricted; when one does,
// both are: a user with uids but no gids may map no gid.
func ReadRange(subuid, subgid, user string) (Range, error) {
	uids, err := readSubID(subuid, user)
	if err != nil {
		return Range{}, err
	}
	gids, err := readSubID(subgid, user)
	if err != nil {
		return Range{}, err
	}
	if uids == nil && gids == nil {
		return Range{}, nil
	}
	if uids == nil {
		uids = []Span{}
	}
	if gids == nil {
		gids = []Span{}
	}
	return Range{UIDs: uids, GIDs: gids}, nil
}

// readSubID returns user's spans in path; nil when path is missing or
// does not name user.
func readSubID(path, user string) ([]Span, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("subordinate ids %s: %w", path, err)
	}
	return parseSubID(path, data, user)
}

func parseSubID(path string, data []byte, user string) ([]Span, error) {
	var out []Span
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, ":")
		if len(fields) != 3 {
			return nil, fmt.Errorf("subordinate ids %s:%d: %q: want name:start:count", path, n, line)
		}
		if fields[0] != user {
			continue
		}
		start, err1 := strconv.ParseUint(fields[1], 10, 32)
		count, err2 := strconv.ParseUint(fields[2], 10, 32)
		if err1 != nil || err2 != nil || count == 0 || start+count > maxID {
			return nil, fmt.Errorf("subordinate ids %s:%d: %q: start and count must be 32-bit ids, count > 0", path, n, line)
		}
		out = append(out, Span{Start: start, Length: count})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("subordinate ids %s: %w", path, err)
	}
	return out, nil
}
