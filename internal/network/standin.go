package network

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// standIn is a throwaway network namespace that stands in for a pod's
// namespace which is already gone. It holds an interface named like the
// pod's, carrying the pod's old addresses, so a plugin's DEL that looks the
// interface up to find its host-side rules (the bridge plugin's ipMasq does)
// still finds and removes them. The interface is one end of a veth pair:
// veth is the link kind every kernel that runs the bridge plugin has. The
// namespace lives on a locked thread, not on a mount, so it cannot leak: it
// dies with the thread.
type standIn struct {
	path string
	quit chan struct{}
	done chan struct{}
}

// newStandIn creates the namespace with a link ifName carrying addrs.
func newStandIn(ifName string, addrs []*net.IPNet) (*standIn, error) {
	s := &standIn{quit: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan error, 1)
	go onSpareThread(func() bool { s.hold(ifName, addrs, ready); return false })
	if err := <-ready; err != nil {
		<-s.done
		return nil, fmt.Errorf("stand-in namespace: %w", err)
	}
	return s, nil
}

// hold runs on a spare locked thread (onSpareThread) that is never
// unlocked: the thread leaves the host namespace and must die with the
// goroutine.
func (s *standIn) hold(ifName string, addrs []*net.IPNet, ready chan<- error) {
	defer close(s.done)
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		ready <- fmt.Errorf("unshare: %w", err)
		return
	}
	if err := addStandInLink(ifName, addrs); err != nil {
		ready <- err
		return
	}
	s.path = fmt.Sprintf("/proc/%d/task/%d/ns/net", os.Getpid(), unix.Gettid())
	ready <- nil
	<-s.quit
}

func (s *standIn) close() {
	close(s.quit)
	<-s.done
}

// standInPeer names the other end of the stand-in veth pair.
const standInPeer = "standin0"

// vethInfoPeer is VETH_INFO_PEER from linux/veth.h.
const vethInfoPeer = 1

// addStandInLink creates a veth pair ifName/standin0 in the calling thread's
// network namespace and puts addrs on ifName, speaking rtnetlink directly.
func addStandInLink(ifName string, addrs []*net.IPNet) error {
	fd, err := routeSocket()
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	peer := append(make([]byte, unix.SizeofIfInfomsg), rtAttr(unix.IFLA_IFNAME, append([]byte(standInPeer), 0))...)
	linkInfo := append(rtAttr(unix.IFLA_INFO_KIND, []byte("veth")),
		rtAttr(unix.IFLA_INFO_DATA, rtAttr(vethInfoPeer, peer))...)
	link := append(make([]byte, unix.SizeofIfInfomsg), rtAttr(unix.IFLA_IFNAME, append([]byte(ifName), 0))...)
	link = append(link, rtAttr(unix.IFLA_LINKINFO, linkInfo)...)
	if err := netlinkRequest(fd, unix.RTM_NEWLINK, unix.NLM_F_CREATE|unix.NLM_F_EXCL, link); err != nil {
		return fmt.Errorf("link %s: %w", ifName, err)
	}
	iface, err := net.InterfaceByName(ifName)
	if err != nil {
		return fmt.Errorf("link %s: %w", ifName, err)
	}
	for _, a := range addrs {
		if err := netlinkRequest(fd, unix.RTM_NEWADDR, unix.NLM_F_CREATE|unix.NLM_F_EXCL, addrMessage(iface.Index, a)); err != nil {
			return fmt.Errorf("link %s: address %s: %w", ifName, a, err)
		}
	}
	return nil
}

func addrMessage(index int, a *net.IPNet) []byte {
	ip, family := a.IP.To4(), byte(unix.AF_INET)
	if ip == nil {
		ip, family = a.IP.To16(), unix.AF_INET6
	}
	ones, _ := a.Mask.Size()
	msg := make([]byte, unix.SizeofIfAddrmsg)
	msg[0] = family
	msg[1] = byte(ones)
	binary.NativeEndian.PutUint32(msg[4:8], uint32(index))
	msg = append(msg, rtAttr(unix.IFA_LOCAL, ip)...)
	return append(msg, rtAttr(unix.IFA_ADDRESS, ip)...)
}

// rtAttr encodes one route attribute, padded to 4 bytes.
func rtAttr(typ uint16, data []byte) []byte {
	l := unix.SizeofRtAttr + len(data)
	b := make([]byte, (l+3)&^3)
	binary.NativeEndian.PutUint16(b[0:2], uint16(l))
	binary.NativeEndian.PutUint16(b[2:4], typ)
	copy(b[unix.SizeofRtAttr:], data)
	return b
}

// routeSocket opens a bound rtnetlink socket in the calling thread's
// network namespace (it stays in that namespace).
func routeSocket() (int, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return -1, fmt.Errorf("netlink socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("netlink bind: %w", err)
	}
	return fd, nil
}

// netlinkRequest sends one request with an ack asked and reads the ack.
func netlinkRequest(fd int, typ uint16, flags uint16, body []byte) error {
	msg := make([]byte, unix.SizeofNlMsghdr, unix.SizeofNlMsghdr+len(body))
	msg = append(msg, body...)
	binary.NativeEndian.PutUint32(msg[0:4], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:6], typ)
	binary.NativeEndian.PutUint16(msg[6:8], flags|unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	binary.NativeEndian.PutUint32(msg[8:12], 1)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("netlink send: %w", err)
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return fmt.Errorf("netlink receive: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil {
		return fmt.Errorf("netlink parse: %w", err)
	}
	for _, m := range msgs {
		if m.Header.Type != unix.NLMSG_ERROR || len(m.Data) < 4 {
			continue
		}
		if code := int32(binary.NativeEndian.Uint32(m.Data[0:4])); code != 0 {
			return unix.Errno(-code)
		}
		return nil
	}
	return errors.New("netlink: no acknowledgement")
}
