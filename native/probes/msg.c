/* msg probe: message round-trip time between processes (seed 003, MADOCA II:
 * test program -> message server -> equipment manager over ZeroMQ).
 *
 * The probe process forks the server (and with --chain a broker) before it
 * starts anything else; each child sets its own affinity, policy and memory
 * lock BEFORE it creates its sockets (so a zmq context's I/O thread inherits
 * them), reads them back and reports them with its endpoint over a pipe.
 * The client is a thread of the probe process with its own attributes; it
 * times each round trip with CLOCK_MONOTONIC just before the send and right
 * after the reply, one sink slot (the client's CPU). The main thread
 * (SCHED_OTHER) emits progress, keeps the liveness watchdog and, at the end
 * or on SIGINT/SIGTERM, stops the client and kills + reaps the children. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef RTQUAL_HAVE_ZMQ
#include <zmq.h>
#endif

#include "rtqual/cpulist.h"
#include "rtqual/log.h"
#include "rtqual/probe.h"
#include "rtqual/rtenv.h"
#include "rtqual/sink.h"

#define THREAD_STACK_BYTES (256 * 1024)
#define WATCHDOG_MARGIN_S 10
#define READY_TIMEOUT_MS 10000
#define RTTIME_SOFT_US 200000
#define RTTIME_HARD_US 400000
#define MAX_EXTRA_THREADS 4
#define MAX_DGRAM 65507
#define GRANT_ZMQ "apt-get install libzmq3-dev and rebuild"

enum transport { TR_ZMQ_TCP, TR_ZMQ_IPC, TR_UDP, TR_TCP, TR_UNIX_STREAM, TR_UNIX_DGRAM };
static const char *const transport_names[] = {"zmq-tcp", "zmq-ipc", "udp", "tcp", "unix-stream", "unix-dgram", NULL};

enum role { ROLE_CLIENT, ROLE_BROKER, ROLE_SERVER, NROLES };
static const char *const role_names[] = {"client", "broker", "server"};

struct msg_cfg {
	int transport;
	bool chain;
	int64_t size, rate_hz;
	int policy;
	int64_t priority;
	int64_t cpu[NROLES];
	int role_policy[NROLES];
	int64_t role_priority[NROLES];
	int64_t duration_ns, loops, warmup, timeout_ns;
	bool no_dma_latency, allow_degraded;
	struct sink_out out;
};

#define F(x) offsetof(struct msg_cfg, x)
static const struct opt_def msg_opts[] = {
	{"transport", OPT_ENUM, F(transport), 0, 0, "zmq-tcp", transport_names,
	 "zmq-tcp/zmq-ipc: ZeroMQ REQ/REP; udp, tcp (127.0.0.1), unix-stream, unix-dgram (abstract): bare sockets"},
	{"chain", OPT_FLAG, F(chain), 0, 0, NULL, NULL,
	 "client -> broker -> server (zmq: REQ -> ROUTER/DEALER proxy -> REP; bare: a relay process)"},
	{"size", OPT_INT, F(size), 1, 1048576, "64", NULL, "message size, bytes (udp and unix-dgram: at most 65507)"},
	{"rate", OPT_INT, F(rate_hz), 0, 1000000, "0", NULL,
	 "round trips per second, started on absolute deadlines; 0 = back to back, Hz"},
	{"policy", OPT_ENUM, F(policy), 0, 0, "fifo", rt_policy_names,
	 "scheduling policy of every process unless --client/--broker/--server-policy say otherwise"},
	{"priority", OPT_INT, F(priority), 1, 99, "80", NULL, "RT priority of every process (ignored for other)"},
	{"client-cpu", OPT_INT, F(cpu[ROLE_CLIENT]), -1, CPULIST_MAX - 1, "-1", NULL,
	 "pin the client (measuring thread) to this CPU; -1 = unbound"},
	{"broker-cpu", OPT_INT, F(cpu[ROLE_BROKER]), -1, CPULIST_MAX - 1, "-1", NULL,
	 "pin the broker process (--chain) to this CPU; -1 = unbound"},
	{"server-cpu", OPT_INT, F(cpu[ROLE_SERVER]), -1, CPULIST_MAX - 1, "-1", NULL,
	 "pin the server process to this CPU; -1 = unbound"},
	{"client-policy", OPT_ENUM, F(role_policy[ROLE_CLIENT]), 0, 0, NULL, rt_policy_names,
	 "client policy (default: --policy)"},
	{"broker-policy", OPT_ENUM, F(role_policy[ROLE_BROKER]), 0, 0, NULL, rt_policy_names,
	 "broker policy (default: --policy)"},
	{"server-policy", OPT_ENUM, F(role_policy[ROLE_SERVER]), 0, 0, NULL, rt_policy_names,
	 "server policy (default: --policy)"},
	{"client-priority", OPT_INT, F(role_priority[ROLE_CLIENT]), 1, 99, NULL, NULL,
	 "client RT priority (default: --priority)"},
	{"broker-priority", OPT_INT, F(role_priority[ROLE_BROKER]), 1, 99, NULL, NULL,
	 "broker RT priority (default: --priority)"},
	{"server-priority", OPT_INT, F(role_priority[ROLE_SERVER]), 1, 99, NULL, NULL,
	 "server RT priority (default: --priority)"},
	{"duration", OPT_DURATION, F(duration_ns), NS_PER_MS, 365 * 24 * 3600 * NS_PER_S, "10s", NULL,
	 "measured time after warm-up"},
	{"loops", OPT_INT, F(loops), 1, 1LL << 62, NULL, NULL,
	 "measured round trips (with --rate: periods, samples + overruns); replaces --duration"},
	{"warmup", OPT_INT, F(warmup), 0, 1000000000, "100", NULL, "round trips discarded before measuring"},
	{"threshold", OPT_DURATION, F(out.threshold_ns), 1, 60 * NS_PER_S, "1ms", NULL,
	 "round trips above it emit event records"},
	SINK_OUT_OPTS(F, "1000"),
	{"timeout", OPT_DURATION, F(timeout_ns), NS_PER_MS, 60 * NS_PER_S, "5s", NULL,
	 "no reply within it ends the run with an error"},
	{"no-dma-latency", OPT_FLAG, F(no_dma_latency), 0, 0, NULL, NULL, "do not hold /dev/cpu_dma_latency at 0"},
	{"allow-degraded", OPT_FLAG, F(allow_degraded), 0, 0, NULL, NULL,
	 "run with what is permitted (SCHED_OTHER, no mlock), marked degraded"},
};
#undef F
#define MSG_NOPTS ((int)(sizeof(msg_opts) / sizeof(msg_opts[0])))

/* What one thread really got, read back with sched_getscheduler/getparam/getaffinity. */
struct sched_rb {
	int32_t tid, policy, priority, pad;
	cpu_set_t aff;
};

/* One process (or the client thread): what was asked, what it got. */
struct proc_info {
	int32_t pid, cpu_req, policy_req, priority_req;
	bool mlockall, started;
	struct sched_rb self;
	int32_t nthr; /* other threads of that process (zmq I/O, reaper), read back too */
	struct sched_rb thr[MAX_EXTRA_THREADS];
};

/* A child's start-up report (one atomic pipe write). */
struct ready_msg {
	int32_t ok;
	char endpoint[128];
	struct proc_info info;
	char err[256];
};
_Static_assert(sizeof(struct ready_msg) <= PIPE_BUF, "ready message must be one atomic pipe write");

/* The client's connection: a socket or a zmq context + socket. */
struct conn {
	int fd;
	void *zctx, *zsock;
};

/* All state of one msg run. */
struct msg {
	struct msg_cfg cfg;
	uint64_t given;
	struct rt_info rt;
	struct sink sink;
	pid_t parent_pid;
	struct proc_info proc[NROLES];
	char endpoint[NROLES][128]; /* where each role can be reached */
	int64_t period_ns;
	int dma_fd;
	struct warnings warn; /* until the header is out */
	/* client thread */
	pthread_t tid;
	bool thread_started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool client_ready, client_go, stop_requested;
	struct conn conn; /* published under mu for the wake-up */
	bool conn_open;
	char client_err[256];
	int slot_cpu;
	bool slot_from_start;
	_Atomic uint64_t round_trips; /* every completed round trip, warm-up included */
	_Atomic bool client_done;
};

static bool is_zmq(int tr) { return tr == TR_ZMQ_TCP || tr == TR_ZMQ_IPC; }
static bool is_stream(int tr) { return tr == TR_TCP || tr == TR_UNIX_STREAM; }
static bool is_unix(int tr) { return tr == TR_UNIX_STREAM || tr == TR_UNIX_DGRAM; }

/* ---- scheduling read-back ---------------------------------------------- */

static const char *sched_name(int p)
{
	switch (p & ~SCHED_RESET_ON_FORK) {
	case SCHED_FIFO: return "fifo";
	case SCHED_RR: return "rr";
	case SCHED_OTHER: return "other";
	case SCHED_BATCH: return "batch";
	case SCHED_IDLE: return "idle";
	default: return "unknown";
	}
}

/* Policy, priority and affinity of thread `tid` (0: the calling thread). */
static void sched_readback(pid_t tid, struct sched_rb *r)
{
	struct sched_param sp = {0};
	memset(r, 0, sizeof(*r));
	r->tid = tid ? tid : gettid();
	r->policy = sched_getscheduler(tid);
	if (sched_getparam(tid, &sp) == 0)
		r->priority = sp.sched_priority;
	if (sched_getaffinity(tid, sizeof(r->aff), &r->aff) != 0)
		CPU_ZERO(&r->aff);
}

/* Read back the other threads of this process except `skip1`, `skip2`:
 * the threads a zmq context started (they must have inherited our setup). */
static void readback_other_threads(struct proc_info *pi, pid_t skip1, pid_t skip2)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	pi->nthr = 0;
	if (!d)
		return;
	while ((e = readdir(d)) && pi->nthr < MAX_EXTRA_THREADS) {
		pid_t t = (pid_t)atoi(e->d_name);
		if (t <= 0 || t == skip1 || t == skip2)
			continue;
		sched_readback(t, &pi->thr[pi->nthr++]);
	}
	closedir(d);
}

/* Apply the requested affinity (cpu >= 0) and policy to the calling thread. */
static int apply_sched(int cpu, int policy, int priority, char *err, size_t errlen)
{
	if (cpu >= 0) {
		cpu_set_t s;
		CPU_ZERO(&s);
		CPU_SET(cpu, &s);
		if (sched_setaffinity(0, sizeof(s), &s) != 0) {
			snprintf(err, errlen, "cannot pin to CPU %d: %s", cpu, strerror(errno));
			return -1;
		}
	}
	struct sched_param sp = {.sched_priority = policy == RT_OTHER ? 0 : priority};
	if (sched_setscheduler(0, rt_sched_policy(policy), &sp) != 0) {
		snprintf(err, errlen, "cannot set SCHED_%s priority %d: %s", policy == RT_FIFO ? "FIFO" : policy == RT_RR ? "RR" : "OTHER",
			 sp.sched_priority, strerror(errno));
		return -1;
	}
	return 0;
}

/* ---- bare sockets -------------------------------------------------------- */

/* "127.0.0.1:PORT" or "@abstract-name" -> sockaddr. */
static int addr_parse(int tr, const char *ep, struct sockaddr_storage *ss, socklen_t *len)
{
	memset(ss, 0, sizeof(*ss));
	if (is_unix(tr)) {
		struct sockaddr_un *u = (struct sockaddr_un *)ss;
		size_t n = strlen(ep);
		if (ep[0] != '@' || n >= sizeof(u->sun_path))
			return -1;
		u->sun_family = AF_UNIX;
		memcpy(u->sun_path + 1, ep + 1, n - 1); /* sun_path[0] = 0: abstract */
		*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
		return 0;
	}
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	const char *colon = strrchr(ep, ':');
	if (!colon)
		return -1;
	in->sin_family = AF_INET;
	in->sin_port = htons((uint16_t)atoi(colon + 1));
	in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	*len = sizeof(*in);
	return 0;
}

/* Abstract Unix name of one endpoint of this run: "@rtqual-msg-PID-TAG". */
static void unix_name(const struct msg *m, const char *tag, char *out, size_t len)
{
	snprintf(out, len, "@rtqual-msg-%d-%s", (int)m->parent_pid, tag);
}

static int sock_type(int tr)
{
	return (is_stream(tr) ? SOCK_STREAM : SOCK_DGRAM) | SOCK_CLOEXEC;
}

/* Bound (and for streams listening) socket; its endpoint into ep. */
static int bare_listen(const struct msg *m, const char *tag, char *ep, size_t eplen, char *err, size_t errlen)
{
	int tr = m->cfg.transport;
	struct sockaddr_storage ss;
	socklen_t len = 0;
	char name[108];
	if (is_unix(tr))
		unix_name(m, tag, name, sizeof(name));
	else
		snprintf(name, sizeof(name), "127.0.0.1:0");
	addr_parse(tr, name, &ss, &len);
	int fd = socket(is_unix(tr) ? AF_UNIX : AF_INET, sock_type(tr), 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&ss, len) != 0 || (is_stream(tr) && listen(fd, 4) != 0)) {
		snprintf(err, errlen, "%s: cannot bind %s: %s", transport_names[tr], name, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (is_unix(tr)) {
		snprintf(ep, eplen, "%s", name);
	} else {
		struct sockaddr_in in;
		socklen_t l = sizeof(in);
		getsockname(fd, (struct sockaddr *)&in, &l);
		snprintf(ep, eplen, "127.0.0.1:%u", (unsigned)ntohs(in.sin_port));
	}
	return fd;
}

/* Socket connected to ep; unix-dgram binds to its own name `tag` first
 * (replies need an address). TCP: Nagle off. */
static int bare_connect(const struct msg *m, const char *ep, const char *tag, char *err, size_t errlen)
{
	int tr = m->cfg.transport, one = 1;
	struct sockaddr_storage ss;
	socklen_t len = 0;
	if (addr_parse(tr, ep, &ss, &len) != 0) {
		snprintf(err, errlen, "bad endpoint '%s'", ep);
		return -1;
	}
	int fd = socket(is_unix(tr) ? AF_UNIX : AF_INET, sock_type(tr), 0);
	if (fd < 0)
		goto fail;
	if (tr == TR_UNIX_DGRAM) {
		struct sockaddr_storage me;
		socklen_t mlen = 0;
		char name[108];
		unix_name(m, tag, name, sizeof(name));
		addr_parse(tr, name, &me, &mlen);
		if (bind(fd, (struct sockaddr *)&me, mlen) != 0)
			goto fail;
	}
	if (connect(fd, (struct sockaddr *)&ss, len) != 0)
		goto fail;
	if (tr == TR_TCP)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
fail:
	snprintf(err, errlen, "%s: cannot connect to %s: %s", transport_names[tr], ep, strerror(errno));
	if (fd >= 0)
		close(fd);
	return -1;
}

/* Exactly n bytes from a stream; 0 on EOF, -1 on error (errno). */
static ssize_t read_full(int fd, void *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = recv(fd, (char *)buf + got, n - got, 0);
		if (r == 0)
			return 0;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t)r;
	}
	return (ssize_t)n;
}

static int send_full(int fd, const void *buf, size_t n)
{
	size_t put = 0;
	while (put < n) {
		ssize_t r = send(fd, (const char *)buf + put, n - put, MSG_NOSIGNAL);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		put += (size_t)r;
	}
	return 0;
}

static int accept_one(int lfd, int tr)
{
	int one = 1, fd;
	while ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0 && errno == EINTR)
		;
	if (fd >= 0 && tr == TR_TCP)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* ---- children: server (echo) and broker (relay) --------------------------- */

/* Send the start-up report to the parent. */
static void child_report(int fd, struct ready_msg *rm)
{
	if (write(fd, rm, sizeof(*rm)) != (ssize_t)sizeof(*rm)) {
		/* the parent sees EOF or a short read and reports it */
	}
	close(fd);
}

/* Fill the read-back part of a report for this (single-threaded or zmq) process. */
static void child_readback(struct ready_msg *rm)
{
	sched_readback(0, &rm->info.self);
	readback_other_threads(&rm->info, getpid(), 0);
}

/* Bare echo server / relay: set up, report, then serve until killed or the
 * peer goes away. Never returns. */
static _Noreturn void child_bare(struct msg *m, int role, int ready_fd, struct ready_msg *rm, char *buf)
{
	int tr = m->cfg.transport;
	size_t size = (size_t)m->cfg.size;
	int lfd = bare_listen(m, role_names[role], rm->endpoint, sizeof(rm->endpoint), rm->err, sizeof(rm->err));
	int back = -1;
	if (lfd >= 0 && role == ROLE_BROKER)
		back = bare_connect(m, m->endpoint[ROLE_SERVER], "broker-back", rm->err, sizeof(rm->err));
	rm->ok = lfd >= 0 && (role != ROLE_BROKER || back >= 0);
	child_readback(rm);
	child_report(ready_fd, rm);
	if (!rm->ok)
		_exit(1);
	if (is_stream(tr)) {
		int fd = accept_one(lfd, tr);
		if (fd < 0)
			_exit(1);
		for (;;) {
			if (read_full(fd, buf, size) <= 0)
				_exit(0);
			if (back >= 0 && (send_full(back, buf, size) || read_full(back, buf, size) <= 0))
				_exit(1);
			if (send_full(fd, buf, size))
				_exit(0);
		}
	}
	for (;;) {
		struct sockaddr_storage from;
		socklen_t flen = sizeof(from);
		ssize_t n = recvfrom(lfd, buf, size + 1, 0, (struct sockaddr *)&from, &flen);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		if (back >= 0) {
			if (send(back, buf, (size_t)n, MSG_NOSIGNAL) < 0)
				_exit(1);
			while ((n = recv(back, buf, size + 1, 0)) < 0 && errno == EINTR)
				;
			if (n < 0)
				_exit(1);
		}
		sendto(lfd, buf, (size_t)n, MSG_NOSIGNAL, (struct sockaddr *)&from, flen);
	}
}

#ifdef RTQUAL_HAVE_ZMQ
static void zmq_linger0(void *s)
{
	int zero = 0;
	zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
}

/* zmq bind address of a role: loopback tcp with a free port, or an abstract ipc name. */
static void zmq_bind_addr(const struct msg *m, int role, char *out, size_t len)
{
	if (m->cfg.transport == TR_ZMQ_TCP)
		snprintf(out, len, "tcp://127.0.0.1:*");
	else
		snprintf(out, len, "ipc://@rtqual-msg-%d-%s", (int)m->parent_pid, role_names[role]);
}

/* zmq REP echo server or ROUTER/DEALER proxy broker. The context is created
 * here, after the scheduling setup, so its threads inherit it. Never returns. */
static _Noreturn void child_zmq(struct msg *m, int role, int ready_fd, struct ready_msg *rm, char *buf)
{
	size_t size = (size_t)m->cfg.size, eplen = sizeof(rm->endpoint);
	char addr[128];
	void *ctx = zmq_ctx_new();
	void *front = ctx ? zmq_socket(ctx, role == ROLE_SERVER ? ZMQ_REP : ZMQ_ROUTER) : NULL;
	void *back = NULL;
	zmq_bind_addr(m, role, addr, sizeof(addr));
	rm->ok = 0;
	if (!front) {
		snprintf(rm->err, sizeof(rm->err), "zmq: cannot create a socket: %s", zmq_strerror(zmq_errno()));
	} else {
		zmq_linger0(front);
		if (zmq_bind(front, addr) != 0 || zmq_getsockopt(front, ZMQ_LAST_ENDPOINT, rm->endpoint, &eplen) != 0)
			snprintf(rm->err, sizeof(rm->err), "zmq: cannot bind %s: %s", addr, zmq_strerror(zmq_errno()));
		else if (role == ROLE_BROKER && (!(back = zmq_socket(ctx, ZMQ_DEALER)) ||
						 (zmq_linger0(back), zmq_connect(back, m->endpoint[ROLE_SERVER])) != 0))
			snprintf(rm->err, sizeof(rm->err), "zmq: broker cannot connect to %s: %s",
				 m->endpoint[ROLE_SERVER], zmq_strerror(zmq_errno()));
		else
			rm->ok = 1;
	}
	child_readback(rm);
	child_report(ready_fd, rm);
	if (!rm->ok)
		_exit(1);
	if (role == ROLE_BROKER) {
		zmq_proxy(front, back, NULL); /* returns only when the context ends */
		_exit(0);
	}
	for (;;) {
		int n = zmq_recv(front, buf, size + 1, 0);
		if (n < 0) {
			if (zmq_errno() == EINTR)
				continue;
			_exit(1);
		}
		if (zmq_send(front, buf, (size_t)n < size + 1 ? (size_t)n : size + 1, 0) < 0 && zmq_errno() != EINTR)
			_exit(1);
	}
}
#endif

/* Child process body: die with the parent, keep off the JSON stream, set
 * affinity/policy/mlock, then serve. Never returns. */
static _Noreturn void child_main(struct msg *m, int role, int ready_fd)
{
	struct ready_msg rm;
	memset(&rm, 0, sizeof(rm));
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != m->parent_pid)
		_exit(1); /* the parent died before prctl */
	signal(SIGINT, SIG_IGN); /* a terminal's ^C: the parent decides, then kills us */
	signal(SIGTERM, SIG_DFL);
	signal(SIGALRM, SIG_DFL);
	signal(SIGPIPE, SIG_IGN);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null >= 0 && m->cfg.out.json_fd != 2)
		dup2(null, (int)m->cfg.out.json_fd);
	if (m->sink.raw_fd >= 0)
		close(m->sink.raw_fd);

	struct proc_info *pi = &rm.info;
	*pi = m->proc[role];
	pi->pid = getpid();
	pi->started = true;
	if (apply_sched(pi->cpu_req, pi->policy_req, pi->priority_req, rm.err, sizeof(rm.err)) != 0) {
		child_readback(&rm);
		child_report(ready_fd, &rm);
		_exit(1);
	}
	pi->mlockall = m->rt.mlockall && mlockall(MCL_CURRENT | MCL_FUTURE) == 0;
	char *buf = malloc((size_t)m->cfg.size + 1);
	if (!buf) {
		snprintf(rm.err, sizeof(rm.err), "out of memory");
		child_report(ready_fd, &rm);
		_exit(1);
	}
	memset(buf, 0, (size_t)m->cfg.size + 1);
#ifdef RTQUAL_HAVE_ZMQ
	if (is_zmq(m->cfg.transport))
		child_zmq(m, role, ready_fd, &rm, buf);
#endif
	child_bare(m, role, ready_fd, &rm, buf);
}

/* Fork one child and wait for its report (endpoint, read-back). */
static int start_child(struct msg *m, int role, char *err, size_t errlen)
{
	int p[2];
	struct ready_msg rm;
	if (pipe2(p, O_CLOEXEC) != 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "cannot fork the %s: %s", role_names[role], strerror(errno));
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		close(p[0]);
		child_main(m, role, p[1]);
	}
	close(p[1]);
	m->proc[role].pid = pid;
	m->proc[role].started = true;
	struct pollfd pfd = {.fd = p[0], .events = POLLIN};
	int r;
	while ((r = poll(&pfd, 1, READY_TIMEOUT_MS)) < 0 && errno == EINTR)
		;
	ssize_t n = r > 0 ? read(p[0], &rm, sizeof(rm)) : -1;
	close(p[0]);
	if (r == 0) {
		snprintf(err, errlen, "the %s (pid %d) did not start within %d ms", role_names[role], (int)pid,
			 READY_TIMEOUT_MS);
		return -1;
	}
	if (n != (ssize_t)sizeof(rm)) {
		snprintf(err, errlen, "the %s (pid %d) exited during start-up", role_names[role], (int)pid);
		return -1;
	}
	if (!rm.ok) {
		snprintf(err, errlen, "%s: %s", role_names[role], rm.err);
		return -1;
	}
	rm.info.pid = pid;
	m->proc[role] = rm.info;
	snprintf(m->endpoint[role], sizeof(m->endpoint[role]), "%s", rm.endpoint);
	return 0;
}

/* Kill and reap the children (server, broker); describe an earlier death
 * into `why` (if not NULL) so a client error can say what happened. */
static void stop_children(struct msg *m, char *why, size_t whylen)
{
	for (int r = ROLE_BROKER; r < NROLES; r++) {
		struct proc_info *pi = &m->proc[r];
		int st;
		if (!pi->started || pi->pid <= 0)
			continue;
		pid_t w = waitpid(pi->pid, &st, WNOHANG);
		if (w == pi->pid) {
			if (why && !why[0])
				snprintf(why, whylen, "; the %s (pid %d) had %s %d", role_names[r], (int)pi->pid,
					 WIFSIGNALED(st) ? "died of signal" : "exited with", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		} else {
			kill(pi->pid, SIGKILL);
			while (waitpid(pi->pid, &st, 0) < 0 && errno == EINTR)
				;
		}
		pi->started = false;
	}
}

/* ---- client ----------------------------------------------------------------- */

/* Open the client's connection to `ep` with send/receive timeouts. */
static int client_open(struct msg *m, const char *ep, struct conn *c, char *err, size_t errlen)
{
	c->fd = -1;
	c->zctx = c->zsock = NULL;
#ifdef RTQUAL_HAVE_ZMQ
	if (is_zmq(m->cfg.transport)) {
		int ms = (int)((m->cfg.timeout_ns + NS_PER_MS - 1) / NS_PER_MS);
		if (!(c->zctx = zmq_ctx_new()) || !(c->zsock = zmq_socket(c->zctx, ZMQ_REQ))) {
			snprintf(err, errlen, "zmq: cannot create the client socket: %s", zmq_strerror(zmq_errno()));
			return -1;
		}
		zmq_linger0(c->zsock);
		zmq_setsockopt(c->zsock, ZMQ_RCVTIMEO, &ms, sizeof(ms));
		zmq_setsockopt(c->zsock, ZMQ_SNDTIMEO, &ms, sizeof(ms));
		if (zmq_connect(c->zsock, ep) != 0) {
			snprintf(err, errlen, "zmq: cannot connect to %s: %s", ep, zmq_strerror(zmq_errno()));
			return -1;
		}
		return 0;
	}
#endif
	c->fd = bare_connect(m, ep, "client", err, errlen);
	if (c->fd < 0)
		return -1;
	struct timeval tv = {.tv_sec = m->cfg.timeout_ns / NS_PER_S, .tv_usec = (m->cfg.timeout_ns % NS_PER_S) / 1000};
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return 0;
}

static void client_close(struct conn *c)
{
#ifdef RTQUAL_HAVE_ZMQ
	if (c->zsock)
		zmq_close(c->zsock);
	if (c->zctx)
		zmq_ctx_term(c->zctx);
#endif
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->zctx = c->zsock = NULL;
}

/* Unblock a client stuck in send/recv (another thread): shutdown the socket
 * or the zmq context; the blocked call returns an error. */
static void client_wake(struct conn *c)
{
#ifdef RTQUAL_HAVE_ZMQ
	if (c->zctx)
		zmq_ctx_shutdown(c->zctx);
#endif
	if (c->fd >= 0)
		shutdown(c->fd, SHUT_RDWR);
}

/* One round trip: send `size` bytes, receive the reply into rbuf. Returns
 * the reply length, -1 with errno on failure (EAGAIN: timeout), 0 on EOF. */
static ssize_t client_roundtrip(const struct conn *c, int tr, const char *sbuf, char *rbuf, size_t size)
{
#ifdef RTQUAL_HAVE_ZMQ
	if (is_zmq(tr)) {
		if (zmq_send(c->zsock, sbuf, size, 0) < 0) {
			errno = zmq_errno();
			return -1;
		}
		int n = zmq_recv(c->zsock, rbuf, size + 1, 0);
		if (n < 0)
			errno = zmq_errno();
		return n;
	}
#endif
	if (is_stream(tr)) {
		if (send_full(c->fd, sbuf, size))
			return -1;
		return read_full(c->fd, rbuf, size);
	}
	if (send(c->fd, sbuf, size, MSG_NOSIGNAL) < 0)
		return -1;
	ssize_t n;
	while ((n = recv(c->fd, rbuf, size + 1, 0)) < 0 && errno == EINTR)
		;
	return n;
}

/* Client thread error: remember the first one (main thread reports it). */
static void client_fail(struct msg *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void client_fail(struct msg *m, const char *fmt, ...)
{
	va_list ap;
	pthread_mutex_lock(&m->mu);
	if (!m->client_err[0]) {
		va_start(ap, fmt);
		vsnprintf(m->client_err, sizeof(m->client_err), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&m->mu);
}

/* The measuring loop: round trips back to back or on absolute deadlines
 * (--rate), warm-up first; one sample per round trip. */
static void client_loop(struct msg *m, const struct conn *c, char *sbuf, char *rbuf)
{
	const int tr = m->cfg.transport;
	const size_t size = (size_t)m->cfg.size, tag = size < 8 ? size : 8;
	const int64_t iv = m->period_ns;
	const uint64_t loops = (uint64_t)m->cfg.loops, warmup = (uint64_t)m->cfg.warmup;
	struct cpu_state *cs = &m->sink.cs[0];
	uint64_t seq = 0, warm = 0, periods = 0;
	bool measuring = warmup == 0;
	int64_t now = mono_now_ns();
	int64_t deadline = now + iv; /* iv == 0: back to back */
	int64_t end_ns = loops ? INT64_MAX : now + m->cfg.duration_ns;

	while (!atomic_load_explicit(&m->sink.stop, memory_order_relaxed)) {
		uint64_t skipped = 0;
		if (iv) {
			struct timespec ts = ns_to_ts(deadline);
			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
				;
			int64_t late = mono_now_ns() - deadline;
			skipped = late >= iv ? (uint64_t)(late / iv) : 0;
		}
		seq++;
		memcpy(sbuf, &seq, tag); /* the reply must carry it back */
		int64_t t0 = mono_now_ns();
		ssize_t n = client_roundtrip(c, tr, sbuf, rbuf, size);
		int64_t t1 = mono_now_ns();
		if (n != (ssize_t)size || memcmp(rbuf, sbuf, tag) != 0) {
			if (atomic_load(&m->sink.stop))
				break; /* woken up on purpose */
			char d[32];
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				client_fail(m, "no reply to round trip %" PRIu64 " within %s", seq,
					    duration_format(m->cfg.timeout_ns, d, sizeof(d)));
			else if (n < 0)
				client_fail(m, "round trip %" PRIu64 ": %s", seq, strerror(errno));
			else if (n == 0 && is_stream(tr))
				client_fail(m, "round trip %" PRIu64 ": connection closed by the peer", seq);
			else if (n != (ssize_t)size)
				client_fail(m, "round trip %" PRIu64 ": reply of %zd bytes, sent %zu", seq, n, size);
			else
				client_fail(m, "round trip %" PRIu64 ": the reply is not the message sent", seq);
			break;
		}
		atomic_fetch_add_explicit(&m->round_trips, 1, memory_order_relaxed);
		if (!measuring) {
			if (++warm >= warmup) {
				measuring = true;
				if (!loops)
					end_ns = (iv ? deadline + (int64_t)skipped * iv : t1) + m->cfg.duration_ns;
			}
		} else {
			uint64_t sk = skipped;
			if (iv) { /* periods still inside the run, this one included */
				uint64_t left = loops ? loops - periods : (uint64_t)((end_ns - deadline) / iv) + 1;
				sk = skipped < left - 1 ? skipped : left - 1;
			}
			sink_sample(cs, t1 - t0, t1, sk);
			periods += 1 + sk;
			if (loops && periods >= loops)
				break;
			if (!iv && t1 >= end_ns)
				break;
		}
		if (iv) {
			deadline += (int64_t)(skipped + 1) * iv;
			if (measuring && deadline > end_ns)
				break;
		}
	}
}

/* Client thread: connect (zmq context created here, after the thread got
 * its attributes), read back, report ready, wait for go, measure. */
static void *client_main(void *arg)
{
	struct msg *m = arg;
	struct proc_info *pi = &m->proc[ROLE_CLIENT];
	struct conn c;
	char err[256] = "";
	size_t size = (size_t)m->cfg.size;
	char *sbuf = malloc(size + 1), *rbuf = malloc(size + 1);
	const char *ep = m->endpoint[m->cfg.chain ? ROLE_BROKER : ROLE_SERVER];

	rt_prefault_stack();
	prctl(PR_SET_TIMERSLACK, 1UL);
	int rc = sbuf && rbuf ? client_open(m, ep, &c, err, sizeof(err)) : (snprintf(err, sizeof(err), "out of memory"), -1);
	if (sbuf && rbuf) {
		memset(sbuf, 0xa5, size + 1);
		memset(rbuf, 0, size + 1);
	}
	sched_readback(0, &pi->self);
	readback_other_threads(pi, getpid(), gettid());
	pi->pid = getpid();
	pi->started = true;
	pi->mlockall = m->rt.mlockall;
	m->slot_from_start = pi->cpu_req < 0;
	m->slot_cpu = pi->cpu_req >= 0 ? pi->cpu_req : sched_getcpu();
	if (m->slot_cpu < 0)
		m->slot_cpu = 0;

	pthread_mutex_lock(&m->mu);
	if (rc == 0) {
		m->conn = c;
		m->conn_open = true;
	} else {
		snprintf(m->client_err, sizeof(m->client_err), "%s", err);
	}
	m->client_ready = true;
	pthread_cond_broadcast(&m->cv);
	while (rc == 0 && !m->client_go && !m->stop_requested)
		pthread_cond_wait(&m->cv, &m->mu);
	bool go = rc == 0 && m->client_go && !m->stop_requested;
	pthread_mutex_unlock(&m->mu);

	if (go)
		client_loop(m, &c, sbuf, rbuf);
	m->sink.cs[0].wakeups = atomic_load(&m->round_trips);
	m->sink.cs[0].cpu_time_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	pthread_mutex_lock(&m->mu);
	if (m->conn_open)
		client_close(&m->conn);
	m->conn_open = false;
	pthread_mutex_unlock(&m->mu);
	free(sbuf);
	free(rbuf);
	atomic_store(&m->client_done, true);
	return NULL;
}

/* Ask the client to stop and unblock it if it waits for a reply. */
static void client_stop(struct msg *m)
{
	atomic_store(&m->sink.stop, true);
	pthread_mutex_lock(&m->mu);
	m->stop_requested = true;
	if (m->conn_open)
		client_wake(&m->conn);
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
}

/* Start the client thread with explicit attributes; wait until it is
 * connected (or failed). Stop signals stay with the main thread. */
static int client_start(struct msg *m, char *err, size_t errlen)
{
	struct proc_info *pi = &m->proc[ROLE_CLIENT];
	pthread_attr_t a;
	sigset_t old;
	int e = rt_thread_attr(&a, pi->policy_req, pi->priority_req, pi->cpu_req, THREAD_STACK_BYTES);
	if (!e) {
		rt_signals_block(&old);
		e = pthread_create(&m->tid, &a, client_main, m);
		rt_signals_restore(&old);
		pthread_attr_destroy(&a);
	}
	if (e) {
		snprintf(err, errlen, "cannot start the client thread: %s", strerror(e));
		return -1;
	}
	m->thread_started = true;
	pthread_mutex_lock(&m->mu);
	while (!m->client_ready)
		pthread_cond_wait(&m->cv, &m->mu);
	int rc = m->conn_open ? 0 : -1;
	if (rc)
		snprintf(err, errlen, "client: %s", m->client_err);
	pthread_mutex_unlock(&m->mu);
	return rc;
}

/* ---- header params ---------------------------------------------------------- */

static void emit_affinity(struct jw *w, const cpu_set_t *s)
{
	jw_arr_begin(w, "affinity");
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, s))
			jw_i64(w, NULL, i);
	jw_arr_end(w);
}

static void emit_rb(struct jw *w, const struct sched_rb *r)
{
	jw_str(w, "policy", sched_name(r->policy));
	jw_i64(w, "priority", r->priority);
	emit_affinity(w, &r->aff);
}

/* One process: requested placement and what was read back (+ its other threads). */
static void emit_proc(struct jw *w, const struct msg *m, int role)
{
	const struct proc_info *pi = &m->proc[role];
	jw_obj_begin(w, role_names[role]);
	jw_i64(w, "pid", pi->pid);
	if (role == ROLE_CLIENT)
		jw_i64(w, "tid", pi->self.tid);
	jw_str(w, "endpoint", role == ROLE_CLIENT ? NULL : m->endpoint[role]);
	jw_i64(w, "cpu_requested", pi->cpu_req);
	jw_str(w, "policy_requested", rt_policy_names[pi->policy_req]);
	jw_i64(w, "priority_requested", pi->priority_req);
	emit_rb(w, &pi->self);
	jw_bool(w, "mlockall", pi->mlockall);
	jw_arr_begin(w, "other_threads");
	for (int i = 0; i < pi->nthr; i++) {
		jw_obj_begin(w, NULL);
		jw_i64(w, "tid", pi->thr[i].tid);
		emit_rb(w, &pi->thr[i]);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
}

static void msg_params(struct jw *w, const void *ctx)
{
	const struct msg *m = ctx;
	const struct msg_cfg *c = &m->cfg;
	jw_str(w, "transport", transport_names[c->transport]);
	jw_bool(w, "chain", c->chain);
	jw_str(w, "pattern", is_zmq(c->transport) ? (c->chain ? "REQ->ROUTER/DEALER proxy->REP" : "REQ->REP")
					       : (c->chain ? "echo via relay process" : "echo"));
	jw_i64(w, "size", c->size);
	jw_i64(w, "rate_hz", c->rate_hz);
	jw_i64(w, "period_ns", m->period_ns);
	jw_i64(w, "duration_ns", c->duration_ns);
	jw_i64(w, "loops", c->loops);
	jw_i64(w, "warmup", c->warmup);
	sink_out_params(w, &c->out);
	jw_i64(w, "timeout_ns", c->timeout_ns);
	jw_bool(w, "dma_latency", !c->no_dma_latency);
	jw_bool(w, "allow_degraded", c->allow_degraded);
	jw_i64(w, "slot_cpu", m->slot_cpu);
	jw_str(w, "slot_cpu_from", m->slot_from_start ? "client CPU at start (unbound)" : "client pin");
	jw_obj_begin(w, "processes");
	emit_proc(w, m, ROLE_CLIENT);
	if (c->chain)
		emit_proc(w, m, ROLE_BROKER);
	emit_proc(w, m, ROLE_SERVER);
	jw_obj_end(w);
}

/* ---- validation and privileges ---------------------------------------------- */

static int msg_validate(struct msg *m, bool check)
{
	struct msg_cfg *c = &m->cfg;
	char err[512];
	bool have_loops = opts_given(msg_opts, MSG_NOPTS, m->given, "loops");
	if (is_zmq(c->transport)) {
#ifndef RTQUAL_HAVE_ZMQ
		return log_skip(GRANT_ZMQ, "--transport %s: built without libzmq", transport_names[c->transport]);
#endif
	}
	if (have_loops && opts_given(msg_opts, MSG_NOPTS, m->given, "duration"))
		return log_error("--duration and --loops exclude each other: give one");
	if (have_loops)
		c->duration_ns = 0;
	m->period_ns = c->rate_hz ? NS_PER_S / c->rate_hz : 0;
	if (!have_loops && m->period_ns && c->duration_ns < m->period_ns)
		return log_error("--duration is shorter than one period of --rate %" PRId64 " Hz: nothing would be measured",
				 c->rate_hz);
	if ((c->transport == TR_UDP || c->transport == TR_UNIX_DGRAM) && c->size > MAX_DGRAM)
		return log_error("--size %" PRId64 ": at most %d bytes with --transport %s", c->size, MAX_DGRAM,
				 transport_names[c->transport]);
	/* a scenario matrix may vary --chain under fixed broker settings: ignore, say so */
	if (!c->chain && (c->cpu[ROLE_BROKER] >= 0 || opts_given(msg_opts, MSG_NOPTS, m->given, "broker-policy") ||
			  opts_given(msg_opts, MSG_NOPTS, m->given, "broker-priority")))
		warnings_add(&m->warn, "--broker-cpu/--broker-policy/--broker-priority ignored without --chain");
	static const char *const cpu_opt[] = {"client-cpu", "broker-cpu", "server-cpu"};
	static const char *const pol_opt[] = {"client-policy", "broker-policy", "server-policy"};
	static const char *const pri_opt[] = {"client-priority", "broker-priority", "server-priority"};
	for (int r = 0; r < NROLES; r++) {
		struct proc_info *pi = &m->proc[r];
		if (c->cpu[r] >= 0) {
			struct cpulist one = {.n = 1};
			one.cpu[0] = (int)c->cpu[r];
			if (cpulist_check(&one, err, sizeof(err)))
				return log_error("--%s: %s", cpu_opt[r], err);
		}
		pi->cpu_req = (int)c->cpu[r];
		pi->policy_req = opts_given(msg_opts, MSG_NOPTS, m->given, pol_opt[r]) ? c->role_policy[r] : c->policy;
		int64_t pri = opts_given(msg_opts, MSG_NOPTS, m->given, pri_opt[r]) ? c->role_priority[r] : c->priority;
		pi->priority_req = pi->policy_req == RT_OTHER ? 0 : (int)pri;
	}
	return sink_out_validate(&c->out, check);
}

/* Try each requested RT policy for real, then mlockall. Not permitted ->
 * skip (exit 3) or, with --allow-degraded, every process SCHED_OTHER. */
static int msg_privileges(struct msg *m)
{
	struct msg_cfg *c = &m->cfg;
	int nroles = c->chain ? NROLES : 2;
	const int roles[] = {ROLE_CLIENT, ROLE_SERVER, ROLE_BROKER};
	/* the header's "rt" is the client's (the measuring thread) */
	m->rt.policy = m->proc[ROLE_CLIENT].policy_req;
	m->rt.priority = m->proc[ROLE_CLIENT].priority_req;
	for (int i = 0; i < nroles; i++) {
		struct proc_info *pi = &m->proc[roles[i]];
		struct rt_words words = {.role = role_names[roles[i]], .instead = "every process runs SCHED_OTHER"};
		if (pi->policy_req == RT_OTHER)
			continue;
		int rc = rt_acquire_sched(pi->policy_req, pi->priority_req, c->allow_degraded, &words, &m->rt, &m->warn);
		if (rc)
			return rc;
		if (m->rt.degraded) {
			for (int r = 0; r < NROLES; r++)
				m->proc[r].policy_req = RT_OTHER, m->proc[r].priority_req = 0;
			break;
		}
	}
	return rt_acquire_mlock(c->allow_degraded, &m->rt, &m->warn);
}

/* ---- run ----------------------------------------------------------------------- */

/* Main thread while measuring: drain the sink every ~50 ms, progress every
 * --progress-ms, re-arm the liveness watchdog while round trips complete. */
static void msg_supervise(struct msg *m)
{
	const unsigned wd_s = (unsigned)(m->cfg.timeout_ns / NS_PER_S) + 1 + WATCHDOG_MARGIN_S;
	uint64_t seen = 0;
	alarm(wd_s);
	sink_pace_start(&m->sink, SINK_POLL_NS, m->cfg.out.progress_ms);
	while (!atomic_load(&m->client_done)) {
		if (sink_stopping(&m->sink)) {
			client_stop(m);
			break;
		}
		sink_pace(&m->sink);
		uint64_t rts = atomic_load_explicit(&m->round_trips, memory_order_relaxed);
		if (rts != seen) {
			seen = rts;
			alarm(wd_s);
		}
	}
}

/* Release everything: client thread, children, fds, sink. */
static void msg_cleanup(struct msg *m)
{
	if (m->thread_started) {
		client_stop(m);
		pthread_join(m->tid, NULL);
		m->thread_started = false;
	}
	stop_children(m, NULL, 0);
	if (m->dma_fd >= 0)
		close(m->dma_fd);
	sink_free(&m->sink);
	pthread_mutex_destroy(&m->mu);
	pthread_cond_destroy(&m->cv);
}

static int msg_fail(struct msg *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int msg_fail(struct msg *m, const char *fmt, ...)
{
	char buf[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	msg_cleanup(m);
	free(m);
	return log_error("%s", buf);
}

/* Validate, acquire the RT environment, start server (+ broker) and client,
 * emit the header, measure, stop everything, emit hist/summary/end. */
static int msg_run(const struct probe_args *a)
{
	struct msg *m = calloc(1, sizeof(*m));
	char err[512] = "";
	int rc;
	if (!m)
		return log_error("out of memory");
	m->dma_fd = m->sink.raw_fd = -1;
	m->parent_pid = getpid();
	pthread_mutex_init(&m->mu, NULL);
	pthread_cond_init(&m->cv, NULL);
	if (opts_parse(msg_opts, MSG_NOPTS, &m->cfg, a->opt_argc, a->opt_argv, &m->given, err, sizeof(err))) {
		free(m);
		return log_error("%s", err);
	}
	if ((rc = msg_validate(m, a->check)) || (rc = msg_privileges(m)) || a->check) {
		free(m);
		return rc;
	}
	struct msg_cfg *c = &m->cfg;
	int placeholder = 0;
	if (sink_init(&m->sink, &c->out, &placeholder, 1, err, sizeof(err)))
		return msg_fail(m, "%s", err);
	bool any_rt = false;
	for (int r = 0; r < NROLES; r++)
		any_rt |= m->proc[r].policy_req != RT_OTHER;
	if (any_rt) /* inherited by the children; ping-pong blocks, so only a runaway hits it */
		rt_acquire_rttime_limit(RTTIME_SOFT_US, RTTIME_HARD_US, &m->warn);
	/* children first: no threads, no zmq context exist in this process yet */
	if (start_child(m, ROLE_SERVER, err, sizeof(err)) ||
	    (c->chain && start_child(m, ROLE_BROKER, err, sizeof(err))))
		return msg_fail(m, "%s", err);
	if (!c->no_dma_latency)
		rt_acquire_dma_latency(&m->dma_fd, &m->rt, &m->warn);
	rt_signals_install(); /* already now: a stop while client_start waits is recorded, not fatal */
	if (client_start(m, err, sizeof(err)))
		return msg_fail(m, "%s", err);
	m->sink.cs[0].cpu = m->slot_cpu;
	for (int r = 0; r < NROLES; r++)
		if ((r != ROLE_BROKER || c->chain) && m->proc[r].cpu_req >= 0 &&
		    !CPU_ISSET(m->proc[r].cpu_req, &m->proc[r].self.aff))
			warnings_add(&m->warn, "the %s is not confined to CPU %d as asked", role_names[r], m->proc[r].cpu_req);

	if ((rc = sink_begin(&m->sink, "msg", a, msg_params, m, &m->rt, &m->warn, m->period_ns))) {
		msg_cleanup(m);
		free(m);
		return rc;
	}

	pthread_mutex_lock(&m->mu);
	m->client_go = true;
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
	msg_supervise(m);
	pthread_join(m->tid, NULL);
	m->thread_started = false;
	alarm(0);
	char why[160] = "";
	stop_children(m, why, sizeof(why));

	int sig = rt_signals_caught();
	char msgbuf[512];
	if (sig & RT_SIG_STOP) {
		rc = sink_finish(&m->sink, 4, "interrupted", "stopped by signal");
	} else if (sig & RT_SIG_WATCHDOG) {
		snprintf(msgbuf, sizeof(msgbuf), "watchdog: no round trip completed for %u s",
			 (unsigned)(c->timeout_ns / NS_PER_S) + 1 + WATCHDOG_MARGIN_S);
		rc = sink_finish(&m->sink, 1, "error", msgbuf);
	} else if (m->client_err[0]) {
		snprintf(msgbuf, sizeof(msgbuf), "%s%s", m->client_err, why);
		rc = sink_finish(&m->sink, 1, "error", msgbuf);
		log_error("%s", msgbuf);
	} else {
		rc = sink_finish(&m->sink, -1, NULL, NULL);
	}
	msg_cleanup(m);
	free(m);
	return rc;
}

const struct probe probe_msg = {
	.name = "msg",
	.summary = "message round-trip time client -> [broker ->] server processes over ZeroMQ or bare sockets (MADOCA II)",
	.opts = msg_opts,
	.nopts = MSG_NOPTS,
	.run = msg_run,
};
