package main

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicenet/sluice"
)

var (
	//lint:ignore ST1005 Redis's wording, full stop included
	errClientName = errors.New("ERR Client names cannot contain spaces, newlines or special characters.")
	errNoClient   = errors.New("ERR No such client")
	errClientID   = errors.New("ERR client-id should be greater than 0")

	errInvalidClientID = errors.New("ERR Invalid client ID")
)

// client is a connection's state. Its loop alone touches call, req and
// the fields marked as its loop's; the rest is set when the connection
// opens, or safe to use from the other loops, which list and kill
// clients, publish to them and wake them.
type client struct {
	call call
	req  request
	conn sluice.Conn
	loop *loopState

	id      uint64 // as Redis numbers clients, from 1 in the order they connect
	addr    string // the client's address: the PROXY source, when a header was read
	laddr   string
	unix    bool // connected to a Unix socket
	fd      int
	created int64 // Unix milliseconds

	proto      atomic.Int32 // 2, or 3 after HELLO 3
	lastActive atomic.Int64 // Unix milliseconds of the last batch of commands
	lastCmd    atomic.Pointer[command]
	killed     atomic.Bool // by CLIENT KILL: unlisted at once, though its loop resets it later
	state      atomic.Uint32
	qbuf       atomic.Int64 // the bytes of commands it had sent, as its last batch left them

	mu   sync.Mutex // guards the name, set by the client, read by CLIENT LIST
	name string

	// Its loop's: whether OnClose has run, and CLIENT REPLY's mode.
	closed            bool
	replyOff, skipOne bool

	// Pub/sub. The names it is subscribed to are its loop's; the counts
	// are for the other loops, and so are the bytes of messages posted to
	// its loop and not yet written (pending), when its unsent output went
	// over the pub/sub class's soft limit, and whether it was dropped for
	// passing its limit.
	subs    [numSubKinds]map[string]struct{}
	nsubs   [numSubKinds]atomic.Int32
	pending atomic.Int64
	// The messages other loops' publishers sent it, gathered by its loop
	// until the next call of OnTraffic (conn.Wake), which writes them with
	// its replies: one send a batch, as a callback's writes are sent. Its
	// loop's.
	outbox        []byte
	overSoftSince atomic.Int64 // Unix milliseconds; 0 while under it
	dropped       atomic.Bool

	// The blocked command it waits in, if any: its loop's, and for CLIENT
	// UNBLOCK from other loops.
	block    *waiter
	blockRef atomic.Pointer[waiter]

	// Its transaction (MULTI) and the keys it watches, its loop's; how
	// many commands the transaction holds, for CLIENT LIST; and whether a
	// key it watches has changed since, which a write on any loop tells.
	tx       *transaction
	watching []watched
	queued   atomic.Int32
	dirty    atomic.Bool
}

// A client's state bits, for CLIENT LIST's flags.
const (
	inPubSubState uint32 = 1 << iota
	blockedState
	inMultiState
)

func newClient(s *server, c sluice.Conn) *client {
	now := time.Now().UnixMilli()
	cl := &client{id: s.lastID.Add(1), conn: c, loop: s.loops[c.Loop().Index()], fd: c.Fd(), created: now}
	cl.addr, cl.laddr = addrString(c.RemoteAddr()), addrString(c.LocalAddr())
	if local, ok := c.LocalAddr().(*net.UnixAddr); ok {
		// As Redis shows clients of a Unix socket.
		cl.addr = local.Name + ":0"
		cl.laddr, cl.unix = cl.addr, true
	}
	cl.call = call{srv: s, cl: cl}
	cl.req = newRequest(s.cfg.requestLimit())
	cl.proto.Store(2)
	cl.lastActive.Store(now)
	return cl
}

// setState sets or clears bit of cl's state.
func (cl *client) setState(bit uint32, on bool) {
	if on {
		cl.state.Or(bit)
	} else {
		cl.state.And(^bit)
	}
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// touch records a batch of commands, ending with cmd.
func (cl *client) touch(now int64, cmd *command) {
	// Each store is an atomic instruction, which costs as much as several
	// commands' parsing: a batch in the same millisecond as the last, or
	// of the same command, as pipelines are, stores nothing.
	if cl.lastActive.Load() != now {
		cl.lastActive.Store(now)
	}
	if cmd != nil && cl.lastCmd.Load() != cmd {
		cl.lastCmd.Store(cmd)
	}
}

func (cl *client) setName(name []byte) error {
	if !printable(name) {
		return errClientName
	}
	cl.mu.Lock()
	cl.name = string(name)
	cl.mu.Unlock()
	return nil
}

// appendInfo appends cl's line of CLIENT LIST, with Redis 7.0's fields.
// cmd is the last command it ran. The sizes of a client's buffers are what
// this server knows of them: its unread input (qbuf) and its unsent output
// (omem), which count in tot-mem.
func (cl *client) appendInfo(b []byte, now int64, cmd *command) []byte {
	cl.mu.Lock()
	name := cl.name
	cl.mu.Unlock()
	cmdName := "NULL"
	if cmd != nil {
		cmdName = cmd.name
	}
	qbuf, omem := cl.qbuf.Load(), cl.outbound()
	events := "r"
	if omem > 0 {
		events = "rw"
	}
	multi := int32(-1)
	if cl.state.Load()&inMultiState != 0 {
		multi = cl.queued.Load()
	}
	return fmt.Appendf(b, "id=%d addr=%s laddr=%s fd=%d name=%s age=%d idle=%d flags=%s db=0 sub=%d psub=%d ssub=%d multi=%d "+
		"qbuf=%d qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=%d tot-mem=%d events=%s "+
		"cmd=%s user=default redir=-1 resp=%d\n",
		cl.id, cl.addr, cl.laddr, cl.fd, name, (now-cl.created)/1000, (now-cl.lastActive.Load())/1000, cl.flags(),
		cl.nsubs[subChannel].Load(), cl.nsubs[subPattern].Load(), cl.nsubs[subShard].Load(), multi,
		qbuf, omem, qbuf+omem, events, cmdName, cl.proto.Load())
}

// outbound returns the output cl's connection holds, from any loop; none
// for a client without one, which tests run commands on.
func (cl *client) outbound() int64 {
	if cl.conn == nil {
		return 0
	}
	return int64(cl.conn.OutboundQueued())
}

// flags returns cl's flags as CLIENT LIST shows them, in Redis's order.
func (cl *client) flags() string {
	var b []byte
	st := cl.state.Load()
	if st&inPubSubState != 0 {
		b = append(b, 'P')
	}
	if st&inMultiState != 0 {
		b = append(b, 'x')
	}
	if st&blockedState != 0 {
		b = append(b, 'b')
	}
	if cl.dirty.Load() {
		b = append(b, 'd')
	}
	if cl.unix {
		b = append(b, 'U')
	}
	if len(b) == 0 {
		return "N"
	}
	return string(b)
}

// registry is every open client, for CLIENT LIST and CLIENT KILL.
type registry struct {
	mu sync.Mutex
	m  map[uint64]*client
}

func (r *registry) init() { r.m = make(map[uint64]*client) }

func (r *registry) add(cl *client) {
	r.mu.Lock()
	r.m[cl.id] = cl
	r.mu.Unlock()
}

func (r *registry) remove(cl *client) {
	r.mu.Lock()
	delete(r.m, cl.id)
	r.mu.Unlock()
}

// get returns the client with id, nil if there is none.
func (r *registry) get(id uint64) *client {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[id]
}

func (r *registry) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m)
}

// list returns the clients not being killed, oldest first.
func (r *registry) list() []*client {
	r.mu.Lock()
	cls := make([]*client, 0, len(r.m))
	for _, cl := range r.m {
		if !cl.killed.Load() {
			cls = append(cls, cl)
		}
	}
	r.mu.Unlock()
	slices.SortFunc(cls, func(a, b *client) int { return cmp.Compare(a.id, b.id) })
	return cls
}

func clientID(c *call) { c.integer(int64(c.cl.id)) }

func clientGetName(c *call) {
	c.cl.mu.Lock()
	name := c.cl.name
	c.cl.mu.Unlock()
	if name == "" {
		c.null()
		return
	}
	c.bulkString(name)
}

func clientSetName(c *call) {
	if err := c.cl.setName(c.args[2]); err != nil {
		c.error(err)
		return
	}
	c.ok()
}

// clientReply is CLIENT REPLY ON|OFF|SKIP: whether the server replies
// to the client's commands, to none of them, or to all but the next. Only
// ON is answered.
func clientReply(c *call) {
	switch a := c.args[2]; {
	case eqFold(a, "on"):
		c.cl.replyOff, c.muted = false, false
		c.ok()
	case eqFold(a, "off"):
		c.cl.replyOff = true
	case eqFold(a, "skip"):
		if !c.cl.replyOff {
			c.cl.skipOne = true
		}
	default:
		c.error(errSyntax)
	}
}

func clientInfo(c *call) {
	c.verbatim(c.cl.appendInfo(nil, c.now, c.cmd))
}

// Client types, as CLIENT LIST and CLIENT KILL name them: any, normal
// clients, pub/sub ones, and a type no client here has (master, replica).
const (
	anyClient = iota - 1
	normalClient
	pubsubClient
	noSuchClient
)

// parseClientType reads the type CLIENT LIST TYPE and CLIENT KILL TYPE
// name, with Redis's error for one it does not know.
func parseClientType(t []byte) (int, error) {
	switch {
	case eqFold(t, "normal"):
		return normalClient, nil
	case eqFold(t, "pubsub"):
		return pubsubClient, nil
	case eqFold(t, "master"), eqFold(t, "replica"), eqFold(t, "slave"):
		return noSuchClient, nil
	}
	return 0, fmt.Errorf("ERR Unknown client type '%s'", t)
}

// typeOf returns the client's type, normalClient or pubsubClient.
func (cl *client) typeOf() int {
	return b2i(cl.state.Load()&inPubSubState != 0)
}

// clientList is CLIENT LIST [TYPE type] [ID id ...].
func clientList(c *call) {
	var ids []uint64
	typ := anyClient
	for i := 2; i < len(c.args); i++ {
		opt := c.args[i]
		switch {
		case eqFold(opt, "type") && i+1 < len(c.args):
			i++
			var err error
			if typ, err = parseClientType(c.args[i]); err != nil {
				c.error(err)
				return
			}
		case eqFold(opt, "id") && i+1 < len(c.args):
			for i++; i < len(c.args); i++ {
				id, err := parseInt(c.args[i])
				if err != nil || id <= 0 {
					c.error(errInvalidClientID)
					return
				}
				ids = append(ids, uint64(id))
			}
		default:
			c.error(errSyntax)
			return
		}
	}
	var b []byte
	for _, cl := range c.srv.clients.list() {
		if (typ != anyClient && typ != cl.typeOf()) || (ids != nil && !slices.Contains(ids, cl.id)) {
			continue
		}
		b = cl.appendInfo(b, c.now, c.lastCmdOf(cl))
	}
	c.verbatim(b)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// lastCmdOf returns the last command cl ran: for the client asking, the
// one running now.
func (c *call) lastCmdOf(cl *client) *command {
	if cl == c.cl {
		return c.cmd
	}
	return cl.lastCmd.Load()
}

// killFilter selects the clients CLIENT KILL ends.
type killFilter struct {
	id     uint64
	typ    int // a client type, anyClient for any
	addr   []byte
	laddr  []byte
	maxAge int64 // seconds a client must be older than; 0 for any age
	skipMe bool
}

func (f *killFilter) match(cl *client, now int64) bool {
	return (f.id == 0 || cl.id == f.id) &&
		(f.typ == anyClient || f.typ == cl.typeOf()) &&
		(f.addr == nil || string(f.addr) == cl.addr) &&
		(f.laddr == nil || string(f.laddr) == cl.laddr) &&
		(f.maxAge == 0 || (now-cl.created)/1000 > f.maxAge)
}

// clientKill is CLIENT KILL addr, which replies OK or an error, and CLIENT
// KILL with filters (ID, TYPE, USER, ADDR, LADDR, MAXAGE, SKIPME), which
// replies how many clients it killed.
func clientKill(c *call) {
	args := c.args[2:]
	if len(args) == 1 {
		if c.kill(&killFilter{typ: anyClient, addr: args[0]}) == 0 {
			c.error(errNoClient)
			return
		}
		c.ok()
		return
	}
	f, err := parseKillFilter(args)
	if err != nil {
		c.error(err)
		return
	}
	c.integer(c.kill(f))
}

// parseKillFilter reads CLIENT KILL's filters in order, as Redis does, so
// that the first one wrong is the one whose error is replied.
func parseKillFilter(args [][]byte) (*killFilter, error) {
	f := &killFilter{typ: anyClient, skipMe: true}
	for i := 0; i < len(args); i += 2 {
		if i+1 == len(args) {
			return nil, errSyntax
		}
		opt, v := args[i], args[i+1]
		switch {
		case eqFold(opt, "id"):
			id, err := parseInt(v)
			if err != nil || id <= 0 {
				return nil, errClientID
			}
			f.id = uint64(id)
		case eqFold(opt, "type"):
			var err error
			if f.typ, err = parseClientType(v); err != nil {
				return nil, err
			}
		case eqFold(opt, "user"):
			// Without ACLs every client is the default user's.
			if string(v) != "default" {
				return nil, fmt.Errorf("ERR No such user '%s'", v)
			}
		case eqFold(opt, "addr"):
			f.addr = v
		case eqFold(opt, "laddr"):
			f.laddr = v
		case eqFold(opt, "maxage"):
			age, err := parseInt(v)
			if err != nil {
				return nil, errNotInteger
			}
			f.maxAge = age
		case eqFold(opt, "skipme") && (eqFold(v, "yes") || eqFold(v, "no")):
			f.skipMe = eqFold(v, "yes")
		default:
			return nil, errSyntax
		}
	}
	return f, nil
}

// kill ends the clients f selects and returns how many. Each other client
// is reset (Engine.Kill): its queued replies are dropped and it sees a TCP
// reset. The client asking is closed once its reply is sent, as Redis
// does.
func (c *call) kill(f *killFilter) int64 {
	n := int64(0)
	for _, cl := range c.srv.clients.list() {
		switch {
		case !f.match(cl, c.now):
		case cl == c.cl:
			if !f.skipMe {
				c.quit = true
				n++
			}
		case c.srv.eng.Kill(cl.conn.ID()) == nil:
			// Kill succeeds once per client, however many ask at once.
			cl.killed.Store(true)
			cl.stopWaiting()
			n++
		}
	}
	return n
}
