// Package pool holds the pools a handler needs to take blocking work off
// its event loop: a bounded goroutine pool, built on
// github.com/panjf2000/ants/v2, and pooled byte buffers, built on
// github.com/valyala/bytebufferpool.
//
// An event loop must never block: a handler that waits on a disk, a
// database or another service stalls every connection of its loop. Such
// work goes to the pool, and its answer comes back with Conn.AsyncWrite,
// which any goroutine may call. The frame a handler is given aliases the
// loop's buffer and is gone once the callback returns, so it is copied into
// a pooled buffer first:
//
//	func (s *server) OnTraffic(c sluice.Conn) sluice.Action {
//		err := codec.Each(c, s.codec, func(frame []byte) error {
//			req := pool.GetBuffer()
//			req.Write(frame) // the frame dies with the callback; the copy lives on
//			return s.pool.Submit(func() {
//				defer pool.PutBuffer(req)
//				reply := s.lookup(req.B) // blocking work
//				c.AsyncWrite(reply, nil)
//			})
//		})
//		if err != nil { // a bad frame, or pool.ErrPoolOverload: shed the load
//			return sluice.Close
//		}
//		return sluice.None
//	}
//
// Submit never blocks: when every worker is busy it returns
// ErrPoolOverload at once, and the handler decides what to shed, rather
// than the loop stalling on a full pool.
//
// Workers finish in any order, so when a client pipelines, sending
// requests without waiting for answers, replies sent with AsyncWrite can
// overtake each other. Where order matters, either
//
//   - work on one request of a connection at a time: while one is out,
//     OnTraffic leaves the rest unread (sluice.WithMaxInboundBuffered
//     bounds them), and the reply's AsyncWrite callback, which runs on the
//     loop, calls c.Wake to have OnTraffic decode the next; or
//   - number the requests as OnTraffic decodes them, and have each worker
//     hand its reply to the loop in the callback of c.Wake, which holds a
//     reply that finished early in a per-connection slice and writes the
//     replies that are next.
package pool
