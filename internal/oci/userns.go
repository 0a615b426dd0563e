package oci

import (
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/userns"
)

// podUserNamespace is the pod's user namespace mode: POD (with the
// sandbox's mapping) or NODE (none, the host's).
func podUserNamespace(sb Sandbox) (*runtimeapi.UserNamespace, bool) {
	u := sb.Config.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions()
	return u, u != nil && u.GetMode() == runtimeapi.NamespaceMode_POD
}

// userNamespace is the user namespace a container joins: the pod's pinned
// one when the pod has one, else none. A container follows its pod: it may
// restate the pod's mode and mapping (kubelet does), not differ from them.
func userNamespace(sb Sandbox, opts *runtimeapi.NamespaceOption) ([]specs.LinuxNamespace, error) {
	podNS, inPod := podUserNamespace(sb)
	asked := opts.GetUsernsOptions() // nil: unset, the host's unless the pod has one
	const field = "namespace_options.userns_options"
	switch {
	case asked != nil && (asked.GetMode() == runtimeapi.NamespaceMode_CONTAINER || asked.GetMode() == runtimeapi.NamespaceMode_TARGET):
		return nil, fmt.Errorf("%s: mode %s: only POD and NODE are supported: %w", field, asked.GetMode(), errdefs.ErrInvalidArgument)
	case !inPod && asked != nil && asked.GetMode() == runtimeapi.NamespaceMode_POD:
		return nil, fmt.Errorf("%s: mode POD: the pod sandbox %q has no user namespace (its mode is NODE): %w", field, sb.ID, errdefs.ErrInvalidArgument)
	case !inPod:
		return nil, nil
	case asked != nil && asked.GetMode() == runtimeapi.NamespaceMode_NODE:
		return nil, fmt.Errorf("%s: mode NODE: the pod sandbox %q runs in a user namespace: its containers run in it: %w", field, sb.ID, errdefs.ErrInvalidArgument)
	case asked != nil && !userns.FromCRI(asked).Equal(userns.FromCRI(podNS)):
		return nil, fmt.Errorf("%s: mapping differs from the pod sandbox %q's: %w", field, sb.ID, errdefs.ErrInvalidArgument)
	case sb.UserNS == "":
		return nil, fmt.Errorf("%s: pod sandbox %q has no pinned user namespace: %w", field, sb.ID, errdefs.ErrFailedPrecondition)
	}
	return []specs.LinuxNamespace{{Type: specs.UserNamespace, Path: sb.UserNS}}, nil
}

// mountIDMap is the idmap option of a requested mount that carries uid
// and gid mappings: they must be the pod's own (kubelet gives every mount
// of a pod in a user namespace its mapping), and runc then idmaps the
// mount into the user namespace the container joins. No mappings: none.
func mountIDMap(sb Sandbox, m *runtimeapi.Mount) ([]string, error) {
	if len(m.GetUidMappings()) == 0 && len(m.GetGidMappings()) == 0 {
		return nil, nil
	}
	podNS, inPod := podUserNamespace(sb)
	if !inPod {
		return nil, fmt.Errorf("uid_mappings/gid_mappings: an idmapped mount needs a pod in a user namespace (mode POD): %w", errdefs.ErrInvalidArgument)
	}
	if !userns.FromCRIMaps(m.GetUidMappings(), m.GetGidMappings()).Equal(userns.FromCRI(podNS)) {
		return nil, fmt.Errorf("uid_mappings/gid_mappings: differ from the pod's user namespace mapping: %w", errdefs.ErrInvalidArgument)
	}
	return []string{"idmap"}, nil
}
