package sluicehttp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/sluicehttp"
)

// A server for any http.Handler, on two event loops; a client asks it,
// and it stops gracefully.
func Example() {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello/{name}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello, %s", r.PathValue("name"))
	})
	srv := &sluicehttp.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	eng, err := srv.Start("tcp://127.0.0.1:0", sluice.WithNumEventLoop(2))
	if err != nil {
		panic(err)
	}

	resp, err := http.Get("http://" + eng.Addrs()[0].String() + "/hello/sluice")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.Status, resp.Header.Get("Content-Type"))
	fmt.Println(string(body))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	http.DefaultClient.CloseIdleConnections()
	fmt.Println("stopped:", srv.Shutdown(ctx))
	// Output:
	// 200 OK text/plain; charset=utf-8
	// hello, sluice
	// stopped: <nil>
}

// health answers GET /health on the event loop, below the http.Handler
// API; its ServeHTTP answers the rest.
type health struct{ http.Handler }

func (health) ServeLoop(w *sluicehttp.LoopResponse, r *sluicehttp.LoopRequest) bool {
	if r.Path() != "/health" {
		return false // for ServeHTTP
	}
	w.AddHeader("Content-Type", "text/plain")
	w.WriteString("ok")
	return true
}

// A Handler that is also a LoopHandler answers its hottest route on the
// loop, without an *http.Request or a heap allocation, and everything
// else through ServeHTTP.
func ExampleLoopHandler() {
	srv := &sluicehttp.Server{Handler: health{http.NotFoundHandler()}, Inline: true}
	eng, err := srv.Start("tcp://127.0.0.1:0", sluice.WithNumEventLoop(1))
	if err != nil {
		panic(err)
	}
	for _, path := range []string{"/health", "/other"} {
		resp, err := http.Get("http://" + eng.Addrs()[0].String() + path)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%s: %s %q\n", path, resp.Status, body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	http.DefaultClient.CloseIdleConnections()
	fmt.Println("stopped:", srv.Shutdown(ctx))
	// Output:
	// /health: 200 OK "ok"
	// /other: 404 Not Found "404 page not found\n"
	// stopped: <nil>
}
