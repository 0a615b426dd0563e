package testimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
	"time"
)

// BusyboxPath is the static busybox the images are made from.
const BusyboxPath = "/bin/busybox"

// Applets are the busybox applets linked into /bin.
var Applets = []string{
	"sh", "ash", "ls", "cat", "echo", "sleep", "true", "false", "id", "hostname", "ip",
	"ifconfig", "wget", "nc", "ping", "ps", "env", "top", "grep", "head", "tail", "seq",
	"yes", "mkdir", "touch", "kill", "whoami", "date", "printf", "test", "wc", "ln", "rm",
	"mount", "umount", "df", "du", "stat", "chmod", "chown", "cp", "mv", "pwd", "uname",
	"sed", "awk", "tr", "cut", "sort", "uniq", "find", "xargs", "tee", "dd", "mknod", "readlink",
	"basename", "dirname", "nslookup", "route", "netstat", "free", "uptime", "nproc",
	"dmesg", "pidof", "pkill", "killall", "watch", "timeout", "getopt", "realpath",
	"md5sum", "sha256sum", "base64", "hexdump", "od", "vi", "less", "more", "which",
	"tar", "gzip", "gunzip", "zcat", "nohup", "usleep", "sync", "stty", "tty", "[", "[[",
	"httpd", "telnet", "traceroute", "arping", "ifup", "hostid", "logger", "nsenter", "chroot",
	"unshare", "setsid", "su", "passwd", "groups", "diff", "patch", "expr", "bc", "cmp",
}

// Epoch is the fixed modification time of every file.
var Epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

const passwd = `root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/usr/sbin:/bin/false
berth:x:1000:1000:berth:/home/berth:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
`

const group = `root:x:0:
daemon:x:1:
berth:x:1000:
extra:x:2000:berth
nogroup:x:65534:
`

// entry is one tar entry with its content.
type entry struct {
	hdr  tar.Header
	data []byte
}

func dirEntry(name string, mode int64, uid, gid int) entry {
	return entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: gid, ModTime: Epoch}}
}

func fileEntry(name string, mode int64, data []byte) entry {
	return entry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: Epoch}, data: data}
}

func linkEntry(name, target string) entry {
	return entry{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777, ModTime: Epoch}}
}

// baseEntries is the image's file system without extra files, in order.
func baseEntries() ([]entry, error) {
	bb, err := os.ReadFile(BusyboxPath)
	if err != nil {
		return nil, fmt.Errorf("testimage: busybox: %w", err)
	}
	out := []entry{
		dirEntry("bin", 0o755, 0, 0), dirEntry("dev", 0o755, 0, 0), dirEntry("etc", 0o755, 0, 0),
		dirEntry("home", 0o755, 0, 0), dirEntry("home/berth", 0o755, 1000, 1000),
		dirEntry("proc", 0o755, 0, 0), dirEntry("root", 0o700, 0, 0), dirEntry("sys", 0o755, 0, 0),
		dirEntry("tmp", 0o1777, 0, 0), dirEntry("usr", 0o755, 0, 0), dirEntry("usr/bin", 0o755, 0, 0),
		dirEntry("var", 0o755, 0, 0),
		fileEntry("bin/busybox", 0o755, bb),
		fileEntry("etc/passwd", 0o644, []byte(passwd)),
		fileEntry("etc/group", 0o644, []byte(group)),
	}
	for _, a := range Applets {
		out = append(out, linkEntry("bin/"+a, "busybox"))
	}
	return out, nil
}

// splitLayers splits entries into n layers; each layer repeats the
// directory entries its files need.
func splitLayers(entries []entry, n int) ([][]entry, error) {
	if n < 1 || n > len(entries) {
		return nil, fmt.Errorf("testimage: layers %d: must be within 1..%d", n, len(entries))
	}
	dirs := map[string]entry{}
	for _, e := range entries {
		if e.hdr.Typeflag == tar.TypeDir {
			dirs[strings.TrimSuffix(e.hdr.Name, "/")] = e
		}
	}
	var out [][]entry
	for i := 0; i < n; i++ {
		chunk := entries[i*len(entries)/n : (i+1)*len(entries)/n]
		out = append(out, withParents(chunk, dirs))
	}
	return out, nil
}

// withParents prefixes chunk with the directory entries of its parents.
func withParents(chunk []entry, dirs map[string]entry) []entry {
	have := map[string]bool{}
	var out []entry
	for _, e := range chunk {
		name := strings.TrimSuffix(e.hdr.Name, "/")
		var parents []string
		for p := path.Dir(name); p != "." && p != "/"; p = path.Dir(p) {
			parents = append([]string{p}, parents...)
		}
		for _, p := range parents {
			if have[p] {
				continue
			}
			have[p] = true
			d, ok := dirs[p]
			if !ok {
				d = dirEntry(p, 0o755, 0, 0)
			}
			out = append(out, d)
		}
		if e.hdr.Typeflag == tar.TypeDir {
			if have[name] {
				continue
			}
			have[name] = true
		}
		out = append(out, e)
	}
	return out
}

// extraEntries is the separate top layer of Options.ExtraFiles.
func extraEntries(files map[string]string, dirs []entry) []entry {
	known := map[string]entry{}
	for _, d := range dirs {
		if d.hdr.Typeflag == tar.TypeDir {
			known[strings.TrimSuffix(d.hdr.Name, "/")] = d
		}
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var chunk []entry
	for _, n := range names {
		mode := int64(0o644)
		if strings.HasPrefix(files[n], "#!") || strings.HasPrefix(files[n], "\x7fELF") {
			mode = 0o755 // a script or a binary
		}
		chunk = append(chunk, fileEntry(strings.TrimPrefix(path.Clean("/"+n), "/"), mode, []byte(files[n])))
	}
	return withParents(chunk, known)
}

// symlinkEntries are the symlinks of Options.Symlinks, with their parent
// directories, for the top layer.
func symlinkEntries(links map[string]string, dirs []entry) []entry {
	known := map[string]entry{}
	for _, d := range dirs {
		if d.hdr.Typeflag == tar.TypeDir {
			known[strings.TrimSuffix(d.hdr.Name, "/")] = d
		}
	}
	names := make([]string, 0, len(links))
	for n := range links {
		names = append(names, n)
	}
	sort.Strings(names)
	var chunk []entry
	for _, n := range names {
		chunk = append(chunk, linkEntry(strings.TrimPrefix(path.Clean("/"+n), "/"), links[n]))
	}
	return withParents(chunk, known)
}

// tarBytes writes entries as an uncompressed tar.
func tarBytes(entries []entry) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := e.hdr
		if err := tw.WriteHeader(&hdr); err != nil {
			return nil, fmt.Errorf("testimage: tar %s: %w", hdr.Name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("testimage: tar %s: %w", hdr.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
