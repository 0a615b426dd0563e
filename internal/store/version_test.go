package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-dev/berth/internal/errdefs"
)

func TestCheckVersion(t *testing.T) {
	for _, tc := range []struct {
		data    string
		unknown bool // ErrUnknownVersion
		ok      bool
	}{
		{data: `{"version":1,"name":"a"}`, ok: true},
		{data: `{"version":2}`, ok: true},
		{data: `{"version":3,"name":{"changed":"shape"}}`, unknown: true},
		{data: `{"version":0}`, unknown: true},
		{data: `{"version":-1}`, unknown: true},
		{data: `{"name":"a"}`, unknown: true},
		{data: `{"version":1,"na`},
		{data: ``},
		{data: `[1]`},
		{data: `{"version":"1"}`},
	} {
		err := CheckVersion([]byte(tc.data), 2)
		if tc.ok != (err == nil) || tc.unknown != errors.Is(err, ErrUnknownVersion) {
			t.Errorf("CheckVersion(%q) = %v; want ok=%v unknown=%v", tc.data, err, tc.ok, tc.unknown)
		}
	}
}

func TestLoadVersionedJSON(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.json")
	var rec testRecord
	if err := LoadVersionedJSON(path, &rec, 1); !errdefs.IsNotFound(err) {
		t.Fatalf("absent record: %v, want not found", err)
	}
	if err := os.WriteFile(path, []byte(`{"version":2,"name":7}`), 0o600); err != nil {
		t.Fatal(err)
	}
	err := LoadVersionedJSON(path, &rec, 1)
	if !errors.Is(err, ErrUnknownVersion) || !strings.Contains(err.Error(), path) {
		t.Fatalf("newer record: %v, want ErrUnknownVersion naming %s", err, path)
	}
	if err := SaveJSON(path, testRecord{Version: 1, Name: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := LoadVersionedJSON(path, &rec, 1); err != nil || rec.Name != "a" {
		t.Fatalf("good record: %+v, %v", rec, err)
	}
}
