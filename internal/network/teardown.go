package network

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/containernetworking/cni/libcni"
	types100 "github.com/containernetworking/cni/pkg/types/100"
)

// Teardown deletes the pod from every network it was added to. It works
// from libcni's cache, so it tears down with the config used at Setup even
// if ConfDir changed since. When a.NetnsPath is empty or no longer a live
// namespace it passes an empty netns to the plugins (as the CNI spec
// allows), lending pod networks a stand-in namespace that carries the
// cached addresses so that their host-side rules are found and removed.
// Teardown is idempotent; with nothing cached it runs DEL with the current
// config, which plugins treat as a no-op when nothing is left.
func (c *CNI) Teardown(ctx context.Context, a Attachment) error {
	if err := validatePodID(a.PodID); err != nil {
		return err
	}
	netns := a.NetnsPath
	if netns != "" && !IsPinned(netns) {
		netns = ""
	}
	cached, err := c.lib.GetCachedAttachments(a.PodID)
	if err != nil {
		return fmt.Errorf("pod %s: network cache: %w", a.PodID, err)
	}
	// Pod networks first, loopback (cached by an older berth) last: the
	// reverse of Setup. A pod network missing from the cache (its ADD
	// never returned: the daemon was killed mid-Setup) is deleted with the
	// current config.
	var errs []error
	podFound := false
	for _, loopbackPass := range []bool{false, true} {
		for _, att := range cached {
			if (att.Network == loopbackNetworkName) != loopbackPass {
				continue
			}
			podFound = podFound || !loopbackPass
			if err := c.teardownCached(ctx, att, netns); err != nil {
				errs = append(errs, fmt.Errorf("pod %s: network %q: delete: %w", a.PodID, att.Network, err))
			}
		}
		if !loopbackPass && !podFound {
			errs = append(errs, c.teardownUncached(ctx, a, netns))
		}
	}
	err = errors.Join(errs...)
	if err != nil && setUpBeforeBoot(a.SetUpAt) {
		if ferr := c.forgetCached(a.PodID); ferr != nil {
			return errors.Join(err, ferr)
		}
		return fmt.Errorf("%w: %w", ErrBeforeBoot, err)
	}
	return err
}

// teardownCached deletes one cached attachment with its cached config and
// arguments.
func (c *CNI) teardownCached(ctx context.Context, att *libcni.NetworkAttachment, netns string) error {
	list, err := libcni.NetworkConfFromBytes(att.Config)
	if err != nil {
		return fmt.Errorf("cached config: %w", err)
	}
	rt := &libcni.RuntimeConf{
		ContainerID:    att.ContainerID,
		NetNS:          netns,
		IfName:         att.IfName,
		Args:           att.CniArgs,
		CapabilityArgs: att.CapabilityArgs,
	}
	switch {
	case att.IfName == loopbackIfName:
	case quickDel(list):
		// The pod's interface goes down at once and the plugins run
		// without the namespace: the kernel deletes the veth pair with
		// the namespace (the pod's stop unpins it) instead of the bridge
		// plugin waiting for that now, most of a DEL's time. Down, it
		// answers for nothing, so its address can be handed out again.
		if netns != "" && setLinkDown(netns, att.IfName) == nil {
			rt.NetNS = ""
		}
	case netns == "":
		if ips := c.cachedSandboxIPs(list, rt); len(ips) > 0 {
			stand, err := newStandIn(att.IfName, ips)
			if err == nil {
				defer stand.close()
				rt.NetNS = stand.path
			}
		}
	}
	return c.lib.DelNetworkList(ctx, list, rt)
}

// quickDel reports whether a pod on list may be deleted without its
// namespace: berth's own default network with the node-wide masquerade,
// whose plugins (bridge without ipMasq, host-local, portmap) need nothing
// of the namespace at DEL. The bridge plugin's per-pod ipMasq would: it
// finds its rules through the interface's addresses.
func quickDel(list *libcni.NetworkConfigList) bool {
	d, own, _ := parseDefault(list.Bytes)
	return own && d.Masquerade == MasqueradeNftables
}

// teardownUncached runs DEL with the current config of the pod network
// when the cache holds nothing for it (never set up, already torn down,
// ADD cut short, or cache lost).
func (c *CNI) teardownUncached(ctx context.Context, a Attachment, netns string) error {
	pod, _, err := c.podNetwork()
	if err != nil {
		return nil // no usable config: nothing berth could have added with it
	}
	if err := c.delUncached(ctx, pod, runtimeConf(a, netns, podIfName, nil)); err != nil {
		return fmt.Errorf("pod %s: network %q: delete: %w", a.PodID, pod.Name, err)
	}
	return nil
}

// cachedSandboxIPs returns the addresses the cached result put on the pod's
// interface; nil when unknown.
func (c *CNI) cachedSandboxIPs(list *libcni.NetworkConfigList, rt *libcni.RuntimeConf) []*net.IPNet {
	raw, err := c.lib.GetNetworkListCachedResult(list, rt)
	if err != nil || raw == nil {
		return nil
	}
	r, err := types100.NewResultFromResult(raw)
	if err != nil {
		return nil
	}
	var out []*net.IPNet
	for _, ipc := range r.IPs {
		if ipc.Interface != nil && *ipc.Interface >= 0 && *ipc.Interface < len(r.Interfaces) &&
			r.Interfaces[*ipc.Interface].Sandbox == "" {
			continue
		}
		addr := ipc.Address
		out = append(out, &addr)
	}
	return out
}
