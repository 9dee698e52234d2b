/* A bare libca put -> monitor round trip: the reference for `rtqual-ca ca-rtt`
 * (benchmarks/ca_rtt_vs_bare_libca.py builds and runs it). Nothing of rtqual: libca,
 * pthreads and clock_gettime, written as directly as the measurement allows.
 *
 *   ca_rtt_ref PUT_PV ECHO_PV ROUNDS PERIOD_US CPU PRIORITY
 *
 * The main thread (pinned to CPU, SCHED_FIFO PRIORITY, after libca made its threads) puts a
 * double i at absolute deadlines PERIOD_US apart; the DBE_VALUE monitor of ECHO_PV, called in
 * libca's own thread, timestamps the value i and wakes it (condition variable). 10 warm-up
 * rounds are discarded; /dev/cpu_dma_latency is held at 0 as rtqual does. Prints one JSON line
 * {"rounds", "median_ns", "p99_ns", "max_ns"} (nearest rank). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cadef.h>

#define WARMUP 10

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t echoed = PTHREAD_COND_INITIALIZER;
static double awaited = -1.0;
static int64_t t_echo_ns;

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void on_echo(struct event_handler_args args)
{
	int64_t t = now_ns();
	if (args.status != ECA_NORMAL)
		return;
	pthread_mutex_lock(&lock);
	if (*(const double *)args.dbr == awaited && t_echo_ns == 0) {
		t_echo_ns = t;
		pthread_cond_signal(&echoed);
	}
	pthread_mutex_unlock(&lock);
}

static int by_value(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static int die(const char *what, int status)
{
	fprintf(stderr, "ca_rtt_ref: %s: %s\n", what, ca_message(status));
	return 1;
}

int main(int argc, char **argv)
{
	if (argc != 7) {
		fprintf(stderr, "usage: ca_rtt_ref PUT_PV ECHO_PV ROUNDS PERIOD_US CPU PRIORITY\n");
		return 1;
	}
	long rounds = atol(argv[3]), period_ns = atol(argv[4]) * 1000L;
	int cpu = atoi(argv[5]), prio = atoi(argv[6]);
	int64_t *rtt_ns = calloc((size_t)rounds, sizeof(*rtt_ns));
	if (rounds < 1 || period_ns < 1000 || !rtt_ns) {
		fprintf(stderr, "ca_rtt_ref: bad ROUNDS or PERIOD_US\n");
		return 1;
	}
	int32_t zero = 0;
	int dma = open("/dev/cpu_dma_latency", O_WRONLY);
	if (dma >= 0 && write(dma, &zero, sizeof(zero)) != sizeof(zero))
		perror("ca_rtt_ref: /dev/cpu_dma_latency");

	chid put, echo;
	evid ev;
	int st = ca_context_create(ca_enable_preemptive_callback);
	if (st != ECA_NORMAL)
		return die("ca_context_create", st);
	ca_create_channel(argv[1], NULL, NULL, 0, &put);
	ca_create_channel(argv[2], NULL, NULL, 0, &echo);
	if ((st = ca_pend_io(5.0)) != ECA_NORMAL)
		return die("connect", st);
	if ((st = ca_create_subscription(DBR_DOUBLE, 1, echo, DBE_VALUE, on_echo, NULL, &ev)) != ECA_NORMAL)
		return die("ca_create_subscription", st);
	ca_flush_io();
	usleep(200000); /* the first (current value) update has come */

	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	struct sched_param sp = {.sched_priority = prio};
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) ||
	    pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) || mlockall(MCL_CURRENT | MCL_FUTURE)) {
		perror("ca_rtt_ref: CPU, SCHED_FIFO or mlockall");
		return 1;
	}

	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	double base = (double)(now_ns() % 1000000000LL); /* differs from what the PV holds now */
	for (long i = 0; i < rounds + WARMUP; i++) {
		next.tv_nsec += period_ns;
		while (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
		double v = base + (double)i;
		pthread_mutex_lock(&lock);
		awaited = v;
		t_echo_ns = 0;
		pthread_mutex_unlock(&lock);
		int64_t t_put = now_ns();
		ca_put(DBR_DOUBLE, put, &v);
		ca_flush_io();
		struct timespec limit;
		clock_gettime(CLOCK_REALTIME, &limit);
		limit.tv_sec += 5;
		pthread_mutex_lock(&lock);
		while (t_echo_ns == 0)
			if (pthread_cond_timedwait(&echoed, &lock, &limit) == ETIMEDOUT) {
				fprintf(stderr, "ca_rtt_ref: no echo of %s within 5 s\n", argv[1]);
				return 1;
			}
		if (i >= WARMUP)
			rtt_ns[i - WARMUP] = t_echo_ns - t_put;
		pthread_mutex_unlock(&lock);
	}
	qsort(rtt_ns, (size_t)rounds, sizeof(*rtt_ns), by_value);
	long p99 = (99 * rounds + 99) / 100; /* nearest rank: ceil(0.99 N) */
	printf("{\"rounds\": %ld, \"median_ns\": %" PRId64 ", \"p99_ns\": %" PRId64 ", \"max_ns\": %" PRId64 "}\n",
	       rounds, rtt_ns[(rounds + 1) / 2 - 1], rtt_ns[p99 - 1], rtt_ns[rounds - 1]);
	ca_context_destroy();
	return 0;
}
