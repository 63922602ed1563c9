/*
 * floor: the bare eventfd -> epoll_wait wake-up latency of this machine, the floor any
 * interrupt-driven poll loop (C or Go) can reach.
 *
 * A writer thread writes an eventfd every GAP microseconds, storing the time just before
 * the write; the reader blocks in epoll_wait on the eventfd, reads the clock as soon as it
 * wakes and records the difference. Prints p50/p90/p99/max in nanoseconds.
 *
 *   gcc -O2 -pthread -o floor floor.c
 *   ./floor [count=10000] [gap_us=400] [reader_cpu writer_cpu]
 *
 * With the two CPU numbers the reader and the writer are pinned, as the Go benchmark pins
 * its polling and sending threads. With FLOOR_DUMP=1 in the environment it also prints
 * every latency, sorted, one "lat NS" line each, for benchmarks that pool rounds.
 *
 * Output (one line, parsed by the dataplane benchmark):
 *   floor n=10000 gap_us=400 p50_ns=5123 p90_ns=17000 p99_ns=60000 max_ns=200000
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static int efd;
static long count = 10000;
static long gap_us = 400;
static _Atomic int64_t sent_at; /* CLOCK_MONOTONIC ns of the last write */
static int writer_cpu = -1;

static void pin(int cpu) {
	if (cpu < 0)
		return;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set) < 0) {
		perror("sched_setaffinity");
		exit(1);
	}
}

static int64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *writer(void *arg) {
	(void)arg;
	pin(writer_cpu);
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (long i = 0; i < count; i++) {
		next.tv_nsec += gap_us * 1000;
		while (next.tv_nsec >= 1000000000) {
			next.tv_nsec -= 1000000000;
			next.tv_sec++;
		}
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
		uint64_t one = 1;
		atomic_store(&sent_at, now_ns());
		if (write(efd, &one, sizeof one) != sizeof one) {
			perror("write eventfd");
			exit(1);
		}
	}
	return NULL;
}

static int cmp(const void *a, const void *b) {
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv) {
	if (argc > 1)
		count = atol(argv[1]);
	if (argc > 2)
		gap_us = atol(argv[2]);
	int reader_cpu = -1;
	if (argc > 4) {
		reader_cpu = atoi(argv[3]);
		writer_cpu = atoi(argv[4]);
	}
	if (count <= 0 || gap_us <= 0) {
		fprintf(stderr, "usage: floor [count>0] [gap_us>0] [reader_cpu writer_cpu]\n");
		return 2;
	}
	pin(reader_cpu);
	int64_t *lat = calloc(count, sizeof *lat);
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (!lat || efd < 0 || ep < 0) {
		perror("setup");
		return 1;
	}
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = efd};
	if (epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) < 0) {
		perror("epoll_ctl");
		return 1;
	}
	pthread_t w;
	pthread_create(&w, NULL, writer, NULL);
	long n = 0;
	while (n < count) {
		struct epoll_event out;
		int r = epoll_wait(ep, &out, 1, 1000);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			perror("epoll_wait");
			return 1;
		}
		if (r == 0)
			break; /* writer is done or stuck */
		int64_t t = now_ns();
		uint64_t v;
		if (read(efd, &v, sizeof v) == sizeof v)
			lat[n++] = t - atomic_load(&sent_at);
	}
	pthread_join(w, NULL);
	const char *dump = getenv("FLOOR_DUMP");
	int dump_all = dump && *dump && *dump != '0';
	qsort(lat, n, sizeof *lat, cmp);
	if (n == 0) {
		fprintf(stderr, "no wake-ups measured\n");
		return 1;
	}
	printf("floor n=%ld gap_us=%ld p50_ns=%lld p90_ns=%lld p99_ns=%lld max_ns=%lld\n", n, gap_us,
	       (long long)lat[n * 50 / 100], (long long)lat[n * 90 / 100], (long long)lat[n * 99 / 100],
	       (long long)lat[n - 1]);
	if (dump_all)
		for (long i = 0; i < n; i++)
			printf("lat %lld\n", (long long)lat[i]);
	return 0;
}
