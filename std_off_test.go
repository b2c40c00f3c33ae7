//go:build !sluice_std

package sluice

const stdBackend = false
