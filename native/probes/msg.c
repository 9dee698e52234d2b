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
#include "rtqual/lifecycle.h"
#include "rtqual/log.h"
#include "rtqual/msgnet.h"
#include "rtqual/probe.h"
#include "rtqual/rtenv.h"
#include "rtqual/sink.h"

#define THREAD_STACK_BYTES (256 * 1024)

#define F(x) offsetof(struct msg, cfg.x)
/* A row per role: X("client", ROLE_CLIENT), ... (the --ROLE-policy and --ROLE-priority options). */
#define EACH_ROLE(X) X("client", ROLE_CLIENT), X("broker", ROLE_BROKER), X("server", ROLE_SERVER)
#define ROLE_POLICY_OPT(role, R)                                                                              \
	{role "-policy", OPT_ENUM, F(role_policy[R]), 0, 0, NULL, rt_policy_names, role " policy (default: --policy)"}
#define ROLE_PRIORITY_OPT(role, R)                                                                            \
	{role "-priority", OPT_INT, F(role_priority[R]), 1, 99, NULL, NULL, role " RT priority (default: --priority)"}
static const struct opt_def msg_opts[] = {
	{"transport", OPT_ENUM, F(transport), 0, 0, "zmq-tcp", transport_names,
	 "zmq-tcp/zmq-ipc: ZeroMQ REQ/REP; udp, tcp (127.0.0.1), unix-stream, unix-dgram (abstract): bare sockets"},
	{"chain", OPT_FLAG, F(chain), 0, 0, NULL, NULL,
	 "client -> broker -> server (zmq: REQ -> ROUTER/DEALER proxy -> REP; bare: a relay process)"},
	{"size", OPT_INT, F(size), 1, 1048576, "64", NULL, "message size, bytes (udp and unix-dgram: at most 65507)"},
	{"rate", OPT_INT, F(rate_hz), 0, 1000000, "0", NULL,
	 "round trips per second, started on absolute deadlines; 0 = back to back, Hz"},
	RUN_OPT_POLICY(F, "scheduling policy of every process unless --client/--broker/--server-policy say otherwise"),
	RUN_OPT_PRIORITY(F, "80", "RT priority of every process (ignored for other)"),
	{"client-cpu", OPT_INT, F(cpu[ROLE_CLIENT]), -1, CPULIST_MAX - 1, "-1", NULL,
	 "pin the client (measuring thread) to this CPU; -1 = unbound"},
	{"broker-cpu", OPT_INT, F(cpu[ROLE_BROKER]), -1, CPULIST_MAX - 1, "-1", NULL,
	 "pin the broker process (--chain) to this CPU; -1 = unbound"},
	{"server-cpu", OPT_INT, F(cpu[ROLE_SERVER]), -1, CPULIST_MAX - 1, "-1", NULL,
	 "pin the server process to this CPU; -1 = unbound"},
	EACH_ROLE(ROLE_POLICY_OPT),
	EACH_ROLE(ROLE_PRIORITY_OPT),
	RUN_OPTS_LENGTH(F, "measured time after warm-up", 1LL << 62,
		"measured round trips (with --rate: periods, samples + overruns); replaces --duration", "100",
		"round trips discarded before measuring"),
	RUN_OPT_THRESHOLD(F, "1ms", "round trips above it emit event records"),
	SINK_OUT_OPTS(F, "1000"),
	{"timeout", OPT_DURATION, F(timeout_ns), NS_PER_MS, 60 * NS_PER_S, "5s", NULL,
	 "no reply within it ends the run with an error"},
	RUN_OPT_NO_DMA_LATENCY(F),
	RUN_OPT_ALLOW_DEGRADED(F, RUN_DEGRADED_HELP),
};
#undef EACH_ROLE
#undef ROLE_POLICY_OPT
#undef ROLE_PRIORITY_OPT
#undef F
#define MSG_NOPTS ((int)(sizeof(msg_opts) / sizeof(msg_opts[0])))

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
	struct cpu_state *cs = &m->run.sink.cs[0];
	uint64_t seq = 0, warm = 0, periods = 0;
	bool measuring = warmup == 0;
	int64_t now = mono_now_ns();
	int64_t deadline = now + iv; /* iv == 0: back to back */
	int64_t end_ns = loops ? INT64_MAX : now + m->cfg.duration_ns;

	while (!atomic_load_explicit(&m->run.sink.stop, memory_order_relaxed)) {
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
		ssize_t n = msgnet_client_roundtrip(c, tr, sbuf, rbuf, size);
		int64_t t1 = mono_now_ns();
		if (n != (ssize_t)size || memcmp(rbuf, sbuf, tag) != 0) {
			if (atomic_load(&m->run.sink.stop))
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
	int rc = sbuf && rbuf ? msgnet_client_open(m, ep, &c, err, sizeof(err))
			      : (snprintf(err, sizeof(err), "out of memory"), -1);
	if (sbuf && rbuf) {
		memset(sbuf, 0xa5, size + 1);
		memset(rbuf, 0, size + 1);
	}
	msgnet_sched_readback(0, &pi->self);
	msgnet_readback_other_threads(pi, getpid(), gettid());
	pi->pid = getpid();
	pi->started = true;
	pi->mlockall = m->run.rt.mlockall;
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
	m->run.sink.cs[0].wakeups = atomic_load(&m->round_trips);
	m->run.sink.cs[0].cpu_time_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	pthread_mutex_lock(&m->mu);
	if (m->conn_open)
		msgnet_client_close(&m->conn);
	m->conn_open = false;
	pthread_mutex_unlock(&m->mu);
	free(sbuf);
	free(rbuf);
	atomic_store(&m->run.done, true);
	return NULL;
}

/* Ask the client to stop and unblock it if it waits for a reply. */
static void client_stop(struct msg *m)
{
	atomic_store(&m->run.sink.stop, true);
	pthread_mutex_lock(&m->mu);
	m->stop_requested = true;
	if (m->conn_open)
		msgnet_client_wake(&m->conn);
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
}

/* Start the client thread with explicit attributes; wait until it is
 * connected (or failed). Stop signals stay with the main thread. */
static int client_start(struct msg *m, char *err, size_t errlen)
{
	struct proc_info *pi = &m->proc[ROLE_CLIENT];
	pthread_attr_t a;
	int e = rt_thread_attr(&a, pi->policy_req, pi->priority_req, pi->cpu_req, THREAD_STACK_BYTES);
	if (!e) {
		e = rt_thread_create(&m->tid, &a, client_main, m);
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
	jw_str(w, "policy", msgnet_sched_name(r->policy));
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
	run_params_length(w, c->duration_ns, c->loops, c->warmup);
	sink_out_params(w, &c->out);
	jw_i64(w, "timeout_ns", c->timeout_ns);
	run_params_flags(w, c->no_dma_latency, c->allow_degraded);
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

static int msg_validate(struct run *run)
{
	struct msg *m = (struct msg *)run;
	struct msg_cfg *c = &m->cfg;
	char err[512];
	bool have_loops;
	if (is_zmq(c->transport)) {
#ifndef RTQUAL_HAVE_ZMQ
		return log_skip(GRANT_ZMQ, "--transport %s: built without libzmq", transport_names[c->transport]);
#endif
	}
	if (run_one_of(&m->run, "duration", "loops", &have_loops))
		return 1;
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
	if (!c->chain && (c->cpu[ROLE_BROKER] >= 0 || run_given(&m->run, "broker-policy") ||
			  run_given(&m->run, "broker-priority")))
		warnings_add(&m->run.warn, "--broker-cpu/--broker-policy/--broker-priority ignored without --chain");
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
		pi->policy_req = run_given(&m->run, pol_opt[r]) ? c->role_policy[r] : c->policy;
		int64_t pri = run_given(&m->run, pri_opt[r]) ? c->role_priority[r] : c->priority;
		pi->priority_req = pi->policy_req == RT_OTHER ? 0 : (int)pri;
	}
	return sink_out_validate(&c->out, run->a->check);
}

/* Try each requested RT policy for real, then mlockall. Not permitted ->
 * skip (exit 3) or, with --allow-degraded, every process SCHED_OTHER. */
static int msg_privileges(struct run *run)
{
	struct msg *m = (struct msg *)run;
	struct msg_cfg *c = &m->cfg;
	int nroles = c->chain ? NROLES : 2;
	const int roles[] = {ROLE_CLIENT, ROLE_SERVER, ROLE_BROKER};
	/* the header's "rt" is the client's (the measuring thread) */
	m->run.rt.policy = m->proc[ROLE_CLIENT].policy_req;
	m->run.rt.priority = m->proc[ROLE_CLIENT].priority_req;
	for (int i = 0; i < nroles; i++) {
		struct proc_info *pi = &m->proc[roles[i]];
		struct rt_words words = {.role = role_names[roles[i]], .instead = "every process runs SCHED_OTHER"};
		if (pi->policy_req == RT_OTHER)
			continue;
		int rc = rt_acquire_sched(pi->policy_req, pi->priority_req, c->allow_degraded, &words, &m->run.rt,
					  &m->run.warn);
		if (rc)
			return rc;
		if (m->run.rt.degraded) {
			for (int r = 0; r < NROLES; r++)
				m->proc[r].policy_req = RT_OTHER, m->proc[r].priority_req = 0;
			break;
		}
	}
	return rt_acquire_mlock(c->allow_degraded, &m->run.rt, &m->run.warn);
}

/* ---- run ----------------------------------------------------------------------- */

/* A stop: the client out of its blocking send/recv. */
static void msg_kick(struct run *run)
{
	client_stop((struct msg *)run);
}

/* Main thread, each round: re-arm the liveness watchdog while round trips complete. */
static bool msg_tick(struct run *run, int64_t now_ns)
{
	struct msg *m = (struct msg *)run;
	uint64_t rts = atomic_load_explicit(&m->round_trips, memory_order_relaxed);
	(void)now_ns;
	if (rts != m->seen_round_trips) {
		m->seen_round_trips = rts;
		rt_watchdog_arm(run->watchdog_s);
	}
	return false;
}

/* Release everything: client thread, children, the lock. */
static void msg_cleanup(struct run *run)
{
	struct msg *m = (struct msg *)run;
	if (!run->prepared)
		return;
	if (m->thread_started) {
		client_stop(m);
		pthread_join(m->tid, NULL);
		m->thread_started = false;
	}
	msgnet_stop_children(m, NULL, 0);
	pthread_mutex_destroy(&m->mu);
	pthread_cond_destroy(&m->cv);
}

/* Server (+ broker) first: no threads, no zmq context exist in this process yet; then
 * /dev/cpu_dma_latency and the client, connected and waiting for the go. The watchdog:
 * no round trip for --timeout plus a margin (msg_tick re-arms it). */
static int msg_prepare(struct run *run)
{
	struct msg *m = (struct msg *)run;
	struct msg_cfg *c = &m->cfg;
	m->parent_pid = getpid();
	pthread_mutex_init(&m->mu, NULL);
	pthread_cond_init(&m->cv, NULL);
	int placeholder = 0;
	if (sink_init(&run->sink, &c->out, &placeholder, 1, run->err, sizeof(run->err)))
		return log_error("%s", run->err);
	bool any_rt = false;
	for (int r = 0; r < NROLES; r++)
		any_rt |= m->proc[r].policy_req != RT_OTHER;
	if (any_rt) /* inherited by the children; ping-pong blocks, so only a runaway hits it */
		rt_acquire_rttime_limit(RUN_RTTIME_SOFT_US, RUN_RTTIME_HARD_US, &run->warn);
	if (msgnet_start_child(m, ROLE_SERVER, run->err, sizeof(run->err)) ||
	    (c->chain && msgnet_start_child(m, ROLE_BROKER, run->err, sizeof(run->err))))
		return log_error("%s", run->err);
	if (!c->no_dma_latency)
		rt_acquire_dma_latency(&run->dma_fd, &run->rt, &run->warn);
	rt_signals_install(); /* already now: a stop while client_start waits is recorded, not fatal */
	if (client_start(m, run->err, sizeof(run->err)))
		return log_error("%s", run->err);
	run->sink.cs[0].cpu = m->slot_cpu;
	for (int r = 0; r < NROLES; r++)
		if ((r != ROLE_BROKER || c->chain) && m->proc[r].cpu_req >= 0 &&
		    !CPU_ISSET(m->proc[r].cpu_req, &m->proc[r].self.aff))
			warnings_add(&run->warn, "the %s is not confined to CPU %d as asked", role_names[r],
				     m->proc[r].cpu_req);
	run->raw_interval_ns = m->period_ns;
	run->watchdog_s = run_watchdog_s(u128_of((uint64_t)c->timeout_ns), 0, 0x7fffffff);
	return 0;
}

/* The client's go. */
static int msg_start(struct run *run)
{
	struct msg *m = (struct msg *)run;
	pthread_mutex_lock(&m->mu);
	m->client_go = true;
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
	return 0;
}

/* Join the client, then kill and reap the children (an earlier death noted in m->why). */
static void msg_stop(struct run *run)
{
	struct msg *m = (struct msg *)run;
	pthread_join(m->tid, NULL);
	m->thread_started = false;
	msgnet_stop_children(m, m->why, sizeof(m->why));
}

/* A stop, the watchdog, the client's error (with a child's death), or the data's status. */
static int msg_end(struct run *run)
{
	struct msg *m = (struct msg *)run;
	int sig = rt_signals_caught();
	char msgbuf[512];
	if (sig & RT_SIG_STOP)
		return sink_finish(&run->sink, 4, "interrupted", "stopped by signal");
	if (sig & RT_SIG_WATCHDOG) {
		snprintf(msgbuf, sizeof(msgbuf), "watchdog: no round trip completed for %u s", run->watchdog_s);
		return sink_finish(&run->sink, 1, "error", msgbuf);
	}
	if (m->client_err[0]) {
		snprintf(msgbuf, sizeof(msgbuf), "%s%s", m->client_err, m->why);
		int rc = sink_finish(&run->sink, 1, "error", msgbuf);
		log_error("%s", msgbuf);
		return rc;
	}
	return sink_finish(&run->sink, -1, NULL, NULL);
}

const struct probe probe_msg = {
	.name = "msg",
	.summary = "message round-trip time client -> [broker ->] server processes over ZeroMQ or bare sockets (MADOCA II)",
	.opts = msg_opts, .nopts = MSG_NOPTS, .label_keys = PROBE_LIST("transport"),
	.state_bytes = sizeof(struct msg), .params = msg_params,
	.validate = msg_validate, .privileges = msg_privileges, .prepare = msg_prepare,
	.start = msg_start, .tick = msg_tick, .kick = msg_kick, .stop = msg_stop,
	.end = msg_end, .cleanup = msg_cleanup,
};
