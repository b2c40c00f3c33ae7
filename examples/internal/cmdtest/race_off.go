//go:build !race

package cmdtest

// raceEnabled says the tests run under the race detector, and the commands
// are built with it.
const raceEnabled = false
