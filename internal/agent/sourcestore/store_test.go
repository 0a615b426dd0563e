package sourcestore

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/podspec"
	"github.com/berth-dev/berth/internal/errdefs"
)

func testSources(secretValue string) podspec.Sources {
	return podspec.Sources{
		ConfigMaps: []v1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"}, Data: map[string]string{"k": "v"}}},
		Secrets:    []v1.Secret{{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default"}, Data: map[string][]byte{"password": []byte(secretValue)}}},
	}
}

func TestStoreKeepsSourcesRootOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sources")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("uid-1"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("load before save: %v; want not found", err)
	}
	if err := s.Save("uid-1", testSources("hunter2")); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load("uid-1")
	if err != nil || !reflect.DeepEqual(got, testSources("hunter2")) {
		t.Errorf("load: %+v %v", got, err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, "uid-1.json"): 0o600, filepath.Join(dir, keyFile): 0o600} {
		if info, err := os.Stat(path); err != nil || info.Mode().Perm() != want {
			t.Errorf("%s: %v %v; want mode %04o", path, info.Mode(), err, want)
		}
	}
	if err := s.Remove("uid-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("uid-1"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("load after remove: %v; want not found", err)
	}
	if err := s.Remove("uid-1"); err != nil {
		t.Errorf("second remove: %v", err)
	}
}

func TestStoreRefusesUIDsThatAreNotFileNames(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, uid := range []string{"", "..", "../x", "a/b", ".hidden", strings.Repeat("a", 129)} {
		if err := s.Save(uid, podspec.Sources{}); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("save %q: %v", uid, err)
		}
		if _, err := s.Load(uid); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("load %q: %v", uid, err)
		}
	}
}

func TestRemoveExceptKeepsWhatItDoesNotKnow(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, uid := range []string{"kept", "gone"} {
		if err := s.Save(uid, podspec.Sources{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{".gone.json.tmp-123", ".kept.json.tmp-9", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RemoveExcept(map[string]bool{"kept": true}); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{".kept.json.tmp-9", keyFile, "kept.json", "notes.txt"}
	if !slices.Equal(names, want) {
		t.Errorf("left %v, want %v", names, want)
	}
}

func TestRefsTellNothingOfTheContentAndCompare(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	refs, err := s.Refs(testSources("hunter2"))
	if err != nil {
		t.Fatal(err)
	}
	if len(refs.ConfigMaps) != 1 || refs.ConfigMaps[0].Name != "cfg" || len(refs.Secrets) != 1 || refs.Secrets[0].Name != "creds" {
		t.Fatalf("refs %+v", refs)
	}
	if strings.Contains(refs.Secrets[0].Digest, "hunter2") || !strings.HasPrefix(refs.Secrets[0].Digest, "hmac-sha256:") {
		t.Errorf("digest %q", refs.Secrets[0].Digest)
	}
	// The key survives a reopen: the same content, the same digests.
	again, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff, err := again.Compare(refs, testSources("hunter2")); err != nil || diff.Missing != nil || diff.Changed != nil {
		t.Errorf("same sources: %+v %v", diff, err)
	}
	diff, err := again.Compare(refs, podspec.Sources{Secrets: testSources("changed").Secrets})
	if err != nil || !slices.Equal(diff.Missing, []string{"ConfigMap cfg"}) || !slices.Equal(diff.Changed, []string{"Secret creds"}) {
		t.Errorf("diff %+v %v", diff, err)
	}
	// Another store's key gives other digests.
	other, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if otherRefs, _ := other.Refs(testSources("hunter2")); otherRefs.Secrets[0].Digest == refs.Secrets[0].Digest {
		t.Error("two keys give the same digest")
	}
}

func TestOpenRefusesAKeyItDidNotWrite(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, keyFile), []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), keyFile) {
		t.Errorf("open: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, keyFile)); string(data) != "short" {
		t.Errorf("the key file was replaced")
	}
}

// The pod IPs share the pod's record with its sources: each survives the
// other's update, and both go with Remove.
func TestStoreKeepsPodIPsBesideSources(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PodIPs("uid-1"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("pod IPs before any save: %v; want not found", err)
	}
	if err := s.Save("uid-1", testSources("a")); err != nil {
		t.Fatal(err)
	}
	if ips, err := s.PodIPs("uid-1"); err != nil || ips != nil {
		t.Errorf("pod IPs of a record without them: %v %v; want none", ips, err)
	}
	if err := s.SavePodIPs("uid-1", []string{"10.88.0.5", "fd00::5"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Save("uid-1", testSources("b")); err != nil {
		t.Fatal(err)
	}
	if ips, err := s.PodIPs("uid-1"); err != nil || !slices.Equal(ips, []string{"10.88.0.5", "fd00::5"}) {
		t.Errorf("pod IPs after the sources changed: %v %v", ips, err)
	}
	if got, err := s.Load("uid-1"); err != nil || !reflect.DeepEqual(got, testSources("b")) {
		t.Errorf("sources after the pod IPs were saved: %+v %v", got, err)
	}
	if err := s.SavePodIPs("../x", []string{"10.0.0.1"}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("pod IPs of uid ../x: %v; want invalid argument", err)
	}
	if err := s.Remove("uid-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PodIPs("uid-1"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("pod IPs after remove: %v; want not found", err)
	}
}

// Keeping a pod's IPs never replaces a record the store cannot read (a
// newer version's, a damaged one): it holds the pod's sources, for a
// person to look at; the error says so.
func TestSavePodIPsLeavesAnUnreadableRecord(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "uid-1.json")
	unreadable := []byte(`{"version": 2, "uid": "uid-1", "sources": {"future": true}}`)
	if err := os.WriteFile(path, unreadable, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.SavePodIPs("uid-1", []string{"10.88.0.5"}); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("SavePodIPs over an unreadable record: %v; want an error naming why it is unreadable", err)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != string(unreadable) {
		t.Errorf("the record is now %q (%v); want it left as it was", got, err)
	}
}
