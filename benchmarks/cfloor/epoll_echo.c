/*
 * epoll_echo: the floor the Go stacks are measured against. One thread,
 * level-triggered epoll, one read and one write per readable event, nothing
 * else. Usage: epoll_echo -addr HOST:PORT [-addr HOST:PORT ...]: more than
 * one -addr listens on each (the dial rows spread their connections over
 * several loopback addresses). On SIGTERM or SIGINT it prints
 * "report accepted=N" like the Go servers and exits 0.
 */
#define _GNU_SOURCE /* accept4 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

/* write_all finishes a short write by waiting for room: never taken by a
 * 64 B or 16 KiB echo on loopback, there only so the floor stays correct. */
static int write_all(int fd, const char *p, ssize_t n) {
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w > 0) { p += w; n -= w; continue; }
		if (w < 0 && errno != EAGAIN) return -1;
		struct pollfd pfd = { fd, POLLOUT, 0 };
		poll(&pfd, 1, -1);
	}
	return 0;
}

/* listen_on opens a nonblocking listener on "HOST:PORT" (which it edits)
 * and watches it on ep; it returns the listener, or -1. */
static int listen_on(int ep, char *addr) {
	char *colon = strrchr(addr, ':');
	if (colon == NULL) return -1;
	*colon = '\0';
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(atoi(colon + 1)) };
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) { fprintf(stderr, "bad host %s\n", addr); return -1; }
	int one = 1, ln = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	setsockopt(ln, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(ln, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(ln, SOMAXCONN) < 0) { perror("listen"); return -1; }
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = ln };
	epoll_ctl(ep, EPOLL_CTL_ADD, ln, &ev);
	return ln;
}

int main(int argc, char **argv) {
	if (argc < 3 || argc % 2 == 0) { fprintf(stderr, "usage: %s -addr HOST:PORT [-addr HOST:PORT ...]\n", argv[0]); return 2; }
	struct sigaction act = { .sa_handler = on_signal }; /* no SA_RESTART: epoll_wait returns EINTR */
	sigaction(SIGTERM, &act, NULL);
	sigaction(SIGINT, &act, NULL);

	int one = 1, ep = epoll_create1(0), last_ln = -1;
	for (int i = 1; i < argc; i += 2) {
		if (strcmp(argv[i], "-addr") != 0) { fprintf(stderr, "usage: %s -addr HOST:PORT [-addr HOST:PORT ...]\n", argv[0]); return 2; }
		/* Listeners are the first descriptors opened after ep, in order:
		 * every descriptor up to the last one is a listener. */
		if ((last_ln = listen_on(ep, argv[i + 1])) < 0) return 1;
	}
	struct epoll_event ev = { .events = EPOLLIN }, evs[256];
	static char buf[64 << 10];
	long accepted = 0;
	while (!stop) {
		int n = epoll_wait(ep, evs, 256, -1);
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (fd <= last_ln) {
				int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK);
				if (c < 0) continue;
				accepted++;
				setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
				ev.data.fd = c;
				epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
				continue;
			}
			ssize_t r = read(fd, buf, sizeof buf);
			if (r > 0 && write_all(fd, buf, r) == 0) continue;
			if (r < 0 && errno == EAGAIN) continue;
			close(fd); /* EOF or error; closing also removes it from the epoll set */
		}
	}
	printf("report accepted=%ld\n", accepted);
	return 0;
}
