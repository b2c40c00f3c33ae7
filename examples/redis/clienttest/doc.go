// Package clienttest runs examples/redis under a real Redis client
// library, go-redis, in a module of its own so that the engine's module
// depends on no client: pub/sub, blocking commands and transactions, each
// across the server's event loops. It has no code but its tests.
package clienttest
