package userns

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// smallRange writes subuid and subgid files giving user berth blocks
// blocks from 1 Mi on.
func smallRange(t *testing.T, blocks int) (string, string) {
	t.Helper()
	line := "berth:1048576:" + strconv.Itoa(blocks*BlockLength) + "\n"
	return subIDFiles(t, line, line)
}

// first always picks the lowest index to start scanning from.
func first(int) int { return 0 }

func open(t *testing.T, dir string, blocks int) *Manager {
	t.Helper()
	uids, gids := smallRange(t, blocks)
	m, err := Open(Options{Dir: dir, SubUIDFile: uids, SubGIDFile: gids, Rand: first, Handlers: map[string]bool{"": true}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustAllocate(t *testing.T, m *Manager, uid string) uint32 {
	t.Helper()
	id, err := m.Allocate(uid)
	if err != nil {
		t.Fatalf("allocate %s: %v", uid, err)
	}
	return id
}

func TestAllocateDisjointAlignedBlocks(t *testing.T) {
	dir := t.TempDir()
	uids, gids := smallRange(t, 8)
	m, err := Open(Options{Dir: dir, SubUIDFile: uids, SubGIDFile: gids}) // random picks
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint32]string{}
	for _, uid := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		id := mustAllocate(t, m, uid)
		if id%BlockLength != 0 || id < 1048576 || uint64(id)+BlockLength > 1048576+8*BlockLength {
			t.Errorf("%s: host id %d unaligned or outside 1048576 + 8 blocks", uid, id)
		}
		if other, ok := seen[id]; ok {
			t.Errorf("%s and %s share host id %d", uid, other, id)
		}
		seen[id] = uid
		if again := mustAllocate(t, m, uid); again != id {
			t.Errorf("%s: second allocation %d, want its block %d", uid, again, id)
		}
		if got, ok := m.Allocation(uid); !ok || got != id {
			t.Errorf("Allocation(%s) = %d, %v; want %d", uid, got, ok, id)
		}
	}
}

func TestAllocateExhausted(t *testing.T) {
	m := open(t, t.TempDir(), 2)
	mustAllocate(t, m, "a")
	mustAllocate(t, m, "b")
	_, err := m.Allocate("c")
	if !errors.Is(err, ErrNoFreeBlock) || !strings.Contains(err.Error(), "1048576-1179647") || !strings.Contains(err.Error(), "all 2 blocks") {
		t.Errorf("third pod in a range of two blocks: %v; want ErrNoFreeBlock naming the range", err)
	}
	if _, ok := m.Allocation("c"); ok {
		t.Error("the refused pod holds a block")
	}
	if _, err := os.Stat(recordPath(m.dir, "c")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("record of the refused pod: %v", err)
	}
}

func TestReleaseFreesBlockAndRecord(t *testing.T) {
	m := open(t, t.TempDir(), 1)
	id := mustAllocate(t, m, "a")
	if err := m.Release("a"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(recordPath(m.dir, "a")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("record after release: %v", err)
	}
	if got := mustAllocate(t, m, "b"); got != id {
		t.Errorf("b got %d; want the freed block %d", got, id)
	}
	if err := m.Release("nobody"); err != nil {
		t.Errorf("release of a pod without a block: %v", err)
	}
	var nilManager *Manager
	if err := nilManager.Release("a"); err != nil {
		t.Errorf("nil manager: %v", err)
	}
}

func TestRecordWrittenBeforeAllocateReturns(t *testing.T) {
	m := open(t, t.TempDir(), 4)
	id := mustAllocate(t, m, "pod-1")
	data, err := os.ReadFile(recordPath(m.dir, "pod-1"))
	if err != nil {
		t.Fatal(err)
	}
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	want := []idMapping{{ContainerID: 0, HostID: id, Length: BlockLength}}
	if r.Version != 1 || r.UID != "pod-1" || !slices.Equal(r.UIDMappings, want) || !slices.Equal(r.GIDMappings, want) {
		t.Errorf("record %s; want version 1, uid pod-1, %+v for uids and gids", data, want)
	}
	if fi, err := os.Stat(recordPath(m.dir, "pod-1")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("record mode: %v, %v; want 0600", fi.Mode(), err)
	}
}

func TestAllocateFailedWriteTakesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "userns")
	m := open(t, dir, 2)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Allocate("a"); err == nil || !strings.Contains(err.Error(), "record") {
		t.Fatalf("allocation without its directory: %v; want a record error", err)
	}
	if _, ok := m.Allocation("a"); ok || len(m.used) != 0 {
		t.Errorf("a block was taken though its record was not written: %v", m.used)
	}
}

func TestReopenKeepsAllocations(t *testing.T) {
	dir := t.TempDir()
	m := open(t, dir, 2)
	a := mustAllocate(t, m, "a")
	b := mustAllocate(t, m, "b")
	if err := m.Release("b"); err != nil {
		t.Fatal(err)
	}
	// A restart (or kill -9: every record is on disk once Allocate returns).
	again := open(t, dir, 2)
	if got, ok := again.Allocation("a"); !ok || got != a {
		t.Errorf("a after reopening: %d, %v; want %d", got, ok, a)
	}
	if _, ok := again.Allocation("b"); ok {
		t.Error("released b came back")
	}
	if got := mustAllocate(t, again, "c"); got == a || got != b {
		t.Errorf("c got %d; want the free block %d, never a's %d", got, b, a)
	}
	if _, err := again.Allocate("d"); !errors.Is(err, ErrNoFreeBlock) {
		t.Errorf("d: %v; want the range exhausted", err)
	}
}

func TestOpenSkipsTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{".a.json.tmp-123", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	m := open(t, dir, 1)
	mustAllocate(t, m, "a")
}

func TestCleanupOrphans(t *testing.T) {
	dir := t.TempDir()
	m := open(t, dir, 4)
	for _, uid := range []string{"a", "b", "c"} {
		mustAllocate(t, m, uid)
	}
	freed, err := m.CleanupOrphans(map[string]bool{"b": true, "gone-without-block": true})
	if err != nil || !slices.Equal(freed, []string{"a", "c"}) {
		t.Fatalf("freed %v, %v; want a and c", freed, err)
	}
	for uid, want := range map[string]bool{"a": false, "b": true, "c": false} {
		_, ok := m.Allocation(uid)
		_, statErr := os.Stat(recordPath(dir, uid))
		if ok != want || (statErr == nil) != want {
			t.Errorf("%s: allocated %v, record %v; want kept %v", uid, ok, statErr, want)
		}
	}
	if _, ok := open(t, dir, 4).Allocation("b"); !ok {
		t.Error("b's block lost on reopening")
	}
}

// writeRecord writes a record file as the manager would, or any content.
func writeRecord(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRefusesBadRecords(t *testing.T) {
	good := func(uid string, host uint32) string {
		m := `[{"containerId":0,"hostId":` + strconv.Itoa(int(host)) + `,"length":65536}]`
		return `{"version":1,"uid":"` + uid + `","uidMappings":` + m + `,"gidMappings":` + m + `}`
	}
	for _, tc := range []struct {
		name, file, content, want string
	}{
		{"corrupt", "a.json", "{", "corrupt"},
		{"newer version", "a.json", `{"version":2}`, "newer"},
		{"uid differs from the file name", "a.json", good("b", 1048576), `for pod uid "b"`},
		{"two mappings", "a.json", `{"version":1,"uid":"a","uidMappings":[{"hostId":1048576,"length":65536},{"hostId":1114112,"length":65536}],"gidMappings":[]}`, "want one each"},
		{"uids and gids differ", "a.json", `{"version":1,"uid":"a","uidMappings":[{"hostId":1048576,"length":65536}],"gidMappings":[{"hostId":1114112,"length":65536}]}`, "differ"},
		{"container id 0 not mapped", "a.json", `{"version":1,"uid":"a","uidMappings":[{"containerId":1,"hostId":1048576,"length":65536}],"gidMappings":[{"containerId":1,"hostId":1048576,"length":65536}]}`, "want 0"},
		{"wrong length", "a.json", `{"version":1,"uid":"a","uidMappings":[{"hostId":1048576,"length":1000}],"gidMappings":[{"hostId":1048576,"length":1000}]}`, "length 1000"},
		{"unaligned", "a.json", good("a", 1048577), "not a multiple"},
		{"below the range", "a.json", good("a", 65536), "outside the range"},
		{"past the range", "a.json", good("a", 1048576+4*BlockLength), "outside the range"},
		{"uid not a pod uid", "a b.json", good("a b", 1048576), "not usable"},
	} {
		dir := t.TempDir()
		writeRecord(t, dir, tc.file, tc.content)
		uids, gids := smallRange(t, 4)
		_, err := Open(Options{Dir: dir, SubUIDFile: uids, SubGIDFile: gids})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), filepath.Join(dir, tc.file)) {
			t.Errorf("%s: %v; want an error naming %s and saying %q", tc.name, err, tc.file, tc.want)
		}
	}
}

func TestOpenRefusesOverlappingRecords(t *testing.T) {
	dir := t.TempDir()
	m := open(t, dir, 4)
	mustAllocate(t, m, "a")
	data, err := os.ReadFile(recordPath(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	writeRecord(t, dir, "b.json", strings.Replace(string(data), `"uid": "a"`, `"uid": "b"`, 1))
	uids, gids := smallRange(t, 4)
	if _, err := Open(Options{Dir: dir, SubUIDFile: uids, SubGIDFile: gids}); err == nil || !strings.Contains(err.Error(), "already") {
		t.Errorf("two records of one block: %v; want refused", err)
	}
}

func TestOpenRefusesRecordsOutsideANewRange(t *testing.T) {
	dir := t.TempDir()
	m := open(t, dir, 4)
	mustAllocate(t, m, "a")
	line := "berth:2097152:262144\n" // the range moved while the pod existed
	uids, gids := subIDFiles(t, line, line)
	_, err := Open(Options{Dir: dir, SubUIDFile: uids, SubGIDFile: gids})
	if err == nil || !strings.Contains(err.Error(), "outside the range 2097152-2359295") {
		t.Errorf("a record outside the new range: %v; want refused naming the range", err)
	}
}

func TestOpenChecksTheDefaultRangeAndDirectory(t *testing.T) {
	m, err := Open(Options{Dir: t.TempDir(), MaxPods: 110})
	if err != nil || m.Range().First != 65536 {
		t.Fatalf("default range: %v, %v", m, err)
	}
	if _, err := Open(Options{}); err == nil {
		t.Error("no directory accepted")
	}
	uids, gids := subIDFiles(t, "berth:65536:65536\n", "berth:65536:65536\n")
	if _, err := Open(Options{Dir: t.TempDir(), SubUIDFile: uids, SubGIDFile: gids, MaxPods: 2}); err == nil {
		t.Error("a range of one block for 2 pods accepted")
	}
}

func pod(hostUsers *bool) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: types.UID("uid-1")},
		Spec:       v1.PodSpec{HostUsers: hostUsers},
	}
}

func TestPodUserNamespace(t *testing.T) {
	no, yes := false, true
	m := open(t, t.TempDir(), 4)
	for _, p := range []*v1.Pod{pod(nil), pod(&yes)} {
		ns, err := m.PodUserNamespace(p, "")
		if err != nil || ns.GetMode() != runtimeapi.NamespaceMode_NODE || len(ns.GetUids())+len(ns.GetGids()) != 0 {
			t.Errorf("hostUsers %v: %v, %v; want mode NODE without mappings", p.Spec.HostUsers, ns, err)
		}
	}
	if _, ok := m.Allocation("uid-1"); ok {
		t.Error("a pod in the host's user namespace got a block")
	}
	ns, err := m.PodUserNamespace(pod(&no), "")
	if err != nil {
		t.Fatal(err)
	}
	host, _ := m.Allocation("uid-1")
	want := &runtimeapi.IDMapping{ContainerId: 0, HostId: host, Length: 65536}
	for _, ids := range [][]*runtimeapi.IDMapping{ns.GetUids(), ns.GetGids()} {
		if ns.GetMode() != runtimeapi.NamespaceMode_POD || len(ids) != 1 || ids[0].String() != want.String() {
			t.Errorf("hostUsers false: %v; want mode POD, %v for uids and gids", ns, want)
		}
	}
	var nilManager *Manager
	if ns, err := nilManager.PodUserNamespace(pod(nil), ""); err != nil || ns.GetMode() != runtimeapi.NamespaceMode_NODE {
		t.Errorf("nil manager, hostUsers unset: %v, %v", ns, err)
	}
	if _, err := nilManager.PodUserNamespace(pod(&no), ""); err == nil || !strings.Contains(err.Error(), "pod default/web: spec.hostUsers: false") {
		t.Errorf("nil manager, hostUsers false: %v", err)
	}
}

func TestPodUserNamespaceNeedsAHandlerThatSupportsIt(t *testing.T) {
	no := false
	for _, tc := range []struct {
		name     string
		handlers map[string]bool
		handler  string
		want     string
	}{
		{"a runtime without handler features", nil, "", "the runtime does not support user namespaces"},
		{"default handler without", map[string]bool{"": false, "kata": true}, "", "the runtime's default handler does not support"},
		{"runtime class without", map[string]bool{"": true, "runc-old": false}, "runc-old", `RuntimeClass handler "runc-old" does not support`},
		{"unknown handler", map[string]bool{"": true}, "gvisor", `runtime handler "gvisor" is not known`},
	} {
		uids, gids := smallRange(t, 4)
		m, err := Open(Options{Dir: t.TempDir(), SubUIDFile: uids, SubGIDFile: gids, Handlers: tc.handlers})
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.PodUserNamespace(pod(&no), tc.handler)
		if err == nil || !strings.Contains(err.Error(), "pod default/web: spec.hostUsers: false: "+tc.want) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
		if _, ok := m.Allocation("uid-1"); ok {
			t.Errorf("%s: the refused pod got a block", tc.name)
		}
	}
}
