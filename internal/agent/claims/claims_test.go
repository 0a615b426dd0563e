package claims

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/store"
)

var testNow = time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC)

func open(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir, func() time.Time { return testNow })
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func pvc(name, uid, size string, modes ...v1.PersistentVolumeAccessMode) *v1.PersistentVolumeClaim {
	if len(modes) == 0 {
		modes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	}
	return &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(uid)},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: modes,
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}},
		},
	}
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

func TestEnsureBindsAndKeepsData(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "claims")
	s := open(t, dir)
	c, err := s.Ensure(pvc("data", "u1", "1Gi"), v1.PersistentVolumeReclaimDelete)
	if err != nil {
		t.Fatal(err)
	}
	if c.Phase != Bound || c.Volume != "pvc-u1" || c.Capacity.String() != "1Gi" || !c.Created.Equal(testNow) {
		t.Errorf("claim %+v; want Bound to pvc-u1 with 1Gi, created now", c)
	}
	if m := mode(t, dir); m != 0o700 {
		t.Errorf("store directory mode %o; want 0700", m)
	}
	if m := mode(t, filepath.Join(dir, "volumes")); m != 0o700 {
		t.Errorf("volumes directory mode %o; want 0700", m)
	}
	if m := mode(t, s.Path(c)); m != 0o777 {
		t.Errorf("data directory mode %o; want 0777", m)
	}
	if err := os.WriteFile(filepath.Join(s.Path(c), "row"), []byte("1"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A new agent (restart, reboot) finds the same claim and data.
	s = open(t, dir)
	again, err := s.Ensure(pvc("data", "u1", "1Gi"), v1.PersistentVolumeReclaimDelete)
	if err != nil || s.Path(again) != s.Path(c) {
		t.Fatalf("again: %v, %v; want the same volume", again, err)
	}
	if b, err := os.ReadFile(filepath.Join(s.Path(again), "row")); err != nil || string(b) != "1" {
		t.Errorf("data after reopening: %q, %v", b, err)
	}
}

func TestEnsureUpdates(t *testing.T) {
	s := open(t, t.TempDir())
	if _, err := s.Ensure(pvc("data", "u1", "1Gi"), v1.PersistentVolumeReclaimDelete); err != nil {
		t.Fatal(err)
	}
	grown, err := s.Ensure(pvc("data", "u1", "2Gi"), v1.PersistentVolumeReclaimDelete)
	if err != nil || grown.Capacity.String() != "2Gi" {
		t.Errorf("growing: %v, %v; want capacity 2Gi", grown.Capacity.String(), err)
	}
	for _, tc := range []struct {
		name string
		pvc  *v1.PersistentVolumeClaim
		want error
		says string
	}{
		{"shrink", pvc("data", "u1", "1Gi"), errdefs.ErrInvalidArgument, "can not be less than previous value"},
		{"access modes", pvc("data", "u1", "2Gi", v1.ReadWriteMany), errdefs.ErrInvalidArgument, "immutable"},
		{"another uid", pvc("data", "u2", "2Gi"), errdefs.ErrAlreadyExists, "delete that claim first"},
		{"no size", &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "x", UID: "u3"}}, errdefs.ErrInvalidArgument, "spec.resources.requests.storage"},
		{"bad namespace", &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "../etc", Name: "x", UID: "u4"}, Spec: pvc("x", "u4", "1Gi").Spec}, errdefs.ErrInvalidArgument, "namespace"},
		{"bad name", &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a/b", UID: "u5"}, Spec: pvc("x", "u5", "1Gi").Spec}, errdefs.ErrInvalidArgument, "name"},
	} {
		_, err := s.Ensure(tc.pvc, v1.PersistentVolumeReclaimDelete)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v; want %v saying %q", tc.name, err, tc.want, tc.says)
		}
	}
}

func TestReleaseByPolicy(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	outside := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(outside, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	del, err := s.Ensure(pvc("scratch", "d1", "1Mi"), v1.PersistentVolumeReclaimDelete)
	if err != nil {
		t.Fatal(err)
	}
	// A container's symlink out of the volume is removed, not followed.
	if err := os.Symlink(outside, filepath.Join(s.Path(del), "link")); err != nil {
		t.Fatal(err)
	}
	keep, err := s.Ensure(pvc("db", "r1", "1Mi"), v1.PersistentVolumeReclaimRetain)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Path(keep), "table"), []byte("rows"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"scratch", "db", "never-was"} {
		if err := s.Release("default", name); err != nil {
			t.Fatalf("Release %s: %v", name, err)
		}
	}
	if _, err := os.Stat(s.Path(del)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("deleted claim's data: %v; want it gone", err)
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "keep" {
		t.Errorf("file outside the volume: %q, %v; want it untouched", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "retained", "pvc-r1", "table")); err != nil || string(b) != "rows" {
		t.Errorf("retained data: %q, %v", b, err)
	}
	if list, err := s.List(); err != nil || len(list) != 0 {
		t.Errorf("records left: %v, %v", list, err)
	}
	// The name is free again: a new claim gets a new, empty volume.
	c, err := s.Ensure(pvc("db", "r2", "1Mi"), v1.PersistentVolumeReclaimRetain)
	if err != nil || c.Volume != "pvc-r2" {
		t.Fatalf("new claim of the same name: %+v, %v", c, err)
	}
	if entries, _ := os.ReadDir(s.Path(c)); len(entries) != 0 {
		t.Errorf("new volume holds %v; want it empty", entries)
	}
}

// Open finishes what a crash interrupted: a Pending claim gets its
// directory, a Released one its reclaim.
func TestOpenRecovers(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	gone, err := s.Ensure(pvc("gone", "g1", "1Mi"), v1.PersistentVolumeReclaimDelete)
	if err != nil {
		t.Fatal(err)
	}
	gone.Phase = Released // crashed after writing the intent
	if err := s.save(gone); err != nil {
		t.Fatal(err)
	}
	pending := Claim{Namespace: "default", Name: "new", UID: "n1", Volume: "pvc-n1", Capacity: resource.MustParse("1Mi"), Phase: Pending}
	if err := s.save(pending); err != nil { // crashed before the mkdir
		t.Fatal(err)
	}
	s = open(t, dir)
	list, err := s.List()
	if err != nil || len(list) != 1 || list[0].Name != "new" || list[0].Phase != Bound {
		t.Fatalf("after recovery: %+v, %v; want only new, Bound", list, err)
	}
	if _, err := os.Stat(s.Path(list[0])); err != nil {
		t.Errorf("recovered claim's directory: %v", err)
	}
	if _, err := os.Stat(s.Path(gone)); err == nil {
		t.Errorf("released claim's data is still there")
	}
}

// A record the store cannot read is set aside and reported, its data
// left alone.
func TestUnreadableRecordSetAside(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	c, err := s.Ensure(pvc("data", "u1", "1Mi"), v1.PersistentVolumeReclaimDelete)
	if err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(dir, "default_data.json")
	if err := store.WriteFileAtomic(record, []byte(`{"version": 99}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, time.Now)
	if err == nil || !strings.Contains(err.Error(), "set aside") {
		t.Errorf("Open: %v; want the record reported as set aside", err)
	}
	if _, err := os.Stat(record + ".unreadable"); err != nil {
		t.Errorf("set-aside record: %v", err)
	}
	if _, err := os.Stat(s.Path(c)); err != nil {
		t.Errorf("its data: %v; want it left where it is", err)
	}
}

// A claim's uid names its directory: one that would lead out of the
// store is refused before anything is made, chmod-ed or removed, and a
// record whose volume is not its own is never reclaimed.
func TestUIDThatLeavesTheStoreIsRefused(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "claims")
	s := open(t, dir)
	victim := filepath.Join(root, "victim")
	if err := os.Mkdir(victim, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(victim, "keep"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, uid := range []string{"x/../../../victim", "../victim", "a/b"} {
		_, err := s.Ensure(pvc("evil", uid, "1Mi"), v1.PersistentVolumeReclaimDelete)
		if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), "metadata.uid") {
			t.Errorf("Ensure with uid %q: %v; want an invalid metadata.uid", uid, err)
		}
		if _, found, _ := s.Get("default", "evil"); found {
			t.Errorf("uid %q: a record was written", uid)
		}
	}
	if m := mode(t, victim); m != 0o700 {
		t.Errorf("victim's mode %v; want it untouched (0700)", m)
	}
	forged := Claim{Namespace: "default", Name: "forged", UID: "f1", Volume: "pvc-f1/../../../victim", Capacity: resource.MustParse("1Mi"), Phase: Bound, ReclaimPolicy: v1.PersistentVolumeReclaimDelete}
	if err := s.save(forged); err != nil {
		t.Fatal(err)
	}
	if err := s.Release("default", "forged"); err == nil {
		t.Errorf("Release of a record whose volume is not pvc-<uid>: no error")
	}
	if _, err := os.Stat(filepath.Join(victim, "keep")); err != nil {
		t.Errorf("a file outside the store: %v; want it kept", err)
	}
}

// A record set aside never replaces one set aside earlier under the same
// name: each is kept for a person to look at.
func TestUnreadableRecordsSetAsideTwiceAreBothKept(t *testing.T) {
	dir := t.TempDir()
	record := filepath.Join(dir, "default_data.json")
	for _, content := range []string{`{"version": 98}`, `{"version": 99}`} {
		if err := store.WriteFileAtomic(record, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(dir, time.Now); err == nil || !strings.Contains(err.Error(), "set aside") {
			t.Fatalf("Open: %v; want the record reported as set aside", err)
		}
	}
	var kept []string
	matches, _ := filepath.Glob(filepath.Join(dir, "default_data.json.unreadable*"))
	for _, m := range matches {
		data, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, string(data))
	}
	if len(kept) != 2 || !strings.Contains(strings.Join(kept, " "), "98") || !strings.Contains(strings.Join(kept, " "), "99") {
		t.Errorf("set-aside records %q; want both", kept)
	}
}

// A claim deleted in use is marked, keeps its data and its mark across a
// reopening, and goes on Release; a controller's claim records its owner.
func TestMarkDeletingAndOwner(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	p := pvc("data-db-0", "o1", "1Mi")
	p.Labels = map[string]string{"app": "db"}
	c, err := s.EnsureOwned(p, v1.PersistentVolumeReclaimDelete, "sts-uid")
	if err != nil || c.Owner != "sts-uid" || c.Labels["app"] != "db" {
		t.Fatalf("EnsureOwned: %+v, %v", c, err)
	}
	if _, err := s.MarkDeleting("default", "nope", testNow); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("marking a claim that is not there: %v; want not found", err)
	}
	if _, err := s.MarkDeleting("default", "data-db-0", testNow); err != nil {
		t.Fatal(err)
	}
	later := testNow.Add(time.Hour)
	if c, err = s.MarkDeleting("default", "data-db-0", later); err != nil || !c.Deleting.Equal(testNow) {
		t.Errorf("marked again: %v, %v; want the first time kept", c.Deleting, err)
	}
	s = open(t, dir)
	c, found, err := s.Get("default", "data-db-0")
	if err != nil || !found || c.Deleting == nil || c.Owner != "sts-uid" {
		t.Fatalf("after reopening: %+v, %v, %v", c, found, err)
	}
	if _, err := os.Stat(s.Path(c)); err != nil {
		t.Errorf("a Terminating claim's data: %v; want it kept", err)
	}
	if err := s.Release("default", "data-db-0"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Path(c)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("released claim's data: %v", err)
	}
}

// SetOwner moves a claim to another owner, kept across a reopening, and
// leaves its data alone; a claim that is not there is not found.
func TestSetOwner(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	c, err := s.EnsureOwned(pvc("data-db-0", "o1", "1Mi"), v1.PersistentVolumeReclaimDelete, "old-set")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Path(c), "records"), []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetOwner("default", "nope", "new-set"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("SetOwner of a claim that is not there: %v; want not found", err)
	}
	if c, err = s.SetOwner("default", "data-db-0", "new-set"); err != nil || c.Owner != "new-set" {
		t.Fatalf("SetOwner: %+v, %v", c, err)
	}
	s = open(t, dir)
	got, found, err := s.Get("default", "data-db-0")
	if err != nil || !found || got.Owner != "new-set" || got.UID != c.UID || got.Phase != Bound {
		t.Fatalf("after reopening: %+v, %v, %v; want the new owner, the same bound claim", got, found, err)
	}
	if data, err := os.ReadFile(filepath.Join(s.Path(got), "records")); err != nil || string(data) != "kept" {
		t.Errorf("the claim's data: %q, %v; want it kept", data, err)
	}
}

// Annotate sets and removes annotations of a claim's record, kept across
// a reopening, and leaves the others alone.
func TestAnnotate(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	claim := pvc("data-db-0", "o1", "1Mi")
	claim.Annotations = map[string]string{"mine": "x"}
	if _, err := s.EnsureOwned(claim, v1.PersistentVolumeReclaimDelete, "old-set"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Annotate("default", "nope", map[string]string{"a": "b"}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Annotate of a claim that is not there: %v; want not found", err)
	}
	if _, err := s.Annotate("default", "data-db-0", map[string]string{"mark": "/dir"}); err != nil {
		t.Fatal(err)
	}
	got, _, err := open(t, dir).Get("default", "data-db-0")
	if err != nil || got.Annotations["mark"] != "/dir" || got.Annotations["mine"] != "x" || got.Owner != "old-set" {
		t.Fatalf("after reopening: %+v, %v; want the mark added to the claim's own annotation", got, err)
	}
	if got, err = s.Annotate("default", "data-db-0", map[string]string{"mark": "", "mine": ""}); err != nil || got.Annotations != nil {
		t.Fatalf("both removed: %+v, %v; want no annotations", got.Annotations, err)
	}
}
