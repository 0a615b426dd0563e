package podcopy

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// idRange is one line of a uid_map or gid_map: count ids from inside on
// are the ids from outside on in the parent namespace.
type idRange struct {
	inside, outside, count uint32
}

// idMap is a process's uid_map or gid_map; nil maps every id to itself.
type idMap []idRange

// readIDMap reads /proc/<pid>/uid_map or gid_map; the identity map of the
// initial namespace is returned as nil.
func readIDMap(file string) (idMap, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	return parseIDMap(data, file)
}

func parseIDMap(data []byte, file string) (idMap, error) {
	var m idMap
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("%s: line %q: want 3 numbers", file, sc.Text())
		}
		var n [3]uint64
		for i := range f {
			v, err := strconv.ParseUint(f[i], 10, 32)
			if err != nil {
				return nil, fmt.Errorf("%s: line %q: %w", file, sc.Text(), err)
			}
			n[i] = v
		}
		m = append(m, idRange{inside: uint32(n[0]), outside: uint32(n[1]), count: uint32(n[2])})
	}
	if len(m) == 1 && m[0] == (idRange{inside: 0, outside: 0, count: 4294967295}) {
		return nil, nil
	}
	return m, nil
}

// toHost maps an id as seen inside to the host's id.
func (m idMap) toHost(id uint32) (uint32, bool) {
	if m == nil {
		return id, true
	}
	for _, r := range m {
		if id >= r.inside && uint64(id) < uint64(r.inside)+uint64(r.count) {
			return r.outside + (id - r.inside), true
		}
	}
	return 0, false
}
