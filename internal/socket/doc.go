// Package socket opens listeners and moves bytes through descriptors with
// the raw, non-blocking system calls the event loops need.
//
// Built with the sluice_std tag, and on Windows, it serves the same calls
// from the standard library's net package instead: a descriptor is then a
// handle into a table of net.Conns and net.Listeners, each with goroutines
// that block in its reads, writes and accepts and report what they finish
// to the poller, so that the loops above see non-blocking sockets either way.
package socket
