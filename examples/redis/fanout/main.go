// Command fanout loads a Redis server with pub/sub fan-out: it subscribes
// many connections to one channel, publishes messages to it from one
// more, pipelined, and waits until every subscriber has read every
// message. examples/redis/bench.sh runs it as its "fanout" test, to
// compare the server CPU each server spends per delivered message.
//
//	fanout -addr 127.0.0.1:6379 -subscribers 1000 -deliveries 2000000 -window 16
//
// With -csv it prints what redis-benchmark --csv prints: a header and one
// row, the test's name and the deliveries per second.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"strings"
	"sync"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "the server's address")
	subscribers := flag.Int("subscribers", 1000, "subscribers to the channel")
	deliveries := flag.Int("deliveries", 2_000_000, "messages to deliver in all: the messages published times the subscribers")
	window := flag.Int("window", 16, "PUBLISH commands sent before their replies are read")
	size := flag.Int("size", 16, "bytes in each message")
	csv := flag.Bool("csv", false, "print redis-benchmark's CSV")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("fanout: ")

	channel := "fanout"
	body := strings.Repeat("x", *size)
	message := fmt.Sprintf("*3\r\n$7\r\nmessage\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(channel), channel, len(body), body)
	published := max(1, *deliveries / *subscribers)

	var ready, done sync.WaitGroup
	for range *subscribers {
		c, err := net.Dial("tcp", *addr)
		if err != nil {
			log.Fatal(err)
		}
		defer c.Close()
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			subscribe(c, channel, &ready)
			drain(c, published*len(message))
		}()
	}
	ready.Wait()

	pub, err := net.Dial("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	defer pub.Close()
	start := time.Now()
	publish(pub, channel, body, published, *window, *subscribers)
	done.Wait()
	elapsed := time.Since(start)

	total := published * *subscribers
	rate := float64(total) / elapsed.Seconds()
	if *csv {
		fmt.Printf("\"test\",\"rps\"\n\"FANOUT\",\"%.2f\"\n", rate)
		return
	}
	fmt.Printf("%d messages to %d subscribers: %d deliveries in %v, %.0f a second\n",
		published, *subscribers, total, elapsed.Round(time.Millisecond), rate)
}

// subscribe subscribes c to channel and waits for the confirmation.
func subscribe(c net.Conn, channel string, ready *sync.WaitGroup) {
	defer ready.Done()
	if _, err := fmt.Fprintf(c, "SUBSCRIBE %s\r\n", channel); err != nil {
		log.Fatal(err)
	}
	want := fmt.Sprintf("*3\r\n$9\r\nsubscribe\r\n$%d\r\n%s\r\n:1\r\n", len(channel), channel)
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		log.Fatal(err)
	}
	if string(got) != want {
		log.Fatalf("SUBSCRIBE answered %q", got)
	}
}

// drain reads n bytes of messages from c.
func drain(c net.Conn, n int) {
	buf := make([]byte, 64<<10)
	for n > 0 {
		m, err := c.Read(buf[:min(len(buf), n)])
		if err != nil {
			log.Fatalf("a subscriber read %v with %d bytes to go", err, n)
		}
		n -= m
	}
}

// publish publishes n messages to channel on c, window at a time, and
// checks that each reached every subscriber.
func publish(c net.Conn, channel, body string, n, window, subscribers int) {
	cmd := fmt.Sprintf("*3\r\n$7\r\nPUBLISH\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(channel), channel, len(body), body)
	reply := fmt.Appendf(nil, ":%d", subscribers)
	batch := []byte(strings.Repeat(cmd, window))
	r := bufio.NewReader(c)
	for n > 0 {
		k := min(window, n)
		if _, err := c.Write(batch[:k*len(cmd)]); err != nil {
			log.Fatal(err)
		}
		for range k {
			line, err := r.ReadSlice('\n')
			if err != nil {
				log.Fatal(err)
			}
			if !bytes.Equal(bytes.TrimRight(line, "\r\n"), reply) {
				log.Fatalf("PUBLISH answered %q", line)
			}
		}
		n -= k
	}
}
