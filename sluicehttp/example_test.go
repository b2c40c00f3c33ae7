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
