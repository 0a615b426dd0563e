package harness

import (
	"fmt"
	"os"
	"path/filepath"
)

// ContainerdFlavour is which containerd a private Containerd runs: its
// binaries and the version of its config file. One Containerd type runs
// each flavour; only these fields differ.
type ContainerdFlavour struct {
	Name string // in reports and errors: "containerd 1.6"
	Bin  string // the daemon
	Ctr  string // ctr, for image imports
	Shim string // containerd-shim-runc-v2
	// ShimDir, when not "", goes first in the daemon's PATH: containerd
	// looks its shim up there by name.
	ShimDir string
	// ConfigVersion is 2 (containerd 1.6's plugin ids) or 3 (containerd
	// 2.x's: the CRI plugin split into io.containerd.cri.v1.runtime,
	// io.containerd.cri.v1.images and io.containerd.grpc.v1.cri).
	ConfigVersion int
}

// Containerd16 is Debian's containerd package: the e2e suite's containerd
// and the bench's containerd 1.6.
var Containerd16 = ContainerdFlavour{
	Name: "containerd 1.6", Bin: ContainerdBin, Ctr: CtrBin, Shim: ContainerdShimBin, ConfigVersion: 2,
}

// Containerd2 is a containerd 2.x built from its Go module into binDir
// (make containerd2-bin: containerd, containerd-shim-runc-v2 and ctr),
// with config version 3 and binDir first in its PATH.
func Containerd2(name, binDir string) ContainerdFlavour {
	return ContainerdFlavour{
		Name: name, Bin: filepath.Join(binDir, "containerd"), Ctr: filepath.Join(binDir, "ctr"),
		Shim: filepath.Join(binDir, "containerd-shim-runc-v2"), ShimDir: binDir, ConfigVersion: 3,
	}
}

// Missing names the first binary the flavour needs that this machine
// lacks (its own three and SystemRunc), with the error, or returns "".
func (f ContainerdFlavour) Missing() string {
	for _, bin := range []string{f.Bin, f.Ctr, f.Shim, SystemRunc} {
		if _, err := os.Stat(bin); err != nil {
			return fmt.Sprintf("%s missing: %v", bin, err)
		}
	}
	return ""
}

// env is what the daemon's process gets on top of the caller's
// environment: PATH with ShimDir first, when the flavour has one.
func (f ContainerdFlavour) env() []string {
	if f.ShimDir == "" {
		return nil
	}
	return []string{"PATH=" + f.ShimDir + ":" + os.Getenv("PATH")}
}
