//go:build unix

package sluice

import (
	"bytes"
	"crypto/tls"
	"net"
	"sync"
	"testing"
	"time"
)

// switchConn is a net.Conn whose reads and writes go to a connection of
// its own choosing, changed between handshake and records.
type switchConn struct {
	net.Conn
	r interface{ Read([]byte) (int, error) }
	w interface{ Write([]byte) (int, error) }
}

func (s *switchConn) Read(p []byte) (int, error)  { return s.r.Read(p) }
func (s *switchConn) Write(p []byte) (int, error) { return s.w.Write(p) }
func (s *switchConn) SetWriteDeadline(time.Time) error {
	return nil
}

// fuzzPair returns a server tls.Conn in loop mode over a wire, and the
// wire bytes of records a client sealed for it, carrying plain.
func fuzzPair(t testing.TB, plain []byte) (*tls.Conn, *wire, []byte) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := &conn{loop: &eventloop{eng: &engine{}}}
	w := &wire{c: c, loop: true}
	w.cond.L = &w.mu
	sc := &switchConn{Conn: a, r: a, w: a}
	cc := &switchConn{Conn: b, r: b, w: b}
	server := tls.Server(sc, serverTLS(t))
	client := tls.Client(cc, clientTLS(t, 0))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		server.Handshake()
	}()
	if err := client.Handshake(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	sc.r, sc.w = w, w
	var out bytes.Buffer
	cc.w = &out
	for i := 0; i < len(plain); i += 7 {
		client.Write(plain[i:min(i+7, len(plain))])
	}
	return server, w, out.Bytes()
}

// FuzzTLSRecords feeds the record path what a client sealed, cut short,
// corrupted, or random bytes, in chunks of every size: the reads return
// only plaintext the client sent, in order, and never a byte of a record
// the wire does not hold whole.
func FuzzTLSRecords(f *testing.F) {
	f.Add(byte(0), []byte{3, 1, 4, 1, 5, 9, 2, 6})
	f.Add(byte(1), []byte{200, 17})
	f.Add(byte(2), []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Add(byte(3), []byte{23, 3, 3, 0, 20, 1, 2, 3})
	plain := bytes.Repeat([]byte("sluice records "), 10)
	f.Fuzz(func(t *testing.T, mode byte, data []byte) {
		if len(data) == 0 {
			return
		}
		server, w, stream := fuzzPair(t, plain)
		switch mode % 4 {
		case 0: // whole, in chunks sized by data
		case 1: // cut short
			stream = stream[:int(data[0])*int(data[len(data)-1])%len(stream)]
		case 2: // corrupted
			stream = bytes.Clone(stream)
			for i, x := range data {
				stream[(i*31+int(x))%len(stream)] ^= x
			}
		case 3: // random
			stream = data
		}
		var got []byte
		buf := make([]byte, 4096)
		for i, k := 0, 0; i < len(stream); k++ {
			n := 1 + int(data[k%len(data)])
			chunk := stream[i:min(i+n, len(stream))]
			i += len(chunk)
			w.feed(chunk)
			if !w.ripe() {
				w.settle()
				continue // as the loop does: Read only once a record is whole
			}
			for {
				m, err := server.Read(buf)
				got = append(got, buf[:m]...)
				w.mu.Lock()
				if w.read > w.whole {
					t.Fatalf("read %d bytes past the last whole record at %d", w.read, w.whole)
				}
				w.mu.Unlock()
				if err != nil {
					if err == errWouldBlock {
						break
					}
					i = len(stream) // a permanent error: the connection closes
					break
				}
			}
			w.settle()
		}
		if !bytes.HasPrefix(plain, got) {
			t.Fatalf("plaintext %q is not what the client sent", got)
		}
		if mode%4 == 0 && !bytes.Equal(plain, got) {
			t.Fatalf("whole records gave %d bytes of %d", len(got), len(plain))
		}
	})
}
