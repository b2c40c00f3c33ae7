/*
 * wakeup: what one wake-up from a blocking wait costs the woken thread, in
 * CPU time as the scheduler counts it, on this machine. A server that
 * answers faster than its client asks blocks between requests, and each
 * wake-up that follows is paid for in the server's CPU per request; on a
 * virtual machine it can cost more than the work of the request itself.
 *
 * Thread A (on CPU 0) writes an eventfd that thread B (on CPU 1) reads,
 * then blocks reading the eventfd B writes back after GAP nanoseconds of
 * spinning, so that A is asleep, and its CPU idle, when B's write comes.
 * A's CPU time per round trip, less what the same write and read cost A
 * when they do not block (measured after, on one thread), is the price of
 * one wake-up.
 *
 *	gcc -O2 -pthread -o wakeup wakeup.c && ./wakeup 100000 2000 20000
 *
 * Arguments: round trips, then one or more gaps in nanoseconds.
 */
#define _GNU_SOURCE /* pthread_setaffinity_np */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

static int to_b, to_a;
static long rounds, gap;

static void pin(int cpu) {
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static double ns(clockid_t clock) {
	struct timespec t;
	clock_gettime(clock, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static void *peer(void *arg) {
	(void)arg;
	uint64_t v;
	pin(1);
	for (long i = 0; i < rounds; i++) {
		if (read(to_b, &v, 8) != 8)
			exit(1);
		for (double t = ns(CLOCK_MONOTONIC); ns(CLOCK_MONOTONIC) - t < gap;)
			;
		if (write(to_a, &v, 8) != 8)
			exit(1);
	}
	return NULL;
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: wakeup ROUNDS GAP_NS [GAP_NS ...]\n");
		return 2;
	}
	rounds = atol(argv[1]);
	pin(0);
	for (int g = 2; g < argc; g++) {
		gap = atol(argv[g]);
		to_b = eventfd(0, 0);
		to_a = eventfd(0, 0);
		pthread_t t;
		pthread_create(&t, NULL, peer, NULL);
		uint64_t v = 1;
		double cpu0 = ns(CLOCK_THREAD_CPUTIME_ID), wall0 = ns(CLOCK_MONOTONIC);
		for (long i = 0; i < rounds; i++)
			if (write(to_b, &v, 8) != 8 || read(to_a, &v, 8) != 8)
				return 1;
		double blocking = (ns(CLOCK_THREAD_CPUTIME_ID) - cpu0) / rounds;
		double wall = (ns(CLOCK_MONOTONIC) - wall0) / rounds;
		pthread_join(t, NULL);

		int fd = eventfd(0, 0);
		cpu0 = ns(CLOCK_THREAD_CPUTIME_ID);
		for (long i = 0; i < rounds; i++)
			if (write(fd, &v, 8) != 8 || read(fd, &v, 8) != 8)
				return 1;
		double calls = (ns(CLOCK_THREAD_CPUTIME_ID) - cpu0) / rounds;
		printf("gap %ld ns: a round trip with a wake-up %.0f ns of CPU (%.0f ns wall), "
		       "the write and read without one %.0f ns: a wake-up costs %.0f ns\n",
		       gap, blocking, wall, calls, blocking - calls);
		close(to_b);
		close(to_a);
		close(fd);
	}
	return 0;
}
