//go:build unix

package main

import "syscall"

// cpuTimes returns the CPU time the process and its waited-for children
// have used, in system and user mode, in microseconds.
func cpuTimes() (sys, user, childSys, childUser int64, ok bool) {
	var self, children syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &self) != nil || syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children) != nil {
		return 0, 0, 0, 0, false
	}
	us := func(t syscall.Timeval) int64 { return int64(t.Sec)*1e6 + int64(t.Usec) }
	return us(self.Stime), us(self.Utime), us(children.Stime), us(children.Utime), true
}
