//go:build !sluice_std

package sluice

import "golang.org/x/sys/unix"

// watchPackets arms a one-shot poll for u's datagrams; each completion
// hands what waits to the loop (receivePackets), and the poll is armed
// again while u stays open, so that the datagrams a batch left are
// reported at once, as a level-triggered epoll reports them.
func (rg *ringDriver) watchPackets(u *udpConn) error {
	rg.gens++
	u.ds = ringSlot{gen: rg.gens}
	rg.armPackets(u)
	return nil
}

func (rg *ringDriver) armPackets(u *udpConn) {
	u.ds.armed |= armedRead
	rg.r.PrepPollAdd(u.fd, unix.POLLIN, userData(opPacket, u.ds.gen, u.fd))
}

// ringPacketsReady handles the completion of u's poll.
func (rg *ringDriver) ringPacketsReady(fd int, gen uint32) {
	l := rg.l
	u := l.packets.at(fd)
	if u == nil || u.ds.gen&genMask != gen {
		return // for a socket since closed
	}
	u.ds.armed &^= armedRead
	l.receivePackets(u)
	if u.state != stateClosed {
		rg.armPackets(u)
	}
}

// closePackets cancels u's poll and closes its socket in the same
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
