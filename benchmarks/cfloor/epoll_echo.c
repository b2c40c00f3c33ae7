/*
 * epoll_echo: the floor the Go stacks are measured against. One thread,
 * level-triggered epoll, one read and one write per readable event, nothing
 * else. Usage: epoll_echo -addr HOST:PORT. On SIGTERM or SIGINT it prints
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

int main(int argc, char **argv) {
	char *colon = argc == 3 && strcmp(argv[1], "-addr") == 0 ? strrchr(argv[2], ':') : NULL;
	if (colon == NULL) { fprintf(stderr, "usage: %s -addr HOST:PORT\n", argv[0]); return 2; }
	*colon = '\0';
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(atoi(colon + 1)) };
	if (inet_pton(AF_INET, argv[2], &sa.sin_addr) != 1) { fprintf(stderr, "bad host %s\n", argv[2]); return 2; }
	struct sigaction act = { .sa_handler = on_signal }; /* no SA_RESTART: epoll_wait returns EINTR */
	sigaction(SIGTERM, &act, NULL);
	sigaction(SIGINT, &act, NULL);

	int one = 1, ln = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	setsockopt(ln, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(ln, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(ln, SOMAXCONN) < 0) { perror("listen"); return 1; }
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = ln }, evs[256];
	epoll_ctl(ep, EPOLL_CTL_ADD, ln, &ev);
	static char buf[64 << 10];
	long accepted = 0;
	while (!stop) {
		int n = epoll_wait(ep, evs, 256, -1);
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (fd == ln) {
				int c = accept4(ln, NULL, NULL, SOCK_NONBLOCK);
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
