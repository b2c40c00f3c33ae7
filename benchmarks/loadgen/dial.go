package loadgen

import (
	"net/netip"

	"golang.org/x/sys/unix"
)

// maxConnecting bounds a worker's connects in progress, so a burst of
// thousands does not overflow the server's accept queue (whose SYNs would
// then wait a second to be sent again).
const maxConnecting = 256

// dial opens count connections to addr, each with a message of size bytes
// (ids from firstID on, so their contents differ), and waits until every one
// is connected or deadline (on now's clock) passes. It counts the ones that
// failed in w.res.Errors.Dial; the session gives up on any.
func (w *worker) dial(addr netip.AddrPort, count, size, firstID int, deadline int64) {
	w.conns = make([]conn, 0, count)
	connecting := 0
	for i := 0; i < count || connecting > 0; {
		for ; i < count && connecting < maxConnecting; i++ {
			fd, err := openSocket(addr, source(addr, firstID+i), true)
			if err != nil {
				w.res.Errors.Dial++
				continue
			}
			w.conns = append(w.conns, conn{fd: fd, id: firstID + i, msg: newMsg(size, firstID+i), dialing: true})
			if w.watch(unix.EPOLL_CTL_ADD, len(w.conns)-1, true) != nil {
				w.res.Errors.Dial++
				w.kill(&w.conns[len(w.conns)-1])
				continue
			}
			connecting++
		}
		t := now()
		if t >= deadline {
			break
		}
		for _, ev := range w.wait(deadline - t) {
			c := &w.conns[ev.Fd]
			if !c.dialing {
				continue
			}
			connecting--
			c.dialing = false
			if !connected(c.fd) || w.watch(unix.EPOLL_CTL_MOD, int(ev.Fd), false) != nil {
				w.res.Errors.Dial++
				w.kill(c)
			}
		}
	}
	for i := range w.conns {
		if c := &w.conns[i]; c.dialing { // still connecting at the deadline
			w.res.Errors.Dial++
			w.kill(c)
		}
	}
}
