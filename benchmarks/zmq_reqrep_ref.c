/* Reference for benchmarks/msg_vs_reference.py: the barest libzmq REQ/REP
 * round trip over tcp://127.0.0.1 between two processes, nothing else.
 *
 *   zmq_reqrep_ref N SIZE CLIENT_CPU SERVER_CPU POLICY PRIORITY [WARMUP]
 *
 * POLICY is fifo or other; CPU -1 = unbound. Each process pins itself and
 * sets its policy before creating its zmq context (the I/O thread inherits
 * them), like rtqual-probe msg. Prints the median RTT of N round trips in ns
 * (CLOCK_MONOTONIC before zmq_send, after zmq_recv), lower median for even N.
 * Build: cc -O2 zmq_reqrep_ref.c -o zmq_reqrep_ref -lzmq */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void place(int cpu, int fifo, int prio)
{
	if (cpu >= 0) {
		cpu_set_t s;
		CPU_ZERO(&s);
		CPU_SET(cpu, &s);
		if (sched_setaffinity(0, sizeof(s), &s))
			perror("sched_setaffinity"), exit(1);
	}
	struct sched_param sp = {.sched_priority = fifo ? prio : 0};
	if (sched_setscheduler(0, fifo ? SCHED_FIFO : SCHED_OTHER, &sp))
		perror("sched_setscheduler"), exit(1);
	mlockall(MCL_CURRENT | MCL_FUTURE);
}

static int cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc < 7) {
		fprintf(stderr, "usage: %s N SIZE CLIENT_CPU SERVER_CPU fifo|other PRIORITY [WARMUP]\n", argv[0]);
		return 1;
	}
	long n = atol(argv[1]), warm = argc > 7 ? atol(argv[7]) : 100;
	size_t size = (size_t)atol(argv[2]);
	int ccpu = atoi(argv[3]), scpu = atoi(argv[4]), fifo = strcmp(argv[5], "fifo") == 0, prio = atoi(argv[6]);
	int p[2];
	char ep[256] = "";
	if (n < 1 || size < 1 || pipe(p))
		return 1;
	pid_t pid = fork();
	if (pid == 0) { /* server: REP echo */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		place(scpu, fifo, prio);
		void *ctx = zmq_ctx_new(), *s = zmq_socket(ctx, ZMQ_REP);
		size_t len = sizeof(ep);
		if (zmq_bind(s, "tcp://127.0.0.1:*") || zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, ep, &len))
			_exit(1);
		if (write(p[1], ep, sizeof(ep)) != (ssize_t)sizeof(ep))
			_exit(1);
		char *buf = malloc(size + 1);
		for (;;) {
			int r = zmq_recv(s, buf, size + 1, 0);
			if (r < 0 || zmq_send(s, buf, (size_t)r, 0) < 0)
				_exit(1);
		}
	}
	if (read(p[0], ep, sizeof(ep)) != (ssize_t)sizeof(ep))
		return 1;
	place(ccpu, fifo, prio);
	void *ctx = zmq_ctx_new(), *s = zmq_socket(ctx, ZMQ_REQ);
	if (zmq_connect(s, ep))
		return 1;
	char *sbuf = calloc(1, size + 1), *rbuf = calloc(1, size + 1);
	int64_t *rtt = calloc((size_t)n, sizeof(*rtt));
	for (long i = -warm; i < n; i++) {
		int64_t t0 = now_ns();
		if (zmq_send(s, sbuf, size, 0) < 0 || zmq_recv(s, rbuf, size + 1, 0) != (int)size)
			return kill(pid, SIGKILL), 1;
		int64_t t1 = now_ns();
		if (i >= 0)
			rtt[i] = t1 - t0;
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	qsort(rtt, (size_t)n, sizeof(*rtt), cmp);
	printf("%lld\n", (long long)rtt[(n - 1) / 2]);
	return 0;
}
