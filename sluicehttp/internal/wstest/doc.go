// Package wstest checks that gorilla/websocket, unchanged, serves
// WebSockets over sluicehttp's Hijack. It is a module of its own so that
// the library's go.mod does not depend on gorilla/websocket.
package wstest
