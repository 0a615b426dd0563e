package oci

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/berth-dev/berth/internal/errdefs"
	"golang.org/x/sys/unix"
)

const (
	passwdFile = "/etc/passwd"
	groupFile  = "/etc/group"
	// maxAccountFileSize bounds how much of /etc/passwd or /etc/group is read.
	maxAccountFileSize = 8 << 20
)

type passwdEntry struct {
	name     string
	uid, gid uint32
}

type groupEntry struct {
	name    string
	gid     uint32
	members []string
}

// readRootfsFile reads name (absolute inside the rootfs) with every path
// component, symlinks included, resolved as if rootfs were "/": a symlink can
// never lead out of it. A missing file returns (nil, nil).
func readRootfsFile(rootfs, name string) ([]byte, error) {
	root, err := unix.Open(rootfs, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("rootfs %q: open: %w", rootfs, err)
	}
	defer unix.Close(root)
	fd, err := unix.Openat2(root, strings.TrimPrefix(name, "/"), &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOCTTY,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		return nil, nil
	case errors.Is(err, unix.ELOOP):
		return nil, fmt.Errorf("rootfs file %s: symlink loop: %w", name, errdefs.ErrInvalidArgument)
	case err != nil:
		return nil, fmt.Errorf("rootfs file %s: open: %w", name, err)
	}
	file := os.NewFile(uintptr(fd), name)
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		return nil, fmt.Errorf("rootfs file %s: stat: %w", name, err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("rootfs file %s: not a regular file: %w", name, errdefs.ErrInvalidArgument)
	}
	data, err := io.ReadAll(io.LimitReader(file, maxAccountFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("rootfs file %s: read: %w", name, err)
	}
	if len(data) > maxAccountFileSize {
		return nil, fmt.Errorf("rootfs file %s: larger than %d bytes: %w", name, maxAccountFileSize, errdefs.ErrInvalidArgument)
	}
	return data, nil
}

// splitAccountLines yields the colon-separated fields of each non-empty,
// non-comment line.
func splitAccountLines(data []byte, visit func(fields []string)) {
	scanner := bufio.NewScanner(bytes.NewReader(data))
	scanner.Buffer(make([]byte, 0, 4096), maxAccountFileSize)
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		visit(strings.Split(line, ":"))
	}
}

func parsePasswd(data []byte) []passwdEntry {
	var entries []passwdEntry
	splitAccountLines(data, func(fields []string) {
		if len(fields) < 4 || fields[0] == "" {
			return
		}
		uid, errUID := parseID(fields[2])
		gid, errGID := parseID(fields[3])
		if errUID != nil || errGID != nil {
			return
		}
		entries = append(entries, passwdEntry{name: fields[0], uid: uid, gid: gid})
	})
	return entries
}

func parseGroup(data []byte) []groupEntry {
	var entries []groupEntry
	splitAccountLines(data, func(fields []string) {
		if len(fields) < 3 || fields[0] == "" {
			return
		}
		gid, err := parseID(fields[2])
		if err != nil {
			return
		}
		entry := groupEntry{name: fields[0], gid: gid}
		if len(fields) > 3 && fields[3] != "" {
			for _, member := range strings.Split(fields[3], ",") {
				if member = strings.TrimSpace(member); member != "" {
					entry.members = append(entry.members, member)
				}
			}
		}
		entries = append(entries, entry)
	})
	return entries
}

// parseID parses a uid or gid: a decimal in [0, 2^32-2] (2^32-1 is the
// kernel's "no id").
func parseID(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n == 1<<32-1 {
		return 0, fmt.Errorf("id %q: not a number in [0, 4294967294]: %w", s, errdefs.ErrInvalidArgument)
	}
	return uint32(n), nil
}

func isNumeric(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// accounts lazily loads the rootfs' account files.
type accounts struct {
	rootfs      string
	passwd      []passwdEntry
	group       []groupEntry
	passwdFound bool
	groupFound  bool
	loadedP     bool
	loadedG     bool
}

func (a *accounts) users() ([]passwdEntry, error) {
	if !a.loadedP {
		data, err := readRootfsFile(a.rootfs, passwdFile)
		if err != nil {
			return nil, err
		}
		a.passwd, a.passwdFound, a.loadedP = parsePasswd(data), data != nil, true
	}
	return a.passwd, nil
}

func (a *accounts) groups() ([]groupEntry, error) {
	if !a.loadedG {
		data, err := readRootfsFile(a.rootfs, groupFile)
		if err != nil {
			return nil, err
		}
		a.group, a.groupFound, a.loadedG = parseGroup(data), data != nil, true
	}
	return a.group, nil
}

func (a *accounts) userByName(name string) (passwdEntry, error) {
	users, err := a.users()
	if err != nil {
		return passwdEntry{}, err
	}
	for _, u := range users {
		if u.name == name {
			return u, nil
		}
	}
	return passwdEntry{}, fmt.Errorf("user %q: not in the image's %s%s: %w",
		name, passwdFile, missingNote(a.passwdFound), errdefs.ErrNotFound)
}

// userByID returns the first entry with uid; ok is false when there is none
// (a numeric user need not exist).
func (a *accounts) userByID(uid uint32) (entry passwdEntry, ok bool, err error) {
	users, err := a.users()
	if err != nil {
		return passwdEntry{}, false, err
	}
	for _, u := range users {
		if u.uid == uid {
			return u, true, nil
		}
	}
	return passwdEntry{}, false, nil
}

func (a *accounts) groupByName(name string) (groupEntry, error) {
	groups, err := a.groups()
	if err != nil {
		return groupEntry{}, err
	}
	for _, g := range groups {
		if g.name == name {
			return g, nil
		}
	}
	return groupEntry{}, fmt.Errorf("group %q: not in the image's %s%s: %w",
		name, groupFile, missingNote(a.groupFound), errdefs.ErrNotFound)
}

// memberships lists the gids of the groups naming user as a member.
func (a *accounts) memberships(user string) ([]uint32, error) {
	groups, err := a.groups()
	if err != nil {
		return nil, err
	}
	var gids []uint32
	for _, g := range groups {
		for _, member := range g.members {
			if member == user {
				gids = append(gids, g.gid)
				break
			}
		}
	}
	return gids, nil
}

func missingNote(found bool) string {
	if found {
		return ""
	}
	return " (file missing)"
}
