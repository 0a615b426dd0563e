package volume

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/agent/podspec"
)

// raceRounds is how many times each subPath is mounted while a directory
// of the volume is swapped for a symlink and back.
const raceRounds = 500

// raceFixture is a volume whose directory d a container swaps, atomically
// and over and over, with the symlink alt to a directory outside it. The
// outside directory holds a marker and a file named like the one in d.
type raceFixture struct {
	vol, outside string
	known        map[inode]string // what outside holds, by identity
	modes        map[string]os.FileMode
}

func newRaceFixture(t *testing.T) *raceFixture {
	t.Helper()
	root := t.TempDir()
	f := &raceFixture{vol: filepath.Join(root, "vol"), outside: filepath.Join(root, "outside")}
	for _, d := range []string{filepath.Join(f.vol, "d"), f.outside} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(f.vol, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(f.vol, "d", "file"), filepath.Join(f.outside, "file"), filepath.Join(f.outside, "marker")} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(f.outside, filepath.Join(f.vol, "alt")); err != nil {
		t.Fatal(err)
	}
	f.known, f.modes = map[inode]string{}, map[string]os.FileMode{}
	for _, name := range []string{".", "file", "marker"} {
		p := filepath.Join(f.outside, name)
		f.known[inodeOf(t, p)] = p
		f.modes[name] = modeOf(t, p)
	}
	return f
}

// swap exchanges d and alt until stop is set, and counts the swaps.
func (f *raceFixture) swap(stop *atomic.Bool, swaps *atomic.Int64) error {
	d, alt := filepath.Join(f.vol, "d"), filepath.Join(f.vol, "alt")
	for !stop.Load() {
		if err := unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, alt, unix.RENAME_EXCHANGE); err != nil {
			return err
		}
		swaps.Add(1)
	}
	return nil
}

// checkOutside fails the test if the outside directory gained an entry or
// one of its modes changed.
func (f *raceFixture) checkOutside(t *testing.T, round int) {
	t.Helper()
	entries, err := os.ReadDir(f.outside)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"file", "marker"}) {
		t.Fatalf("round %d: the outside directory now holds %v", round, names)
	}
	for name, want := range f.modes {
		if got := modeOf(t, filepath.Join(f.outside, name)); got != want {
			t.Fatalf("round %d: outside %s changed mode from %v to %v", round, name, want, got)
		}
	}
}

// TestMountSubPathRace mounts subPaths through d (an existing directory, a
// file in it, and a directory to be made) while d is swapped with a
// symlink to outside. A mount may be refused, but one that succeeds must
// lead into the volume, and nothing outside may be made or changed.
func TestMountSubPathRace(t *testing.T) {
	requireRoot(t)
	m := newManager(t)
	f := newRaceFixture(t)
	var stop atomic.Bool
	var swaps atomic.Int64
	var wg sync.WaitGroup
	var swapErr error
	wg.Add(1)
	go func() { defer wg.Done(); swapErr = f.swap(&stop, &swaps) }()
	defer func() {
		stop.Store(true)
		wg.Wait()
		if swapErr != nil {
			t.Errorf("swapping: %v", swapErr)
		}
	}()

	mounted, refused := 0, 0
	for round := 0; round < raceRounds; round++ {
		subs := []string{"d", "d/file", fmt.Sprintf("d/new-%d", round)}
		for i, sub := range subs {
			point, err := m.MountSubPath(podspec.SubPathMount{
				PodUID: "u-race", Container: "app", MountIndex: i, Volume: "data", VolumePath: f.vol, SubPath: sub,
			})
			if err != nil {
				refused++
				continue
			}
			mounted++
			if where, ok := f.known[inodeOf(t, point)]; ok {
				t.Fatalf("round %d: subPath %s mounted %s, outside the volume", round, sub, where)
			}
			if _, err := os.Lstat(filepath.Join(point, "marker")); err == nil {
				t.Fatalf("round %d: subPath %s mounted a directory holding the outside marker", round, sub)
			}
		}
		f.checkOutside(t, round)
		if err := m.Teardown("u-race"); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	assertNoMountsUnder(t, m.Root)
	t.Logf("%d mounts, %d refused, %d swaps", mounted, refused, swaps.Load())
	if mounted == 0 || refused == 0 {
		t.Errorf("the race was not exercised: %d mounts, %d refused", mounted, refused)
	}
}
