package udptest

import (
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

// WriteSegmented sends p on c to to (nil when c is connected) as datagrams of size bytes
// each (the last the rest) with one send, as a peer with UDP generic
// segmentation offload does (a UDP_SEGMENT control message): a receiver
// that coalesces (UDP_GRO) may get them in one receive, as it would a
// burst a network card coalesced, and one that does not gets them one
// by one.
func WriteSegmented(c *net.UDPConn, to *net.UDPAddr, p []byte, size int) error {
	oob := make([]byte, unix.CmsgSpace(2))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	h.Level, h.Type = unix.SOL_UDP, unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	*(*uint16)(unsafe.Pointer(&oob[unix.CmsgLen(0)])) = uint16(size)
	_, _, err := c.WriteMsgUDP(p, oob, to)
	return err
}
