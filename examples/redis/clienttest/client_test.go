package clienttest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serverBinary is examples/redis, built once for all the tests (with the
// race detector when they run with it).
var serverBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-redis-clienttest")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverBinary = filepath.Join(dir, "redis")
	args := []string{"build", "-o", serverBinary}
	if raceBuild {
		args = append(args, "-race")
	}
	args = append(args, "github.com/sluicenet/sluice/examples/redis")
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the server: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is a running examples/redis on a Unix socket of the test's own.
type server struct {
	sock string
}

// start runs the server with loops event loops and args until the test
// ends, and waits until it accepts connections. Its connections are
// spread over the loops in turn, so a test's clients, connected one after
// another, are on different loops.
func start(t *testing.T, loops int, args ...string) *server {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "redis.sock")
	cmd := exec.Command(serverBinary, append([]string{"-addr", "unix://" + sock, "-loops", strconv.Itoa(loops)}, args...)...)
	log := new(output)
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			assert.NoError(t, err, "the server did not stop cleanly: %s", log.String())
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Errorf("the server did not stop: %s", log.String())
		}
		assert.NotContains(t, log.String(), "DATA RACE")
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
			return &server{sock: sock}
		}
		require.True(t, time.Now().Before(deadline), "the server did not start: %v\n%s", err, log.String())
		time.Sleep(time.Millisecond)
	}
}

// output is what the server prints, written by the goroutines os/exec
// copies with and read by the test.
type output struct {
	mu sync.Mutex
	b  strings.Builder
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// client returns a go-redis client of the server speaking RESP proto,
// closed when the test ends.
func (s *server) client(t *testing.T, proto int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: s.sock, Protocol: proto})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestPubSubAcrossLoops subscribes go-redis clients, by channel and by
// pattern, in RESP2 and RESP3, on every loop, and publishes from another:
// each gets every message, in order.
func TestPubSubAcrossLoops(t *testing.T) {
	const loops, messages = 4, 300
	s := start(t, loops)
	ctx := context.Background()
	var subs []*redis.PubSub
	for i := range loops {
		c := s.client(t, 2+i%2)
		var ps *redis.PubSub
		if i < 2 {
			ps = c.Subscribe(ctx, "news")
		} else {
			ps = c.PSubscribe(ctx, "ne*")
		}
		t.Cleanup(func() { ps.Close() })
		_, err := ps.Receive(ctx) // the confirmation
		require.NoError(t, err)
		subs = append(subs, ps)
	}
	pub := s.client(t, 3)
	for i := range messages {
		n, err := pub.Publish(ctx, "news", strconv.Itoa(i)).Result()
		require.NoError(t, err)
		require.EqualValues(t, loops, n)
	}
	for i, ps := range subs {
		ch := ps.Channel()
		for want := range messages {
			select {
			case m := <-ch:
				require.Equal(t, "news", m.Channel)
				require.Equal(t, strconv.Itoa(want), m.Payload, "subscriber %d", i)
				if i >= 2 {
					require.Equal(t, "ne*", m.Pattern)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("subscriber %d: message %d never came", i, want)
			}
		}
	}
	n, err := pub.PubSubNumSub(ctx, "news").Result()
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"news": 2}, n)
	pats, err := pub.PubSubNumPat(ctx).Result()
	require.NoError(t, err)
	assert.EqualValues(t, 1, pats)
}

// TestBlockingAcrossLoops blocks go-redis clients on one loop and pushes
// from another.
func TestBlockingAcrossLoops(t *testing.T) {
	s := start(t, 2)
	ctx := context.Background()
	blocked, pusher := s.client(t, 3), s.client(t, 2)
	require.NoError(t, blocked.Ping(ctx).Err()) // connects first: loop 0
	require.NoError(t, pusher.Ping(ctx).Err())  // then loop 1

	type result struct {
		v   []string
		err error
	}
	got := make(chan result, 1)
	go func() {
		v, err := blocked.BLPop(ctx, 0, "queue").Result()
		got <- result{v, err}
	}()
	waitBlocked(t, pusher, 1)
	require.NoError(t, pusher.RPush(ctx, "queue", "job").Err())
	r := <-got
	require.NoError(t, r.err)
	assert.Equal(t, []string{"queue", "job"}, r.v)

	// A fractional timeout, which go-redis's BRPop would round up to a
	// second.
	start := time.Now()
	err := blocked.Do(ctx, "BRPOP", "nothing", "0.15").Err()
	assert.ErrorIs(t, err, redis.Nil)
	assert.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)

	moved := make(chan result, 1)
	go func() {
		v, err := blocked.BLMove(ctx, "src", "dst", "LEFT", "RIGHT", 0).Result()
		moved <- result{[]string{v}, err}
	}()
	waitBlocked(t, pusher, 1)
	require.NoError(t, pusher.LPush(ctx, "src", "item").Err())
	r = <-moved
	require.NoError(t, r.err)
	assert.Equal(t, []string{"item"}, r.v)
	assert.Equal(t, []string{"item"}, pusher.LRange(ctx, "dst", 0, -1).Val())

	zgot := make(chan *redis.ZWithKey, 1)
	go func() {
		z, _ := blocked.BZPopMin(ctx, 0, "scores").Result()
		zgot <- z
	}()
	waitBlocked(t, pusher, 1)
	require.NoError(t, pusher.ZAdd(ctx, "scores", redis.Z{Score: 1.5, Member: "low"}, redis.Z{Score: 2, Member: "high"}).Err())
	z := <-zgot
	require.NotNil(t, z)
	assert.Equal(t, "scores", z.Key)
	assert.Equal(t, "low", z.Member)
	assert.Equal(t, 1.5, z.Score)
}

// waitBlocked waits until the server has n clients blocked.
func waitBlocked(t *testing.T, c *redis.Client, n int) {
	t.Helper()
	want := "blocked_clients:" + strconv.Itoa(n) + "\r\n"
	require.Eventually(t, func() bool {
		info, err := c.Info(context.Background(), "clients").Result()
		return err == nil && strings.Contains(info, want)
	}, 10*time.Second, time.Millisecond)
}

// TestTransactionsAcrossLoops increments a counter with go-redis's
// optimistic transactions (WATCH, then MULTI and EXEC) from clients on
// every loop, retrying those a concurrent write failed: none is lost.
// Meanwhile transactions move amounts between two keys, and a reader never
// sees their sum change.
func TestTransactionsAcrossLoops(t *testing.T) {
	const loops, workers, increments = 4, 8, 40
	s := start(t, loops)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, workers+2)
	for w := range workers {
		c := s.client(t, 2+w%2)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range increments {
				for {
					err := c.Watch(ctx, func(tx *redis.Tx) error {
						n, err := tx.Get(ctx, "counter").Int()
						if err != nil && !errors.Is(err, redis.Nil) {
							return err
						}
						_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
							p.Set(ctx, "counter", n+1, 0)
							return nil
						})
						return err
					}, "counter")
					if errors.Is(err, redis.TxFailedErr) {
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					break
				}
			}
		}()
	}

	mover, reader := s.client(t, 3), s.client(t, 2)
	require.NoError(t, mover.MSet(ctx, "a", 100, "b", 0).Err())
	stop := make(chan struct{})
	var moves sync.WaitGroup
	moves.Add(2)
	go func() {
		defer moves.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := mover.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Decr(ctx, "a")
				p.Incr(ctx, "b")
				return nil
			}); err != nil {
				errs <- err
				return
			}
		}
	}()
	go func() {
		defer moves.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			v, err := reader.MGet(ctx, "a", "b").Result()
			if err != nil {
				errs <- err
				return
			}
			a, _ := strconv.Atoi(v[0].(string))
			b, _ := strconv.Atoi(v[1].(string))
			if a+b != 100 {
				errs <- fmt.Errorf("a transaction seen half done: a=%d b=%d", a, b)
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	moves.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	n, err := s.client(t, 3).Get(ctx, "counter").Int()
	require.NoError(t, err)
	assert.Equal(t, workers*increments, n)
}

// TestSlowSubscriberDropped has go-redis clients publish while one
// subscriber, on its own loop, never reads: it is disconnected once its
// messages pass the pub/sub limit, and the publishers go on at the speed
// they had before it subscribed.
func TestSlowSubscriberDropped(t *testing.T) {
	const messages, size = 300, 32 << 10
	s := start(t, 3, "-client-output-buffer-limit", "pubsub 1mb 0 0")
	ctx := context.Background()
	pub := s.client(t, 3)
	require.NoError(t, pub.Ping(ctx).Err())
	body := strings.Repeat("x", size)
	publish := func() time.Duration {
		began := time.Now()
		for range messages {
			require.NoError(t, pub.Publish(ctx, "c", body).Err())
		}
		return time.Since(began)
	}
	alone := publish()

	slow, err := net.Dial("unix", s.sock)
	require.NoError(t, err)
	defer slow.Close()
	require.NoError(t, slow.(*net.UnixConn).SetReadBuffer(4096))
	_, err = io.WriteString(slow, "SUBSCRIBE c\r\n")
	require.NoError(t, err)
	r := bufio.NewReader(slow)
	require.NoError(t, slow.SetReadDeadline(time.Now().Add(10*time.Second)))
	for range 3 { // the confirmation: *3, subscribe, c, :1 in lines
		_, err := r.ReadString('\n')
		require.NoError(t, err)
	}
	require.NoError(t, waitSubscribers(ctx, pub, "c", 1))
	withSlow := publish()
	// The server has disconnected it, which unsubscribes it.
	require.NoError(t, waitSubscribers(ctx, pub, "c", 0))
	_, err = io.Copy(io.Discard, r)
	assert.NoError(t, err, "a Unix socket has no reset: the subscriber reads the end")
	t.Logf("%d publications of %d bytes: %v alone, %v with a subscriber that does not read", messages, size, alone, withSlow)
	assert.Less(t, withSlow, 10*alone+time.Second, "the slow subscriber slowed the publisher")
}

// waitSubscribers waits until channel has n subscribers.
func waitSubscribers(ctx context.Context, c *redis.Client, channel string, n int64) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := c.PubSubNumSub(ctx, channel).Result()
		if err != nil {
			return err
		}
		if got[channel] == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s has %d subscribers, not %d", channel, got[channel], n)
		}
		time.Sleep(time.Millisecond)
	}
}
