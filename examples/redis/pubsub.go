package main

import (
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/codec"
)

// subKind is what a client subscribes to: a channel, a pattern of channel
// names, or a shard channel (SSUBSCRIBE), which in a server of one shard
// is a channel of a namespace of its own.
type subKind uint8

const (
	subChannel subKind = iota
	subPattern
	subShard
	numSubKinds
)

// Each kind's words: the replies to subscribing and unsubscribing, and
// the message a publication arrives as.
var subWords = [numSubKinds]struct{ subscribe, unsubscribe, message string }{
	subChannel: {"subscribe", "unsubscribe", "message"},
	subPattern: {"psubscribe", "punsubscribe", "pmessage"},
	subShard:   {"ssubscribe", "sunsubscribe", "smessage"},
}

// pubsubShards spreads channels over locks, as the keyspace's shards do.
const pubsubShards = 16

// pubsub is every subscription, by what is subscribed to: each channel's
// and shard channel's subscribers behind the lock of its shard, and the
// patterns behind one lock that publishers share, since every publication
// is matched against every pattern, as in Redis.
type pubsub struct {
	seed     maphash.Seed
	channels [pubsubShards]subShardMap // subChannel
	shards   [pubsubShards]subShardMap // subShard
	pmu      sync.RWMutex
	patterns map[string]subscribers
}

type subShardMap struct {
	mu sync.Mutex
	m  map[string]subscribers
	_  [40]byte // keeps neighbouring locks off one cache line
}

// subscribers is the clients subscribed to one name.
type subscribers map[*client]struct{}

func (ps *pubsub) init() {
	ps.seed = maphash.MakeSeed()
	for i := range pubsubShards {
		ps.channels[i].m = make(map[string]subscribers)
		ps.shards[i].m = make(map[string]subscribers)
	}
	ps.patterns = make(map[string]subscribers)
}

// shardOf returns the map of name, a channel or shard channel.
func (ps *pubsub) shardOf(kind subKind, name []byte) *subShardMap {
	i := maphash.Bytes(ps.seed, name) % pubsubShards
	if kind == subShard {
		return &ps.shards[i]
	}
	return &ps.channels[i]
}

// add and remove record that cl subscribes to name, or no longer does.
func (ps *pubsub) add(kind subKind, name string, cl *client) {
	ps.update(kind, name, func(m map[string]subscribers) { addSubscriber(m, name, cl) })
}

func (ps *pubsub) remove(kind subKind, name string, cl *client) {
	ps.update(kind, name, func(m map[string]subscribers) { removeSubscriber(m, name, cl) })
}

// update runs f on the map of kind's subscribers that holds name, under
// its lock.
func (ps *pubsub) update(kind subKind, name string, f func(m map[string]subscribers)) {
	var mu sync.Locker = &ps.pmu
	m := ps.patterns
	if kind != subPattern {
		sm := ps.shardOf(kind, []byte(name))
		mu, m = &sm.mu, sm.m
	}
	mu.Lock()
	defer mu.Unlock()
	f(m)
}

func addSubscriber(m map[string]subscribers, name string, cl *client) {
	subs := m[name]
	if subs == nil {
		subs = make(subscribers)
		m[name] = subs
	}
	subs[cl] = struct{}{}
}

func removeSubscriber(m map[string]subscribers, name string, cl *client) {
	subs := m[name]
	delete(subs, cl)
	if len(subs) == 0 {
		delete(m, name)
	}
}

// publication is a message being published, and its encodings, each made
// when a subscriber first needs it and shared by all that do.
type publication struct {
	kind           subKind // subChannel or subShard
	channel, body  []byte
	name           string // the channel, once a subscriber on another loop needs it
	resp2, resp3   []byte
	pattern        string // the pattern the pattern encodings are for
	presp2, presp3 []byte
	receivers      int
	pubsubLimit    classLimit
	now            int64 // Unix milliseconds
	from           *call
}

// encoding returns the message as cl reads it: a RESP2 array, or a RESP3
// push, of the kind's word, the pattern it matched if any, the channel
// and the body.
func (p *publication) encoding(cl *client, pattern string) []byte {
	resp3 := cl.proto.Load() == 3
	if pattern != p.pattern {
		p.pattern, p.presp2, p.presp3 = pattern, nil, nil
	}
	slot := &p.resp2
	switch {
	case pattern != "" && resp3:
		slot = &p.presp3
	case pattern != "":
		slot = &p.presp2
	case resp3:
		slot = &p.resp3
	}
	if *slot == nil {
		word := subWords[p.kind].message
		n := 3
		if pattern != "" {
			word, n = subWords[subPattern].message, 4
		}
		b := make([]byte, 0, 64+len(p.channel)+len(p.body)+len(pattern))
		b = appendPushHeader(b, resp3, n)
		b = codec.AppendBulk(b, word)
		if pattern != "" {
			b = codec.AppendBulk(b, pattern)
		}
		b = codec.AppendBulk(b, p.channel)
		*slot = codec.AppendBulk(b, p.body)
	}
	return *slot
}

// appendPushHeader starts an out-of-band message of n elements: a push in
// RESP3, an array in RESP2.
func appendPushHeader(b []byte, resp3 bool, n int) []byte {
	if resp3 {
		b = append(b, '>')
		b = strconv.AppendInt(b, int64(n), 10)
		return append(b, '\r', '\n')
	}
	return codec.AppendArray(b, n)
}

// publish sends body to the subscribers of channel, of kind subChannel or
// subShard, and to those of the patterns channel matches, and returns
// how many it was sent to. It never waits on a subscriber: one on the
// publisher's own loop is written to at once, one on another loop is
// posted to it, and one whose unsent messages are past its limit is
// disconnected instead.
func (c *call) publish(kind subKind, channel, body []byte) int {
	ps := &c.srv.pubsub
	p := &publication{kind: kind, channel: channel, body: body, from: c,
		pubsubLimit: c.srv.outputLimit().pubsubLimit(), now: time.Now().UnixMilli()}
	sm := ps.shardOf(kind, channel)
	sm.mu.Lock()
	for cl := range sm.m[string(channel)] {
		p.send(cl, kind, "")
	}
	sm.mu.Unlock()
	if kind == subChannel {
		ps.pmu.RLock()
		for pattern, subs := range ps.patterns {
			if globMatch([]byte(pattern), channel, false) {
				for cl := range subs {
					p.send(cl, subPattern, pattern)
				}
			}
		}
		ps.pmu.RUnlock()
	}
	return p.receivers
}

// send sends the publication to cl, subscribed to it by kind and pattern.
func (p *publication) send(cl *client, kind subKind, pattern string) {
	p.receivers++
	if cl.dropped.Load() {
		return
	}
	msg := p.encoding(cl, pattern)
	if !cl.withinLimit(len(msg), p.pubsubLimit, p.now) {
		p.from.srv.drop(cl)
		return
	}
	switch {
	case cl == p.from.cl:
		// The publisher itself, in RESP3: the message goes before the
		// reply to PUBLISH, as in Redis.
		p.from.pushing()
		p.from.out = append(p.from.out, msg...)
		p.from.pushed()
	case cl.loop == p.from.cl.loop:
		cl.push(msg)
	default:
		cl.pending.Add(int64(len(msg)))
		cl.loop.post(delivery{cl: cl, msg: msg, kind: kind, name: p.subscription(pattern)})
	}
}

// subscription returns the name a subscriber to the publication is
// subscribed by, for its loop to check: the pattern it matched, or the
// channel, made a string once per publication rather than once per
// subscriber.
func (p *publication) subscription(pattern string) string {
	if pattern != "" {
		return pattern
	}
	if p.name == "" {
		p.name = string(p.channel)
	}
	return p.name
}

// withinLimit reports whether n more bytes of messages keep cl within
// the pub/sub class's output limit, from any loop: its hard bound, and its
// soft bound for no longer than its time. It counts the output its loop
// holds for it and the messages posted to its loop not yet written.
func (cl *client) withinLimit(n int, lim classLimit, now int64) bool {
	queued := cl.outbound() + cl.pending.Load() + int64(n)
	if lim.hard > 0 && queued > int64(lim.hard) {
		return false
	}
	if lim.soft > 0 && queued > int64(lim.soft) {
		since := cl.overSoftSince.Load()
		if since == 0 {
			cl.overSoftSince.CompareAndSwap(0, now)
			return true
		}
		return now-since <= lim.softFor.Milliseconds()
	}
	if cl.overSoftSince.Load() != 0 {
		cl.overSoftSince.Store(0)
	}
	return true
}

// drop disconnects cl for passing its output limit, as Redis does, from
// any loop: its connection is reset and what was queued for it dropped.
func (s *server) drop(cl *client) {
	if cl.dropped.CompareAndSwap(false, true) {
		s.outputDrops.Add(1)
		if s.eng.Kill(cl.conn.ID()) == nil {
			cl.killed.Store(true)
			cl.stopWaiting() // a RESP3 subscriber may be blocked
		}
	}
}

// subscribed reports whether cl, on its loop, is subscribed to name by
// kind.
func (cl *client) subscribed(kind subKind, name string) bool {
	_, ok := cl.subs[kind][name]
	return ok
}

// push writes a message to cl, on its loop: whatever CLIENT REPLY says,
// as in Redis.
func (cl *client) push(msg []byte) {
	if cl.closed {
		return
	}
	if _, err := cl.conn.Write(msg); errors.Is(err, sluice.ErrOutboundFull) {
		cl.call.srv.drop(cl)
	}
}

// gather adds a message from another loop's publisher to cl's outbox, on
// its loop, and has the engine call OnTraffic, which writes it, unless a
// call is on its way already. It reports false, having gathered nothing,
// when cl's connection is closed. The message counts as pending until it
// is written, so that a publisher never sees less than cl holds.
func (cl *client) gather(msg []byte) bool {
	if cl.closed {
		return false
	}
	if len(cl.outbox) == 0 && cl.conn.Wake(nil) != nil {
		return false
	}
	cl.outbox = append(cl.outbox, msg...)
	return true
}

// maxKeptOutbox bounds the outbox a client keeps between messages.
const maxKeptOutbox = 64 << 10

// writeOutbox writes the messages gathered for cl, on its loop, ahead of
// the replies of the commands it sent after them.
func (cl *client) writeOutbox() {
	n := len(cl.outbox)
	cl.push(cl.outbox)
	cl.pending.Add(-int64(n))
	cl.outbox = cl.outbox[:0]
	if cap(cl.outbox) > maxKeptOutbox {
		cl.outbox = nil
	}
}

// subscriptions returns how many subscriptions a subscribe or unsubscribe
// of kind reports: shard channels count apart from the others, as in
// Redis.
func (cl *client) subscriptions(kind subKind) int64 {
	if kind == subShard {
		return int64(len(cl.subs[subShard]))
	}
	return int64(len(cl.subs[subChannel]) + len(cl.subs[subPattern]))
}

// inPubSub reports whether cl has any subscription: in RESP2 it may then
// run only the pub/sub commands, PING, QUIT and RESET.
func (cl *client) inPubSub() bool {
	return len(cl.subs[subChannel])+len(cl.subs[subPattern])+len(cl.subs[subShard]) > 0
}

func subscribe(c *call)  { c.subscribe(subChannel) }
func psubscribe(c *call) { c.subscribe(subPattern) }
func ssubscribe(c *call) { c.subscribe(subShard) }

// subscribe is SUBSCRIBE, PSUBSCRIBE and SSUBSCRIBE name [name ...]: one
// reply for each name, with the count of subscriptions after it.
func (c *call) subscribe(kind subKind) {
	cl := c.cl
	for _, a := range c.args[1:] {
		name := string(a)
		if !cl.subscribed(kind, name) {
			if cl.subs[kind] == nil {
				cl.subs[kind] = make(map[string]struct{})
			}
			cl.subs[kind][name] = struct{}{}
			cl.nsubs[kind].Add(1)
			c.srv.pubsub.add(kind, name, cl)
		}
		c.subscription(subWords[kind].subscribe, a, cl.subscriptions(kind))
	}
	cl.setState(inPubSubState, true)
}

func unsubscribe(c *call)  { c.unsubscribe(subChannel) }
func punsubscribe(c *call) { c.unsubscribe(subPattern) }
func sunsubscribe(c *call) { c.unsubscribe(subShard) }

// unsubscribe is UNSUBSCRIBE, PUNSUBSCRIBE and SUNSUBSCRIBE [name ...]:
// from the names given, or from all of the kind, with one reply for each,
// or one with a null name when there were none.
func (c *call) unsubscribe(kind subKind) {
	names := c.args[1:]
	if len(names) == 0 {
		if c.cl.unsubscribeAll(kind, c) == 0 {
			c.subscription(subWords[kind].unsubscribe, nil, c.cl.subscriptions(kind))
		}
		c.cl.setState(inPubSubState, c.cl.inPubSub())
		return
	}
	for _, a := range names {
		c.cl.unsubscribeFrom(kind, string(a))
		c.subscription(subWords[kind].unsubscribe, a, c.cl.subscriptions(kind))
	}
	c.cl.setState(inPubSubState, c.cl.inPubSub())
}

// unsubscribeAll drops cl's subscriptions of kind, replying for each when
// c is not nil, and returns how many there were.
func (cl *client) unsubscribeAll(kind subKind, c *call) int {
	n := 0
	for name := range cl.subs[kind] {
		cl.unsubscribeFrom(kind, name)
		if c != nil {
			c.subscription(subWords[kind].unsubscribe, []byte(name), cl.subscriptions(kind))
		}
		n++
	}
	return n
}

func (cl *client) unsubscribeFrom(kind subKind, name string) {
	if !cl.subscribed(kind, name) {
		return
	}
	delete(cl.subs[kind], name)
	cl.nsubs[kind].Add(-1)
	cl.call.srv.pubsub.remove(kind, name, cl)
}

// subscription replies one confirmation of a subscribe or unsubscribe: a
// push in RESP3. A nil name is a null.
func (c *call) subscription(word string, name []byte, count int64) {
	c.pushing()
	c.out = appendPushHeader(c.out, c.resp3, 3)
	c.bulkString(word)
	if name == nil {
		c.null()
	} else {
		c.bulk(name)
	}
	c.integer(count)
	c.pushed()
}

// publishCmd is PUBLISH channel message: how many clients it was sent to.
func publishCmd(c *call) { c.integer(int64(c.publish(subChannel, c.args[1], c.args[2]))) }

// spublish is SPUBLISH shardchannel message.
func spublish(c *call) { c.integer(int64(c.publish(subShard, c.args[1], c.args[2]))) }

// pubsubChannels is PUBSUB CHANNELS and SHARDCHANNELS [pattern]: the
// channels with a subscriber, those matching the pattern if one is given.
func pubsubChannels(c *call) {
	kind := subChannel
	if c.cmd.name == "pubsub|shardchannels" {
		kind = subShard
	}
	if len(c.args) > 3 {
		c.errorText(fmt.Sprintf("ERR unknown subcommand or wrong number of arguments for '%s'. Try PUBSUB HELP.", c.args[1]))
		return
	}
	var found []string
	for i := range pubsubShards {
		sm := &c.srv.pubsub.channels[i]
		if kind == subShard {
			sm = &c.srv.pubsub.shards[i]
		}
		sm.mu.Lock()
		for name := range sm.m {
			if len(c.args) == 2 || globMatch(c.args[2], []byte(name), false) {
				found = append(found, name)
			}
		}
		sm.mu.Unlock()
	}
	slices.Sort(found)
	c.array(len(found))
	for _, name := range found {
		c.bulkString(name)
	}
}

// pubsubNumsub is PUBSUB NUMSUB and SHARDNUMSUB [channel ...]: each
// channel and its count of subscribers, not counting patterns.
func pubsubNumsub(c *call) {
	kind := subChannel
	if c.cmd.name == "pubsub|shardnumsub" {
		kind = subShard
	}
	c.array(2 * (len(c.args) - 2)) // flat even in RESP3, as in Redis 7.0
	for _, name := range c.args[2:] {
		sm := c.srv.pubsub.shardOf(kind, name)
		sm.mu.Lock()
		n := len(sm.m[string(name)])
		sm.mu.Unlock()
		c.bulk(name)
		c.integer(int64(n))
	}
}

// pubsubNumpat is PUBSUB NUMPAT: how many patterns have subscribers.
func pubsubNumpat(c *call) {
	ps := &c.srv.pubsub
	ps.pmu.RLock()
	n := len(ps.patterns)
	ps.pmu.RUnlock()
	c.integer(int64(n))
}
