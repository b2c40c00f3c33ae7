package loadgen

import (
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
)

// Accept opens a Session of cfg.Conns connections accepted on ln, a
// listening socket's descriptor, instead of dialed to cfg.Addr (which it does
// not use): for measuring a server that dials its clients, here the load
// generator. It fails with ErrDial if fewer than cfg.Conns arrive within the
// dial timeout. It leaves ln open.
func Accept(ln int, cfg Config) (*Session, error) {
	if err := cfg.checkLoad(); err != nil {
		return nil, err
	}
	if cfg.TLS != nil {
		return nil, fmt.Errorf("%w: accepted connections are plain TCP", ErrConfig)
	}
	s := new(Session)
	for range cfg.Workers {
		w, err := newWorker()
		if err != nil {
			s.Close()
			return nil, err
		}
		s.workers = append(s.workers, w)
	}
	if err := s.accept(ln, cfg); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// accept takes connections from ln until every worker has its share, the
// first share to the first worker, each with a message whose content differs
// per connection.
func (s *Session) accept(ln int, cfg Config) error {
	// An inherited listener, or one whose os.File handed out its descriptor,
	// may be in blocking mode: accept must not wait past the deadline.
	if err := unix.SetNonblock(ln, true); err != nil {
		return err
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(epfd)
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, ln, &unix.EpollEvent{Events: unix.EPOLLIN}); err != nil {
		return err
	}
	deadline := now() + int64(dialTimeout)
	events := make([]unix.EpollEvent, 1)
	for id := 0; id < cfg.Conns; {
		fd, _, err := unix.Accept4(ln, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		switch {
		case err == unix.EAGAIN || err == unix.EINTR:
			t := now()
			if t >= deadline {
				return fmt.Errorf("%w: %d of %d connections accepted in %v", ErrDial, id, cfg.Conns, dialTimeout)
			}
			unix.EpollWait(epfd, events, int(max((deadline-t)/1e6, 1)))
			continue
		case err != nil:
			return fmt.Errorf("%w: accept: %v", ErrDial, err)
		}
		w := s.workers[owner(id, cfg.Conns, len(s.workers))]
		w.conns = append(w.conns, conn{fd: fd, id: id, msg: newMsg(cfg.Size, id)})
		if err := prepare(fd, netip.Addr{}, true); err != nil {
			return err
		}
		if err := w.watch(unix.EPOLL_CTL_ADD, len(w.conns)-1, false); err != nil {
			return err
		}
		id++
	}
	return nil
}

// owner returns which of parts gets item id of n, as share splits them.
func owner(id, n, parts int) int {
	for i := range parts {
		if _, to := share(n, parts, i); id < to {
			return i
		}
	}
	return parts - 1
}
