/*
 * udp_echo: the floor the UDP servers are measured against. One thread, one
 * UDP socket, level-triggered epoll; for each readiness, recvmmsg takes up
 * to 64 datagrams at once and sendmmsg sends each back to its sender in one
 * call, again until a recvmmsg takes fewer than 64 (the socket is empty).
 * Usage: udp_echo -addr HOST:PORT [-udp] [-rcvbuf BYTES] (-udp is accepted
 * and means nothing: the runner gives it to every UDP server; -rcvbuf asks
 * for that SO_RCVBUF). On SIGTERM or SIGINT
 * it prints "report accepted=0" like the Go servers and exits 0.
 */
#define _GNU_SOURCE /* recvmmsg, sendmmsg */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define BATCH 64
#define SIZE (64 << 10)

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

static char bufs[BATCH][SIZE];
static struct mmsghdr in[BATCH], out[BATCH];
static struct iovec iovs[BATCH], outv[BATCH];
static struct sockaddr_in6 names[BATCH];

static int usage(const char *prog) {
	fprintf(stderr, "usage: %s -addr HOST:PORT [-udp] [-rcvbuf BYTES]\n", prog);
	return 2;
}

/* echo answers what the socket holds, BATCH datagrams a call. */
static void echo(int fd) {
	for (;;) {
		for (int i = 0; i < BATCH; i++) {
			in[i].msg_hdr.msg_namelen = sizeof names[i];
			iovs[i].iov_len = SIZE;
		}
		int n = recvmmsg(fd, in, BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0) return; /* EAGAIN, or an error that is no one's to hear */
		for (int i = 0; i < n; i++) {
			outv[i].iov_base = bufs[i];
			outv[i].iov_len = in[i].msg_len;
			out[i].msg_hdr = (struct msghdr){ .msg_name = &names[i], .msg_namelen = in[i].msg_hdr.msg_namelen,
				.msg_iov = &outv[i], .msg_iovlen = 1 };
		}
		for (int sent = 0; sent < n;) {
			int r = sendmmsg(fd, out + sent, n - sent, 0);
			if (r < 0) {
				if (errno == EINTR) continue;
				sent++; /* drop the one that failed */
				continue;
			}
			sent += r;
		}
		if (n < BATCH) return;
	}
}

int main(int argc, char **argv) {
	const char *addr = NULL;
	int rcvbuf = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-addr") == 0 && i + 1 < argc) addr = argv[++i];
		else if (strcmp(argv[i], "-rcvbuf") == 0 && i + 1 < argc) rcvbuf = atoi(argv[++i]);
		else if (strcmp(argv[i], "-udp") != 0) return usage(argv[0]);
	}
	if (addr == NULL) return usage(argv[0]);
	char host[64];
	const char *colon = strrchr(addr, ':');
	if (colon == NULL || (size_t)(colon - addr) >= sizeof host) return usage(argv[0]);
	memcpy(host, addr, colon - addr);
	host[colon - addr] = '\0';
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(atoi(colon + 1)) };
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) { fprintf(stderr, "bad host %s\n", host); return 2; }

	struct sigaction act = { .sa_handler = on_signal }; /* no SA_RESTART: epoll_wait returns EINTR */
	sigaction(SIGTERM, &act, NULL);
	sigaction(SIGINT, &act, NULL);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	if (fd < 0) { perror("socket"); return 1; }
	if (rcvbuf > 0 && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf) < 0) { perror("SO_RCVBUF"); return 1; }
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) { perror("bind"); return 1; }
	for (int i = 0; i < BATCH; i++) {
		iovs[i].iov_base = bufs[i];
		in[i].msg_hdr = (struct msghdr){ .msg_name = &names[i], .msg_iov = &iovs[i], .msg_iovlen = 1 };
	}
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd }, evs[1];
	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	while (!stop) {
		if (epoll_wait(ep, evs, 1, -1) == 1) echo(fd);
	}
	printf("report accepted=0\n");
	return 0;
}
