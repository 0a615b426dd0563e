package trusted

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// CheckOwner applies the rule to info (from Stat, Lstat or a descriptor's
// Stat): owned by root or the effective user, no write for group or
// others. Its errors say which and how to fix it ("owned by uid 1000,
// want root (0)", "has mode 0664: writable by group or others (chmod
// go-w)"); callers name the path.
func CheckOwner(info fs.FileInfo) error {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("no owner information")
	}
	if st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("owned by uid %d, want root (0)", st.Uid)
	}
	if perm := info.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("has mode %04o: writable by group or others (chmod go-w)", perm)
	}
	return nil
}

// CheckFile applies the rule to an open file, which must be a regular one.
func CheckFile(f *os.File) error {
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (%s)", info.Mode().Type())
	}
	return CheckOwner(info)
}
