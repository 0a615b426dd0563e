package oci

import (
	"fmt"
	"strings"

	"github.com/berth-dev/berth/internal/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// podSysctls validates the pod's sysctls: each must belong to a namespace
// the container does not share with the host (net.* needs the pod network,
// the System V IPC and mqueue keys need the pod IPC namespace); anything
// else is not namespaced and refused.
func podSysctls(sandbox *runtimeapi.PodSandboxConfig, opts *runtimeapi.NamespaceOption) (map[string]string, error) {
	requested := sandbox.GetLinux().GetSysctls()
	if len(requested) == 0 {
		return nil, nil
	}
	sysctls := make(map[string]string, len(requested))
	for name, value := range requested {
		var mode runtimeapi.NamespaceMode
		var kind string
		switch {
		case strings.HasPrefix(name, "net."):
			mode, kind = opts.GetNetwork(), "network"
		case isIPCSysctl(name):
			mode, kind = opts.GetIpc(), "ipc"
		case name == "kernel.hostname" || name == "kernel.domainname":
			mode, kind = opts.GetNetwork(), "uts"
		default:
			return nil, fmt.Errorf("sandbox config: sysctl %q: not namespaced: %w", name, errdefs.ErrInvalidArgument)
		}
		if mode == runtimeapi.NamespaceMode_NODE {
			return nil, fmt.Errorf("sandbox config: sysctl %q: pod uses the host %s namespace: %w",
				name, kind, errdefs.ErrInvalidArgument)
		}
		sysctls[name] = value
	}
	return sysctls, nil
}

func isIPCSysctl(name string) bool {
	switch name {
	case "kernel.msgmax", "kernel.msgmnb", "kernel.msgmni", "kernel.sem",
		"kernel.shmall", "kernel.shmmax", "kernel.shmmni", "kernel.shm_rmid_forced":
		return true
	}
	return strings.HasPrefix(name, "fs.mqueue.")
}
