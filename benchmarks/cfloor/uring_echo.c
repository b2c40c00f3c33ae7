/*
 * uring_echo: the floor the Go io_uring stack is measured against, the
 * sibling of epoll_echo. One thread, one ring: a multishot accept, per
 * connection a multishot receive into a ring of provided buffers, and per
 * turn one send of what a connection received, which posts no completion
 * when it takes everything. A turn is exactly one io_uring_enter: it
 * submits what the last turn queued and waits for a completion. Raw
 * syscalls, no liburing (Debian's is too old for buffer rings). Usage:
 * uring_echo -addr HOST:PORT. On SIGTERM or SIGINT it prints
 * "report accepted=N" like the Go servers and exits 0.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/io_uring.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* Ring sizes: submissions queued before submitting early; room for what
 * one enter can post (a receive per buffer, plus an end of receive and a
 * failed send per connection); and buffers enough for each of 1,000
 * connections' 16 KiB message in the same turn. */
#define SQ_ENTRIES 1024
#define CQ_ENTRIES 16384
#define BUF_SIZE (16 << 10)
#define BUF_COUNT 1024
#define BGID 0

/* A completion's user data packs the operation, the descriptor's
 * generation and the descriptor. */
enum { OP_ACCEPT, OP_RECV, OP_SEND };
#define GEN_MASK 0xffffffu

static uint64_t ud(int op, unsigned gen, int fd) {
	return (uint64_t)op << 56 | (uint64_t)(gen & GEN_MASK) << 32 | (uint32_t)fd;
}

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

static void die(const char *what) { perror(what); exit(1); }

/* The ring, as the kernel shares it and as this process has it so far. */
static int ring;
static unsigned *sq_khead, *sq_ktail, *sq_kflags, sq_mask, sq_entries, sq_tail;
static struct io_uring_sqe *sqes;
static unsigned *cq_khead, *cq_ktail, cq_mask, cq_head;
static struct io_uring_cqe *cqes;

/* The provided buffers: a received chunk is a buffer id, chained to the
 * next chunk of the same connection by buf_next (-1 ends a chain). */
static struct io_uring_buf_ring *br;
static unsigned short br_tail;
static char *buf_base;
static int buf_next[BUF_COUNT];
static unsigned buf_len[BUF_COUNT];

static char *buf_at(int b) { return buf_base + (size_t)b * BUF_SIZE; }

/* A connection, by descriptor. gen changes at close, so that a completion
 * for an earlier holder of the number is recognised and dropped. pend holds
 * the chunks received this turn, fly those whose send the last enter
 * submitted. in_dirty and in_flying say the descriptor is on the list of
 * that name; they outlive a close, since the list entry does. */
struct conn {
	unsigned gen;
	int pend, pend_last, fly;
	char open, armed, eof, rearm, in_dirty, in_flying;
};
static struct conn *conns;
static int nconns, *dirty, ndirty, *flying, nflying;

/* A connection with more than one chunk in a turn sends them with one
 * sendmsg; the kernel copies the header and vector when it takes the
 * entry, so these only live until the next enter. */
static struct iovec iovs[BUF_COUNT];
static struct msghdr msgs[BUF_COUNT / 2];
static int niov, nmsg;

static int ln, accept_armed;
static long accepted;

/* enter publishes what the process did with the rings and enters the
 * kernel, submitting every queued entry and, with wait, waiting for a
 * completion. It returns only once the kernel has taken every entry. A
 * send with MSG_DONTWAIT is issued while it is submitted, and one that
 * fails or comes back short (MSG_WAITALL makes that a failure) posts its
 * completion before the enter returns: so once the completions that follow
 * an enter are read, every send it submitted that posted none went out
 * whole, and its buffers can go back to the ring. */
static void enter(unsigned wait, unsigned flags) {
	__atomic_store_n(&br->tail, br_tail, __ATOMIC_RELEASE);
	__atomic_store_n(cq_khead, cq_head, __ATOMIC_RELEASE);
	__atomic_store_n(sq_ktail, sq_tail, __ATOMIC_RELEASE);
	unsigned n = sq_tail - __atomic_load_n(sq_khead, __ATOMIC_ACQUIRE);
	if (syscall(__NR_io_uring_enter, ring, n, wait, flags, NULL, 0) < 0 && errno != EINTR && errno != EAGAIN)
		die("io_uring_enter");
	while ((n = sq_tail - __atomic_load_n(sq_khead, __ATOMIC_ACQUIRE)) > 0) /* the kernel took fewer */
		if (syscall(__NR_io_uring_enter, ring, n, 0, 0, NULL, 0) < 0 && errno != EINTR && errno != EAGAIN)
			die("io_uring_enter");
	niov = nmsg = 0;
}

/* sqe hands out the next submission entry, submitting early when the
 * queue is full. */
static struct io_uring_sqe *sqe(int op, int fd, uint64_t data) {
	if (sq_tail - __atomic_load_n(sq_khead, __ATOMIC_ACQUIRE) == sq_entries) enter(0, 0);
	struct io_uring_sqe *s = &sqes[sq_tail++ & sq_mask];
	memset(s, 0, sizeof *s);
	s->opcode = op;
	s->fd = fd;
	s->user_data = data;
	return s;
}

/* recycle gives a chain of buffers back to the ring; the kernel sees them
 * at the next enter. */
static void recycle(int b) {
	for (; b >= 0; b = buf_next[b]) {
		struct io_uring_buf *e = &br->bufs[br_tail++ & (BUF_COUNT - 1)];
		e->addr = (uintptr_t)buf_at(b);
		e->len = BUF_SIZE;
		e->bid = b;
	}
}

/* write_all finishes a short write by waiting for room: never taken by a
 * 64 B or 16 KiB echo on loopback, there only so the floor stays correct. */
static int write_all(int fd, const char *p, ssize_t n) {
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w > 0) { p += w; n -= w; continue; }
		if (w < 0 && errno != EAGAIN && errno != EINTR) return -1;
		struct pollfd pfd = { fd, POLLOUT, 0 };
		poll(&pfd, 1, -1);
	}
	return 0;
}

/* write_chunks writes a chain of chunks but its first skip bytes. */
static int write_chunks(int fd, int b, unsigned skip) {
	for (; b >= 0; b = buf_next[b]) {
		if (skip >= buf_len[b]) { skip -= buf_len[b]; continue; }
		if (write_all(fd, buf_at(b) + skip, buf_len[b] - skip) < 0) return -1;
		skip = 0;
	}
	return 0;
}

static void mark_dirty(int fd) {
	if (!conns[fd].in_dirty) { conns[fd].in_dirty = 1; dirty[ndirty++] = fd; }
}

/* drop closes a connection and gives its buffers back. A receive still
 * armed is ended by shutdown first, so it does not hold the socket open;
 * its last completion, like any other of the old generation, is dropped. */
static void drop(int fd) {
	struct conn *c = &conns[fd];
	if (c->armed) shutdown(fd, SHUT_RDWR);
	close(fd);
	recycle(c->pend);
	recycle(c->fly);
	c->pend = c->fly = -1;
	c->open = 0;
	c->gen++;
}

static void on_accept(int res, unsigned flags) {
	if (!(flags & IORING_CQE_F_MORE)) accept_armed = 0;
	if (res < 0) return;
	if (res >= nconns) { close(res); return; }
	int one = 1;
	setsockopt(res, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	accepted++;
	struct conn *c = &conns[res];
	c->open = c->rearm = 1;
	c->armed = c->eof = 0;
	c->pend = c->fly = -1;
	mark_dirty(res);
}

/* on_recv chains a received chunk to the connection's turn, notes its end,
 * or drops it on an error; -ENOBUFS only ends the multishot receive, which
 * is armed again when the turn's buffers are back. */
static void on_recv(int fd, struct conn *c, int res, unsigned flags) {
	if (!(flags & IORING_CQE_F_MORE)) c->armed = 0;
	if (res > 0) {
		int b = flags >> IORING_CQE_BUFFER_SHIFT;
		buf_len[b] = res;
		buf_next[b] = -1;
		if (c->pend < 0) c->pend = b; else buf_next[c->pend_last] = b;
		c->pend_last = b;
	} else if (res == 0) {
		c->eof = 1;
	} else if (res != -ENOBUFS) {
		drop(fd);
		return;
	}
	if (!c->armed && !c->eof) c->rearm = 1;
	mark_dirty(fd);
}

/* on_send takes the completion of a send that failed or went out short
 * (res bytes of it): what is left is written here, before the connection
 * queues any later bytes. */
static void on_send(int fd, struct conn *c, int res) {
	if ((res >= 0 || res == -EAGAIN) && write_chunks(fd, c->fly, res > 0 ? res : 0) == 0) return;
	drop(fd);
}

static void complete(const struct io_uring_cqe *e) {
	int op = e->user_data >> 56, fd = (int)(uint32_t)e->user_data;
	if (op == OP_ACCEPT) { on_accept(e->res, e->flags); return; }
	struct conn *c = &conns[fd];
	if (!c->open || (c->gen & GEN_MASK) != ((e->user_data >> 32) & GEN_MASK)) {
		if (e->flags & IORING_CQE_F_BUFFER) {
			int b = e->flags >> IORING_CQE_BUFFER_SHIFT;
			buf_next[b] = -1;
			recycle(b);
		}
		return;
	}
	if (op == OP_RECV) on_recv(fd, c, e->res, e->flags);
	else on_send(fd, c, e->res);
}

/* drain handles every completion there is, bringing in any the kernel
 * kept aside for want of room, and then advances the head once. */
static void drain(void) {
	for (;;) {
		unsigned tail = __atomic_load_n(cq_ktail, __ATOMIC_ACQUIRE);
		if (cq_head == tail) {
			if (!(__atomic_load_n(sq_kflags, __ATOMIC_RELAXED) & IORING_SQ_CQ_OVERFLOW)) break;
			enter(0, IORING_ENTER_GETEVENTS);
			continue;
		}
		while (cq_head != tail) complete(&cqes[cq_head++ & cq_mask]);
	}
	__atomic_store_n(cq_khead, cq_head, __ATOMIC_RELEASE);
}

/* land gives back the buffers of the sends the last enter submitted: those
 * that failed were finished while draining. */
static void land(void) {
	for (int i = 0; i < nflying; i++) {
		struct conn *c = &conns[flying[i]];
		c->in_flying = 0;
		recycle(c->fly);
		c->fly = -1;
	}
	nflying = 0;
}

/* send_chunks queues one send of a connection's chunks of this turn; its
 * buffers stay out of the ring until the enter that submits it has
 * returned and its completions are read (see enter). Chunks of one turn go
 * in one request, so that a later one cannot overtake a short one. */
static void send_chunks(int fd, struct conn *c) {
	int b = c->pend;
	struct io_uring_sqe *s;
	if (buf_next[b] < 0) {
		s = sqe(IORING_OP_SEND, fd, ud(OP_SEND, c->gen, fd));
		s->addr = (uintptr_t)buf_at(b);
		s->len = buf_len[b];
	} else {
		s = sqe(IORING_OP_SENDMSG, fd, ud(OP_SEND, c->gen, fd)); /* first: an early enter resets the scratch */
		struct msghdr *m = &msgs[nmsg++];
		*m = (struct msghdr){ .msg_iov = &iovs[niov] };
		for (; b >= 0; b = buf_next[b]) iovs[niov++] = (struct iovec){ buf_at(b), buf_len[b] };
		m->msg_iovlen = &iovs[niov] - m->msg_iov;
		s->addr = (uintptr_t)m;
		s->len = 1;
	}
	s->msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL | MSG_WAITALL;
	s->flags = IOSQE_CQE_SKIP_SUCCESS;
	c->fly = c->pend;
	c->pend = -1;
	if (!c->in_flying) { c->in_flying = 1; flying[nflying++] = fd; }
}

static void arm_recv(int fd, struct conn *c) {
	struct io_uring_sqe *s = sqe(IORING_OP_RECV, fd, ud(OP_RECV, c->gen, fd));
	s->ioprio = IORING_RECV_MULTISHOT;
	s->flags = IOSQE_BUFFER_SELECT;
	s->buf_group = BGID;
	c->armed = 1;
	c->rearm = 0;
}

static void arm_accept(void) {
	struct io_uring_sqe *s = sqe(IORING_OP_ACCEPT, ln, ud(OP_ACCEPT, 0, ln));
	s->ioprio = IORING_ACCEPT_MULTISHOT;
	s->accept_flags = SOCK_NONBLOCK;
	accept_armed = 1;
}

/* queue queues the turn's sends and re-arms. A connection that reached its
 * end writes its last chunks directly and closes: once per connection. */
static void queue(void) {
	if (!accept_armed) arm_accept();
	for (int i = 0; i < ndirty; i++) {
		int fd = dirty[i];
		struct conn *c = &conns[fd];
		c->in_dirty = 0;
		if (!c->open) continue;
		if (c->eof) { write_chunks(fd, c->pend, 0); drop(fd); continue; }
		if (c->pend >= 0) send_chunks(fd, c);
		if (c->rearm) arm_recv(fd, c);
	}
	ndirty = 0;
}

static void *map(size_t size, int fd, off_t off) {
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, fd < 0 ? MAP_PRIVATE | MAP_ANONYMOUS : MAP_SHARED | MAP_POPULATE, fd, off);
	if (p == MAP_FAILED) die("mmap");
	return p;
}

/* setup_ring makes the ring with the cheapest task running the kernel
 * offers, maps it, and registers the provided buffers. */
static void setup_ring(void) {
	static const unsigned modes[] = {
		IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
		IORING_SETUP_COOP_TASKRUN,
		0,
	};
	struct io_uring_params p;
	for (unsigned i = 0; i < sizeof modes / sizeof modes[0]; i++) {
		memset(&p, 0, sizeof p);
		p.flags = modes[i] | IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL;
		p.cq_entries = CQ_ENTRIES;
		ring = syscall(__NR_io_uring_setup, SQ_ENTRIES, &p);
		if (ring >= 0 || errno != EINVAL) break;
	}
	if (ring < 0) die("io_uring_setup");
	if (!(p.features & IORING_FEAT_CQE_SKIP)) { fprintf(stderr, "io_uring: no IOSQE_CQE_SKIP_SUCCESS\n"); exit(1); }

	size_t sq_size = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	size_t cq_size = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	int single = p.features & IORING_FEAT_SINGLE_MMAP;
	if (single && cq_size > sq_size) sq_size = cq_size;
	char *sq = map(sq_size, ring, IORING_OFF_SQ_RING);
	char *cq = single ? sq : map(cq_size, ring, IORING_OFF_CQ_RING);
	sqes = map(p.sq_entries * sizeof(struct io_uring_sqe), ring, IORING_OFF_SQES);
	sq_khead = (unsigned *)(sq + p.sq_off.head);
	sq_ktail = (unsigned *)(sq + p.sq_off.tail);
	sq_kflags = (unsigned *)(sq + p.sq_off.flags);
	sq_mask = *(unsigned *)(sq + p.sq_off.ring_mask);
	sq_entries = p.sq_entries;
	sq_tail = *sq_ktail;
	unsigned *array = (unsigned *)(sq + p.sq_off.array);
	for (unsigned i = 0; i < sq_entries; i++) array[i] = i; /* entry i sits in slot i, always */
	cq_khead = (unsigned *)(cq + p.cq_off.head);
	cq_ktail = (unsigned *)(cq + p.cq_off.tail);
	cq_mask = *(unsigned *)(cq + p.cq_off.ring_mask);
	cq_head = *cq_khead;
	cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);

	br = map(BUF_COUNT * sizeof(struct io_uring_buf), -1, 0);
	buf_base = map((size_t)BUF_COUNT * BUF_SIZE, -1, 0);
	struct io_uring_buf_reg reg = { .ring_addr = (uintptr_t)br, .ring_entries = BUF_COUNT, .bgid = BGID };
	if (syscall(__NR_io_uring_register, ring, IORING_REGISTER_PBUF_RING, &reg, 1) < 0) die("IORING_REGISTER_PBUF_RING");
	for (int b = 0; b < BUF_COUNT; b++) { buf_next[b] = -1; recycle(b); }
}

/* setup_conns raises the descriptor limit to its maximum, as the Go
 * runtime does for the Go servers, and sizes the tables by it. */
static void setup_conns(void) {
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max < 1 << 20 ? rl.rlim_max : 1 << 20;
	setrlimit(RLIMIT_NOFILE, &rl);
	getrlimit(RLIMIT_NOFILE, &rl);
	nconns = rl.rlim_cur < 1 << 20 ? rl.rlim_cur : 1 << 20;
	conns = calloc(nconns, sizeof *conns);
	dirty = calloc(nconns, sizeof *dirty);
	flying = calloc(nconns, sizeof *flying);
	if (!conns || !dirty || !flying) die("calloc");
}

int main(int argc, char **argv) {
	char *colon = argc == 3 && strcmp(argv[1], "-addr") == 0 ? strrchr(argv[2], ':') : NULL;
	if (colon == NULL) { fprintf(stderr, "usage: %s -addr HOST:PORT\n", argv[0]); return 2; }
	*colon = '\0';
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(atoi(colon + 1)) };
	if (inet_pton(AF_INET, argv[2], &sa.sin_addr) != 1) { fprintf(stderr, "bad host %s\n", argv[2]); return 2; }
	struct sigaction act = { .sa_handler = on_signal }; /* no SA_RESTART: io_uring_enter returns EINTR */
	sigaction(SIGTERM, &act, NULL);
	sigaction(SIGINT, &act, NULL);
	setup_conns();

	int one = 1;
	ln = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	setsockopt(ln, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(ln, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(ln, SOMAXCONN) < 0) { perror("listen"); return 1; }
	setup_ring();
	arm_accept();
	while (!stop) {
		enter(1, IORING_ENTER_GETEVENTS);
		drain();
		land();
		queue();
	}
	/* The armed accept holds the listener until the kernel tears the ring
	 * down, after exit; shutdown stops it listening now, so the next
	 * server can bind the port at once. */
	shutdown(ln, SHUT_RDWR);
	printf("report accepted=%ld\n", accepted);
	return 0;
}
