// Package hello is what every server in the benchmarks' HTTP table
// answers: the TechEmpower Framework Benchmarks' plaintext and JSON
// tests. Handler is the one http.Handler that net/http, nbio's nbhttp and
// sluicehttp serve, so that their columns differ only in the server; the
// fasthttp server answers the same with fasthttp's own RequestHandler.
//
// Check asks a server both questions and says what is wrong with its
// answers: the runner calls it before it measures a server, since wrk
// counts only statuses and socket errors, not what a body says.
package hello

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// The two tests' paths and answers.
const (
	PlaintextPath = "/plaintext"
	JSONPath      = "/json"
	Plaintext     = "Hello, World!"
)

// Message is the JSON test's object, serialized for each request as the
// benchmark's rules ask.
type Message struct {
	Message string `json:"message"`
}

// ServerName is the Server header Handler sets; the servers add the Date
// header themselves, each formatting it at most once a second.
const ServerName = "hello"

// The header values every answer shares, set as they are.
var (
	serverName = []string{ServerName}
	textPlain  = []string{"text/plain"}
	appJSON    = []string{"application/json"}
	plaintext  = []byte(Plaintext)
)

// Handler answers /plaintext with "Hello, World!" as text/plain and /json
// with {"message":"Hello, World!"} as application/json, both with a Server
// header; anything else is 404 Not Found.
var Handler http.Handler = http.HandlerFunc(serve)

func serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h["Server"] = serverName
	switch r.URL.Path {
	case PlaintextPath:
		h["Content-Type"] = textPlain
		w.Write(plaintext)
	case JSONPath:
		b, err := json.Marshal(Message{Message: Plaintext})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		h["Content-Type"] = appJSON
		w.Write(b)
	default:
		http.NotFound(w, r)
	}
}

// ErrAnswer reports an answer that is not the test's.
var ErrAnswer = errors.New("hello: wrong answer")

// checkTimeout bounds each of Check's requests.
const checkTimeout = 5 * time.Second

// Check asks the server at base ("http://host:port") both tests over one
// keep-alive connection and checks each answer: status 200, the body, its
// Content-Type, and a Server and a valid Date header.
func Check(base string) error {
	tr := &http.Transport{MaxIdleConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: checkTimeout}
	if err := check(c, base+PlaintextPath, "text/plain", func(b []byte) bool { return string(b) == Plaintext }); err != nil {
		return err
	}
	return check(c, base+JSONPath, "application/json", func(b []byte) bool {
		var m Message
		d := json.NewDecoder(bytes.NewReader(b))
		d.DisallowUnknownFields()
		return d.Decode(&m) == nil && m.Message == Plaintext && !d.More()
	})
}

// check GETs url and checks the answer: 200, a Content-Type starting with
// ctype, a body that good accepts, a Server and a Date header.
func check(c *http.Client, url, ctype string, good func([]byte) bool) error {
	res, err := c.Get(url)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	var wrong []string
	if res.StatusCode != http.StatusOK {
		wrong = append(wrong, "status "+res.Status)
	}
	if !good(body) {
		wrong = append(wrong, fmt.Sprintf("body %q", body))
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, ctype) {
		wrong = append(wrong, fmt.Sprintf("Content-Type %q", ct))
	}
	if res.Header.Get("Server") == "" {
		wrong = append(wrong, "no Server header")
	}
	if _, err := http.ParseTime(res.Header.Get("Date")); err != nil {
		wrong = append(wrong, fmt.Sprintf("Date %q", res.Header.Get("Date")))
	}
	if len(wrong) > 0 {
		return fmt.Errorf("%w: %s: %s", ErrAnswer, url, strings.Join(wrong, ", "))
	}
	return nil
}
