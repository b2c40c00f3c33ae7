//go:build !race

package clienttest

const raceBuild = false
