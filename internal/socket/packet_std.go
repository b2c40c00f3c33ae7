//go:build windows || sluice_std

package socket

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// gram is a datagram a UDP handle's reader received, not yet taken by
// RecvFrom, or the error a receive failed with in its place.
type gram struct {
	b    []byte
	from netip.AddrPort
	err  error
}

// packetBacklog bounds how many datagrams a UDP handle holds for
// RecvFrom; past it, its reader waits and the kernel's buffer takes the
// rest, or drops it, as it drops what a slow reader leaves.
const packetBacklog = 256

// maxDatagram is the largest datagram's size: a reader's buffer takes any
// whole, so RecvFrom can tell one larger than the caller's.
const maxDatagram = 1 << 16

// ListenPacket opens a UDP socket bound to addr. network is udp, udp4 or
// udp6. It returns its descriptor, the address it is bound to, and
// whether it is an IPv6 socket (which the standard library lets reach
// IPv4 peers, mapping them itself).
func ListenPacket(network, addr string, o Options) (int, *net.UDPAddr, bool, error) {
	switch network {
	case "udp", "udp4", "udp6":
	default:
		return -1, nil, false, fmt.Errorf("%w: %q", ErrNetwork, network)
	}
	la, err := net.ResolveUDPAddr(network, addr)
	if err != nil {
		return -1, nil, false, err
	}
	pc, err := net.ListenUDP(network, la)
	if err != nil {
		return -1, nil, false, err
	}
	if err := configure(pc, o); err != nil {
		pc.Close()
		return -1, nil, false, err
	}
	bound := pc.LocalAddr().(*net.UDPAddr)
	return addPacket(pc), bound, bound.IP.To4() == nil, nil
}

// DialPacket opens a UDP socket connected to remote, bound first to local
// when it is valid. A device cannot be named here.
func DialPacket(remote, local netip.AddrPort, device string, o Options) (int, error) {
	if device != "" {
		return -1, BindToDevice(-1, device)
	}
	var la *net.UDPAddr
	if local.IsValid() {
		la = net.UDPAddrFromAddrPort(local)
	}
	pc, err := net.DialUDP("udp", la, net.UDPAddrFromAddrPort(remote))
	if err != nil {
		return -1, errno(err)
	}
	if err := configure(pc, o); err != nil {
		pc.Close()
		return -1, err
	}
	return addPacket(pc), nil
}

// addPacket gives pc a descriptor and starts its reader.
func addPacket(pc *net.UDPConn) int {
	h := &handle{pc: pc, more: make(chan struct{}, 1)}
	fd := add(h)
	go h.readPackets()
	return fd
}

// readPackets is a UDP handle's reader: it keeps what it receives for
// RecvFrom, up to packetBacklog datagrams, and the errors receives fail
// with in their turn, as a socket reports one datagram's trouble (an ICMP
// error about an earlier send) and goes on. It stops once the socket is
// closed. Receives that keep failing are tried again after a pause that
// doubles from errPause up to a second, as net/http's Serve does accepts,
// so that a socket that stays broken does not spin.
func (h *handle) readPackets() {
	buf := make([]byte, maxDatagram)
	failed := 0 // receives failed in a row
	for {
		n, from, err := h.pc.ReadFromUDPAddrPort(buf)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		g := gram{from: from}
		if err != nil {
			g.err = errno(err)
		} else {
			g.b = append([]byte(nil), buf[:n]...)
		}
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return
		}
		h.grams = append(h.grams, g)
		full := len(h.grams) >= packetBacklog
		h.mu.Unlock()
		h.signal()
		if full {
			<-h.more
		}
		if err == nil {
			failed = 0
		} else if failed++; failed > 1 {
			time.Sleep(min(errPause<<(failed-2), time.Second))
		}
	}
}

// errPause is how long a UDP handle's reader waits after its second
// failed receive in a row.
const errPause = 5 * time.Millisecond

// RecvFrom takes one datagram into p: n is how much of it p holds, from
// its sender, truncated whether it was larger than p. It returns
// syscall.EAGAIN when none waits, and a receive's error in its turn.
func RecvFrom(fd int, p []byte) (n int, from netip.AddrPort, truncated bool, err error) {
	h := lookup(fd)
	if h == nil || h.pc == nil {
		return 0, netip.AddrPort{}, false, syscall.EBADF
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.grams) == 0 {
		return 0, netip.AddrPort{}, false, syscall.EAGAIN
	}
	g := h.grams[0]
	h.grams[0] = gram{}
	h.grams = h.grams[1:]
	if len(h.grams) == packetBacklog-1 {
		poke(h.more)
	}
	if g.err != nil {
		return 0, netip.AddrPort{}, false, g.err
	}
	n = copy(p, g.b)
	return n, g.from, n < len(g.b), nil
}

// SendTo sends p as one datagram to to, or, on a connected socket with to
// not valid, to its peer.
func SendTo(fd int, p []byte, to netip.AddrPort, v6 bool) (int, error) {
	h := lookup(fd)
	if h == nil || h.pc == nil {
		return 0, syscall.EBADF
	}
	n, err := sendNow(h.pc, p, to)
	if err != nil {
		if errors.Is(err, net.ErrClosed) {
			return 0, syscall.EBADF
		}
		return 0, errno(err)
	}
	return n, nil
}

// closePacket closes h, a UDP handle, whose lock the caller holds.
func (h *handle) closePacket() {
	h.grams = nil
	poke(h.more)
}

// packetConn returns the UDP socket fd names, or nil if it names none.
func packetConn(fd int) *net.UDPConn {
	h := lookup(fd)
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pc
}
