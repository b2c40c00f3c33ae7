package uring

import "golang.org/x/sys/unix"

// CQE is a completion: the result of one operation, or of one shot of a
// multishot operation. It is laid out as the kernel's struct io_uring_cqe.
type CQE struct {
	UserData uint64 // the value the operation was prepared with
	Res      int32  // the result: a byte count or a descriptor, or a negated errno
	Flags    uint32 // IORING_CQE_F_* flags; More and Buffer decode them
}

// More reports whether a multishot operation stays armed after this
// completion (IORING_CQE_F_MORE). When it is false the operation has ended
// and must be prepared again to go on.
func (c CQE) More() bool { return c.Flags&cqeFMore != 0 }

// Buffer reports the provided buffer the kernel filled, if any
// (IORING_CQE_F_BUFFER): its ID in the operation's BufRing. The caller
// owns the buffer until it recycles it.
func (c CQE) Buffer() (id uint16, ok bool) {
	return uint16(c.Flags >> cqeBufferShift), c.Flags&cqeFBuffer != 0
}

// Err returns the error the operation failed with, as a unix.Errno, or nil
// when Res is not negative.
func (c CQE) Err() error {
	if c.Res >= 0 {
		return nil
	}
	return unix.Errno(-c.Res)
}
