package network

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"

	"github.com/berth-dev/berth/internal/errdefs"
)

// PortMapping is one host port forwarded to the pod.
type PortMapping struct {
	HostPort      int32
	ContainerPort int32
	Protocol      string // "tcp", "udp" or "sctp"; "" means tcp
	HostIP        string // "" means every host address
}

// Attachment names a pod and its network namespace for CNI.
type Attachment struct {
	PodID, PodName, PodNamespace, PodUID string
	NetnsPath                            string
	PortMappings                         []PortMapping
	// SetUpAt is when the pod's network was set up (its sandbox's
	// creation), for Teardown after a reboot (ErrBeforeBoot); zero when
	// unknown.
	SetUpAt time.Time
}

// Result is what the pod network gave the pod.
type Result struct {
	Interface string   // the pod's interface, eth0
	IPs       []net.IP // primary first (IPv4 before IPv6)
}

const (
	podIfName      = "eth0"
	loopbackIfName = "lo"
	// rollbackTimeout bounds the DELs that undo a failed Setup.
	rollbackTimeout = 30 * time.Second
)

// validContainerID is what libcni accepts as a container id.
var validContainerID = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$`)

// Setup brings up the pod's lo, then attaches the pod to the pod network.
// On failure it deletes what it added.
func (c *CNI) Setup(ctx context.Context, a Attachment) (res *Result, err error) {
	mappings, err := validateSetup(a)
	if err != nil {
		return nil, err
	}
	pod, _, err := c.podNetwork()
	if err != nil {
		return nil, fmt.Errorf("pod %s: network: %w: %w", a.PodID, err, errdefs.ErrFailedPrecondition)
	}
	if err := bringUpLoopback(a.NetnsPath); err != nil {
		return nil, fmt.Errorf("pod %s: %w", a.PodID, err)
	}
	pod = forPod(pod, mappings)
	podRT := runtimeConf(a, a.NetnsPath, podIfName, mappings)
	raw, err := c.lib.AddNetworkList(ctx, pod, podRT)
	if err != nil {
		c.undoAdd(ctx, pod, podRT)
		return nil, fmt.Errorf("pod %s: network %q: add: %w", a.PodID, pod.Name, err)
	}
	res, err = podResult(raw)
	if err != nil {
		c.undoAdd(ctx, pod, podRT)
		return nil, fmt.Errorf("pod %s: network %q: result: %w", a.PodID, pod.Name, err)
	}
	return res, nil
}

// undoAdd deletes a network a failed Setup may have partly added, under a
// fresh bounded context so that a cancelled request still cleans up.
func (c *CNI) undoAdd(ctx context.Context, list *libcni.NetworkConfigList, rt *libcni.RuntimeConf) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	_ = c.delUncached(ctx, list, rt)
}

// delUncached deletes a network for which libcni holds no cached result.
// libcni stops a list DEL at the first failing plugin; when that happens
// each plugin still gets its own DEL, last to first, so that one broken or
// missing plugin does not leave the others' addresses, links and rules
// behind. The first error is returned.
func (c *CNI) delUncached(ctx context.Context, list *libcni.NetworkConfigList, rt *libcni.RuntimeConf) error {
	err := c.lib.DelNetworkList(ctx, list, rt)
	if err == nil || len(list.Plugins) < 2 {
		return err
	}
	for i := len(list.Plugins) - 1; i >= 0; i-- {
		one := *list
		one.Plugins = list.Plugins[i : i+1]
		_ = c.lib.DelNetworkList(ctx, &one, rt)
	}
	return err
}

func validateSetup(a Attachment) ([]map[string]any, error) {
	if err := validatePodID(a.PodID); err != nil {
		return nil, err
	}
	for _, f := range []struct{ name, value string }{
		{"pod name", a.PodName}, {"pod namespace", a.PodNamespace}, {"pod uid", a.PodUID},
	} {
		if f.value == "" {
			return nil, fmt.Errorf("pod %s: %s: empty: %w", a.PodID, f.name, errdefs.ErrInvalidArgument)
		}
	}
	if a.NetnsPath == "" || !filepath.IsAbs(a.NetnsPath) {
		return nil, fmt.Errorf("pod %s: netns path %q: not an absolute path: %w", a.PodID, a.NetnsPath, errdefs.ErrInvalidArgument)
	}
	return portMappingArgs(a.PodID, a.PortMappings)
}

func validatePodID(id string) error {
	if id == "" {
		return fmt.Errorf("pod id: empty: %w", errdefs.ErrInvalidArgument)
	}
	if !validContainerID.MatchString(id) {
		return fmt.Errorf("pod id %q: characters other than letters, digits, '_', '.', '-': %w", id, errdefs.ErrInvalidArgument)
	}
	return nil
}

// portMappingArgs validates the mappings and turns them into the
// portMappings capability argument. Mappings without a host port are only
// informational and are left out, as kubelet does.
func portMappingArgs(podID string, pms []PortMapping) ([]map[string]any, error) {
	var out []map[string]any
	for i, pm := range pms {
		field := fmt.Sprintf("pod %s: port mapping %d", podID, i)
		proto := strings.ToLower(pm.Protocol)
		switch proto {
		case "":
			proto = "tcp"
		case "tcp", "udp", "sctp":
		default:
			return nil, fmt.Errorf("%s: protocol %q: not tcp, udp or sctp: %w", field, pm.Protocol, errdefs.ErrInvalidArgument)
		}
		if pm.HostPort < 0 || pm.HostPort > 65535 {
			return nil, fmt.Errorf("%s: host port %d: out of range: %w", field, pm.HostPort, errdefs.ErrInvalidArgument)
		}
		if pm.ContainerPort <= 0 || pm.ContainerPort > 65535 {
			return nil, fmt.Errorf("%s: container port %d: out of range: %w", field, pm.ContainerPort, errdefs.ErrInvalidArgument)
		}
		if pm.HostIP != "" && net.ParseIP(pm.HostIP) == nil {
			return nil, fmt.Errorf("%s: host ip %q: not an IP address: %w", field, pm.HostIP, errdefs.ErrInvalidArgument)
		}
		if pm.HostPort == 0 {
			continue
		}
		m := map[string]any{"hostPort": pm.HostPort, "containerPort": pm.ContainerPort, "protocol": proto}
		if pm.HostIP != "" {
			m["hostIP"] = pm.HostIP
		}
		out = append(out, m)
	}
	return out, nil
}

// runtimeConf builds the per-call CNI arguments for the pod.
func runtimeConf(a Attachment, netns, ifName string, mappings []map[string]any) *libcni.RuntimeConf {
	rt := &libcni.RuntimeConf{
		ContainerID: a.PodID,
		NetNS:       netns,
		IfName:      ifName,
		Args: [][2]string{
			{"IgnoreUnknown", "1"},
			{"K8S_POD_NAMESPACE", a.PodNamespace},
			{"K8S_POD_NAME", a.PodName},
			{"K8S_POD_INFRA_CONTAINER_ID", a.PodID},
			{"K8S_POD_UID", a.PodUID},
		},
	}
	if len(mappings) > 0 {
		rt.CapabilityArgs = map[string]any{"portMappings": mappings}
	}
	return rt
}

// podResult finds the pod's interface and addresses in a plugin result.
func podResult(raw types.Result) (*Result, error) {
	if raw == nil {
		return nil, errors.New("no result")
	}
	r, err := types100.NewResultFromResult(raw)
	if err != nil {
		return nil, err
	}
	res := &Result{Interface: podIfName}
	for _, ipc := range r.IPs {
		if ipc.Interface != nil && *ipc.Interface >= 0 && *ipc.Interface < len(r.Interfaces) {
			iface := r.Interfaces[*ipc.Interface]
			if iface.Sandbox == "" {
				continue // an address on a host-side interface
			}
			res.Interface = iface.Name
		}
		res.IPs = append(res.IPs, ipc.Address.IP)
	}
	if len(res.IPs) == 0 {
		return nil, errors.New("no IP address for the pod")
	}
	sort.SliceStable(res.IPs, func(i, j int) bool {
		return res.IPs[i].To4() != nil && res.IPs[j].To4() == nil
	})
	return res, nil
}
