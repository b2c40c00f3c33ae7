//go:build sluice_std

package sluice

// stdBackend says the tests run on the standard library's backend (the
// sluice_std build tag), where a descriptor is a handle, not the kernel's.
const stdBackend = true
