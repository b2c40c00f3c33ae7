// Package uring is a small io_uring binding for one event loop: a ring of
// submission and completion queues shared with the kernel, the operations a
// network server needs (multishot accept, multishot receive into a ring of
// provided buffers, send, sendmsg, read, cancel, close), and a probe that
// says whether the running kernel can do all of that.
//
// It is written on raw system calls (io_uring_setup, io_uring_enter,
// io_uring_register) and memory mappings, with no cgo and no liburing.
//
// A Ring belongs to one goroutine locked to its OS thread
// (runtime.LockOSThread) for its whole life: New binds it to the calling
// thread when the kernel supports IORING_SETUP_SINGLE_ISSUER, and from then
// on only that thread may submit, wait, or register buffers. Nothing in the
// package locks; the loop that owns the ring is its only user. A turn of
// such a loop is one system call:
//
//	for {
//		ring.SubmitAndWait(1, timeout) // submit what the last turn queued, then sleep
//		ring.ForEachCQE(handle)        // handle queues new operations with Prep*
//	}
//
// The package builds on Linux only; elsewhere it is empty.
package uring
