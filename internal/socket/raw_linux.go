//go:build !sluice_std

package socket

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// RawAddr is a socket address laid out as the kernel reads it, for
// io_uring's connect, which takes a pointer to one rather than a
// unix.Sockaddr.
type RawAddr struct {
	sa unix.RawSockaddrAny
	n  uint32
}

// Set lays sa out in r.
func (r *RawAddr) Set(sa unix.Sockaddr) error {
	r.sa = unix.RawSockaddrAny{}
	p := unsafe.Pointer(&r.sa)
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		raw := (*unix.RawSockaddrInet4)(p)
		raw.Family = unix.AF_INET
		putPort(&raw.Port, sa.Port)
		raw.Addr = sa.Addr
		r.n = unix.SizeofSockaddrInet4
	case *unix.SockaddrInet6:
		raw := (*unix.RawSockaddrInet6)(p)
		raw.Family = unix.AF_INET6
		putPort(&raw.Port, sa.Port)
		raw.Addr = sa.Addr
		raw.Scope_id = sa.ZoneId
		r.n = unix.SizeofSockaddrInet6
	case *unix.SockaddrUnix:
		raw := (*unix.RawSockaddrUnix)(p)
		if len(sa.Name) >= len(raw.Path) {
			return fmt.Errorf("unix socket path %q: %w", sa.Name, unix.ENAMETOOLONG)
		}
		raw.Family = unix.AF_UNIX
		for i := range len(sa.Name) {
			raw.Path[i] = int8(sa.Name[i])
		}
		// The family, the path and its terminating NUL.
		r.n = uint32(2 + len(sa.Name) + 1)
	default:
		return fmt.Errorf("socket address %T: %w", sa, ErrNetwork)
	}
	return nil
}

// putPort stores port in network byte order.
func putPort(dst *uint16, port int) {
	b := (*[2]byte)(unsafe.Pointer(dst))
	b[0], b[1] = byte(port>>8), byte(port)
}

// Pointer returns where the address lies, for the kernel.
func (r *RawAddr) Pointer() unsafe.Pointer { return unsafe.Pointer(&r.sa) }

// Len returns the address's length in bytes.
func (r *RawAddr) Len() uint32 { return r.n }

// portOf reads a port stored in network byte order.
func portOf(p uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(&p))
	return uint16(b[0])<<8 | uint16(b[1])
}
