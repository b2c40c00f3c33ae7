//go:build !linux || sluice_std

package sluice

import (
	"errors"

	"github.com/sluicenet/sluice/internal/socket"

	"github.com/sluicenet/sluice/poller"
)

// ring stands for a loop's io_uring, which only Linux has.
type ring struct{}

// ringSlot stands for a connection's record on the ring.
type ringSlot struct{}

// ringAddr stands for the address a connect on the ring reads.
type ringAddr struct{}

var errNoRing = errors.New("io_uring is Linux's")

// probeRing reports that io_uring cannot serve here.
func probeRing() error { return errNoRing }

// The ring's methods are never reached: choosePoller settles on epoll off
// Linux, so ring stays nil.

func (l *eventloop) openRing()    {}
func (l *eventloop) serveRing()   {}
func (l *eventloop) closeRing()   {}
func (l *eventloop) stopAccepts() {}

func (l *eventloop) pollAdd(fd int, ev poller.Event) error { return l.poll.Add(fd, ev) }

func (l *eventloop) pollModify(fd int, old, ev poller.Event) error {
	return l.poll.Modify(fd, old, ev)
}

func (l *eventloop) closeSocket(c *conn) { socket.Close(c.fd) }

func (l *eventloop) sendOut(c *conn, p []byte) int { return l.write(c, p) }

func (l *eventloop) flush(c *conn) {
	l.flushQueued(c)
	l.send(c)
}

// sendQueued writes what c has queued.
func (l *eventloop) sendQueued(c *conn) {
	if c.out != nil {
		l.flushOut(c)
	}
}

func (l *eventloop) awaitSent(c *conn) bool { return false }

func (l *eventloop) receiveAgain(c *conn) {}

func (l *eventloop) sending(c *conn) bool { return false }

func (l *eventloop) pollConnect(c *conn, d *dialSpec) { l.startConnect(c, d) }

func (rg *ring) spent(l *eventloop) {}
