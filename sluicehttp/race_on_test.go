//go:build race

package sluicehttp

// raceEnabled says the tests run under the race detector, which makes
// sync.Pool drop what is put back now and then: memory and allocation
// counts mean nothing there.
const raceEnabled = true
