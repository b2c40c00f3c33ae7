package wstest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/poller"
	"github.com/sluicenet/sluice/sluicehttp"
)

const deadline = 10 * time.Second

// echo upgrades the request to a WebSocket and echoes every message.
func echo(t *testing.T) http.HandlerFunc {
	up := websocket.Upgrader{}
	return func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			t.Errorf("upgrade: %v", err)
			return
		}
		// An inline handler must not wait on the connection it hijacked:
		// the loop delivers its bytes. The echo goes on elsewhere.
		go func() {
			defer ws.Close()
			for {
				kind, msg, err := ws.ReadMessage()
				if err != nil {
					return
				}
				if err := ws.WriteMessage(kind, msg); err != nil {
					return
				}
			}
		}()
	}
}

// TestGorillaEcho checks a gorilla/websocket echo server over sluicehttp,
// with handlers on the pool and inline: text and binary messages, small
// and larger than the server's windows, and a clean close.
func TestGorillaEcho(t *testing.T) {
	var kind poller.Kind
	if name := os.Getenv("SLUICE_TEST_POLLER"); name != "" {
		if err := kind.UnmarshalText([]byte(name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, inline := range []bool{false, true} {
		t.Run(fmt.Sprint("inline=", inline), func(t *testing.T) {
			srv := &sluicehttp.Server{Handler: echo(t), Inline: inline}
			eng, err := srv.Start("tcp://127.0.0.1:0", sluice.WithPoller(kind), sluice.WithNumEventLoop(2))
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				defer cancel()
				if err := srv.Shutdown(ctx); err != nil {
					t.Error(err)
				}
			}()
			url := "ws://" + eng.Addrs()[0].String() + "/echo"
			ws, resp, err := websocket.DefaultDialer.Dial(url, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			if resp.StatusCode != http.StatusSwitchingProtocols {
				t.Fatalf("status %d", resp.StatusCode)
			}
			ws.SetReadDeadline(time.Now().Add(deadline))
			for i, msg := range []string{"hello", strings.Repeat("x", 1<<20), "", "last"} {
				kind := websocket.TextMessage
				if i%2 == 1 {
					kind = websocket.BinaryMessage
				}
				if err := ws.WriteMessage(kind, []byte(msg)); err != nil {
					t.Fatal(err)
				}
				gotKind, got, err := ws.ReadMessage()
				if err != nil {
					t.Fatal(err)
				}
				if gotKind != kind || string(got) != msg {
					t.Fatalf("message %d: got %d bytes of kind %d", i, len(got), gotKind)
				}
			}
			err = ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye"))
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := ws.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
				t.Fatalf("closing: %v", err)
			}
		})
	}
}
