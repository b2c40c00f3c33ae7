//go:build race

package clienttest

// raceBuild says the tests run with the race detector, so the server they
// start is built with it too.
const raceBuild = true
