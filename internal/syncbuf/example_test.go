package syncbuf_test

import (
	"fmt"
	"log/slog"
	"sync"

	"github.com/sluicenet/sluice/internal/syncbuf"
)

// A logger writes from other goroutines while the test reads.
func Example() {
	var out syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // no time, for a stable output
			}
			return a
		},
	}))
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() { logger.Info("loop", "n", i) })
	}
	wg.Wait()
	fmt.Println(out.Contains("level=INFO msg=loop n=2"))
	// Output: true
}
