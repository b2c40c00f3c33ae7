// Package poller waits for sockets to become readable or writable: epoll on
// Linux and kqueue on macOS and the BSDs, behind the same small set of
// methods. A Poller belongs to one event loop; only Wake may be called from
// other goroutines.
//
// On Windows, and wherever the sluice_std build tag is given, the same
// methods watch the development backend's connections instead, which
// goroutines on the standard library's net package serve; Kind Epoll
// names it there, and IOUring cannot serve.
package poller

// Event is a set of readiness conditions on a descriptor.
type Event uint8

const (
	// Readable means a read will not block: data, end of stream or an error.
	Readable Event = 1 << iota
	// Writable means a write will not block, or will report an error.
	Writable
	// Failed comes with Readable and Writable when the kernel reports an
	// error or a hang-up (epoll's EPOLLERR or EPOLLHUP, kqueue's EV_ERROR
	// or EV_EOF) rather than plain readiness. A connect in progress that
	// is reported without it has succeeded, so its outcome needs no
	// getsockopt(SO_ERROR).
	Failed
)

// Ready is one descriptor the kernel reported, and what it is ready for.
type Ready struct {
	Fd     int
	Events Event
}

// maxEvents bounds how many descriptors one Wait reports; the rest stay
// ready for the next one.
const maxEvents = 256
