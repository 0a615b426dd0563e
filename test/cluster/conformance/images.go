package conformance

import (
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/berth-dev/berth/test/critest"
	"github.com/berth-dev/berth/test/testpki"
)

// Where the specs of Kubernetes 1.37 pull from (k8s.io/kubernetes/test/utils/image).
const (
	e2eRepo   = "registry.k8s.io/e2e-test-images/"
	PauseName = "registry.k8s.io/pause:3.10.2"
)

// Programs are the host files the images are made of: Go programs built
// for them and Debian binaries the specs call.
type Programs struct {
	Busybox    string // Debian's dynamic busybox (make's critest-deps); "" takes critest's choice
	Agnhost    string // k8s.io/kubernetes/test/images/agnhost, CGO_ENABLED=0 (make e2e-bin)
	Pause      string // cmd/berth-pause: exits 0 on SIGTERM and SIGINT, like /pause
	NoNewPrivs string // test/critest/cmd/nonewprivs: prints its effective uid, like nnp
	Curl       string // the host's curl (dynamic; its libraries are copied along)
	Netcat     string // netcat-openbsd's nc (make's conformance-deps): nc -u, which busybox's nc lacks
	Bash       string // the host's bash, /bin/bash and /bin/sh of every image (shellFiles)
}

// Image is one image the specs pull: its names, config, the files on top
// of the busybox base, and how it differs from the upstream image.
type Image struct {
	Names   []string
	Config  v1.Config
	Files   func(p Programs, pause v1.Image) ([]critest.File, error)
	StandIn string // "" when the image does what upstream's does for the specs
}

var defaultEnv = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}

// Images is every image the specs berth runs pull. The pause image comes
// first: agnhost's fake registry serves a copy of it.
func Images() []Image {
	sh := v1.Config{Cmd: []string{"sh"}, Env: defaultEnv}
	nonRoot := sh
	nonRoot.User = "1234"
	return []Image{
		{Names: []string{PauseName}, Files: pauseFiles,
			Config:  v1.Config{Entrypoint: []string{"/pause"}, User: "65535:65535", Env: defaultEnv},
			StandIn: "/pause is berth-pause (reaps, exits 0 on SIGTERM/SIGINT) on the busybox base; upstream's is a lone static binary"},
		{Names: []string{e2eRepo + "agnhost:2.66.1"}, Files: agnhostFiles,
			Config: v1.Config{Entrypoint: []string{"/agnhost"}, Cmd: []string{"pause"}, Env: defaultEnv,
				ExposedPorts: map[string]struct{}{"80/tcp": {}, "8080/tcp": {}, "8081/tcp": {}, "9376/tcp": {}, "5000/tcp": {}}},
			StandIn: "agnhost built from its 1.37.2 source on the busybox base with bash, curl and netcat-openbsd; its /localhost.crt is a fresh self-signed one; upstream's alpine base also has dig, iperf, socat, ss and coredns"},
		{Names: []string{e2eRepo + "busybox:1.37.0-2"}, Config: sh,
			StandIn: "Debian's busybox 1.35 instead of busybox 1.37, /bin/sh is bash (shellFiles)"},
		{Names: []string{e2eRepo + "nonewprivs:1.4"}, Files: nonewprivsFiles,
			Config: v1.Config{Cmd: []string{"nnp"}, Env: defaultEnv}},
		{Names: []string{e2eRepo + "nonroot:1.5"}, Config: nonRoot,
			StandIn: "busybox base with USER 1234; upstream's is debian-base with USER 1234"},
		{Names: []string{e2eRepo + "glibc-dns-testing:2.1.1"}, Config: sh,
			StandIn: "the busybox base: Debian's dynamic busybox resolves `hostname -f` through glibc as upstream's glibc image does"},
	}
}

func pauseFiles(p Programs, _ v1.Image) ([]critest.File, error) {
	return []critest.File{{Name: "pause", Mode: 0o755, HostPath: p.Pause}}, nil
}

func nonewprivsFiles(p Programs, _ v1.Image) ([]critest.File, error) {
	return []critest.File{{Name: "usr/local/bin/nnp", Mode: 0o4755, HostPath: p.NoNewPrivs}}, nil
}

// agnhostFiles is upstream's agnhost image content the specs use: the
// binary and its agnhost-2 link, /uploads (netexec), the user and group
// defined in the image, curl and nc, porter's /localhost.crt and .key, and
// the fake registry's content.
func agnhostFiles(p Programs, pause v1.Image) ([]critest.File, error) {
	files := []critest.File{
		{Name: "agnhost", Mode: 0o755, HostPath: p.Agnhost},
		{Name: "agnhost-2", Symlink: "agnhost"},
		{Name: "uploads", Mode: 0o755, Dir: true},
		{Name: "etc/passwd", Mode: 0o644, Data: agnhostPasswd},
		{Name: "etc/group", Mode: 0o644, Data: agnhostGroup},
		{Name: "home/user-defined-in-image", Mode: 0o755, UID: 1000, GID: 1000, Dir: true},
	}
	for _, bin := range []struct{ host, path string }{{p.Curl, "usr/bin/curl"}, {p.Netcat, "usr/bin/nc"}} {
		if bin.host == "" {
			return nil, fmt.Errorf("agnhost image: no host binary for /%s", bin.path)
		}
		extra, err := critest.HostBinaryFiles(bin.host, bin.path)
		if err != nil {
			return nil, fmt.Errorf("agnhost image: %w", err)
		}
		files = append(files, extra...)
	}
	// upstream's agnhost carries /localhost.crt and .key (porter's: the
	// https lifecycle hook specs serve TLS with them); kubelet does not
	// verify an https hook's certificate, so a fresh one does.
	crt, key, err := testpki.SelfSigned("127.0.0.1", "::1", "localhost")
	if err != nil {
		return nil, fmt.Errorf("agnhost image: %w", err)
	}
	files = append(files, critest.File{Name: "localhost.crt", Mode: 0o644, Data: string(crt)},
		critest.File{Name: "localhost.key", Mode: 0o644, Data: string(key)})
	reg, err := fakeRegistryFiles(pause, "pause", "testing")
	if err != nil {
		return nil, fmt.Errorf("agnhost image: %w", err)
	}
	return append(files, reg...), nil
}

// passwd and group of the agnhost image: the base's plus the user and group
// upstream's Dockerfile adds (uid 1000 in group 50000).
const (
	agnhostPasswd = `root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/usr/sbin:/bin/false
www-data:x:33:33:www-data:/var/www:/bin/false
user-defined-in-image:x:1000:1000:Linux User,,,:/home/user-defined-in-image:/bin/sh
nobody:x:65534:65534:nobody:/home:/bin/false
`
	agnhostGroup = `root:x:0:
daemon:x:1:
www-data:x:33:
user-defined-in-image:x:1000:
group-defined-in-image:x:50000:user-defined-in-image
nogroup:x:65534:
`
)

// shellFiles make the host's bash /bin/bash and /bin/sh of every image.
// Debian's busybox 1.35 ash drops environment variables whose names are
// not shell identifiers (envFrom's "data-1"), which the specs' `sh -c env`
// must print, as upstream's busybox 1.37 ash does; and specs run agnhost's
// /bin/bash (upstream's alpine base has bash).
func shellFiles(p Programs) ([]critest.File, error) {
	if p.Bash == "" {
		return nil, fmt.Errorf("no host bash for /bin/bash")
	}
	files, err := critest.HostBinaryFiles(p.Bash, "bin/bash")
	if err != nil {
		return nil, err
	}
	return append(files, critest.File{Name: "bin/sh", Symlink: "bash"}), nil
}

// Build makes the image on the shared base layer; pause is the built pause
// image (nil while building it).
func (im Image) Build(base v1.Layer, p Programs, pause v1.Image) (v1.Image, error) {
	files, err := shellFiles(p)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", im.Names[0], err)
	}
	if im.Files != nil {
		own, err := im.Files(p, pause)
		if err != nil {
			return nil, err
		}
		files = append(files, own...)
	}
	top, err := critest.FilesLayer(files)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", im.Names[0], err)
	}
	return critest.Assemble([]v1.Layer{base, top}, im.Config)
}

// BuildAll builds every image, by name.
func BuildAll(p Programs) (map[string]v1.Image, error) {
	var base v1.Layer
	var err error
	if p.Busybox != "" {
		base, err = critest.BaseLayerOf(p.Busybox)
	} else {
		base, err = critest.BaseLayer()
	}
	if err != nil {
		return nil, fmt.Errorf("base layer: %w", err)
	}
	out := map[string]v1.Image{}
	var pause v1.Image
	for _, im := range Images() {
		img, err := im.Build(base, p, pause)
		if err != nil {
			return nil, err
		}
		if im.Names[0] == PauseName {
			pause = img
		}
		for _, name := range im.Names {
			out[name] = img
		}
	}
	return out, nil
}
