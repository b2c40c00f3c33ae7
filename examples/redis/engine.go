package main

import "github.com/sluicenet/sluice"

// This file is the seam between the server and the engine features it is
// to use once they land. When they do:
//
//   - Engine.Kill: killClient becomes `return s.eng.Kill(cl.id)`, so that a
//     killed client sees a TCP reset rather than an orderly close, and
//     client.conn can go.
//   - WithMaxConnections, WithIdleTimeout, WithProxyProtocol: main gains
//     the flags -maxclients, -idle-timeout and -proxy-protocol
//     off|optional|required, config the fields they set, and options the
//     matching sluice options. configParams then reports maxclients, and
//     timeout in seconds.

// options returns the engine options the configuration asks for.
func (s *server) options() []sluice.Option {
	return []sluice.Option{
		sluice.WithNumEventLoop(s.cfg.loops),
		sluice.WithTicker(true), // drives active expiry
	}
}

// killClient ends another client's connection, for CLIENT KILL. For now it
// closes the connection gracefully, once its queued replies are sent.
func (s *server) killClient(cl *client) error {
	return cl.conn.Close()
}
