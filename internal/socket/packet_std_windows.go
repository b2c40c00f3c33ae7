//go:build windows

package socket

import (
	"net"
	"net/netip"
)

// sendNow sends p from pc to to (to its peer when to is not valid).
// Windows' sockets are the standard library's, whose writes may wait for
// room in the send buffer.
func sendNow(pc *net.UDPConn, p []byte, to netip.AddrPort) (int, error) {
	if to.IsValid() {
		return pc.WriteToUDPAddrPort(p, to)
	}
	return pc.Write(p)
}
