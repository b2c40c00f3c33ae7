//go:build !race

package sluicehttp

const raceEnabled = false
