package pullrecords

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func openTest(t *testing.T, dir string, clk *clocktesting.FakeClock, policy Policy) *Manager {
	t.Helper()
	m, err := Open(Config{Dir: dir, Verification: mustVerification(t, policy), Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func newClock() *clocktesting.FakeClock {
	return clocktesting.NewFakeClock(time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC))
}

func secrets(s ...Secret) func() ([]Secret, error) {
	return func() ([]Secret, error) { return s, nil }
}

func mustDecide(t *testing.T, m *Manager, image, ref string, pod func() ([]Secret, error)) Decision {
	t.Helper()
	d, err := m.MustPull(image, ref, pod)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// A record written by one manager is what a new one (a restarted agent)
// reads and decides on; the files are root-only and hold no credential.
func TestRecordsSurviveARestart(t *testing.T) {
	dir, clk := filepath.Join(t.TempDir(), "pullrecords"), newClock()
	m := openTest(t, dir, clk, "")
	if err := m.RecordPullIntent(testImage); err != nil {
		t.Fatal(err)
	}
	if err := m.RecordPulled(testImage, "sha256:img", SecretCredentials(secretA)); err != nil {
		t.Fatal(err)
	}
	if names := dirNames(t, filepath.Join(dir, "intents")); len(names) != 0 {
		t.Errorf("intents left after the pull: %v", names)
	}
	again := openTest(t, dir, clk, "")
	rec, err := again.files.readPulled("sha256:img")
	if err != nil {
		t.Fatal(err)
	}
	want := &Pulled{Version: recordVersion, ImageRef: "sha256:img", LastUpdated: clk.Now(), Credentials: map[string]Credentials{testRepo: SecretCredentials(secretA)}}
	if !reflect.DeepEqual(rec, want) {
		t.Errorf("record %+v, want %+v", rec, want)
	}
	if d := mustDecide(t, again, testImage, "sha256:img", secrets()); !d.Pull || d.Why != whyOtherSecrets {
		t.Errorf("a pod without the secret: %+v; want a pull", d)
	}
	if d := mustDecide(t, again, "reg.example:5000/team/app@sha256:"+strings.Repeat("c", 64), "sha256:img", secrets(secretA)); d.Pull {
		t.Errorf("a pod with the secret, the image by digest: %+v; want no pull", d)
	}
	for path, mode := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, "intents"): 0o700, filepath.Join(dir, "pulled"): 0o700, again.files.pulledPath("sha256:img"): 0o600} {
		if info, err := os.Stat(path); err != nil || info.Mode().Perm() != mode {
			t.Errorf("%s: %v %v; want mode %04o", path, info.Mode(), err, mode)
		}
	}
}

// kill -9 between the intent and the record: the image counts as pulled
// by the agent with unknown credentials. Recover turns the intent into a
// record for an image the runtime holds; an intent of an image the
// runtime lacks stays.
func TestCrashBetweenIntentAndRecord(t *testing.T) {
	dir, clk := t.TempDir(), newClock()
	m := openTest(t, dir, clk, "")
	for _, image := range []string{"busybox", "reg.example/gone:v1"} {
		if err := m.RecordPullIntent(image); err != nil {
			t.Fatal(err)
		}
	}
	// The crash: the pulls end, nothing more is written. A new agent:
	after := openTest(t, dir, clk, "")
	if d := mustDecide(t, after, "busybox", "sha256:bb", secrets()); !d.Pull || d.Why != whyUnfinished {
		t.Errorf("before Recover: %+v; want a pull, the pull unfinished", d)
	}
	images := []*runtimeapi.Image{{Id: "sha256:bb", RepoTags: []string{"docker.io/library/busybox:latest"}}}
	if err := after.Recover(images, clk.Now()); err != nil {
		t.Fatal(err)
	}
	if intents, err := after.files.listIntents(); err != nil || !reflect.DeepEqual(intents, []string{imageKey("reg.example/gone:v1")}) {
		t.Errorf("intents after Recover %v %v; want the missing image's only", intents, err)
	}
	rec, err := after.files.readPulled("sha256:bb")
	if err != nil || rec == nil || len(rec.Credentials) != 0 {
		t.Fatalf("record %+v %v; want one with credentials unknown", rec, err)
	}
	if d := mustDecide(t, after, "busybox:latest", "sha256:bb", secrets(secretA)); !d.Pull || d.Why != whyUnknownCreds {
		t.Errorf("after Recover: %+v; want a pull", d)
	}
	if d := mustDecide(t, openTest(t, dir, clk, NeverVerify), "busybox", "sha256:bb", secrets()); d.Pull {
		t.Errorf("NeverVerify: %+v; want no pull", d)
	}
}

// Two pulls of one image under way: the intent goes with the last.
func TestIntentStaysWhileAPullIsUnderWay(t *testing.T) {
	dir, clk := t.TempDir(), newClock()
	m := openTest(t, dir, clk, "")
	for range 2 {
		if err := m.RecordPullIntent(testImage); err != nil {
			t.Fatal(err)
		}
	}
	m.RecordPullFailed(testImage)
	if ok, _ := m.files.intentExists(imageKey(testImage)); !ok {
		t.Fatal("the intent went with the first pull's end")
	}
	if d := mustDecide(t, m, testImage, "sha256:img", secrets()); !d.Pull || d.Why != whyUnfinished {
		t.Errorf("during the pull: %+v", d)
	}
	if err := m.RecordPulled(testImage, "sha256:img", NodeWideCredentials()); err != nil {
		t.Fatal(err)
	}
	if ok, _ := m.files.intentExists(imageKey(testImage)); ok {
		t.Error("the intent stayed after the last pull ended")
	}
	if d := mustDecide(t, m, testImage, "sha256:img", secrets()); d.Pull {
		t.Errorf("pulled node-wide: %+v; want no pull", d)
	}
}

// A secret matched by hash under other coordinates is added to the
// record; an unreadable record makes every pod pull, and is replaced by
// the next pull.
func TestMatchIsLearnedAndUnreadableRecordsFailSafe(t *testing.T) {
	dir, clk := t.TempDir(), newClock()
	m := openTest(t, dir, clk, AlwaysVerify)
	_ = m.RecordPullIntent(testImage)
	if err := m.RecordPulled(testImage, "sha256:img", SecretCredentials(secretA)); err != nil {
		t.Fatal(err)
	}
	if d := mustDecide(t, m, testImage, "sha256:img", secrets(secretAMoved)); d.Pull {
		t.Fatalf("same credential: %+v", d)
	}
	rec, _ := m.files.readPulled("sha256:img")
	if got := rec.Credentials[testRepo].Secrets; len(got) != 2 || got[1] != secretAMoved {
		t.Errorf("secrets after the match %v; want secretAMoved added", got)
	}
	if err := os.WriteFile(m.files.pulledPath("sha256:img"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if d := mustDecide(t, m, testImage, "sha256:img", secrets(secretA)); !d.Pull || d.Why != whyUnreadable {
		t.Errorf("unreadable record: %+v; want a pull", d)
	}
	_ = m.RecordPullIntent(testImage)
	if err := m.RecordPulled(testImage, "sha256:img", SecretCredentials(secretB)); err != nil {
		t.Fatal(err)
	}
	if d := mustDecide(t, m, testImage, "sha256:img", secrets(secretB)); d.Pull {
		t.Errorf("after the record was replaced: %+v", d)
	}
}

// Records of images the runtime no longer lists go, unless written after
// the listing.
func TestPruneDropsRecordsOfGoneImages(t *testing.T) {
	dir, clk := t.TempDir(), newClock()
	m := openTest(t, dir, clk, "")
	pulled := func(ref string) {
		_ = m.RecordPullIntent(testImage)
		if err := m.RecordPulled(testImage, ref, NodeWideCredentials()); err != nil {
			t.Fatal(err)
		}
	}
	pulled("sha256:kept")
	pulled("sha256:gone")
	clk.Step(time.Minute)
	listedAt := clk.Now()
	clk.Step(time.Second)
	pulled("sha256:new") // after the listing, which did not see it
	if err := m.Prune([]string{"sha256:kept"}, listedAt); err != nil {
		t.Fatal(err)
	}
	recs, err := m.files.listPulled()
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, r := range recs {
		refs = append(refs, r.ImageRef)
	}
	if len(refs) != 2 || !containsAll(refs, "sha256:kept", "sha256:new") {
		t.Errorf("records after Prune: %v; want kept and new", refs)
	}
}

func containsAll(have []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}

func TestOpenRemovesTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	m := openTest(t, dir, newClock(), "")
	tmp := filepath.Join(m.files.pulled, ".sha256-abc.json.tmp-123")
	if err := os.WriteFile(tmp, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	openTest(t, dir, newClock(), "")
	if _, err := os.Stat(tmp); err == nil {
		t.Errorf("%s left after Open", tmp)
	}
}

func TestNilManagerVerifiesNothing(t *testing.T) {
	var m *Manager
	if err := m.RecordPullIntent(testImage); err != nil {
		t.Fatal(err)
	}
	if d, err := m.MustPull(testImage, "sha256:img", secrets()); err != nil || d.Pull {
		t.Errorf("nil manager: %+v %v", d, err)
	}
}
