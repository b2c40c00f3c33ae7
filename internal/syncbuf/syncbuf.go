// Package syncbuf is a buffer that other goroutines write while a test
// reads it: a logger's output, or a child process's.
package syncbuf

import (
	"bytes"
	"strings"
	"sync"
)

// A Buffer is a bytes.Buffer safe for writers on other goroutines. Its
// zero value is empty and ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns all that was written.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Contains reports whether what was written holds sub.
func (s *Buffer) Contains(sub string) bool { return strings.Contains(s.String(), sub) }
