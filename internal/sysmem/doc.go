// Package sysmem tells how much memory the process may use, as the
// operating system reports it, for defaults that scale with the machine.
package sysmem
