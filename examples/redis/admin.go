package main

import (
	"fmt"
	"log"
	"net"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"time"
)

// infoSection is a section of INFO: its name, as asked for, and what
// appends its fields.
type infoSection struct {
	name, title string
	add         func(c *call, b []byte) []byte
}

var infoSections = []infoSection{
	{"server", "Server", infoServer},
	{"clients", "Clients", infoClients},
	{"memory", "Memory", infoMemory},
	{"stats", "Stats", infoStats},
	{"cpu", "CPU", infoCPU},
	{"keyspace", "Keyspace", infoKeyspace},
}

// info is INFO [section ...]: every section, or those named ("all",
// "everything" and "default" name them all), as "field:value" lines.
func info(c *call) {
	var b []byte
	for _, sec := range infoSections {
		if !c.wantsSection(sec.name) {
			continue
		}
		if len(b) > 0 {
			b = append(b, "\r\n"...)
		}
		b = append(b, "# "...)
		b = append(b, sec.title...)
		b = append(b, "\r\n"...)
		b = sec.add(c, b)
	}
	c.verbatim(b)
}

func (c *call) wantsSection(name string) bool {
	if len(c.args) == 1 {
		return true
	}
	for _, a := range c.args[1:] {
		if eqFold(a, name) || eqFold(a, "all") || eqFold(a, "everything") || eqFold(a, "default") {
			return true
		}
	}
	return false
}

// field appends one line of INFO.
func field(b []byte, name string, value any) []byte {
	return fmt.Appendf(b, "%s:%v\r\n", name, value)
}

func infoServer(c *call, b []byte) []byte {
	s := c.srv
	uptime := time.Since(s.started)
	port := 0
	if addrs := s.eng.Addrs(); len(addrs) > 0 {
		if a, ok := addrs[0].(*net.TCPAddr); ok {
			port = a.Port
		}
	}
	b = field(b, "redis_version", redisVersion)
	b = field(b, "redis_mode", "standalone")
	b = field(b, "os", runtime.GOOS+" "+runtime.GOARCH)
	b = field(b, "arch_bits", strconv.IntSize)
	b = field(b, "multiplexing_api", s.multiplexingAPI())
	b = field(b, "go_version", runtime.Version())
	b = field(b, "process_id", os.Getpid())
	b = field(b, "tcp_port", port)
	b = field(b, "uptime_in_seconds", int64(uptime/time.Second))
	b = field(b, "uptime_in_days", int64(uptime/(24*time.Hour)))
	b = field(b, "hz", s.hz.Load())
	return field(b, "event_loops", s.cfg.loops)
}

func infoClients(c *call, b []byte) []byte {
	s := c.srv
	b = field(b, "connected_clients", s.clients.count())
	b = field(b, "maxclients", s.cfg.maxClients)
	return field(b, "blocked_clients", s.blocked.Load())
}

func infoMemory(_ *call, b []byte) []byte {
	m := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/gc/cycles/total:gc-cycles"},
	}
	metrics.Read(m)
	used := m[0].Value.Uint64()
	b = field(b, "used_memory", used)
	b = field(b, "used_memory_human", humanBytes(used))
	b = field(b, "used_memory_runtime", m[1].Value.Uint64())
	b = field(b, "gc_cycles", m[2].Value.Uint64())
	b = field(b, "maxmemory", 0)
	b = field(b, "maxmemory_policy", "noeviction")
	return field(b, "mem_allocator", "go")
}

// humanBytes writes n as Redis's used_memory_human does.
func humanBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

func infoStats(c *call, b []byte) []byte {
	s := c.srv
	st := s.db.stats(c.held)
	b = field(b, "total_connections_received", s.connections.Load())
	b = field(b, "total_commands_processed", s.commands.Load())
	b = field(b, "expired_keys", st.expired)
	b = field(b, "evicted_keys", 0)
	b = field(b, "keyspace_hits", st.hits)
	return field(b, "keyspace_misses", st.misses)
}

// infoCPU is INFO's CPU section: the CPU time the process and its
// children used, in seconds, as Redis writes it. There is no main thread
// to report apart: every event loop is one.
func infoCPU(_ *call, b []byte) []byte {
	sys, user, childSys, childUser, ok := cpuTimes()
	if !ok {
		return b
	}
	secs := func(us int64) string { return fmt.Sprintf("%d.%06d", us/1e6, us%1e6) }
	b = field(b, "used_cpu_sys", secs(sys))
	b = field(b, "used_cpu_user", secs(user))
	b = field(b, "used_cpu_sys_children", secs(childSys))
	return field(b, "used_cpu_user_children", secs(childUser))
}

func infoKeyspace(c *call, b []byte) []byte {
	s := c.srv
	st := s.db.stats(c.held)
	if st.keys == 0 {
		return b
	}
	return fmt.Appendf(b, "db0:keys=%d,expires=%d,avg_ttl=0\r\n", st.keys, st.expires)
}

func dbsize(c *call) { c.integer(c.srv.db.stats(c.held).keys) }

// flush is FLUSHDB and FLUSHALL, which are the same with one database.
// Both are synchronous, whatever ASYNC asks.
func flush(c *call) {
	if len(c.args) > 2 || (len(c.args) == 2 && !eqFold(c.args[1], "async") && !eqFold(c.args[1], "sync")) {
		c.error(errSyntax)
		return
	}
	c.flush()
	c.ok()
}

// shutdown is SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]: the server
// stops as it does on SIGTERM, and the client, as Redis's, reads no
// reply, only the end of its connection. With nothing kept on disk, NOW
// (there are no replicas to wait for) and NOSAVE change nothing, and
// there is never a shutdown under way that ABORT could call off. SAVE is
// refused, as Redis refuses a shutdown whose save failed, unless FORCE
// says to stop without it, as Redis's FORCE ignores a failed save.
func shutdown(c *call) {
	var save, nosave, force, now, abort bool
	for _, a := range c.args[1:] {
		switch {
		case eqFold(a, "nosave"):
			nosave = true
		case eqFold(a, "save"):
			save = true
		case eqFold(a, "now"):
			now = true
		case eqFold(a, "force"):
			force = true
		case eqFold(a, "abort"):
			abort = true
		default:
			c.error(errSyntax)
			return
		}
	}
	switch {
	case abort && (save || nosave || now || force), save && nosave:
		c.error(errSyntax)
	case abort:
		c.errorText("ERR No shutdown in progress.")
	case save && !force:
		log.Printf("redis: SHUTDOWN SAVE from client %d (%s) refused: this server keeps nothing on disk; SHUTDOWN SAVE FORCE stops it without saving", c.cl.id, c.cl.addr)
		c.errorText("ERR Errors trying to SHUTDOWN. Check logs.")
	default:
		unsaved := ""
		if save {
			unsaved = ": stopping without saving (FORCE), as this server keeps nothing on disk"
		}
		log.Printf("redis: SHUTDOWN from client %d (%s)%s", c.cl.id, c.cl.addr, unsaved)
		c.srv.requestShutdown()
		c.quit = true
	}
}
