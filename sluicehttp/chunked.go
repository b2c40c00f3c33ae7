package sluicehttp

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"net/http"
)

// The body decoder. It runs on the loop, over whatever part of a body has
// arrived, and keeps its place between reads: a Content-Length body is a
// count of bytes, a chunked one a small state machine that checks what
// net/http's chunked reader checks (CRLF line ends, hexadecimal sizes of
// at most 16 digits, the CRLF after each chunk's data, a bound on what is
// not data, a bounded trailer).

// Errors a request body's Read returns for a body that breaks its framing,
// with the words of net/http's own.
var (
	errChunkBareLF   = errors.New("chunked line ends with bare LF")
	errChunkCR       = errors.New("invalid CR in chunked line")
	errChunkLine     = errors.New("header line too long")
	errChunkMalform  = errors.New("malformed chunked encoding")
	errChunkEmpty    = errors.New("empty hex number for chunk length")
	errChunkHex      = errors.New("invalid byte in chunk length")
	errChunkTooLarge = errors.New("http chunk length too large")
	errChunkExcess   = errors.New("chunked encoding contains too much non-data")
	errTrailerLong   = errors.New("http: suspiciously long trailer after chunked body")
	errTrailer       = errors.New("http: malformed trailer")
)

// maxChunkLine bounds a chunk's size line, and the trailer, as the 4 KiB
// of net/http's buffered reader bounds them.
const maxChunkLine = 4096

type chunkState uint8

const (
	chunkSize    chunkState = iota // reading a size line
	chunkData                      // reading a chunk's data
	chunkEnd                       // reading the CRLF after the data
	chunkTrailer                   // reading the trailer
	chunkDone
)

// decoder takes a body's bytes off the wire: it is the body's framing,
// and the count of what is left of it.
type decoder struct {
	chunked bool
	state   chunkState
	left    uint64 // what is left of the body (Content-Length) or of the chunk
	excess  int64  // bytes that were not data, net of an allowance
	trailer http.Header
}

// done reports whether the whole body has been taken.
func (d *decoder) done() bool {
	if d.chunked {
		return d.state == chunkDone
	}
	return d.left == 0
}

// decode takes what it can of the body from p: it appends up to room
// bytes of data to dst, and returns the grown dst and how many bytes of p
// it took. It stops at the end of the body, when room is spent, or when p
// ends inside a size line or the trailer, which stay in p until the rest
// comes. A body that breaks its framing returns an error.
func (d *decoder) decode(p, dst []byte, room int) (out []byte, n int, err error) {
	if !d.chunked {
		k := min(uint64(len(p)), d.left, uint64(room))
		d.left -= k
		return append(dst, p[:k]...), int(k), nil
	}
	for n < len(p) {
		q := p[n:]
		switch d.state {
		case chunkSize:
			line, used, err := chunkLine(q)
			if err != nil || used == 0 {
				return dst, n, err
			}
			size, err := d.size(line)
			if err != nil {
				return dst, n, err
			}
			n += used
			d.left = size
			d.state = chunkData
			if size == 0 {
				d.state = chunkTrailer
			}
		case chunkData:
			if room == 0 {
				return dst, n, nil
			}
			k := int(min(uint64(len(q)), d.left, uint64(room)))
			dst = append(dst, q[:k]...)
			n += k
			room -= k
			d.left -= uint64(k)
			if d.left == 0 {
				d.state = chunkEnd
			}
		case chunkEnd:
			if len(q) < 2 {
				if q[0] != '\r' {
					return dst, n, errChunkMalform
				}
				return dst, n, nil
			}
			if q[0] != '\r' || q[1] != '\n' {
				return dst, n, errChunkMalform
			}
			n += 2
			d.state = chunkSize
		case chunkTrailer:
			used, err := d.readTrailer(q)
			if err != nil || used == 0 {
				return dst, n, err
			}
			n += used
			d.state = chunkDone
		case chunkDone:
			return dst, n, nil
		}
	}
	return dst, n, nil
}

// chunkLine returns the size line at the start of p without its CRLF,
// and how many bytes it took with it; none when p does not hold all of it
// yet. The line must end in CRLF, with no other CR in it.
func chunkLine(p []byte) (line []byte, used int, err error) {
	i := bytes.IndexByte(p[:min(len(p), maxChunkLine)], '\n')
	if i < 0 {
		if len(p) >= maxChunkLine {
			return nil, 0, errChunkLine
		}
		return nil, 0, nil
	}
	switch cr := bytes.IndexByte(p[:i+1], '\r'); {
	case cr < 0:
		return nil, 0, errChunkBareLF
	case cr != i-1:
		return nil, 0, errChunkCR
	}
	return p[:i-1], i + 1, nil
}

// size parses a size line, drops its extensions, and keeps count of the
// bytes that are not data, as net/http does against a peer that sends
// mostly framing.
func (d *decoder) size(line []byte) (uint64, error) {
	d.excess += int64(len(line)) + 2
	for len(line) > 0 && (line[len(line)-1] == ' ' || line[len(line)-1] == '\t') {
		line = line[:len(line)-1]
	}
	line, _, _ = bytes.Cut(line, []byte{';'})
	if len(line) == 0 {
		return 0, errChunkEmpty
	}
	var n uint64
	for i, c := range line {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, errChunkHex
		}
		if i == 16 {
			return 0, errChunkTooLarge
		}
		n = n<<4 | uint64(c)
	}
	d.excess -= 16 + 2*int64(n) // wrapping as net/http's does
	d.excess = max(d.excess, 0)
	if d.excess > 16*1024 {
		return 0, errChunkExcess
	}
	return n, nil
}

// readTrailer takes the trailer that ends a chunked body: a bare CRLF, or
// header lines and a blank line, which must be whole within the first
// 4 KiB, as net/http looks for them. It returns how many bytes it took;
// none when p does not hold all of it yet.
func (d *decoder) readTrailer(p []byte) (int, error) {
	if len(p) < 2 {
		return 0, nil
	}
	if p[0] == '\r' && p[1] == '\n' {
		return 2, nil
	}
	window := p[:min(len(p), maxChunkLine)]
	if bytes.Index(window, []byte("\r\n\r\n")) < 0 {
		if len(p) >= maxChunkLine {
			return 0, errTrailerLong
		}
		return 0, nil
	}
	end := headEnd(append([]byte{'\n'}, p...), 0) - 1
	if end <= 0 {
		return 0, errTrailer // unreachable: the window holds a blank line
	}
	b := append([]byte(nil), p[:end]...)       // the trailer's strings point into b
	hdr, _, e := parseFields(b, nil, nil, nil) // net/http checks no trailer key further
	if e != nil {
		return 0, errTrailer
	}
	d.trailer = hdr
	return end, nil
}

// errBodyCut is what a body's Read returns when the connection ends, or
// stops being read, before the whole body has come.
var errBodyCut = io.ErrUnexpectedEOF

// mergeTrailer sets the fields of a body's trailer into the request's
// Trailer, as net/http does once the body has been read to its end.
func mergeTrailer(dst, src http.Header) http.Header {
	if dst == nil {
		return src
	}
	maps.Copy(dst, src)
	return dst
}
