// Package sluicehttp serves HTTP/1.1 and HTTP/1.0 from Sluice's event
// loops with any http.Handler.
//
//	srv := &sluicehttp.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
//	eng, err := srv.Start("tcp://:8080", sluice.WithNumEventLoop(4))
//	...
//	err = srv.Shutdown(ctx) // requests in flight are answered first
//
// Each connection's loop parses its requests where the bytes arrived,
// copying each request's head once; a body is decoded on the loop into a
// window its handler reads from, and the loop stops reading the
// connection while the handler is behind. Handlers run on a goroutine
// pool (Server.Pool), so they may block, or, with Server.Inline, on the
// loop itself, for handlers that never block. The requests a client
// pipelines are handed over together and answered in their order, their
// answers queued with one sluice.Conn.AsyncWrite; a handler that writes
// faster than its client reads waits rather than filling memory. A loop
// that handed requests to the pool yields to it once it has served what
// its turn brought, so that their handlers run before it waits again and
// their answers need no wake-up; with handlers on the pool, the loops are
// therefore not locked to OS threads (sluice.WithLockOSThread) unless the
// options say so.
//
// A request whose only header field is Host (Host is never in a
// request's header map, as with net/http's server) costs four heap
// allocations, alone or pipelined, on the pool or inline: the request,
// with its context, its URL, its answer's state and the copy of its head
// that its strings point into; its header map, empty; and its answer's
// header map, two. Other fields cost one more, their map's room; a head
// longer than 256 bytes one more, its own copy. What serves a run of requests is kept by
// the loop for the next; an answer's header map is not, since a handler
// may keep it past its return.
//
// A handler sees what net/http's server would give it: the request's
// Host, RemoteAddr (the PROXY protocol's source, with
// sluice.WithProxyProtocol), TLS (with sluice.WithTLS), Body, Trailer,
// and a Context cancelled when the client goes or the handler returns,
// with http.LocalAddrContextKey set. Its http.ResponseWriter also
// implements http.Flusher and http.Hijacker, and what
// http.ResponseController asks for: deadlines, full duplex (always on),
// flushing with an error. Answers follow net/http: a Content-Length when
// the handler wrote its whole body, up to 4 KiB, before it returned,
// chunked otherwise (the connection's end, to an HTTP/1.0 client); a
// Content-Type sniffed from the body with http.DetectContentType when the
// handler set none; a Date, formatted once a second rather than for each
// answer; keep-alive as the request asks; 100 Continue on the first read
// of a body whose client expects it (inline, before the handler runs).
//
// A Handler that also implements LoopHandler answers the requests it
// chooses below the http.Handler API: its ServeLoop runs on the loop with
// a view of each request without a body, parsed and checked as for
// ServeHTTP, and writes an answer the server frames; it costs no heap
// allocation. What it declines goes to ServeHTTP.
//
// Requests are accepted and refused as net/http's server accepts and
// refuses them, so that a proxy in front of either frames every request
// the same way: no request smuggling. The same statuses answer the same
// malformed requests (400, 431, 501, 505, and 417), tested by sending a
// corpus of valid, malformed and published smuggling requests to both
// servers, and by a fuzz target (FuzzParse) that compares the two.
//
// Where this server differs from net/http's:
//
//   - A client too slow with a request's head (ReadHeaderTimeout) is
//     answered 408 Request Timeout before its connection closes;
//     net/http closes it silently.
//   - A handler that panics gets 500 Internal Server Error, unless it had
//     begun its answer, and its connection closes (unless it hijacked
//     it, which is then left to its holder, as net/http leaves it);
//     net/http closes it without an answer. Both log the panic alike, and neither logs
//     http.ErrAbortHandler.
//   - A handler that answers without reading all of its body is
//     answered at once, and the rest of the body dropped as it comes,
//     where net/http reads up to 256 KiB of it before it answers. Both
//     keep the connection for a body that ends within 256 KiB, and close
//     it after the answer otherwise; of a chunked body, whose length is
//     unknown, net/http's answer then says Connection: close, and this
//     server's cannot.
//   - The bufio.Reader Hijack returns starts empty: what the client sent
//     after the request, pipelined requests the server had read
//     included, comes from the returned net.Conn, and so through the
//     reader too; net/http hands what it had read in the reader's
//     buffer.
//   - A handler that hijacks its connection has its answer's head sent,
//     if it wrote one, and what of the body it flushed, while what it
//     wrote since it last flushed is dropped, as by net/http; but of a
//     body written without a flush, what passed the server's buffers
//     is sent: past 4 KiB, then each 32 KiB, here, where net/http's
//     buffers hold 2 KiB, then 4 KiB.
//   - An inline handler (Server.Inline) runs once its body has come
//     whole, so a client that expects 100 Continue gets it before the
//     handler runs, whether the handler reads the body or not.
//   - A request framed by Transfer-Encoding despite a Content-Length is
//     answered, as by net/http, and then its connection closes (RFC 9112,
//     section 6.1).
//   - MaxBodyBytes bounds request bodies (413), and an inline handler's
//     body, held whole, is bounded by default.
//   - A request that finds every worker of the pool busy is answered 503
//     Service Unavailable, and its connection closed.
//   - WriteTimeout resets a connection whose handler has not finished
//     its answer in time; the engine's own write timeout
//     (sluice.WithWriteTimeout) bounds a client that stops reading.
//   - Engine.Stop closes every connection at once, cutting off requests
//     in flight: stop with Server.Shutdown, which lets them finish first.
//   - A handler that uses its http.ResponseWriter after it returned,
//     which net/http forbids, gets errors, and a Header nobody reads:
//     what served it serves other requests by then. What a goroutine
//     writes later to the header map it got from Header is ignored, as
//     net/http ignores it. Hijack then panics, as net/http's does; but
//     http.ResponseController's deadlines, once the handler hijacked,
//     are the hijacked connection's, even after it returned, as with
//     net/http. Flush after Hijack returns http.ErrHijacked, where
//     net/http's panics.
//   - A hijacked connection is a net.Conn over the engine's connection,
//     not a *net.TCPConn, and closes with the engine: its holder's Reads
//     and Writes then fail with errors that match net.ErrClosed. A
//     client's reset fails Reads with the reset, as a socket's would;
//     its clean end is io.EOF once what it sent is read. Writes wait
//     while the connection holds more than Server.WriteBufferSize
//     unsent, except an inline handler's on its loop, which
//     sluice.WithMaxOutbound bounds (sluice.ErrOutboundFull).
//   - HTTP/2 is not served, and http.ServerContextKey is not set.
//
// An idle keep-alive connection costs the engine's own connection state
// and under 150 bytes of this package's (its state, its addresses, its
// timer), with no buffer held: buffers come from pools for each request
// and answer, and go back once it is done.
package sluicehttp
