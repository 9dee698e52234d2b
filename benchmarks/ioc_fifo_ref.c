/* A bare stimulus -> response loop through rtqual's IOC FIFOs: the reference for the iocresp
 * harness (`rtqual run ioc`; benchmarks/ioc_vs_bare_fifo.py builds and runs it). Nothing of
 * rtqual: open, write, poll, read and clock_gettime, written as directly as the measurement allows.
 *
 *   ioc_fifo_ref IN_FIFO OUT_FIFO ROUNDS PERIOD_US CPU PRIORITY
 *
 * Pinned to CPU at SCHED_FIFO PRIORITY, memory locked, /dev/cpu_dma_latency held at 0: at absolute
 * deadlines PERIOD_US apart it writes its CLOCK_MONOTONIC time (one int64) into IN_FIFO and waits
 * in poll for the IOC's response on OUT_FIFO (four int64, the first the stimulus it answers);
 * round trip = the time the last byte was read - the stimulus. 10 warm-up rounds are discarded.
 * Prints one JSON line {"rounds", "median_ns", "p99_ns", "max_ns"} (nearest rank). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define WARMUP 10
#define TIMEOUT_MS 5000

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	if (argc != 7) {
		fprintf(stderr, "usage: ioc_fifo_ref IN_FIFO OUT_FIFO ROUNDS PERIOD_US CPU PRIORITY\n");
		return 1;
	}
	long rounds = atol(argv[3]), period_ns = atol(argv[4]) * 1000L;
	int cpu = atoi(argv[5]), prio = atoi(argv[6]);
	int64_t *rtt_ns = calloc((size_t)rounds, sizeof(*rtt_ns));
	int in = open(argv[1], O_RDWR | O_CLOEXEC), out = open(argv[2], O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (rounds < 1 || period_ns < 1000 || !rtt_ns || in < 0 || out < 0) {
		fprintf(stderr, "ioc_fifo_ref: bad ROUNDS or PERIOD_US, or the FIFOs do not open\n");
		return 1;
	}
	int32_t zero = 0;
	int dma = open("/dev/cpu_dma_latency", O_WRONLY);
	if (dma >= 0 && write(dma, &zero, sizeof(zero)) != sizeof(zero))
		close(dma);
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	struct sched_param sp = {.sched_priority = prio};
	if (sched_setaffinity(0, sizeof(set), &set) || sched_setscheduler(0, SCHED_FIFO, &sp) ||
	    mlockall(MCL_CURRENT | MCL_FUTURE)) {
		perror("ioc_fifo_ref: CPU, SCHED_FIFO or mlockall");
		return 1;
	}
	int64_t resp[4], junk[64];
	while (read(out, junk, sizeof(junk)) > 0) /* a stale response */
		;
	int64_t deadline = now_ns() + 50000000LL;
	for (long k = -WARMUP; k < rounds; k++, deadline += period_ns) {
		struct timespec ts = {deadline / 1000000000LL, deadline % 1000000000LL};
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		int64_t t_stim = now_ns(), t_resp = 0;
		size_t got = 0;
		if (write(in, &t_stim, sizeof(t_stim)) != sizeof(t_stim)) {
			perror("ioc_fifo_ref: write");
			return 1;
		}
		while (got < sizeof(resp)) {
			struct pollfd p = {.fd = out, .events = POLLIN};
			if (poll(&p, 1, TIMEOUT_MS) <= 0) {
				fprintf(stderr, "ioc_fifo_ref: no response within %d ms\n", TIMEOUT_MS);
				return 1;
			}
			ssize_t n = read(out, (char *)resp + got, sizeof(resp) - got);
			t_resp = now_ns();
			if (n > 0)
				got += (size_t)n;
		}
		if (resp[0] != t_stim) {
			fprintf(stderr, "ioc_fifo_ref: a response to another stimulus\n");
			return 1;
		}
		if (k >= 0)
			rtt_ns[k] = t_resp - t_stim;
	}
	qsort(rtt_ns, (size_t)rounds, sizeof(*rtt_ns), by_value);
	long p50 = (rounds + 1) / 2 - 1, p99 = (rounds * 99 + 99) / 100 - 1;
	printf("{\"rounds\": %ld, \"median_ns\": %" PRId64 ", \"p99_ns\": %" PRId64 ", \"max_ns\": %" PRId64 "}\n",
	       rounds, rtt_ns[p50], rtt_ns[p99], rtt_ns[rounds - 1]);
	return 0;
}
