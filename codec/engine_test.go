package codec_test

import (
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/codec"
	"github.com/sluicenet/sluice/internal/enginetest"
)

const deadline = 5 * time.Second

// family is one codec family as a client and a sluice server use it over
// a real connection.
type family struct {
	name     string
	decoder  func() codec.Decoder // one per connection
	alphabet string               // what messages are made of
	size     int                  // every message's length, or 0 for any

	// encode frames msg as the client sends it.
	encode func(w io.Writer, msg []byte) error
	// echo answers, from the server, a frame dec decoded.
	echo func(c sluice.Conn, dec codec.Decoder, frame []byte) error
	// message returns the message in an answer dec decoded.
	message func(dec codec.Decoder, frame []byte) []byte
}

// codecFamily is a family whose Codec frames messages both ways.
func codecFamily(name string, c codec.Codec, alphabet string, size int) family {
	return family{
		name:     name,
		decoder:  func() codec.Decoder { return c },
		alphabet: alphabet,
		size:     size,
		encode:   c.Encode,
		echo: func(conn sluice.Conn, _ codec.Decoder, frame []byte) error {
			return c.Encode(conn, frame)
		},
		message: func(_ codec.Decoder, frame []byte) []byte { return frame },
	}
}

// respFamily sends each message as the argument of an ECHO command, and
// the server sends the command back as it came.
func respFamily() family {
	return family{
		name:     "RESP",
		decoder:  func() codec.Decoder { return new(codec.RESP) },
		alphabet: binaryAlphabet,
		encode: func(w io.Writer, msg []byte) error {
			cmd := codec.AppendArray(nil, 2)
			cmd = codec.AppendBulk(cmd, "ECHO")
			_, err := w.Write(codec.AppendBulk(cmd, msg))
			return err
		},
		echo: func(c sluice.Conn, _ codec.Decoder, frame []byte) error {
			_, err := c.Write(frame)
			return err
		},
		message: func(dec codec.Decoder, _ []byte) []byte { return dec.(*codec.RESP).Args()[1] },
	}
}

const (
	textAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789 .,"
	// binaryAlphabet adds bytes that text framings would trip on.
	binaryAlphabet = textAlphabet + "\x00\r\n\xff*$|"
)

func families() []family {
	return []family{
		codecFamily("LengthField", codec.LengthField{}, binaryAlphabet, 0),
		codecFamily("LengthField 2-byte little-endian counting its header",
			codec.LengthField{Size: 2, LittleEndian: true, IncludesHeader: true}, binaryAlphabet, 0),
		codecFamily("Line", codec.Line{}, textAlphabet, 0),
		codecFamily("Delimiter", codec.Delimiter{Delim: []byte("||")}, textAlphabet, 0),
		codecFamily("Fixed", codec.Fixed{Size: 16}, binaryAlphabet, 16),
		respFamily(),
	}
}

// echoServer answers every frame it decodes as its family says, and
// closes a connection on the first error, which it reports on errs.
type echoServer struct {
	sluice.BuiltinEventEngine
	f       family
	errs    chan error
	partial atomic.Int64 // events that left part of a frame buffered
}

func (s *echoServer) OnOpen(c sluice.Conn) ([]byte, sluice.Action) {
	c.SetContext(s.f.decoder())
	return nil, sluice.None
}

func (s *echoServer) OnTraffic(c sluice.Conn) sluice.Action {
	dec := c.Context().(codec.Decoder)
	err := codec.Each(c, dec, func(frame []byte) error {
		return s.f.echo(c, dec, frame)
	})
	if err != nil {
		s.errs <- err
		return sluice.Close
	}
	if c.InboundBuffered() > 0 {
		s.partial.Add(1)
	}
	return sluice.None
}

// serve runs h on an engine with one loop and returns where to dial.
func serve(t *testing.T, h sluice.EventHandler) string {
	_, addr := enginetest.Serve(t, h, sluice.WithNumEventLoop(1))
	return addr
}

// messages returns n random messages of the family.
func messages(f family, n int) [][]byte {
	rng := newRand()
	msgs := make([][]byte, n)
	for i := range msgs {
		size := f.size
		if size == 0 {
			size = rng.IntN(300)
		}
		msgs[i] = randomBytes(rng, size, f.alphabet)
	}
	return msgs
}

// chunked splits p into chunks of 1 to 8 bytes, each to be written alone.
func chunked(p []byte) [][]byte {
	rng := newRand()
	var chunks [][]byte
	for len(p) > 0 {
		n := min(1+rng.IntN(8), len(p))
		chunks = append(chunks, p[:n])
		p = p[n:]
	}
	return chunks
}

// send writes the chunks one at a time, from a goroutine of its own so
// that the caller can read the answers meanwhile; the channel returned
// gets the result once every chunk is written.
func send(conn net.Conn, chunks [][]byte) <-chan error {
	sent := make(chan error, 1)
	go func() {
		for _, c := range chunks {
			if _, err := conn.Write(c); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	return sent
}

// receive reads from conn until f's decoder has decoded n answers, and
// returns the messages in them.
func receive(t *testing.T, conn net.Conn, f family, n int) []string {
	t.Helper()
	var in codec.Buffer
	dec := f.decoder()
	got := make([]string, 0, n)
	chunk := make([]byte, 4096)
	for len(got) < n {
		k, err := conn.Read(chunk)
		require.NoError(t, err, "%d of %d answers", len(got), n)
		_, _ = in.Write(chunk[:k])
		require.NoError(t, codec.Each(&in, dec, func(frame []byte) error {
			got = append(got, string(f.message(dec, frame)))
			return nil
		}))
	}
	return got
}

// TestEngineEcho checks, for every codec family, that frames a client
// sends in small pieces are decoded by a sluice handler, one by one, in
// order, and echoed whole.
func TestEngineEcho(t *testing.T) {
	for _, f := range families() {
		t.Run(f.name, func(t *testing.T) {
			srv := &echoServer{f: f, errs: make(chan error, 1)}
			conn := enginetest.Dial(t, serve(t, srv))

			msgs := messages(f, 200)
			var stream codec.Buffer
			want := make([]string, len(msgs))
			for i, m := range msgs {
				require.NoError(t, f.encode(&stream, m))
				want[i] = string(m)
			}
			wire, _ := stream.Peek(0)
			sent := send(conn, chunked(wire))

			assert.Equal(t, want, receive(t, conn, f, len(want)))
			require.NoError(t, <-sent)
			assert.Empty(t, srv.errs, "the server saw no error")
			assert.Positive(t, srv.partial.Load(), "frames arrived in pieces")
		})
	}
}

// TestEngineHugeFrameAnnounced checks that a client announcing a 4 GiB
// frame loses its connection as soon as the header arrives, while another
// connection on the same loop carries on.
func TestEngineHugeFrameAnnounced(t *testing.T) {
	f := codecFamily("LengthField", codec.LengthField{Size: 8}, binaryAlphabet, 0)
	srv := &echoServer{f: f, errs: make(chan error, 1)}
	addr := serve(t, srv)
	good, hostile := enginetest.Dial(t, addr), enginetest.Dial(t, addr)

	roundTrip := func(msg string) {
		t.Helper()
		var frame codec.Buffer
		require.NoError(t, f.encode(&frame, []byte(msg)))
		wire, _ := frame.Peek(0)
		_, err := good.Write(wire)
		require.NoError(t, err)
		assert.Equal(t, []string{msg}, receive(t, good, f, 1))
	}
	roundTrip("before")

	_, err := hostile.Write(binary.BigEndian.AppendUint64(nil, 4<<30))
	require.NoError(t, err)
	n, err := hostile.Read(make([]byte, 1))
	assert.Zero(t, n)
	assert.ErrorIs(t, err, io.EOF, "the server closes the connection")
	select {
	case err := <-srv.errs:
		assert.ErrorIs(t, err, codec.ErrFrameTooLarge)
	case <-time.After(deadline):
		t.Fatal("the handler saw no error")
	}

	for i := range 3 {
		roundTrip("after " + strconv.Itoa(i))
	}
}
