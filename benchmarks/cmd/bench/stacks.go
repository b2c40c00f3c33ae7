package main

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// base is the stack every ratio in the table is to.
const base = "gnet"

// A stack is one echo server the table compares.
type stack struct {
	name  string
	pkg   string   // Go package to build, relative to the benchmarks module
	c     string   // or C source to build with gcc
	loops bool     // takes -loops and GOMAXPROCS; the C floors are single-threaded
	flags []string // further flags for the server (and client), so one package serves two stacks
	// client is the Go package of the stack's dialing client, for the
	// client-side rows; its server also takes -dial. Empty for stacks
	// those rows leave out.
	client string
	// tls is the stack's column in the TLS table, whose servers take
	// -tls-cert and -tls-key; empty for stacks that table leaves out.
	tls string
	// udp is the stack's column in the UDP table, whose servers take
	// -udp; empty for stacks that table leaves out. udpOnly: the stack
	// serves UDP only, and the server table leaves it out.
	udp     string
	udpOnly bool
}

// stacks lists every stack, in the table's column order.
var stacks = []stack{
	{name: "sluice", pkg: "./servers/sluice", loops: true, client: "./clients/sluice", tls: "sluice", udp: "sluice"},
	{name: "sluice-uring", pkg: "./servers/sluice", loops: true, flags: []string{"-poller", "uring"}, client: "./clients/sluice", tls: "sluice-uring", udp: "sluice-uring"},
	{name: "gnet", pkg: "./servers/gnet", loops: true, client: "./clients/gnet", udp: "gnet"},
	{name: "evio", pkg: "./servers/evio", loops: true},
	{name: "nbio", pkg: "./servers/nbio", loops: true, tls: "nbio"},
	{name: "netpoll", pkg: "./servers/netpoll", loops: true},
	{name: "std", pkg: "./servers/std", loops: true, client: "./clients/std", tls: "crypto/tls"},
	{name: "C floor", c: "cfloor/epoll_echo.c"},
	{name: "C uring", c: "cfloor/uring_echo.c"},
	{name: "C floor UDP", c: "cfloor/udp_echo.c", udp: "C floor", udpOnly: true},
}

// floor is the server the dialing clients dial: the C epoll floor.
var floor = stacks[slices.IndexFunc(stacks, func(s stack) bool { return s.name == "C floor" })]

// clientStacks returns those of list that have a dialing client, in order.
func clientStacks(list []stack) []stack {
	return withOnly(list, func(s stack) bool { return s.client != "" })
}

// serverStacks returns those of list that serve TCP, in order: the server
// table's columns.
func serverStacks(list []stack) []stack {
	return withOnly(list, func(s stack) bool { return !s.udpOnly })
}

// tlsStacks returns those of list that serve TLS, in order.
func tlsStacks(list []stack) []stack {
	return withOnly(list, func(s stack) bool { return s.tls != "" })
}

// withOnly returns those of list that keep is true for, in order.
func withOnly(list []stack, keep func(stack) bool) []stack {
	var picked []stack
	for _, s := range list {
		if keep(s) {
			picked = append(picked, s)
		}
	}
	return picked
}

// binary returns the stack's name as a command-line word.
func (s stack) binary() string {
	return strings.ReplaceAll(s.name, " ", "-")
}

// exe returns the name of the stack's executable in the build directory:
// go build names it after its package.
func (s stack) exe() string {
	if s.pkg != "" {
		return path.Base(s.pkg)
	}
	return s.binary()
}

// selectStacks returns the echo servers, the proxies and the HTTP servers
// named in a comma-separated list, each in table order, or every one for
// "all".
func selectStacks(list string) ([]stack, []proxyStack, []httpStack, error) {
	if list == "all" {
		return stacks, proxies, httpStacks, nil
	}
	names := strings.Split(list, ",")
	servers, names := named(stacks, stack.binary, names)
	picked, names := named(proxies, func(p proxyStack) string { return p.name }, names)
	https, names := named(httpStacks, func(h httpStack) string { return h.name }, names)
	if len(names) > 0 {
		return nil, nil, nil, fmt.Errorf("%w: %s", errUnknownStack, strings.Join(names, ","))
	}
	return servers, picked, https, nil
}

// named returns those of all whose names (as name gives them) are among
// names, in the order of all, and the names it did not find.
func named[S any](all []S, name func(S) string, names []string) ([]S, []string) {
	var picked []S
	for _, s := range all {
		if i := slices.Index(names, name(s)); i >= 0 {
			picked = append(picked, s)
			names = slices.Delete(names, i, i+1)
		}
	}
	return picked, names
}
