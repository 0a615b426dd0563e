package svcnet

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Sync makes the dummy interface name exist, up, holding exactly addrs
// (each as a /32 or /128).
func Sync(name string, addrs []netip.Addr) error {
	link, err := ensureLink(name)
	if err != nil {
		return err
	}
	have, err := netlink.AddrList(link, netlink.FAMILY_ALL)
	if err != nil {
		return fmt.Errorf("service interface %s: listing addresses: %w", name, err)
	}
	want := map[netip.Addr]bool{}
	for _, a := range addrs {
		want[a.Unmap()] = true
	}
	var errs []error
	for _, h := range have {
		a, ok := netip.AddrFromSlice(h.IP)
		if ok && want[a.Unmap()] {
			delete(want, a.Unmap())
			continue
		}
		if err := netlink.AddrDel(link, &h); err != nil {
			errs = append(errs, fmt.Errorf("service interface %s: removing %s: %w", name, h.IPNet, err))
		}
	}
	for a := range want {
		bits := a.BitLen()
		n := &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(bits, bits)}
		if err := netlink.AddrAdd(link, &netlink.Addr{IPNet: n}); err != nil {
			errs = append(errs, fmt.Errorf("service interface %s: adding %s: %w", name, n, err))
		}
	}
	return errors.Join(errs...)
}

// Alias marks the agent's interface: a link of the name without it is
// another program's.
const Alias = "berth service addresses"

// ensureLink finds or makes the agent's link and sets it up: a dummy, or
// where the kernel has no dummy driver a bridge without ports (addresses
// on either are the host's own, reached through the pods' route to it).
func ensureLink(name string) (netlink.Link, error) {
	link, err := netlink.LinkByName(name)
	var notFound netlink.LinkNotFoundError
	switch {
	case errors.As(err, &notFound):
		if link, err = createLink(name); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("service interface %s: %w", name, err)
	case link.Attrs().Alias != Alias:
		return nil, fmt.Errorf("service interface %s: a %s link of another program's has that name; not touched", name, link.Type())
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return nil, fmt.Errorf("service interface %s: setting up: %w", name, err)
	}
	return link, nil
}

func createLink(name string) (netlink.Link, error) {
	attrs := netlink.LinkAttrs{Name: name}
	err := netlink.LinkAdd(&netlink.Dummy{LinkAttrs: attrs})
	if errors.Is(err, unix.EOPNOTSUPP) {
		err = netlink.LinkAdd(&netlink.Bridge{LinkAttrs: attrs})
	}
	if err != nil {
		return nil, fmt.Errorf("service interface %s: creating: %w", name, err)
	}
	link, err := netlink.LinkByName(name)
	if err != nil {
		return nil, fmt.Errorf("service interface %s: %w", name, err)
	}
	if err := netlink.LinkSetAlias(link, Alias); err != nil {
		return nil, errors.Join(fmt.Errorf("service interface %s: marking it the agent's: %w", name, err), netlink.LinkDel(link))
	}
	link.Attrs().Alias = Alias
	return link, nil
}

// Exists says whether the agent's interface name is there.
func Exists(name string) bool {
	link, err := netlink.LinkByName(name)
	return err == nil && link.Attrs().Alias == Alias
}

// Remove deletes the dummy interface name and its addresses; one absent
// is not an error, one of another type is left alone.
func Remove(name string) error {
	link, err := netlink.LinkByName(name)
	var notFound netlink.LinkNotFoundError
	switch {
	case errors.As(err, &notFound):
		return nil
	case err != nil:
		return fmt.Errorf("service interface %s: %w", name, err)
	case link.Attrs().Alias != Alias:
		return fmt.Errorf("service interface %s: a %s link of another program's has that name; not removed", name, link.Type())
	}
	if err := netlink.LinkDel(link); err != nil {
		return fmt.Errorf("service interface %s: removing: %w", name, err)
	}
	return nil
}
