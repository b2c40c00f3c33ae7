//go:build !linux || sluice_std

package sluice

import "errors"

// driverSlot stands for what the ring keeps in each connection.
type driverSlot struct{}

// connectAddr stands for the address a connect on the ring reads.
type connectAddr struct{}

var errNoRing = errors.New("io_uring is Linux's")

// probeRing reports that io_uring cannot serve here.
func probeRing() error { return errNoRing }

// newRingDriver is never reached: choosePoller settles on epoll off Linux.
func newRingDriver(l *eventloop) (driver, error) { return nil, errNoRing }
