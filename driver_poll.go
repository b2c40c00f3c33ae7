package sluice

import (
	"net/netip"
	"os"
	"syscall"

	"github.com/sluicenet/sluice/internal/socket"
	"github.com/sluicenet/sluice/poller"
)

// pollDriver drives a loop's sockets through a readiness poller: epoll on
// Linux, kqueue on macOS and the BSDs, the development backend's poller
// on Windows and with sluice_std. The poller says a socket is ready; the
// driver then reads it into the loop's read buffer, accepts, or writes.
//
// The datagrams a UDP listener's callbacks send from its socket while the
// driver hands it what one readiness brought (gathering) are gathered in
// out and sent together once the loop is done with them, with one
// sendmmsg(2) on Linux; elsewhere out gathers nothing and each is sent at
// once. A connected socket's are sent at once: sendmmsg reports only the
// first failure of a call, and the ICMP error one datagram brings back
// (ECONNREFUSED) is reported by the next send, inside the same call, so a
// batch would lose it, where a Write returns it.
type pollDriver struct {
	l         *eventloop
	p         *poller.Poller
	out       *socket.SendBatch // made with the loop's first UDP readiness
	gathering *udpConn
}

// The room a pollDriver's out has: as many datagrams as one readiness
// hands the loop, and as many bytes as the ring gathers in a turn (one
// datagram that does not fit is sent once the ones before it are).
const (
	sendBatch      = packetBatch
	sendBatchBytes = 256 << 10
)

func newPollDriver(l *eventloop) (*pollDriver, error) {
	p, err := poller.Open()
	if err != nil {
		return nil, err
	}
	return &pollDriver{l: l, p: p}, nil
}

func (d *pollDriver) pinned() bool { return false }

func (d *pollDriver) start() (driver, error) {
	for _, ln := range d.l.listeners {
		if err := d.p.Add(ln.fd, poller.Readable); err != nil {
			return d, err
		}
	}
	return d, nil
}

func (d *pollDriver) turn() error {
	l := d.l
	timeout, _ := l.sleep(false) // only a gathering ring holds its waits
	ready, err := d.p.Wait(timeout)
	l.awake(len(ready) == 0)
	if err != nil {
		return err
	}
	for _, r := range ready {
		d.dispatch(r)
	}
	return nil
}

func (d *pollDriver) wake() error { return d.p.Wake() }

func (d *pollDriver) close() { d.p.Close() }

// dispatch acts on one socket the poller reported ready.
func (d *pollDriver) dispatch(r poller.Ready) {
	l := d.l
	for _, ln := range l.listeners {
		if ln.fd == r.Fd {
			d.accept(ln)
			return
		}
	}
	if r.Fd >= len(l.conns) || l.conns[r.Fd] == nil {
		if u := l.packets.at(r.Fd); u != nil {
			d.receivePackets(u)
		}
		return
	}
	c := l.conns[r.Fd]
	if c.state == stateConnecting {
		d.connectDone(c, r.Events)
		return
	}
	if r.Events&poller.Writable != 0 {
		// Also with nothing queued: on the development backend the
		// socket's writer has sent what it held (socket.Unsent).
		l.writable(c)
	}
	if r.Events&poller.Readable != 0 {
		switch c.state {
		case stateOpen:
			if c.events&poller.Readable == 0 {
				d.failedWhilePaused(c)
				break
			}
			d.read(c)
		case stateHeader, stateHandshake, stateLinger:
			d.read(c)
		}
	}
}

func (d *pollDriver) accept(ln *listener) {
	fd, remote, err := socket.Accept(ln.fd)
	if err != nil {
		d.l.acceptFailed(ln, err)
		return
	}
	d.l.accepted(ln, fd, remote)
}

// read reads what c's socket holds into the loop's read buffer and hands
// it to the loop, or the end of the stream, or the read's failure.
func (d *pollDriver) read(c *conn) {
	l := d.l
	n, err := socket.Read(c.fd, l.buf)
	switch {
	case n > 0:
		l.arrived(c, l.buf[:n:n])
	case err == nil:
		l.peerClosed(c)
	case err != syscall.EAGAIN:
		l.readFailed(c, err)
	}
}

// failedWhilePaused handles an error or hang-up the poller reports for c,
// open but not being read, which it reports whatever c is watched for.
// An error (a reset) closes c; the bytes and the end of stream a hang-up
// may bring wait until c is read again.
func (d *pollDriver) failedWhilePaused(c *conn) {
	if err := socket.PendingError(c.fd); err != nil {
		d.l.readFailed(c, err)
	}
}

// connect starts c's connect with connect(2), whose end the poller
// reports as writable (connectDone). One that ends at once, as a unix
// socket's may, opens c at once.
func (d *pollDriver) connect(c *conn, ds *dialSpec) {
	l := d.l
	switch err := socket.Connect(c.fd, ds.ep); err {
	case nil:
		l.connected(c)
	case syscall.EINPROGRESS:
		if err := d.p.Add(c.fd, poller.Writable); err != nil {
			l.closeConn(c, err)
			return
		}
		c.events = poller.Writable
	default:
		l.closeConn(c, os.NewSyscallError("connect", err))
	}
}

// connectDone handles the end of c's connect, reported as writable, with
// ev marked Failed if it did not succeed: only then is the socket asked
// why, a system call that a connect which succeeded is spared.
func (d *pollDriver) connectDone(c *conn, ev poller.Event) {
	if ev&poller.Failed != 0 {
		if err := socket.PendingError(c.fd); err != nil {
			d.l.closeConn(c, os.NewSyscallError("connect", err))
			return
		}
	}
	d.l.connected(c)
}

// defersWatch is true: a handler that pauses a connection in OnOpen, as
// a proxy does until its backend connects, then costs one registration
// rather than an ADD for reading and a MOD to take it back.
func (d *pollDriver) defersWatch() bool { return true }

func (d *pollDriver) add(fd int, ev poller.Event) error { return d.p.Add(fd, ev) }

func (d *pollDriver) modify(fd int, old, ev poller.Event) error { return d.p.Modify(fd, old, ev) }

// armReceive does nothing: a readiness poller reports a socket readable
// for as long as it is watched for it.
func (d *pollDriver) armReceive(c *conn) {}

func (d *pollDriver) sendOut(c *conn, p []byte) int { return d.l.write(c, p) }

// spent empties the loop's write buffer, and drops it when one huge write
// grew it.
func (d *pollDriver) spent() {
	l := d.l
	if l.eng.opts.wipe {
		clear(l.wbuf)
	}
	l.wbuf = l.wbuf[:0]
	if n := cap(l.wbuf); n > l.eng.opts.readBufferCap+l.eng.opts.writeBufCap {
		l.wbuf = nil
		l.eng.letGo(n)
	}
}

func (d *pollDriver) sendQueued(c *conn) {
	if c.out != nil {
		d.l.flushOut(c)
	}
}

func (d *pollDriver) flush(c *conn) {
	d.l.flushQueued(c)
	d.l.send(c)
}

// sending is false: a write's result is known when it returns.
func (d *pollDriver) sending(c *conn) bool { return false }

func (d *pollDriver) awaitSent(c *conn) bool { return false }

func (d *pollDriver) closeSocket(c *conn) { socket.Close(c.fd) }

func (d *pollDriver) watchPackets(u *udpConn) error { return d.p.Add(u.fd, poller.Readable) }

// receivePackets hands the loop what u's readiness brought, up to
// packetBatch datagrams, gathering what its callbacks send from u, a
// listener's socket, and sending that after them. When a receive brought
// more than one and emptied the socket, it receives again once the
// answers are out, without waiting: senders that answer echoes (a client
// keeping datagrams in flight) have sent more meanwhile, and the wait the
// loop would go back to would return at once for them, one more system
// call each time. One datagram at a time is the light load's pattern,
// where the socket is most likely still empty.
func (d *pollDriver) receivePackets(u *udpConn) {
	if u.connected {
		d.l.receivePackets(u, packetBatch)
		return
	}
	if d.out == nil {
		d.out = socket.NewSendBatch(sendBatch, sendBatchBytes)
	}
	for budget := packetBatch; budget > 0; {
		d.gathering = u
		n, empty := d.l.receivePackets(u, budget)
		d.sendGathered(u)
		if !empty || n < 2 || u.state == stateClosed {
			return
		}
		budget -= n
	}
}

// sendGathered sends what u's callbacks gathered, stops gathering, and
// hands each datagram that failed to sendFailed, as a failure the ring
// reports after its turn is.
func (d *pollDriver) sendGathered(u *udpConn) {
	d.gathering = nil
	for d.out.Pending() > 0 && u.state != stateClosed {
		if lost, err := d.out.Send(u.fd); err != nil {
			d.l.counts.sub(countBytesOut, lost) // counted when it was gathered
			d.l.sendFailed(u, os.NewSyscallError("sendmmsg", err))
		}
	}
	d.out.Reset(d.l.eng.opts.wipe)
}

// closePackets closes u's socket. A socket does not close inside its
// batch (a listener's closes from a task, a connected one is not
// gathered); were one to, sendGathered sends nothing for a closed socket,
// whose descriptor may already be another's.
func (d *pollDriver) closePackets(u *udpConn) { socket.Close(u.fd) }

// sendDatagram gathers p while the loop handles what the readiness of
// u's socket brought (receivePackets; a datagram session's socket is its
// listener's), and otherwise, or when it finds no room even once the
// gathered ones are sent, sends it at once.
func (d *pollDriver) sendDatagram(u *udpConn, p []byte, to netip.AddrPort) (int, error) {
	sock := u
	if u.sock != nil {
		sock = u.sock
	}
	if d.gathering == sock {
		if d.out.Add(p, to, sock.v6) {
			return len(p), nil
		}
		if d.out.Pending() > 0 {
			d.sendGathered(sock)
			d.gathering = sock
			if sock.state != stateClosed && d.out.Add(p, to, sock.v6) {
				return len(p), nil
			}
		}
	}
	return socket.SendTo(u.fd, p, to, u.v6)
}

// stopAccepts takes the listeners off the poller before they close: epoll
// watches a socket until every copy of its descriptor is closed, and a
// listener handed over by another process, or whose copy went to one
// (DupListeners), has copies there. Left on, it would wake the loop for
// every connection the others have yet to accept. Such a listener's
// pending connections are taken first while the engine still serves
// (Engine.StopAccepting): the development backend has accepted them
// already, and would drop them with the listener.
func (d *pollDriver) stopAccepts() {
	l := d.l
	for _, ln := range l.listeners {
		d.p.Remove(ln.fd)
		if l.draining || !l.eng.shared(ln) {
			continue
		}
		socket.StopAccepting(ln.fd)
		for range maxAcceptsAtStop {
			fd, remote, err := socket.Accept(ln.fd)
			if err != nil {
				break
			}
			l.accepted(ln, fd, remote)
		}
	}
}

// maxAcceptsAtStop bounds what stopAccepts takes from one listener, so
// that a flood of connections cannot hold a loop there.
const maxAcceptsAtStop = 1024
