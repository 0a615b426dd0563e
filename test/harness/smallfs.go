package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// SmallFilesystem makes an ext4 filesystem of sizeMiB on a loop device of
// the test's own (no reserved blocks, so that statfs's available is all
// that is free) and mounts it on a new directory, which it returns. The
// test's cleanup unmounts it, detaches the loop device and removes the
// image file, whatever the test's outcome; register it before anything
// that must be gone from it first (a daemon whose root is on it). The test
// is skipped, saying why, where loop devices or mkfs.ext4 are missing.
func SmallFilesystem(t *testing.T, sizeMiB int) string {
	t.Helper()
	if reason := loopMissing(); reason != "" {
		t.Skip("small filesystem: " + reason)
	}
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "fs.img"), filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := makeExt4(img, sizeMiB); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "--find", "--show", img).CombinedOutput()
	if err != nil {
		t.Skipf("small filesystem: no loop device: losetup: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "--detach", dev).CombinedOutput(); err != nil {
			t.Errorf("cleanup: losetup --detach %s: %v: %s", dev, err, out)
		}
	})
	if err := syscall.Mount(dev, mnt, "ext4", 0, ""); err != nil {
		t.Fatalf("mount %s on %s: %v", dev, mnt, err)
	}
	t.Cleanup(func() { unmountSmall(t, mnt) })
	return mnt
}

// loopMissing says why no loop-mounted ext4 can be made here, or "".
func loopMissing() string {
	if os.Geteuid() != 0 {
		return "needs root"
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		return "loop devices unavailable: " + err.Error()
	}
	for _, tool := range []string{"losetup", "mkfs.ext4"} {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " not found"
		}
	}
	return ""
}

// makeExt4 writes a sparse image file of sizeMiB holding an empty ext4.
func makeExt4(img string, sizeMiB int) error {
	f, err := os.OpenFile(img, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	err = f.Truncate(int64(sizeMiB) << 20)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("image %s: %w", img, err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-m", "0", "-E", "nodiscard", img).CombinedOutput(); err != nil {
		return fmt.Errorf("mkfs.ext4 %s: %w: %s", img, err, out)
	}
	return nil
}

// unmountSmall unmounts mnt, retrying for 10 s while it is busy, then
// detaching it lazily (and failing the test: something still used it).
func unmountSmall(t *testing.T, mnt string) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := unix.Unmount(mnt, 0)
		if err == nil {
			return
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			t.Errorf("cleanup: unmount %s: %v; detaching it", mnt, err)
			_ = unix.Unmount(mnt, unix.MNT_DETACH) // best effort, reported above
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
