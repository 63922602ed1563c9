// cgaps/gaps.c: bench/preempt's floor, the same busy loop in C: it spins on one CPU and
// counts the gaps over 20 us between its clock reads.
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static long long ns(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}
static volatile unsigned long sink[64];
__attribute__((noinline)) static void work(void) {
	unsigned long local[32];
	for (int i = 0; i < 32; i++) local[i] = sink[i] + i;
	sink[0] = local[7];
}
int main(int argc, char **argv) {
	int cpu = argc > 1 ? atoi(argv[1]) : 1;
	double secs = argc > 2 ? atof(argv[2]) : 4;
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof s, &s);
	long long start = ns(), last = start, end = start + (long long)(secs * 1e9), stall = 0, max = 0;
	long g20 = 0, g100 = 0, g500 = 0;
	for (;;) {
		work();
		long long now = ns(), g = now - last;
		if (g > 20000) {
			g20++;
			stall += g;
			if (g > 100000) g100++;
			if (g > 500000) g500++;
			if (g > max) max = g;
		}
		last = now;
		if (now > end) break;
	}
	printf("PREEMPT c gaps>20us=%ld >100us=%ld >500us=%ld stalled=%.2fms max=%.0fus\n", g20, g100, g500, stall / 1e6, max / 1e3);
	return 0;
}
