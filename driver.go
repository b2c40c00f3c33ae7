package sluice

import (
	"net/netip"

	"github.com/sluicenet/sluice/poller"
)

// driver is how a loop meets the kernel: it waits, reads or receives,
// sends, registers and closes sockets, and hands the loop what arrived
// through the loop's own handlers (arrived, peerClosed, readFailed,
// accepted, acceptFailed, writable, connected). Everything above it
// (buffers, callbacks, deadlines, limits, the close sequence) is the
// loop's and the same for every driver. There are two: pollDriver, on a
// readiness poller (epoll, kqueue, the development backend), which is
// told a socket is ready and then reads or writes it; and, on Linux,
// ringDriver, on an io_uring, which is handed the results of operations
// it submitted.
//
// Each method runs on the loop's goroutine, except wake.
type driver interface {
	// pinned reports whether the driver must stay on the OS thread that
	// started it, whatever WithLockOSThread says.
	pinned() bool
	// start readies the driver on the loop's own thread before the loop
	// serves, watches the loop's listeners, and returns the driver the
	// loop serves with: itself, or the one it fell back to. An error
	// leaves the loop nothing to serve with.
	start() (driver, error)
	// turn waits, with the loop's sleeping protocol (sleep, awake), until
	// the kernel has something for the loop, a task wakes it, or its next
	// timer is due, and hands the loop what came. An error ends the loop.
	turn() error
	// wake makes a turn in progress, or the next one, return at once. Any
	// goroutine may call it.
	wake() error
	// close releases what the driver holds, once the loop has stopped.
	close()

	// defersWatch reports whether a connection opening may go unwatched
	// until its first watch, which then adds it for what OnOpen left it
	// wanting (unwatched).
	defersWatch() bool
	// add starts watching fd, a connection in the loop's table or a
	// listener, for ev; modify changes that from old to ev.
	add(fd int, ev poller.Event) error
	modify(fd int, old, ev poller.Event) error
	// armReceive has c, read and holding nothing back, receive again
	// where the driver receives without being asked (handOver, linger).
	armReceive(c *conn)
	// connect starts c's connect to what d names; its end comes to the
	// loop as connected, or as closeConn with the connect's error.
	connect(c *conn, d *dialSpec)

	// sendOut sends p, the output of c's running callback, held in the
	// loop's write buffer, and returns how much the loop may count as
	// sent, or -1 when c closed.
	sendOut(c *conn, p []byte) int
	// spent readies the loop's write buffer for the next callback once
	// its output has gone (sendOut) or been kept elsewhere.
	spent()
	// sendQueued sends what c has queued in its own buffer.
	sendQueued(c *conn)
	// flush sends c's output at once, for Conn.Flush, so that a failure
	// is Flush's to report.
	flush(c *conn)
	// sending reports whether c has a send whose result is still to
	// come: its output has not drained, whatever c.pending says.
	sending(c *conn) bool
	// awaitSent reports whether c has such a send, and if so asks to hear
	// (as writable) once its result is in.
	awaitSent(c *conn) bool

	// closeSocket closes c's descriptor, which also leaves the driver.
	closeSocket(c *conn)
	// watchPackets starts watching u, a UDP socket, whose datagrams the
	// driver hands to the loop (receivePackets) whenever it is readable;
	// closePackets closes u's socket, which also leaves the driver.
	watchPackets(u *udpConn) error
	closePackets(u *udpConn)
	// sendDatagram sends p as one datagram from u to to, or to u's peer
	// when to is not valid, and returns how much it took, or why it
	// failed: at once, or, where the driver sends later, as sendFailed.
	sendDatagram(u *udpConn, p []byte, to netip.AddrPort) (int, error)
	// stopAccepts stops the listeners' accepts, before they close.
	stopAccepts()
}

// newDriver makes the driver the engine's poller names, for loop l: the
// ring is made later, on the loop's own thread (start).
func newDriver(l *eventloop) (driver, error) {
	if l.eng.opts.poller == poller.IOUring {
		return newRingDriver(l)
	}
	return newPollDriver(l)
}
