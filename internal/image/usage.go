package image

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"
)

// Usage returns the bytes (allocated blocks) and inodes the store uses, for
// ImageFsInfo. Hard-linked files count once. The walk is cached until the
// index generation changes.
func (s *Store) Usage() (usedBytes, inodes uint64, err error) {
	gen, err := s.readGeneration()
	if err != nil {
		return 0, 0, err
	}
	s.mu.Lock()
	if s.usageGen == gen && s.usageGen != "" {
		defer s.mu.Unlock()
		return s.usageBytes, s.usageInos, nil
	}
	s.mu.Unlock()
	type inode struct{ dev, ino uint64 }
	seen := map[inode]bool{}
	err = filepath.WalkDir(s.root, func(p string, d fs.DirEntry, walkErr error) error {
		if walkErr != nil {
			return nil // vanished while walking (a concurrent gc)
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || seen[inode{st.Dev, st.Ino}] {
			return nil
		}
		seen[inode{st.Dev, st.Ino}] = true
		usedBytes += uint64(st.Blocks) * 512
		inodes++
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("image store usage: %w", err)
	}
	s.mu.Lock()
	s.usageGen, s.usageBytes, s.usageInos = gen, usedBytes, inodes
	s.mu.Unlock()
	return usedBytes, inodes, nil
}
