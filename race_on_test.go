//go:build race

package sluice

// raceEnabled says the tests run under the race detector, which makes
// sync.Pool drop a quarter of what is put back, on purpose, so that pooled
// buffers are allocated afresh now and then: allocation counts mean
// nothing there. CI counts them in a run without it.
const raceEnabled = true
