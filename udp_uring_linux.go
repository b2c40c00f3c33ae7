//go:build !sluice_std

package sluice

import (
	"encoding/binary"
	"net/netip"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/socket"
	"github.com/sluicenet/sluice/internal/uring"
)

// ringPackets is what a ring keeps for its loop's UDP sockets: a buffer
// ring of its own, made with the first socket, whose buffers hold a
// multishot recvmsg's header and the sender's address ahead of a read
// buffer's worth of payload (WithReadBufferCap), so that the datagrams
// that fit a read on epoll fit here; and the msghdr every such recvmsg
// reads, which says only how much room the address takes. Where the
// kernel cannot serve a multishot recvmsg, poll is set and a socket is
// watched with a poll and read as on epoll (receivePackets).
type ringPackets struct {
	bufs *uring.BufRing
	msg  unix.Msghdr
	poll bool
	out  ringSends
	// sendsTo: the ring's send takes an address (uring.SendsTo), so a
	// datagram goes without a msghdr.
	sendsTo bool
}

// ringSends holds the datagrams a turn sends through the ring, each a
// send of its own (sendDatagram): their bytes, copied, and the addresses
// (and, for a sendmsg, the msghdrs and iovecs) the kernel reads, which
// stay in place until the turn's io_uring_enter has submitted them. A
// send with MSG_DONTWAIT never waits, so the kernel is done with them
// once that returns, and they are let go for the next turn's
// (submitted). A datagram that finds them full is sent with sendto at
// once. Made with the loop's first UDP socket: 256 KiB of bytes and 256
// datagrams a turn.
type ringSends struct {
	buf   []byte // it never grows: the kernel holds pointers into it
	msgs  []unix.Msghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6
	n     int
}

const (
	ringSendSlots = 256
	ringSendBytes = 256 << 10
)

// submitted lets go of the datagrams the turn's io_uring_enter has just
// submitted, wiped first when wipe is set.
func (s *ringSends) submitted(wipe bool) {
	if s.n == 0 {
		return
	}
	if wipe {
		clear(s.buf)
	}
	s.buf = s.buf[:0]
	for i := range s.n {
		s.iovs[i].Base = nil
	}
	s.n = 0
}

// ringPacketsPolled makes a ring poll its UDP sockets as where the
// kernel lacks a multishot recvmsg; a variable so that a test can take
// that way on a kernel that has one.
var ringPacketsPolled = false

// ringSendsTo reports whether the ring's send takes an address; a
// variable so that a test can take the sendmsg way on a kernel where it
// does.
var ringSendsTo = uring.SendsTo

// packetGroup is the buffer group of the ring's UDP buffers; the stream
// receives' is 0.
const packetGroup = 1

// nameRoom is the room a sender's address takes in a recvmsg's buffer:
// an IPv6 one's.
const nameRoom = unix.SizeofSockaddrInet6

// watchPackets starts receiving u's datagrams through the ring: a
// multishot recvmsg into the UDP buffer ring, or a poll where the kernel
// lacks it.
func (rg *ringDriver) watchPackets(u *udpConn) error {
	pk := &rg.pk
	pk.poll = pk.poll || ringPacketsPolled
	if pk.bufs == nil && !pk.poll {
		size := rg.l.eng.opts.readBufferCap + uring.RecvmsgHeader + nameRoom
		b, err := uring.NewBufRing(rg.r, packetGroup, ringBufCount(size), size)
		if err != nil {
			rg.l.eng.opts.logger.Warn("sluice: io_uring buffers for UDP failed; UDP sockets are polled", "loop", rg.l.idx, "err", err)
			pk.poll = true
		}
		pk.bufs = b
		pk.msg.Namelen = nameRoom
	}
	if pk.out.msgs == nil {
		o := &pk.out
		o.buf = make([]byte, 0, ringSendBytes)
		o.msgs = make([]unix.Msghdr, ringSendSlots)
		o.iovs = make([]unix.Iovec, ringSendSlots)
		o.names = make([]unix.RawSockaddrInet6, ringSendSlots)
		pk.sendsTo = ringSendsTo()
	}
	// Each completion is one datagram: a socket enrolled or handed over
	// with UDP_GRO on would bring several in one buffer.
	if err := socket.ReceiveCoalesced(u.fd, false); err != nil {
		rg.l.eng.opts.logger.Debug("sluice: UDP receives: UDP_GRO not set", "fd", u.fd, "err", err)
	}
	rg.gens++
	u.ds = ringSlot{gen: rg.gens}
	rg.armPackets(u)
	return nil
}

func (rg *ringDriver) armPackets(u *udpConn) {
	u.ds.armed |= armedRead
	rg.armed = true
	ud := userData(opPacket, u.ds.gen, u.fd)
	if rg.pk.poll {
		rg.r.PrepPollAdd(u.fd, unix.POLLIN, ud)
		return
	}
	rg.r.PrepRecvmsgMultishot(u.fd, &rg.pk.msg, rg.pk.bufs, unix.MSG_TRUNC, ud)
}

// ringPacketsReady handles a completion for a UDP socket: a datagram a
// recvmsg brought, in a buffer it gives back at once, or the socket's poll
// reporting it readable, or the end of either. Either is armed again while
// the socket stays open.
func (rg *ringDriver) ringPacketsReady(fd int, gen uint32, e uring.CQE) {
	l := rg.l
	id, hasBuf := e.Buffer()
	u := l.packets.at(fd)
	if u == nil || u.ds.gen&genMask != gen {
		if hasBuf { // a datagram for a socket since closed: dropped unseen
			if l.eng.opts.wipe {
				clear(rg.pk.bufs.Buf(id))
			}
			rg.pk.bufs.Recycle(id)
		}
		return
	}
	if !e.More() {
		u.ds.armed &^= armedRead
	}
	switch err := e.Err(); {
	case hasBuf:
		name, p, truncated := uring.RecvmsgOut(rg.pk.bufs.Buf(id), int(e.Res), nameRoom)
		l.datagram(u, p, nameAddrPort(name), truncated)
		rg.pk.bufs.Recycle(id)
		rg.received(l.now())
	case err == nil:
		l.receivePackets(u, packetBatch) // the poll's
	case err == unix.ENOBUFS:
		l.counts.add(countRingBuffersExhausted)
	case err == unix.EINVAL && !rg.pk.poll:
		l.eng.opts.logger.Warn("sluice: io_uring cannot receive UDP with a multishot recvmsg here; UDP sockets are polled", "loop", l.idx)
		rg.pk.poll = true
	case err == unix.ECANCELED:
	default:
		l.packetFailed(u, err)
	}
	if u.state != stateClosed && u.ds.armed&armedRead == 0 {
		rg.armPackets(u)
	}
}

// nameAddrPort reads a sender's address, with its zone, as the kernel
// laid it out.
func nameAddrPort(name []byte) netip.AddrPort {
	if len(name) < unix.SizeofSockaddrInet4 {
		return netip.AddrPort{}
	}
	port := binary.BigEndian.Uint16(name[2:4])
	switch *(*uint16)(unsafe.Pointer(&name[0])) {
	case unix.AF_INET:
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(name[4:8])), port)
	case unix.AF_INET6:
		if len(name) >= unix.SizeofSockaddrInet6 {
			ip := netip.AddrFrom16([16]byte(name[8:24]))
			if scope := *(*uint32)(unsafe.Pointer(&name[24])); scope != 0 {
				ip = ip.WithZone(socket.ZoneName(scope))
			}
			return netip.AddrPortFrom(ip, port)
		}
	}
	return netip.AddrPort{}
}

// releasePackets gives the pages of the UDP buffers back, as the stream
// buffers' are once the loop has been idle (releaseIdle).
func (rg *ringDriver) releasePackets() error {
	if rg.pk.bufs == nil {
		return nil
	}
	return rg.pk.bufs.Release()
}

// sendDatagram queues p, copied, as a send from u to to (or to u's peer),
// sent with the turn's other submissions; only a failure posts a
// completion (ringPacketSendFailed). It takes all of p or fails. Where
// the ring's send takes an address (uring.SendsTo) the datagram goes as
// sendto(2) goes, and otherwise as a sendmsg, whose msghdr and iovec the
// kernel reads besides.
func (rg *ringDriver) sendDatagram(u *udpConn, p []byte, to netip.AddrPort) (int, error) {
	o := &rg.pk.out
	if rg.failed || o.n == len(o.msgs) || len(o.buf)+len(p) > cap(o.buf) {
		return socket.SendTo(u.fd, p, to, u.v6)
	}
	i := o.n
	o.n++
	off := len(o.buf)
	o.buf = append(o.buf, p...)
	b := o.buf[off:len(o.buf):len(o.buf)]
	var (
		name    unsafe.Pointer
		nameLen uint32
	)
	if to.IsValid() {
		name, nameLen = unsafe.Pointer(&o.names[i]), socket.PutSockaddr(&o.names[i], to, u.v6)
	}
	ud := userData(opPacketSent, uint32(len(p))<<sentGenBits|u.ds.gen&sentGenMask, u.fd)
	const flags = unix.MSG_DONTWAIT | unix.MSG_NOSIGNAL
	if name == nil || rg.pk.sendsTo {
		rg.r.PrepSendTo(u.fd, b, name, nameLen, flags, ud).SetFlags(uring.SkipSuccess)
		return len(p), nil
	}
	iov := &o.iovs[i]
	iov.Base = nil
	if len(p) > 0 {
		iov.Base = &b[0]
	}
	iov.SetLen(len(p))
	m := &o.msgs[i]
	*m = unix.Msghdr{Iov: iov, Name: (*byte)(name), Namelen: nameLen}
	m.SetIovlen(1)
	rg.r.PrepSendmsg(u.fd, m, flags, ud).SetFlags(uring.SkipSuccess)
	return len(p), nil
}

// A sendmsg's user data carries, where others carry the generation, the
// low sentGenBits of the socket's generation and above them the
// datagram's length (sendPacket refuses one past 65,527 bytes, so 16 bits
// hold it): a completion comes only for a failure, and BytesOut, which
// counted the datagram when it was queued, takes its bytes back then.
const (
	sentGenBits = 8
	sentGenMask = 1<<sentGenBits - 1
)

// ringPacketSendFailed handles a sendmsg that failed: for the socket that
// sent it if it is still open, and otherwise only counted, as a socket
// that closes in the callback that sent its last datagram has by the
// time the turn's submission reports the failure.
func (rg *ringDriver) ringPacketSendFailed(fd int, gen uint32, e uring.CQE) {
	l := rg.l
	if e.Res >= 0 {
		return
	}
	l.counts.sub(countBytesOut, int(gen>>sentGenBits)) // counted when it was queued
	err := os.NewSyscallError("sendmsg", e.Err())
	if u := l.packets.at(fd); u != nil && u.ds.gen&sentGenMask == gen&sentGenMask {
		l.sendFailed(u, err)
		return
	}
	l.lostSend(err)
}

// closePackets cancels what u has armed and closes its socket in the same
// submission; after a failed turn it closes the socket directly.
func (rg *ringDriver) closePackets(u *udpConn) {
	if rg.failed || rg.r == nil {
		unix.Close(u.fd)
		return
	}
	if u.ds.armed&armedRead != 0 {
		rg.r.PrepCancel(userData(opPacket, u.ds.gen, u.fd), userData(opIgnore, 0, 0))
	}
	rg.r.PrepClose(u.fd, userData(opIgnore, 0, 0))
}
