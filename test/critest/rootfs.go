package critest

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// epoch is the modification time of every file, so that images are
// reproducible.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// file is one entry of a layer.
type file struct {
	name     string // without leading slash
	mode     int64  // permission bits, incl. setuid
	uid, gid int
	data     []byte
	typ      byte   // tar.TypeReg unless set
	link     string // symlink or hard link target
}

// layerFiles is a layer's content by path; parents are added when the tar is
// written.
type layerFiles map[string]file

func (l layerFiles) add(f file) {
	f.name = strings.TrimPrefix(f.name, "/")
	if f.typ == 0 {
		f.typ = tar.TypeReg
	}
	l[f.name] = f
}

func (l layerFiles) addText(name string, mode int64, text string) {
	l.add(file{name: name, mode: mode, data: []byte(text)})
}

// addHostFile copies a host file (following symlinks) to name.
func (l layerFiles) addHostFile(name, hostPath string, mode int64) error {
	data, err := os.ReadFile(hostPath)
	if err != nil {
		return err
	}
	l.add(file{name: name, mode: mode, data: data})
	return nil
}

// addHostBinary copies a dynamically linked host binary to the same path in
// the image, with every shared library ldd names (at the paths ldd prints,
// so the dynamic loader finds them as on the host).
func (l layerFiles) addHostBinary(hostPath string) error {
	if err := l.addHostFile(hostPath, hostPath, 0o755); err != nil {
		return err
	}
	libs, err := sharedLibraries(hostPath)
	if err != nil {
		return err
	}
	for _, lib := range libs {
		if err := l.addHostFile(lib, lib, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// sharedLibraries lists the absolute library paths ldd prints for bin.
func sharedLibraries(bin string) ([]string, error) {
	out, err := exec.Command("ldd", bin).Output()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w", bin, err)
	}
	var libs []string
	for _, line := range strings.Split(string(out), "\n") {
		for _, field := range strings.Fields(line) {
			if strings.HasPrefix(field, "/") {
				libs = append(libs, field)
				break
			}
		}
	}
	return libs, nil
}

// tarBytes writes the layer as an uncompressed tar, parents first and every
// directory a file needs created with mode 0755.
func (l layerFiles) tarBytes() ([]byte, error) {
	names := make([]string, 0, len(l))
	dirs := map[string]bool{}
	for name, f := range l {
		names = append(names, name)
		if f.typ == tar.TypeDir {
			dirs[name] = true
		}
	}
	for _, name := range names {
		for dir := path.Dir(name); dir != "." && !dirs[dir]; dir = path.Dir(dir) {
			dirs[dir] = true
			l[dir] = file{name: dir, mode: 0o755, typ: tar.TypeDir}
			names = append(names, dir)
		}
	}
	// Hard links last: their targets must already be in the tar.
	sort.Slice(names, func(i, j int) bool {
		li, lj := l[names[i]].typ == tar.TypeLink, l[names[j]].typ == tar.TypeLink
		if li != lj {
			return lj
		}
		return names[i] < names[j]
	})
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range names {
		if err := writeEntry(tw, l[name]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeEntry(tw *tar.Writer, f file) error {
	hdr := &tar.Header{Typeflag: f.typ, Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.gid,
		ModTime: epoch, Linkname: f.link, Format: tar.FormatPAX}
	switch f.typ {
	case tar.TypeDir:
		hdr.Name += "/"
	case tar.TypeReg:
		hdr.Size = int64(len(f.data))
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("tar %s: %w", f.name, err)
	}
	if f.typ == tar.TypeReg {
		if _, err := tw.Write(f.data); err != nil {
			return fmt.Errorf("tar %s: %w", f.name, err)
		}
	}
	return nil
}

// passwd and group of every image: the users and groups the specs name
// (www-data, default-user in group-defined-in-image) besides the usual ones.
const (
	passwd = `root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/usr/sbin:/bin/false
www-data:x:33:33:www-data:/var/www:/bin/false
default-user:x:1000:1000:Linux User,,,:/home/default-user:/bin/sh
nobody:x:65534:65534:nobody:/home:/bin/false
`
	group = `root:x:0:
daemon:x:1:
www-data:x:33:
default-user:x:1000:
group-defined-in-image:x:50000:default-user
nogroup:x:65534:
`
)

// baseLayer is the busybox root file system every critest image starts
// from: busybox at /bin/busybox with every applet a hard link to it (as in
// the upstream busybox image), its shared libraries, pgrep and ipcs from the
// host (Debian's busybox has neither applet), passwd and group.
func baseLayer(busybox string) (layerFiles, error) {
	l := layerFiles{}
	for _, d := range []string{"dev", "proc", "sys", "root", "home/default-user", "var/run", "var/www", "etc", "usr/sbin", "usr/share/nginx/html"} {
		l.add(file{name: d, mode: 0o755, typ: tar.TypeDir})
	}
	l.add(file{name: "tmp", mode: 0o1777, typ: tar.TypeDir})
	l.add(file{name: "home/default-user", mode: 0o755, uid: 1000, gid: 1000, typ: tar.TypeDir})
	if err := l.addHostFile("bin/busybox", busybox, 0o755); err != nil {
		return nil, err
	}
	applets, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", busybox, err)
	}
	for _, a := range strings.Fields(string(applets)) {
		if a != "busybox" {
			l.add(file{name: "bin/" + a, mode: 0o755, typ: tar.TypeLink, link: "bin/busybox"})
		}
	}
	if libs, err := sharedLibraries(busybox); err == nil {
		for _, lib := range libs {
			if err := l.addHostFile(lib, lib, 0o755); err != nil {
				return nil, err
			}
		}
	}
	for _, tool := range []string{"/usr/bin/pgrep", "/usr/bin/ipcs"} {
		if err := l.addHostBinary(tool); err != nil {
			return nil, err
		}
	}
	l.addText("etc/passwd", 0o644, passwd)
	l.addText("etc/group", 0o644, group)
	l.addText("usr/share/nginx/html/index.html", 0o644, "<html><body>Welcome!</body></html>\n")
	return l, nil
}

// hostBusybox picks the busybox the images are made from: the dynamic build
// unpacked by `make critest` when given, else the host's busybox-static
// (with which the masked-paths spec fails: its shell runs `ls` in process).
func hostBusybox() string {
	if p := os.Getenv("BERTH_CRITEST_BUSYBOX"); p != "" {
		return p
	}
	if p, err := filepath.EvalSymlinks("/bin/busybox"); err == nil {
		return p
	}
	return "/bin/busybox"
}

// File is one entry of a layer built by FilesLayer: a host file copied in
// (HostPath), a text (Data), a symlink (Symlink) or a directory (Dir).
type File struct {
	Name     string // path in the image, without leading slash
	Mode     int64  // permission bits, incl. setuid
	UID, GID int
	HostPath string
	Data     string
	Symlink  string
	Dir      bool
}

// FilesLayer builds a layer of files, for images that other suites
// (test/cluster/conformance) build on BaseLayerOf.
func FilesLayer(files []File) (v1.Layer, error) {
	l := layerFiles{}
	for _, f := range files {
		e := file{name: f.Name, mode: f.Mode, uid: f.UID, gid: f.GID, data: []byte(f.Data)}
		switch {
		case f.Dir:
			e.typ = tar.TypeDir
		case f.Symlink != "":
			e.typ, e.link = tar.TypeSymlink, f.Symlink
		case f.HostPath != "":
			data, err := os.ReadFile(f.HostPath)
			if err != nil {
				return nil, fmt.Errorf("layer file %s: %w", f.Name, err)
			}
			e.data = data
		}
		l.add(e)
	}
	return layerOf(l)
}

// BaseLayerOf builds the base layer from the given busybox binary (static
// or dynamic; a dynamic one brings its shared libraries).
func BaseLayerOf(busybox string) (v1.Layer, error) {
	files, err := baseLayer(busybox)
	if err != nil {
		return nil, err
	}
	return layerOf(files)
}

// HostBinaryFiles is a dynamically linked host binary at path in the image
// plus every shared library ldd names, at the host's paths.
func HostBinaryFiles(hostPath, path string) ([]File, error) {
	files := []File{{Name: path, Mode: 0o755, HostPath: hostPath}}
	libs, err := sharedLibraries(hostPath)
	if err != nil {
		return nil, err
	}
	for _, lib := range libs {
		files = append(files, File{Name: lib, Mode: 0o755, HostPath: lib})
	}
	return files, nil
}
