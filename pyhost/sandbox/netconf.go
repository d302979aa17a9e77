package sandbox

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// setUpLoopback brings up lo of the sandbox's own network namespace, so
// that tool code may talk to itself on 127.0.0.1.
func setUpLoopback() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("read the flags of lo: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	return nil
}

// blockRoutes adds an "unreachable" route for each prefix, so that tool
// code under the allow policy gets "Network is unreachable" for them at
// once (slirp4netns would otherwise forward to any address the host can
// reach). The routes are set while init still holds CAP_NET_ADMIN in the
// sandbox's namespaces; tool code cannot remove them.
func blockRoutes(prefixes []string) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("open a netlink socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	for i, p := range prefixes {
		_, n, err := net.ParseCIDR(p)
		if err != nil {
			return fmt.Errorf("blocked prefix %q: %w", p, err)
		}
		// The same prefix twice (a host address inside a range already
		// listed) is already blocked.
		if err := addUnreachable(fd, uint32(i+1), n); err != nil && err != unix.EEXIST {
			return fmt.Errorf("block %s: %w", p, err)
		}
	}
	return nil
}

// addUnreachable sends one RTM_NEWROUTE of type RTN_UNREACHABLE and waits
// for the kernel's acknowledgement.
func addUnreachable(fd int, seq uint32, n *net.IPNet) error {
	family, addr := unix.AF_INET, n.IP.To4()
	if addr == nil {
		family, addr = unix.AF_INET6, n.IP.To16()
	}
	ones, _ := n.Mask.Size()
	rt := unix.RtMsg{Family: uint8(family), Dst_len: uint8(ones), Table: unix.RT_TABLE_MAIN,
		Protocol: unix.RTPROT_STATIC, Scope: unix.RT_SCOPE_UNIVERSE, Type: unix.RTN_UNREACHABLE}
	attrLen := unix.SizeofRtAttr + len(addr)
	attrSpace := (attrLen + 3) &^ 3
	total := unix.SizeofNlMsghdr + unix.SizeofRtMsg + attrSpace
	buf := make([]byte, total)
	hdr := (*unix.NlMsghdr)(unsafe.Pointer(&buf[0]))
	*hdr = unix.NlMsghdr{Len: uint32(total), Type: unix.RTM_NEWROUTE,
		Flags: unix.NLM_F_REQUEST | unix.NLM_F_ACK | unix.NLM_F_CREATE | unix.NLM_F_EXCL, Seq: seq}
	*(*unix.RtMsg)(unsafe.Pointer(&buf[unix.SizeofNlMsghdr])) = rt
	off := unix.SizeofNlMsghdr + unix.SizeofRtMsg
	binary.NativeEndian.PutUint16(buf[off:], uint16(attrLen))
	binary.NativeEndian.PutUint16(buf[off+2:], unix.RTA_DST)
	copy(buf[off+unix.SizeofRtAttr:], addr)
	if err := unix.Sendto(fd, buf, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	resp := make([]byte, 4096)
	nr, _, err := unix.Recvfrom(fd, resp, 0)
	if err != nil {
		return err
	}
	// The answer is one NLMSG_ERROR message whose error code is 0 on
	// success.
	if nr < unix.SizeofNlMsghdr+4 {
		return fmt.Errorf("short netlink answer (%d bytes)", nr)
	}
	if typ := binary.NativeEndian.Uint16(resp[4:6]); typ != unix.NLMSG_ERROR {
		return fmt.Errorf("unexpected netlink answer of type %d", typ)
	}
	if code := int32(binary.NativeEndian.Uint32(resp[unix.SizeofNlMsghdr:])); code != 0 {
		return unix.Errno(-code)
	}
	return nil
}

// waitForDefaultRoute waits until the default route goes through the
// named interface (/proc/net/route): slirp4netns's last step.
func waitForDefaultRoute(name string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		b, _ := os.ReadFile("/proc/net/route")
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == name && f[1] == "00000000" {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("slirp4netns did not configure %s within %s", name, within)
		}
		time.Sleep(time.Millisecond)
	}
}
