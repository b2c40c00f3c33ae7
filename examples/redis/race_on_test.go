//go:build race

package main

// raceEnabled says the tests run under the race detector, which slows
// each step through a map many times over: a test that a call's cost
// stays in proportion to a collection's size, rather than to its size
// times its logarithm, cannot tell them apart there.
const raceEnabled = true
