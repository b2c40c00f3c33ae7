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

// client is a connection's state. Its loop alone touches call and resp;
// the rest is set when the connection opens, or safe to read from the
// other loops, which list and kill clients.
type client struct {
	call call
	req  request

	id      uint64
	addr    string // the client's address: the PROXY source, when a header was read
	laddr   string
	flags   string // as CLIENT LIST shows them: N, or U for a Unix socket
	fd      int
	created int64 // Unix milliseconds

	proto      atomic.Int32 // 2, or 3 after HELLO 3
	lastActive atomic.Int64 // Unix milliseconds of the last batch of commands
	lastCmd    atomic.Pointer[command]
	killed     atomic.Bool // by CLIENT KILL: unlisted at once, though its loop resets it later

	mu      sync.Mutex // guards the names, set by the client, read by CLIENT LIST
	name    string
	libName string
	libVer  string
}

func newClient(s *server, c sluice.Conn) *client {
	now := time.Now().UnixMilli()
	cl := &client{id: c.ID(), fd: c.Fd(), created: now, flags: "N"}
	cl.addr, cl.laddr = addrString(c.RemoteAddr()), addrString(c.LocalAddr())
	if local, ok := c.LocalAddr().(*net.UnixAddr); ok {
		// As Redis shows clients of a Unix socket.
		cl.addr = local.Name + ":0"
		cl.laddr, cl.flags = cl.addr, "U"
	}
	cl.call = call{srv: s, cl: cl}
	cl.req = newRequest(s.cfg.requestLimit())
	cl.proto.Store(2)
	cl.lastActive.Store(now)
	return cl
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// touch records a batch of commands, ending with cmd.
func (cl *client) touch(now int64, cmd *command) {
	cl.lastActive.Store(now)
	if cmd != nil {
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

// appendInfo appends cl's line of CLIENT LIST, as Redis writes it, less
// the fields about buffers and memory. cmd is the last command it ran.
func (cl *client) appendInfo(b []byte, now int64, cmd *command) []byte {
	cl.mu.Lock()
	name, libName, libVer := cl.name, cl.libName, cl.libVer
	cl.mu.Unlock()
	cmdName := "NULL"
	if cmd != nil {
		cmdName = cmd.name
	}
	return fmt.Appendf(b, "id=%d addr=%s laddr=%s fd=%d name=%s age=%d idle=%d flags=%s db=0 sub=0 psub=0 ssub=0 multi=-1 "+
		"cmd=%s user=default redir=-1 resp=%d lib-name=%s lib-ver=%s\n",
		cl.id, cl.addr, cl.laddr, cl.fd, name, (now-cl.created)/1000, (now-cl.lastActive.Load())/1000, cl.flags,
		cmdName, cl.proto.Load(), libName, libVer)
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

// clientSetInfo is CLIENT SETINFO LIB-NAME|LIB-VER value, which client
// libraries send to say who they are.
func clientSetInfo(c *call) {
	attr, v := c.args[2], c.args[3]
	var dst *string
	switch {
	case eqFold(attr, "lib-name"):
		dst = &c.cl.libName
	case eqFold(attr, "lib-ver"):
		dst = &c.cl.libVer
	default:
		c.errorText(fmt.Sprintf("ERR Unrecognized option '%s'", attr))
		return
	}
	if !printable(v) {
		c.errorText(fmt.Sprintf("ERR %s cannot contain spaces, newlines or special characters.", attr))
		return
	}
	c.cl.mu.Lock()
	*dst = string(v)
	c.cl.mu.Unlock()
	c.ok()
}

func clientInfo(c *call) {
	c.verbatim(c.cl.appendInfo(nil, c.now, c.cmd))
}

// clientList is CLIENT LIST [TYPE type] [ID id ...].
func clientList(c *call) {
	var ids []uint64
	var none bool // a TYPE no client here has
	for i := 2; i < len(c.args); i++ {
		opt := c.args[i]
		switch {
		case eqFold(opt, "type") && i+1 < len(c.args):
			i++
			switch t := c.args[i]; {
			case eqFold(t, "normal"):
			case eqFold(t, "master"), eqFold(t, "replica"), eqFold(t, "slave"), eqFold(t, "pubsub"):
				none = true
			default:
				c.errorText(fmt.Sprintf("ERR Unknown client type '%s'", t))
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
		if none || (ids != nil && !slices.Contains(ids, cl.id)) {
			continue
		}
		b = cl.appendInfo(b, c.now, c.lastCmdOf(cl))
	}
	c.verbatim(b)
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
	addr   []byte
	laddr  []byte
	maxAge int64 // seconds a client must be older than; 0 for any age
	skipMe bool
}

func (f *killFilter) match(cl *client, now int64) bool {
	return (f.id == 0 || cl.id == f.id) &&
		(f.addr == nil || string(f.addr) == cl.addr) &&
		(f.laddr == nil || string(f.laddr) == cl.laddr) &&
		(f.maxAge == 0 || (now-cl.created)/1000 > f.maxAge)
}

// clientKill is CLIENT KILL addr, which replies OK or an error, and CLIENT
// KILL with filters (ID, ADDR, LADDR, MAXAGE, SKIPME), which replies how
// many clients it killed.
func clientKill(c *call) {
	args := c.args[2:]
	if len(args) == 1 {
		if c.kill(&killFilter{addr: args[0]}) == 0 {
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

func parseKillFilter(args [][]byte) (*killFilter, error) {
	if len(args)%2 != 0 {
		return nil, errSyntax
	}
	f := &killFilter{skipMe: true}
	for i := 0; i < len(args); i += 2 {
		opt, v := args[i], args[i+1]
		switch {
		case eqFold(opt, "id"):
			id, err := parseInt(v)
			if err != nil || id <= 0 {
				return nil, errClientID
			}
			f.id = uint64(id)
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
		case c.srv.eng.Kill(cl.id) == nil:
			// Kill succeeds once per client, however many ask at once.
			cl.killed.Store(true)
			n++
		}
	}
	return n
}
