package oci

import (
	"fmt"

	"github.com/berth-dev/berth/internal/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// defaultNamespaceOptions applies when neither the container nor the pod
// sends any: CRI's zero values, all POD — the pod's network, IPC and PID
// namespaces (the sandbox starts berth-pause for the shared PID namespace
// then). kubelet always sends options: PID CONTAINER unless the pod sets
// shareProcessNamespace.
var defaultNamespaceOptions = &runtimeapi.NamespaceOption{
	Network: runtimeapi.NamespaceMode_POD,
	Ipc:     runtimeapi.NamespaceMode_POD,
	Pid:     runtimeapi.NamespaceMode_POD,
}

// containerNamespaceOptions is the container's namespace options, falling
// back to the pod's.
func containerNamespaceOptions(in Input) *runtimeapi.NamespaceOption {
	if opts := in.Config.GetLinux().GetSecurityContext().GetNamespaceOptions(); opts != nil {
		return opts
	}
	if opts := in.Sandbox.Config.GetLinux().GetSecurityContext().GetNamespaceOptions(); opts != nil {
		return opts
	}
	return defaultNamespaceOptions
}

// containerNamespaces lists the namespaces of an application container:
// network, IPC and UTS joined from the pod's pins (or the host's for NODE;
// UTS follows the network), PID per its mode, always a new mount namespace.
func containerNamespaces(sb Sandbox, opts *runtimeapi.NamespaceOption, targetPID int) ([]specs.LinuxNamespace, error) {
	user, err := userNamespace(sb, opts)
	if err != nil {
		return nil, err
	}
	shared, err := podNamespaces(sb, opts)
	if err != nil {
		return nil, err
	}
	namespaces := append(append(user, specs.LinuxNamespace{Type: specs.MountNamespace}), shared...)
	pid, host, err := pidNamespace(sb, opts, targetPID)
	if err != nil {
		return nil, err
	}
	if !host {
		namespaces = append(namespaces, pid)
	}
	return namespaces, nil
}

// podNamespaces lists the network, IPC and UTS namespaces to join: the
// pod's pins, none (the host's) for NODE. UTS follows the network mode.
func podNamespaces(sb Sandbox, opts *runtimeapi.NamespaceOption) ([]specs.LinuxNamespace, error) {
	var namespaces []specs.LinuxNamespace
	for _, join := range []struct {
		kind  specs.LinuxNamespaceType
		field string
		mode  runtimeapi.NamespaceMode
		path  string
	}{
		{specs.NetworkNamespace, "network", opts.GetNetwork(), sb.NetNS},
		{specs.IPCNamespace, "ipc", opts.GetIpc(), sb.IPCNS},
		{specs.UTSNamespace, "network (uts follows it)", opts.GetNetwork(), sb.UTSNS},
	} {
		ns, host, err := podNamespace(join.kind, join.field, join.mode, join.path)
		if err != nil {
			return nil, err
		}
		if !host {
			namespaces = append(namespaces, ns)
		}
	}
	return namespaces, nil
}

// podNamespace joins the pod's pinned namespace (POD) or the host's (NODE).
func podNamespace(kind specs.LinuxNamespaceType, field string, mode runtimeapi.NamespaceMode, pinned string) (ns specs.LinuxNamespace, host bool, err error) {
	switch mode {
	case runtimeapi.NamespaceMode_NODE:
		return ns, true, nil
	case runtimeapi.NamespaceMode_POD:
		if pinned == "" {
			return ns, false, fmt.Errorf("namespace options: %s mode POD: sandbox has no pinned %s namespace: %w",
				field, kind, errdefs.ErrFailedPrecondition)
		}
		return specs.LinuxNamespace{Type: kind, Path: pinned}, false, nil
	default:
		return ns, false, fmt.Errorf("namespace options: %s mode %s: only POD and NODE are supported: %w",
			field, mode, errdefs.ErrInvalidArgument)
	}
}

func pidNamespace(sb Sandbox, opts *runtimeapi.NamespaceOption, targetPID int) (ns specs.LinuxNamespace, host bool, err error) {
	switch opts.GetPid() {
	case runtimeapi.NamespaceMode_NODE:
		return ns, true, nil
	case runtimeapi.NamespaceMode_CONTAINER:
		return specs.LinuxNamespace{Type: specs.PIDNamespace}, false, nil
	case runtimeapi.NamespaceMode_POD:
		if sb.PIDNS == "" {
			return ns, false, fmt.Errorf("namespace options: pid mode POD: sandbox %q holds no shared pid namespace: %w",
				sb.ID, errdefs.ErrFailedPrecondition)
		}
		return specs.LinuxNamespace{Type: specs.PIDNamespace, Path: sb.PIDNS}, false, nil
	case runtimeapi.NamespaceMode_TARGET:
		if opts.GetTargetId() == "" {
			return ns, false, fmt.Errorf("namespace options: pid mode TARGET: target_id empty: %w", errdefs.ErrInvalidArgument)
		}
		if targetPID <= 0 {
			return ns, false, fmt.Errorf("namespace options: pid mode TARGET: target container %q: no pid given: %w",
				opts.GetTargetId(), errdefs.ErrFailedPrecondition)
		}
		return specs.LinuxNamespace{Type: specs.PIDNamespace, Path: fmt.Sprintf("/proc/%d/ns/pid", targetPID)}, false, nil
	default:
		return ns, false, fmt.Errorf("namespace options: pid mode %d: unknown: %w", opts.GetPid(), errdefs.ErrInvalidArgument)
	}
}

// podHostname is the hostname runc sets: the pod's, unless the container
// shares the host's UTS namespace (host network), where none may be set.
func podHostname(sb Sandbox, opts *runtimeapi.NamespaceOption) string {
	if opts.GetNetwork() == runtimeapi.NamespaceMode_NODE {
		return ""
	}
	return sb.Config.GetHostname()
}
