package sluice

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/sluicenet/sluice/internal/socket"
)

// WithListenerFile serves f, a socket listening already, as a listener of
// its own beside Run's (as WithListener adds one), instead of binding an
// address: a socket the process was handed by its service manager
// (ListenFDs), or by its parent. ListenerOptions set what differs for it,
// as for WithListener's. Run (or Start) takes f over: it serves a copy of
// f's descriptor and closes f, whether it starts or not. A file that is
// not a listening TCP or unix stream socket makes Run return an error
// wrapping ErrNotListener. The listener goes by f's name
// (Engine.DupListeners), and the engine never removes a unix socket's
// file it did not make. WithReusePort does not apply to it: it is shared
// by the loops. Windows cannot serve a file so; Run's error wraps
// errors.ErrUnsupported there.
func WithListenerFile(f *os.File, opts ...ListenerOption) Option {
	return func(o *options) {
		o.listeners = append(o.listeners, fileSpec(f, opts))
	}
}

// fileSpec is a listener of its own for f, with opts.
func fileSpec(f *os.File, opts []ListenerOption) listenSpec {
	s := listenSpec{handed: true, files: []*os.File{f}, proxy: -1}
	if f != nil {
		s.name = f.Name()
	}
	for _, opt := range opts {
		opt(&s)
	}
	return s
}

// WithListenerFiles serves files, sockets listening already, in place of
// the addresses they are named by: a process started again with the
// configuration of the one before it, which handed it copies of its
// listeners (Engine.DupListeners names each by its address), takes each
// up where it would have bound its address. An address the engine would
// listen on, Run's or a WithListener's, whose text, as written, is the
// name of one or more of files is served from those files, with that
// address's options (WithTLS, WithProxyProtocol, its ListenerOptions),
// and without binding. Every other file is served as WithListenerFile
// serves one, with opts, after the addresses: sockets a service manager
// passed (ListenFDs), for instance, which go by names of their own. Run
// (or Start) takes every file over, as WithListenerFile does.
func WithListenerFiles(files []*os.File, opts ...ListenerOption) Option {
	return func(o *options) {
		o.handed = append(o.handed, handedFiles{files, opts})
	}
}

// handedFiles are WithListenerFiles' files, and the options of those that
// no address names.
type handedFiles struct {
	files []*os.File
	opts  []ListenerOption
}

// inherit gives each of WithListenerFiles' files to the listener of specs
// whose address names it, or to a listener of its own after them.
func (o *options) inherit(specs []listenSpec) []listenSpec {
	for _, h := range o.handed {
	files:
		for _, f := range h.files {
			for i := range specs {
				s := &specs[i]
				if f != nil && s.addr != "" && s.addr == f.Name() {
					s.handed, s.name = true, s.addr
					s.files = append(s.files, f)
					continue files
				}
			}
			specs = append(specs, fileSpec(f, h.opts))
		}
	}
	o.handed = nil
	return specs
}

// WithNetListener serves ln's socket, listening already, as a listener
// of its own beside Run's, as WithListenerFile serves a file's: a socket
// another part of the program opened, or took from its parent. Run (or
// Start) takes ln over, and closes it, leaving a unix socket's file in
// place; the caller must not use it again. The listener goes by ln's
// address, as in "tcp://127.0.0.1:9000" (Engine.DupListeners). A
// listener with no descriptor, such as a tls.Listener, makes Run return
// an error wrapping errors.ErrUnsupported: give its inner listener and
// ListenTLS instead.
func WithNetListener(ln net.Listener, opts ...ListenerOption) Option {
	return func(o *options) {
		s := listenSpec{handed: true, nl: ln, proxy: -1}
		if ln != nil {
			a := ln.Addr()
			s.name = a.Network() + "://" + a.String()
		}
		for _, opt := range opts {
			opt(&s)
		}
		o.listeners = append(o.listeners, s)
	}
}

// inherited reports whether s is a socket handed over rather than an
// address to bind.
func (s *listenSpec) inherited() bool { return s.handed }

// release closes what s was handed, once the engine has its own copies or
// has failed to start: the files, or a listener it has not taken.
func (s *listenSpec) release() {
	for _, f := range s.files {
		if f != nil {
			f.Close()
		}
	}
	if s.nl != nil {
		if ul, ok := s.nl.(*net.UnixListener); ok {
			ul.SetUnlinkOnClose(false)
		}
		s.nl.Close()
	}
}

// inherit opens the listeners s was handed, the order-th address: the
// first on the loop that index names, any further one, a socket of a
// SO_REUSEPORT set, on the next loops.
func (e *engine) inherit(s *listenSpec, order, loop int) error {
	if s.nl != nil {
		nl := s.nl
		s.nl = nil // taken, closed or not
		fd, addr, err := socket.ListenOn(nl)
		if err != nil {
			return fmt.Errorf("sluice: listener %q: %w", s.name, err)
		}
		e.handedOver(s, fd, addr, order, loop, true)
		return nil
	}
	for j, f := range s.files {
		if f == nil {
			return fmt.Errorf("%w: a nil file", ErrNotListener)
		}
		fd, addr, err := socket.ListenFile(f)
		if err != nil {
			return fmt.Errorf("sluice: listener %q: %w", s.name, err)
		}
		e.handedOver(s, fd, addr, order, loop+j, j == 0) // Addrs names an address once
	}
	return nil
}

// handedOver makes a listener of fd, a socket s was handed, bound to addr,
// for the loop that index names, and lists addr in Addrs if first.
func (e *engine) handedOver(s *listenSpec, fd int, addr net.Addr, order, loop int, first bool) {
	_, isUnix := addr.(*net.UnixAddr)
	ln := &listener{fd: fd, addr: addr, unix: isUnix, name: s.name, order: order, shared: true}
	ln.proxy, ln.tls = s.proxy, tlsConfig(s.tls)
	l := e.loops[loop%len(e.loops)]
	l.listeners = append(l.listeners, ln)
	if first {
		e.addrs = append(e.addrs, addr)
	}
}

// DupListeners returns copies of the engine's stream listening sockets
// (TCP and unix; UDP sockets are not handed over, and an engine serving
// UDP alone returns none), one file for each listener, in the order of
// their addresses in Addrs, for another process to serve (WithListenerFile) while this one still does: a restart or an
// upgrade that never closes the port, so that no client is refused. With
// WithReusePort a TCP address has a socket for each loop, and so a file
// for each, under the same name; all of them must be served, as the
// kernel spreads connections over them. A file is named by the address
// its listener was given (Run's or WithListener's, as written), or by the
// name it came with (WithListenerFile, WithNetListener), and its
// descriptor is close-on-exec: pass it to the process as exec.Cmd's
// ExtraFiles do, and close it here once the process has started.
//
// From the first call on, the engine treats its listeners as shared with
// the process it hands them to: closing them, when it stops or stops
// accepting, leaves their sockets listening there, and a unix socket's
// file stays in place. Each process accepts from a shared socket while it
// listens, so a restart that hands them over lets the old process stop
// accepting (StopAccepting) once the new one serves: connections the old
// one has yet to accept stay queued for the new one. DupListeners returns
// ErrEngineStopped once the engine has closed its listeners. It is safe
// from any goroutine. Windows cannot hand a listener over; the error
// wraps errors.ErrUnsupported there.
func (eng Engine) DupListeners() ([]*os.File, error) {
	e := eng.e
	if e == nil {
		return nil, ErrEngineStopped
	}
	e.lnMu.Lock()
	defer e.lnMu.Unlock()
	var lns []*listener
	for _, l := range e.loops {
		for _, ln := range l.listeners {
			if ln.fd >= 0 { // not closed by the loop's stop
				lns = append(lns, ln)
			}
		}
	}
	streams := 0
	for _, a := range e.addrs {
		if _, ok := a.(*net.UDPAddr); !ok {
			streams++
		}
	}
	select {
	case <-e.done:
		return nil, ErrEngineStopped
	default:
		if streams > 0 && len(lns) == 0 {
			return nil, ErrEngineStopped
		}
	}
	// The loops hold their listeners by loop, and a SO_REUSEPORT set is
	// one listener in each: put them in the order they were opened.
	sortListeners(lns)
	e.duped.Store(true)
	files := make([]*os.File, 0, len(lns))
	for _, ln := range lns {
		f, err := socket.DupListener(ln.fd, ln.name)
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, fmt.Errorf("sluice: listener %q: %w", ln.name, err)
		}
		files = append(files, f)
	}
	return files, nil
}

// sortListeners orders lns by the order their listeners were opened in,
// keeping a set of SO_REUSEPORT listeners in the order of their loops.
func sortListeners(lns []*listener) {
	for i := 1; i < len(lns); i++ {
		for j := i; j > 0 && lns[j].order < lns[j-1].order; j-- {
			lns[j], lns[j-1] = lns[j-1], lns[j]
		}
	}
}

// shared reports whether ln's socket may be served by another process
// too: one the engine was handed, or whose copy it handed out. Closing it
// must leave it listening there.
func (e *engine) shared(ln *listener) bool { return ln.shared || e.duped.Load() }

// listenFDsStart is the first descriptor a service manager passes.
const listenFDsStart = 3

// ListenFDs returns the listening sockets the process's service manager
// passed it by socket activation (systemd's sd_listen_fds protocol, which
// systemd-socket-activate and other managers speak too), for
// WithListenerFile: one file for each socket, from descriptor 3 on, named
// as LISTEN_FDNAMES names them (a socket unit's FileDescriptorName=, or
// its unit's name), or "unknown" without it. Their descriptors are made
// close-on-exec, and the variables (LISTEN_PID, LISTEN_FDS,
// LISTEN_FDNAMES) are removed from the environment, as sd_listen_fds
// does when asked to, so that processes this one starts do not take the
// sockets for theirs. It returns none when the process was not activated
// so: LISTEN_PID unset, or naming another process. A malformed variable,
// or a list of names whose length differs from LISTEN_FDS, is an error
// wrapping ErrSocketActivation. Call it once: the second call finds
// nothing.
func ListenFDs() ([]*os.File, error) {
	pid, pidSet := os.LookupEnv("LISTEN_PID")
	count := os.Getenv("LISTEN_FDS")
	names, named := os.LookupEnv("LISTEN_FDNAMES")
	os.Unsetenv("LISTEN_PID")
	os.Unsetenv("LISTEN_FDS")
	os.Unsetenv("LISTEN_FDNAMES")
	if !pidSet {
		return nil, nil
	}
	p, err := strconv.Atoi(pid)
	if err != nil || p <= 0 {
		return nil, fmt.Errorf("%w: LISTEN_PID=%q", ErrSocketActivation, pid)
	}
	if p != os.Getpid() {
		return nil, nil
	}
	n, err := strconv.Atoi(count)
	if err != nil || n < 0 || n > 1<<16 {
		return nil, fmt.Errorf("%w: LISTEN_FDS=%q", ErrSocketActivation, count)
	}
	if n == 0 {
		return nil, nil
	}
	list := make([]string, n)
	for i := range list {
		list[i] = "unknown"
	}
	if named {
		if list = strings.Split(names, ":"); len(list) != n {
			return nil, fmt.Errorf("%w: LISTEN_FDNAMES=%q names %d sockets, LISTEN_FDS=%d", ErrSocketActivation, names, len(list), n)
		}
	}
	files := make([]*os.File, n)
	for i := range files {
		fd := listenFDsStart + i
		socket.CloseOnExec(fd)
		files[i] = os.NewFile(uintptr(fd), list[i])
	}
	return files, nil
}
