//go:build race

package main

// raceEnabled says the tests run under the race detector: the commands
// they build are built with it too, which reuses what the test build
// compiled rather than compiling the standard library again.
const raceEnabled = true
