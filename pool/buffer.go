package pool

import "github.com/valyala/bytebufferpool"

// Buffer is a growable byte buffer meant to be reused: its bytes are in B.
type Buffer = bytebufferpool.ByteBuffer

// BufferPool is a pool of Buffers; its zero value is ready to use. It
// learns the sizes its buffers are used for, so a kind of data whose sizes
// differ from the rest, such as large uploads, is best given a pool of its
// own; GetBuffer and PutBuffer share one for everything else.
type BufferPool = bytebufferpool.Pool

// GetBuffer returns an empty Buffer from the shared pool.
func GetBuffer() *Buffer { return bytebufferpool.Get() }

// PutBuffer returns b to the shared pool. b must not be used afterwards.
func PutBuffer(b *Buffer) { bytebufferpool.Put(b) }
