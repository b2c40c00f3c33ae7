package hello

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHandlerAnswersBothTests(t *testing.T) {
	srv := httptest.NewServer(Handler)
	defer srv.Close()
	require.NoError(t, Check(srv.URL))

	res, err := http.Get(srv.URL + "/nope")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusNotFound, res.StatusCode)
}

// TestCheckFindsWrongAnswers breaks each thing Check promises to check,
// one at a time.
func TestCheckFindsWrongAnswers(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    http.HandlerFunc
		want string
	}{
		{"status", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Server", ServerName)
			w.WriteHeader(http.StatusAccepted)
			w.Write([]byte(Plaintext))
		}, "status 202 Accepted"},
		{"plaintext body", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Server", ServerName)
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte("Hello, World!\n"))
		}, `body "Hello, World!\n"`},
		{"content type", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Server", ServerName)
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte(Plaintext))
		}, `Content-Type "text/html"`},
		{"server", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte(Plaintext))
		}, "no Server header"},
		{"date", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Server", ServerName)
			w.Header().Set("Date", "yesterday")
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte(Plaintext))
		}, `Date "yesterday"`},
		{"json body", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == PlaintextPath {
				Handler.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Server", ServerName)
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"message":"Hello, World!","extra":1}`))
		}, "/json: body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.h)
			defer srv.Close()
			err := Check(srv.URL)
			assert.ErrorIs(t, err, ErrAnswer)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// TestCheckWantsADate: net/http adds a Date to every answer, so a server
// that sends none is written by hand.
func TestCheckWantsADate(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
			c.Write([]byte("HTTP/1.1 200 OK\r\nServer: x\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, World!"))
		}
	}()
	err = Check("http://" + ln.Addr().String())
	assert.ErrorIs(t, err, ErrAnswer)
	assert.ErrorContains(t, err, `Date ""`)
}
