package userns

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-dev/berth/internal/errdefs"
)

func one(host, length uint32) Mapping {
	return Mapping{UIDs: []IDMap{{0, host, length}}, GIDs: []IDMap{{0, host, length}}}
}

func TestCheck(t *testing.T) {
	limited := Range{UIDs: []Span{{1 << 20, 1 << 18}}, GIDs: []Span{{1 << 20, 1 << 18}}}
	two := one(65536, 65536)
	two.UIDs = append(two.UIDs, IDMap{65536, 1 << 20, 1})
	for _, c := range []struct {
		name    string
		m       Mapping
		allowed Range
		says    string // "" when valid
	}{
		{"kubelet's", one(65536, 65536), Range{}, ""},
		{"critest's", one(1000, 100000), Range{}, ""},
		{"within the subordinate ids", one(1<<20, 65536), limited, ""},
		{"the last ids of the range", one(1<<20+3<<16, 65536), limited, ""},
		{"two mappings", two, Range{}, "f.uids: 2 mappings"},
		{"no gid mapping", Mapping{UIDs: one(65536, 1).UIDs}, Range{}, "f.gids: 0 mappings"},
		{"not from 0", Mapping{UIDs: []IDMap{{1, 65536, 10}}, GIDs: one(65536, 1).GIDs}, Range{}, "container id 1"},
		{"empty", one(65536, 0), Range{}, "length 0"},
		{"host root", one(0, 65536), Range{}, "host id 0"},
		{"past 32 bits", one(1<<32-65536, 65536), Range{}, "past the 32-bit"},
		{"below the range", one(1<<20-1, 65536), limited, "outside the subordinate range 1048576-1310719"},
		{"past the range", one(1<<20+3<<16+1, 65536), limited, "outside"},
		{"gids not in a range that names none", one(1<<20, 1), Range{UIDs: limited.UIDs, GIDs: []Span{}}, "f.gids: host ids"},
	} {
		err := c.m.Check("f", c.allowed)
		switch {
		case c.says == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.says != "" && (err == nil || !strings.Contains(err.Error(), c.says) || !errors.Is(err, errdefs.ErrInvalidArgument)):
			t.Errorf("%s: %v, want InvalidArgument saying %q", c.name, err, c.says)
		}
	}
}

func TestOverlaps(t *testing.T) {
	a := one(65536, 65536)
	for _, c := range []struct {
		b    Mapping
		want bool
	}{
		{one(131072, 65536), false},
		{one(131071, 65536), true},
		{one(1, 65535), false},
		{one(1, 65536), true},
		{one(70000, 1), true},
	} {
		if got := a.Overlaps(c.b); got != c.want || c.b.Overlaps(a) != c.want {
			t.Errorf("%v overlaps %v: %v, want %v", a.UIDs, c.b.UIDs, got, c.want)
		}
	}
}

func TestReadRange(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	uid := write("subuid", "# comment\nalice:100000:65536\nberth:1048576:262144\nberth:2000000:65536\n")
	gid := write("subgid", "berth:1048576:262144\n")
	r, err := ReadRange(uid, gid, "berth")
	if err != nil || len(r.UIDs) != 2 || r.UIDs[1] != (Span{2000000, 65536}) || len(r.GIDs) != 1 {
		t.Errorf("ReadRange = %+v, %v", r, err)
	}
	if r, err := ReadRange(uid, gid, "nobody-here"); err != nil || r.Restricted() {
		t.Errorf("a user with no entries: %+v, %v: want unrestricted", r, err)
	}
	if r, err := ReadRange(filepath.Join(dir, "none"), filepath.Join(dir, "none"), "berth"); err != nil || r.Restricted() {
		t.Errorf("no files: %+v, %v: want unrestricted", r, err)
	}
	if r, err := ReadRange(uid, filepath.Join(dir, "none"), "berth"); err != nil || r.GIDs == nil || len(r.GIDs) != 0 {
		t.Errorf("uids only: %+v, %v: want no gid allowed", r, err)
	}
	for _, bad := range []string{"berth:x:1\n", "berth:1:0\n", "berth:4294967295:2\n", "berth:1\n"} {
		if _, err := ReadRange(write("bad", bad), gid, "berth"); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
