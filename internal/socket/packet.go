//go:build !windows && !sluice_std

package socket

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// ListenPacket opens a non-blocking UDP socket bound to addr. network is
// udp, udp4 or udp6; under udp an IPv6 socket takes IPv4 too, whose
// senders it reports as IPv4-mapped addresses. With o.ReusePort several
// sockets share the port and the kernel spreads senders over them. It
// returns the descriptor, the address it is bound to, and whether it is an
// IPv6 socket.
func ListenPacket(network, addr string, o Options) (int, *net.UDPAddr, bool, error) {
	stream, ok := streamOf(network)
	if !ok {
		return -1, nil, false, fmt.Errorf("%w: %q", ErrNetwork, network)
	}
	family, sa, err := sockaddr(stream, addr)
	if err != nil {
		return -1, nil, false, err
	}
	fd, err := newSocket(family, unix.SOCK_DGRAM)
	if err != nil {
		return -1, nil, false, err
	}
	if err := bindPacket(fd, family, network == "udp6", sa, o); err != nil {
		unix.Close(fd)
		return -1, nil, false, err
	}
	bound, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return -1, nil, false, os.NewSyscallError("getsockname", err)
	}
	return fd, UDPAddr(bound), family == unix.AF_INET6, nil
}

// streamOf names the stream network whose addresses a packet network
// takes, for sockaddr.
func streamOf(network string) (string, bool) {
	switch network {
	case "udp":
		return "tcp", true
	case "udp4":
		return "tcp4", true
	case "udp6":
		return "tcp6", true
	}
	return "", false
}

func bindPacket(fd, family int, v6only bool, sa unix.Sockaddr, o Options) error {
	if err := shareAddr(fd, family, v6only, o); err != nil {
		return err
	}
	if err := setBuffers(fd, o); err != nil {
		return err
	}
	return os.NewSyscallError("bind", unix.Bind(fd, sa))
}

// DialPacket opens a non-blocking UDP socket connected to remote, bound
// first to device when it is named and to local when it is valid: it
// sends only to remote and receives only from it. Connecting a UDP socket
// sends nothing, so it ends at once.
func DialPacket(remote, local netip.AddrPort, device string, o Options) (int, error) {
	family, sa := sockaddrOf(remote)
	fd, err := newSocket(family, unix.SOCK_DGRAM)
	if err != nil {
		return -1, err
	}
	err = setBuffers(fd, o)
	if err == nil && device != "" {
		err = BindToDevice(fd, device)
	}
	if err == nil && local.IsValid() {
		_, lsa := sockaddrOf(local)
		err = os.NewSyscallError("bind", unix.Bind(fd, lsa))
	}
	if err == nil {
		err = os.NewSyscallError("connect", unix.Connect(fd, sa))
	}
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// UDPAddr converts a socket address into a *net.UDPAddr.
func UDPAddr(sa unix.Sockaddr) *net.UDPAddr {
	return net.UDPAddrFromAddrPort(AddrPort(sa))
}

// zones caches the interfaces IPv6 zones name: uint32 index to name, and
// name to index. A link-local address names no one without its zone, so
// a datagram's sender keeps it and a send to it sets the scope; looking
// an interface up costs a netlink dump, so each is looked up once, and
// only for a scoped address, never on the way of any other.
var zones sync.Map

// ZoneName returns the zone of an IPv6 address whose scope is the
// interface index: the interface's name, or the index in decimal where
// the interface is not found.
func ZoneName(index uint32) string {
	if z, ok := zones.Load(index); ok {
		return z.(string)
	}
	name := strconv.FormatUint(uint64(index), 10)
	if ifc, err := net.InterfaceByIndex(int(index)); err == nil {
		name = ifc.Name
	}
	zones.Store(index, name)
	return name
}

// ZoneIndex returns the interface index an IPv6 zone names (an interface
// name, or an index in decimal), or 0 when it names none.
func ZoneIndex(zone string) uint32 {
	if zone == "" {
		return 0
	}
	if i, ok := zones.Load(zone); ok {
		return i.(uint32)
	}
	var index uint32
	if n, err := strconv.ParseUint(zone, 10, 32); err == nil {
		index = uint32(n)
	} else if ifc, err := net.InterfaceByName(zone); err == nil {
		index = uint32(ifc.Index)
	}
	zones.Store(zone, index)
	return index
}

// addrZone is ip with the zone scope names, when it names one.
func addrZone(ip netip.Addr, scope uint32) netip.Addr {
	if scope == 0 {
		return ip
	}
	return ip.WithZone(ZoneName(scope))
}
