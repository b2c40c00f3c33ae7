package sluice

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"unsafe"
)

type taskKind uint8

const (
	taskWrite         taskKind = iota // AsyncWrite
	taskWritev                        // AsyncWritev
	taskWake                          // Wake: run OnTraffic
	taskClose                         // Close: flush, then close
	taskOpen                          // a connection another loop accepted
	taskStop                          // graceful stop
	taskStopAccepting                 // Engine.StopAccepting: close the listeners
	taskForce                         // stop now
	taskKill                          // Engine.Kill: reset the connection at fd if it is id
	taskDial                          // Dial or Enroll: open the connection
	taskExecute                       // Loop.Execute: run fn
	taskTLS                           // a TLS handshake wrote or ended (tls.go)
	taskPacketWrite                   // a datagram to send from a UDP socket (udp.go)
	taskPacketWake                    // Wake of a UDP socket
	taskPacketClose                   // Close of a connected UDP socket
)

// task is work another goroutine hands to a loop. Tasks are pooled, so
// posting one allocates nothing once the pool is warm.
type task struct {
	kind taskKind
	c    *conn
	buf  []byte
	bufs [][]byte
	cb   AsyncCallback
	fd   int            // taskKill
	id   uint64         // taskKill
	dial *dialSpec      // taskDial
	fn   func()         // taskExecute
	u    *udpConn       // the UDP socket of a taskPacket*
	to   netip.AddrPort // where a taskPacketWrite goes; zero: the socket's peer
	// reserved is what a taskWrite, taskWritev, taskWake, taskPacketWrite
	// or taskPacketWake counted against its connection's bound when it was
	// posted (conn.reserve, udpConn.reserve), taken off as it runs: the
	// same figure, whatever changed between.
	reserved int64
}

// postedTask is what a posted write or Wake holds besides its bytes: its
// task. Counted with them against WithMaxOutbound until it runs, it keeps
// the memory of what is posted and not yet run bounded, however small
// the writes, and however fast a goroutine wakes a connection.
const postedTask = int64(unsafe.Sizeof(task{}))

// postedSlice is what an AsyncWritev holds for each of its slices until it
// runs, counted against WithMaxOutbound with its bytes: the slice's header,
// so that a posting of a million empty slices is not counted as nothing.
const postedSlice = int64(unsafe.Sizeof([]byte(nil)))

var taskPool = sync.Pool{New: func() any { return new(task) }}

func newTask(kind taskKind, c *conn) *task {
	t := taskPool.Get().(*task)
	t.kind, t.c = kind, c
	return t
}

func (t *task) free() {
	*t = task{}
	taskPool.Put(t)
}

// taskQueue is a loop's inbox: many goroutines push, the loop takes all
// at once. The loop swaps two slices so that taking allocates nothing.
type taskQueue struct {
	mu     sync.Mutex
	tasks  []*task
	spare  []*task // touched only by the loop
	n      atomic.Int32
	closed bool
}

// push queues t and reports false if the loop has exited.
func (q *taskQueue) push(t *task) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	q.tasks = append(q.tasks, t)
	q.n.Store(int32(len(q.tasks)))
	q.mu.Unlock()
	return true
}

// isClosed reports whether the loop has stopped taking tasks.
func (q *taskQueue) isClosed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed
}

// pending reports whether tasks are queued, without taking the lock.
func (q *taskQueue) pending() bool { return q.n.Load() > 0 }

// take returns the queued tasks. The slice is valid until the next take;
// pass it to recycle once its tasks have run.
func (q *taskQueue) take() []*task {
	if !q.pending() {
		return nil // the loop asks every iteration; most find nothing
	}
	q.mu.Lock()
	ts := q.tasks
	q.tasks, q.spare = q.spare, nil
	q.n.Store(0)
	q.mu.Unlock()
	return ts
}

func (q *taskQueue) recycle(ts []*task) {
	clear(ts)
	q.spare = ts[:0]
}

// close makes later pushes fail and returns what was still queued.
func (q *taskQueue) close() []*task {
	q.mu.Lock()
	q.closed = true
	ts := q.tasks
	q.tasks = nil
	q.n.Store(0)
	q.mu.Unlock()
	return ts
}
