package network

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// loopbackIndex is the kernel's fixed interface index of lo in every
// network namespace (LOOPBACK_IFINDEX).
const loopbackIndex = 1

// bringUpLoopback sets lo up in the network namespace at netnsPath: what
// the CNI loopback plugin does, in-process, as CRI-O does it, so a pod
// start costs no plugin process for it. The admin's CNI config is never
// asked for loopback; a loopback plugin in it still runs.
func bringUpLoopback(netnsPath string) error {
	var err error
	onSpareThread(func() bool {
		var restored bool
		err, restored = inNetns(netnsPath, setLoopbackUp)
		return restored
	})
	if err != nil {
		return fmt.Errorf("netns %s: lo up: %w", netnsPath, err)
	}
	return nil
}

// setLinkDown takes the interface ifName down in the network namespace at
// netnsPath: it stops answering for its addresses at once, where deleting
// it would wait for the kernel's RCU grace periods.
func setLinkDown(netnsPath, ifName string) error {
	var err error
	onSpareThread(func() bool {
		var restored bool
		err, restored = inNetns(netnsPath, func() error { return setLinkFlags(0, ifName, 0) })
		return restored
	})
	if err != nil {
		return fmt.Errorf("netns %s: %s down: %w", netnsPath, ifName, err)
	}
	return nil
}

// setLinkFlags sets IFF_UP to up (IFF_UP or 0) on the link index (or, with
// index 0, the link named name) in the calling thread's namespace.
func setLinkFlags(index int, name string, up uint32) error {
	fd, err := routeSocket()
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	// struct ifinfomsg: family, pad, type, index, flags, change.
	msg := make([]byte, unix.SizeofIfInfomsg)
	binary.NativeEndian.PutUint32(msg[4:8], uint32(index))
	binary.NativeEndian.PutUint32(msg[8:12], up)
	binary.NativeEndian.PutUint32(msg[12:16], unix.IFF_UP)
	if name != "" {
		msg = append(msg, rtAttr(unix.IFLA_IFNAME, append([]byte(name), 0))...)
	}
	return netlinkRequest(fd, unix.RTM_NEWLINK, 0, msg)
}

// setLoopbackUp sets IFF_UP on lo in the calling thread's namespace over
// rtnetlink.
func setLoopbackUp() error { return setLinkFlags(loopbackIndex, "", unix.IFF_UP) }
