package store

import (
	"errors"
	"regexp"
	"sync"
	"testing"

	"github.com/berth-dev/berth/internal/errdefs"
)

func TestIDIndexGet(t *testing.T) {
	idx := NewIDIndex()
	for _, id := range []string{"abc123", "abd456", "ab", "ffff"} {
		if err := idx.Add(id); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		prefix string
		want   string
		class  error
	}{
		{"abc", "abc123", nil},
		{"abc123", "abc123", nil},
		{"f", "ffff", nil},
		{"ab", "ab", nil},                     // exact id that is also a prefix of others
		{"a", "", errdefs.ErrInvalidArgument}, // ambiguous
		{"zz", "", errdefs.ErrNotFound},
		{"abc1234", "", errdefs.ErrNotFound},
		{"", "", errdefs.ErrInvalidArgument},
	}
	for _, tc := range tests {
		got, err := idx.Get(tc.prefix)
		if tc.class == nil {
			if err != nil || got != tc.want {
				t.Errorf("Get(%q) = %q, %v; want %q", tc.prefix, got, err, tc.want)
			}
			continue
		}
		if !errors.Is(err, tc.class) {
			t.Errorf("Get(%q) = %q, %v; want error class %v", tc.prefix, got, err, tc.class)
		}
	}
	if _, err := idx.Get("a"); err == nil || err.Error() != `id prefix "a" is ambiguous: invalid argument` {
		t.Errorf("ambiguous message = %v", err)
	}
}

func TestIDIndexAddDelete(t *testing.T) {
	idx := NewIDIndex()
	if err := idx.Add(""); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("Add empty: err = %v, want InvalidArgument", err)
	}
	if err := idx.Add("abc"); err != nil {
		t.Fatal(err)
	}
	if err := idx.Add("abc"); !errors.Is(err, errdefs.ErrAlreadyExists) {
		t.Errorf("Add duplicate: err = %v, want AlreadyExists", err)
	}
	if err := idx.Add("abd"); err != nil {
		t.Fatal(err)
	}
	idx.Delete("abd")
	if got, err := idx.Get("ab"); err != nil || got != "abc" {
		t.Errorf("after Delete: Get(ab) = %q, %v; want abc", got, err)
	}
	idx.Delete("abc")
	if _, err := idx.Get("abc"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("deleted id: err = %v, want NotFound", err)
	}
}

func TestIDIndexConcurrent(t *testing.T) {
	idx := NewIDIndex()
	var wg sync.WaitGroup
	ids := make([]string, 40)
	for i := range ids {
		ids[i] = GenerateID()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := idx.Add(ids[i]); err != nil {
				t.Error(err)
			}
			if got, err := idx.Get(ids[i][:20]); err != nil || got != ids[i] {
				t.Errorf("Get = %q, %v", got, err)
			}
		}()
	}
	wg.Wait()
}

func TestGenerateID(t *testing.T) {
	valid := regexp.MustCompile(`^[0-9a-f]{64}$`)
	seen := map[string]bool{}
	for range 100 {
		id := GenerateID()
		if !valid.MatchString(id) {
			t.Fatalf("id %q is not 64 lowercase hex characters", id)
		}
		if seen[id] {
			t.Fatalf("id %q generated twice", id)
		}
		seen[id] = true
	}
}
