/* rhealstone probe: the Rhealstone components (Kar & Porter, 1989), one per
 * run, each its own latency distribution in one sink slot (the CPU where the
 * measured thread runs). Each run is paced: a driver thread starts one round
 * per --interval, so every thread blocks once per round and the CPU is never
 * monopolised; the only busy loops (the preempted spinner, the medium-priority
 * spinner) are bounded by a clock check, RLIMIT_RTTIME and alarm(), and never
 * run on the only online CPU. Every sample: CLOCK_MONOTONIC at the measured
 * event's start (stored by the thread causing it, right before the call) and
 * at its end (read by the thread that runs because of it). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <mqueue.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "rtqual/cpulist.h"
#include "rtqual/lifecycle.h"
#include "rtqual/log.h"
#include "rtqual/probe.h"
#include "rtqual/rtenv.h"
#include "rtqual/sink.h"

#define READY_NS (5 * NS_PER_S)  /* helper threads must reach their first wait */
#define JOIN_NS (5 * NS_PER_S)   /* then the run is abandoned as an error */
#define STALL_NS (10 * NS_PER_S) /* no round for this long (+ 2 intervals): watchdog */
#define WATCHDOG_FACTOR 10       /* hard cap: this many times the paced run */
#define MQ_MAXMSG 4
#define MAX_THREADS 3

enum rh_comp { C_TASK_SWITCH, C_PREEMPTION, C_SEM_SHUFFLE, C_DEADLOCK_BREAK, C_MESSAGE, C_INTERRUPT, C_NONE };
static const char *const comp_names[] = {"task-switch",     "preemption",        "semaphore-shuffle",
					 "deadlock-break",  "intertask-message", "interrupt-latency", NULL};
static const char *const onoff_names[] = {"on", "off", NULL};

struct rh_cfg {
	int component;
	struct cpulist cpu, peer_cpu;
	int policy, pi;
	int64_t priority, interval_ns, duration_ns, loops, warmup, spin_ns, hold_ns, msg_bytes;
	bool no_dma_latency, allow_degraded;
	struct sink_out out;
};


struct rh;

/* One thread of a component: its role, priority offset, CPU, and its step. A helper's step is
 * one wait and what follows it; the driver's (the last role) is one round, called once per
 * --interval. A step returns false to end its thread. */
struct role {
	const char *name;
	int prio_off;
	bool on_peer; /* interrupt-latency writer */
	bool records; /* the recorder: the slot's wake-ups and CPU time are its own */
	bool (*step)(struct rh *r);
};

/* A component: its threads (the driver last: its end ends the run). */
struct component {
	int nroles;
	struct role roles[MAX_THREADS];
	bool spins;     /* has an RT busy loop: never on the only online CPU */
	bool needs_rt;  /* priorities are the point: no SCHED_OTHER */
	int per_round;  /* samples per round */
	const char *sample;
};

static bool ts_a(struct rh *), ts_b(struct rh *), pre_h(struct rh *), pre_l(struct rh *), sh_a(struct rh *),
	sh_b(struct rh *), db_l(struct rh *), db_m(struct rh *), db_h(struct rh *), im_s(struct rh *),
	im_r(struct rh *), il_w(struct rh *), il_r(struct rh *);

static const struct component components[] = {
	[C_TASK_SWITCH] = {2, {{"B", 0, .step = ts_b}, {"A", 0, .records = true, .step = ts_a}}, false, false, 2,
			   "sched_yield() call in one equal-priority thread -> the other running"},
	[C_PREEMPTION] = {2, {{"low", 0, .step = pre_l}, {"high", 10, .records = true, .step = pre_h}}, true, true,
			  1, "high thread's timer deadline -> high running, while the low thread spins"},
	[C_SEM_SHUFFLE] = {2, {{"waiter", 0, .records = true, .step = sh_b}, {"holder", 0, .step = sh_a}}, false, false,
			   1, "sem_post() by the holder -> the equal-priority waiter returning from sem_wait()"},
	[C_DEADLOCK_BREAK] = {3,
			      {{"high", 10, .records = true, .step = db_h},
			       {"medium", 5, .step = db_m},
			       {"low", 0, .step = db_l}},
			      true, true, 1,
			      "high thread's mutex lock call -> lock acquired (held by low; medium spins)"},
	[C_MESSAGE] = {2, {{"receiver", 10, .records = true, .step = im_r}, {"sender", 0, .step = im_s}}, false, false,
		       1, "mq_send() -> the higher-priority receiver returning from mq_receive()"},
	[C_INTERRUPT] = {2,
			 {{"responder", 10, .records = true, .step = il_r},
			  {"writer", 0, .on_peer = true, .step = il_w}},
			 false, false, 1, "eventfd write on the peer CPU -> responder returning from epoll_wait()"},
};

/* What a thread gets: the run and its role. */
struct rh_thread {
	struct rh *r;
	const struct role *ro;
	pthread_t tid;
	bool started;
};

/* All state of one run; the fields under "shared" are used by its threads. */
struct rh {
	struct run run; /* first: the driver's part */
	struct rh_cfg cfg;
	const struct component *comp;
	int cpu, peer;
	struct rh_thread th[MAX_THREADS];
	_Atomic bool kicked;
	bool stalled, joined;
	/* shared */
	_Alignas(64) _Atomic int stop;
	_Atomic int ready;
	int64_t next_ns;        /* driver only: the next round's start */
	_Atomic int64_t t_mark; /* start of the event in flight */
	_Atomic int last;       /* task-switch: who yielded last (1 = A, 2 = B) */
	_Atomic int64_t pend_lat, pend_wake;
	_Atomic int pend;
	_Atomic int64_t spin_since;
	_Atomic int stop_spin, round_done;
	_Atomic uint64_t sent, acked;
	sem_t go_b, sem_s, go_l, sem_h, sem_m;
	pthread_mutex_t mtx;
	bool mtx_ok;
	mqd_t mq;
	char msg[8192]; /* intertask-message: the sender's message */
	int efd, epfd;
	/* recorder thread only (read after join) */
	uint64_t warm, n, wakeups;
	int64_t end_ns;
	/* counters, read after join */
	_Atomic uint64_t rounds, discarded, spin_capped, responses, coalesced, skipped_periods;
	_Atomic int64_t rec_cpu_time_ns;
	_Atomic uint64_t rec_wakeups;
	char err[256];
};

#define F(x) offsetof(struct rh, cfg.x)
static const struct opt_def rh_opts[] = {
	{"component", OPT_ENUM, F(component), 0, 0, "task-switch", comp_names,
	 "the one component measured by this run (a scenario matrix over components gives the table)"},
	{"cpu", OPT_CPULIST, F(cpu), 0, 0, NULL, NULL, "the measured CPU, all threads there (default: the last usable CPU)"},
	{"peer-cpu", OPT_CPULIST, F(peer_cpu), 0, 0, NULL, NULL,
	 "interrupt-latency: CPU of the writer thread (default: the highest other usable CPU)"},
	RUN_OPT_POLICY(F, "scheduling policy (preemption and deadlock-break need fifo or rr)"),
	{"priority", OPT_INT, F(priority), 1, 89, "40", NULL,
	 "base RT priority: low/equal threads at base, medium base+5, high base+10"},
	{"interval", OPT_DURATION, F(interval_ns), 10 * NS_PER_US, 50 * NS_PER_MS, "500us", NULL,
	 "period of the rounds (preemption: also how long the low thread spins before the deadline)"},
	RUN_OPT_LOOPS(F, 1LL << 40, "10000", "measured samples"),
	RUN_OPT_DURATION(F, NULL, "measured time after warm-up; replaces --loops"),
	RUN_OPT_WARMUP(F, "100", "samples discarded before measuring"),
	{"pi", OPT_ENUM, F(pi), 0, 0, "on", onoff_names,
	 "deadlock-break: PTHREAD_PRIO_INHERIT mutex (on) or a plain mutex (off)"},
	{"spin", OPT_DURATION, F(spin_ns), NS_PER_US, 10 * NS_PER_MS, "100us", NULL,
	 "deadlock-break: longest spin of the medium thread per round"},
	{"hold", OPT_DURATION, F(hold_ns), 0, NS_PER_MS, "10us", NULL,
	 "deadlock-break: the low thread's critical section (busy)"},
	{"msg-bytes", OPT_INT, F(msg_bytes), 8, 8192, "8", NULL, "intertask-message: message size, bytes"},
	RUN_OPT_THRESHOLD(F, "100us", "samples above it emit event records"),
	SINK_OUT_OPTS(F, "1000"),
	RUN_OPT_NO_DMA_LATENCY(F),
	RUN_OPT_ALLOW_DEGRADED(F, RUN_DEGRADED_HELP " (not for preemption, deadlock-break)"),
};
#undef F
#define RH_NOPTS ((int)(sizeof(rh_opts) / sizeof(rh_opts[0])))

static bool stopping(struct rh *r)
{
	return atomic_load_explicit(&r->stop, memory_order_relaxed) != 0;
}

static void swait(sem_t *s)
{
	while (sem_wait(s) != 0 && errno == EINTR)
		;
}

/* Sleep to an absolute CLOCK_MONOTONIC time (threads have signals blocked). */
static void nap_until(int64_t t)
{
	struct timespec ts = ns_to_ts(t);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* The next round's start: one --interval later, or one interval from now
 * if the round overran (the driver always blocks between rounds). */
static int64_t next_round(struct rh *r, int64_t prev)
{
	int64_t next = prev + r->cfg.interval_ns, now = mono_now_ns();
	return next > now ? next : now + r->cfg.interval_ns;
}

/* Bounded RT busy loop: until `until_ns`, *flag set or stop. The clock
 * check is one of three bounds (with RLIMIT_RTTIME and alarm()). Returns
 * true if it ran to until_ns. */
static bool spin_until(struct rh *r, int64_t until_ns, _Atomic int *flag)
{
	while (!(flag && atomic_load_explicit(flag, memory_order_relaxed)) && !stopping(r))
		if (mono_now_ns() >= until_ns)
			return true;
	return false;
}

/* Recorder thread: account one sample (warm-up first); stop the run once
 * --loops samples are in or --duration has passed. */
static void rh_record(struct rh *r, int64_t lat, int64_t now)
{
	const struct rh_cfg *c = &r->cfg;
	if (r->warm < (uint64_t)c->warmup) {
		r->warm++;
		return;
	}
	if (!r->end_ns)
		r->end_ns = c->duration_ns ? now + c->duration_ns : INT64_MAX;
	if (stopping(r))
		return;
	sink_sample(&r->run.sink.cs[0], lat, now, 0);
	r->n++;
	if ((!c->duration_ns && r->n >= (uint64_t)c->loops) || now >= r->end_ns)
		atomic_store(&r->stop, 1);
}

/* Wake every thread wherever it waits: stop flag, then a token on every
 * object (tokens persist, so a thread that has not reached its wait yet
 * still finds one). Semaphores two threads may wait on get two. */
static void rh_kick(struct run *run)
{
	struct rh *r = (struct rh *)run;
	atomic_store(&r->stop, 1);
	if (atomic_exchange(&r->kicked, true))
		return;
	sem_post(&r->go_b);
	sem_post(&r->sem_s);
	sem_post(&r->sem_s);
	sem_post(&r->go_l);
	sem_post(&r->sem_h);
	sem_post(&r->sem_m);
	if (r->mq != (mqd_t)-1) {
		char buf[8192] = {0};
		struct timespec now = ns_to_ts(real_now_ns());
		mq_timedsend(r->mq, buf, (size_t)r->cfg.msg_bytes, 0, &now);
	}
	if (r->efd >= 0) {
		uint64_t one = 1;
		if (write(r->efd, &one, sizeof(one)) < 0) {
			/* best effort: the responder also sees stop at its next event */
		}
	}
}

/* The recorder's last word (read after join): its wake-ups and CPU time. */
static void recorder_end(struct rh *r)
{
	atomic_store(&r->rec_cpu_time_ns, clock_ns(CLOCK_THREAD_CPUTIME_ID));
	atomic_store(&r->rec_wakeups, r->wakeups);
}

/* A helper thread: ready, then its step until the run stops. */
static void *helper_thread(void *arg)
{
	struct rh_thread *t = arg;
	struct rh *r = t->r;
	rt_prefault_stack();
	atomic_fetch_add(&r->ready, 1);
	while (!stopping(r) && t->ro->step(r))
		;
	if (t->ro->records)
		recorder_end(r);
	return NULL;
}

/* The driver thread, one loop for every component: it waits for its helpers to reach their
 * first wait, runs one round (its step) per --interval until the run stops, then wakes
 * everyone for the end. */
static void *driver_thread(void *arg)
{
	struct rh_thread *t = arg;
	struct rh *r = t->r;
	int64_t limit = mono_now_ns() + READY_NS;
	rt_prefault_stack();
	while (atomic_load(&r->ready) < r->comp->nroles - 1 && !stopping(r) && mono_now_ns() < limit)
		nap_until(mono_now_ns() + 100 * NS_PER_US);
	nap_until(mono_now_ns() + 100 * NS_PER_US); /* let them block */
	r->next_ns = mono_now_ns() + r->cfg.interval_ns;
	while (!stopping(r)) {
		nap_until(r->next_ns);
		if (!t->ro->step(r))
			break;
	}
	if (t->ro->records)
		recorder_end(r);
	rh_kick(&r->run);
	atomic_store(&r->run.done, true);
	return NULL;
}

/* A driver's round is over: count it, the next one starts an interval after `start_ns`. */
static bool round_end(struct rh *r, int64_t start_ns)
{
	atomic_fetch_add(&r->rounds, 1);
	r->next_ns = next_round(r, start_ns);
	return true;
}

/* ---- task-switch: A and B, equal priority, yield to each other. Per
 * round A makes B runnable, yields (sample A->B, measured by B), B yields
 * back (sample B->A, measured by A); A records both. */
static bool ts_a(struct rh *r)
{
	if (stopping(r))
		return false;
	atomic_store(&r->pend, 0);
	sem_post(&r->go_b); /* B runnable, queued behind A */
	atomic_store(&r->last, 1);
	atomic_store(&r->t_mark, mono_now_ns());
	sched_yield();
	int64_t tw = mono_now_ns();
	if (stopping(r))
		return false;
	r->wakeups++;
	if (atomic_load(&r->last) == 2 && atomic_load(&r->pend)) {
		rh_record(r, atomic_load(&r->pend_lat), atomic_load(&r->pend_wake));
		rh_record(r, tw - atomic_load(&r->t_mark), tw);
	} else {
		atomic_fetch_add(&r->discarded, 1); /* yield did not switch to B */
	}
	return round_end(r, r->next_ns);
}

static bool ts_b(struct rh *r)
{
	swait(&r->go_b);
	int64_t tw = mono_now_ns();
	if (stopping(r))
		return false;
	if (atomic_load(&r->last) == 1) {
		atomic_store(&r->pend_lat, tw - atomic_load(&r->t_mark));
		atomic_store(&r->pend_wake, tw);
		atomic_store(&r->pend, 1);
	}
	atomic_store(&r->last, 2);
	atomic_store(&r->t_mark, mono_now_ns());
	sched_yield();
	return true;
}

/* ---- preemption: per round the high thread lets the low one spin, sleeps
 * to a deadline one --interval ahead, and measures deadline -> running
 * (the round's start is its rest: the low thread is blocked). */
static bool pre_h(struct rh *r)
{
	if (stopping(r))
		return false;
	atomic_store(&r->stop_spin, 0);
	sem_post(&r->go_l);
	int64_t d = mono_now_ns() + r->cfg.interval_ns;
	nap_until(d);
	int64_t tw = mono_now_ns();
	if (stopping(r))
		return false;
	r->wakeups++;
	int64_t ss = atomic_load(&r->spin_since);
	if (ss && ss <= d)
		rh_record(r, tw - d, tw);
	else
		atomic_fetch_add(&r->discarded, 1); /* low was not spinning at the deadline */
	atomic_store(&r->stop_spin, 1);
	return round_end(r, d);
}

static bool pre_l(struct rh *r)
{
	swait(&r->go_l);
	if (stopping(r))
		return false;
	int64_t s = mono_now_ns();
	atomic_store(&r->spin_since, s);
	if (spin_until(r, s + 2 * r->cfg.interval_ns + NS_PER_MS, &r->stop_spin))
		atomic_fetch_add(&r->spin_capped, 1);
	atomic_store(&r->spin_since, 0);
	return true;
}

/* ---- semaphore-shuffle: the holder takes S, lets the equal-priority
 * waiter block on it, posts S and yields; the waiter measures post -> own
 * sem_wait return, releases S and waits for the next round. */
static bool sh_a(struct rh *r)
{
	if (stopping(r))
		return false;
	swait(&r->sem_s);
	if (stopping(r))
		return false;
	sem_post(&r->go_b);
	sched_yield(); /* the waiter runs and blocks on S */
	atomic_store(&r->t_mark, mono_now_ns());
	sem_post(&r->sem_s);
	sched_yield(); /* the waiter takes S */
	return round_end(r, r->next_ns);
}

static bool sh_b(struct rh *r)
{
	swait(&r->go_b);
	if (stopping(r))
		return false;
	int64_t tws = mono_now_ns();
	swait(&r->sem_s);
	int64_t tw = mono_now_ns();
	if (stopping(r))
		return false;
	r->wakeups++;
	int64_t tp = atomic_load(&r->t_mark);
	if (tp >= tws)
		rh_record(r, tw - tp, tw);
	else
		atomic_fetch_add(&r->discarded, 1); /* sem_wait did not block on the holder */
	sem_post(&r->sem_s);
	return true;
}

/* ---- deadlock-break: low locks M and wakes high; high wakes medium and
 * requests M; with priority inheritance low runs at high's priority and
 * releases at once, without it medium spins first (--spin, bounded). */
static bool db_l(struct rh *r)
{
	if (stopping(r))
		return false;
	pthread_mutex_lock(&r->mtx);
	sem_post(&r->sem_h); /* high preempts, blocks on M */
	spin_until(r, mono_now_ns() + r->cfg.hold_ns, NULL);
	pthread_mutex_unlock(&r->mtx); /* high preempts, takes M */
	return round_end(r, r->next_ns);
}

static bool db_m(struct rh *r)
{
	swait(&r->sem_m);
	if (stopping(r))
		return false;
	if (spin_until(r, mono_now_ns() + r->cfg.spin_ns, &r->round_done))
		atomic_fetch_add(&r->spin_capped, 1);
	return true;
}

static bool db_h(struct rh *r)
{
	swait(&r->sem_h);
	if (stopping(r))
		return false;
	atomic_store(&r->round_done, 0);
	sem_post(&r->sem_m); /* medium runnable: runs when high blocks */
	int64_t treq = mono_now_ns();
	pthread_mutex_lock(&r->mtx);
	int64_t tw = mono_now_ns();
	r->wakeups++;
	rh_record(r, tw - treq, tw);
	pthread_mutex_unlock(&r->mtx);
	atomic_store(&r->round_done, 1);
	return true;
}

/* ---- intertask-message: the sender puts its CLOCK_MONOTONIC into a
 * message; the higher-priority receiver measures send -> receive return. */
static bool im_s(struct rh *r)
{
	if (stopping(r))
		return false;
	int64_t t = mono_now_ns();
	memcpy(r->msg, &t, sizeof(t));
	while (mq_send(r->mq, r->msg, (size_t)r->cfg.msg_bytes, 0) != 0 && errno == EINTR)
		;
	return round_end(r, r->next_ns);
}

static bool im_r(struct rh *r)
{
	char buf[8192];
	ssize_t len = mq_receive(r->mq, buf, sizeof(buf), NULL);
	int64_t tw = mono_now_ns();
	if (stopping(r))
		return false;
	if (len < (ssize_t)sizeof(int64_t)) {
		if (len < 0 && errno == EINTR)
			return true;
		snprintf(r->err, sizeof(r->err), "mq_receive: %s", len < 0 ? strerror(errno) : "short message");
		atomic_store(&r->stop, 1);
		return false;
	}
	int64_t t;
	memcpy(&t, buf, sizeof(t));
	r->wakeups++;
	rh_record(r, tw - t, tw);
	return true;
}

/* ---- interrupt-latency: the writer on the peer CPU stores t and writes
 * the eventfd (only after the previous event was consumed); the responder,
 * blocked in epoll_wait, measures t -> its return. */
static bool il_w(struct rh *r)
{
	r->next_ns = next_round(r, r->next_ns);
	if (atomic_load(&r->acked) != atomic_load(&r->sent)) {
		atomic_fetch_add(&r->skipped_periods, 1); /* previous event not consumed yet */
		return true;
	}
	if (stopping(r)) /* after the ack: the responder sets stop before acking the last one */
		return false;
	uint64_t one = 1;
	atomic_fetch_add(&r->sent, 1);
	atomic_store(&r->t_mark, mono_now_ns());
	if (write(r->efd, &one, sizeof(one)) != (ssize_t)sizeof(one)) {
		snprintf(r->err, sizeof(r->err), "eventfd write: %s", strerror(errno));
		return false;
	}
	atomic_fetch_add(&r->rounds, 1);
	return true;
}

static bool il_r(struct rh *r)
{
	struct epoll_event ev;
	int k = epoll_wait(r->epfd, &ev, 1, -1);
	int64_t tw = mono_now_ns();
	if (stopping(r))
		return false;
	if (k <= 0) {
		if (k < 0 && errno != EINTR) {
			snprintf(r->err, sizeof(r->err), "epoll_wait: %s", strerror(errno));
			atomic_store(&r->stop, 1);
			return false;
		}
		return true;
	}
	uint64_t v = 0;
	if (read(r->efd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		return true;
	r->wakeups++;
	atomic_fetch_add(&r->responses, 1);
	if (v > 1)
		atomic_fetch_add(&r->coalesced, v - 1);
	rh_record(r, tw - atomic_load(&r->t_mark), tw);
	atomic_store(&r->acked, atomic_load(&r->sent));
	return true;
}

/* ---- setup, header, supervision ---- */

static int prio_of(const struct rh *r, const struct role *ro)
{
	return r->run.rt.policy == RT_OTHER ? 0 : r->run.rt.priority + ro->prio_off;
}

static void rh_params(struct jw *w, const void *ctx)
{
	const struct rh *r = ctx;
	const struct rh_cfg *c = &r->cfg;
	jw_str(w, "component", comp_names[c->component]);
	jw_str(w, "sample", r->comp->sample);
	jw_arr_begin(w, "cpus");
	jw_i64(w, NULL, r->cpu);
	jw_arr_end(w);
	if (c->component == C_INTERRUPT)
		jw_i64(w, "peer_cpu", r->peer);
	else
		jw_null(w, "peer_cpu");
	jw_arr_begin(w, "threads");
	for (int i = 0; i < r->comp->nroles; i++) {
		const struct role *ro = &r->comp->roles[i];
		jw_obj_begin(w, NULL);
		jw_str(w, "role", ro->name);
		jw_i64(w, "cpu", ro->on_peer ? r->peer : r->cpu);
		jw_i64(w, "priority", prio_of(r, ro));
		jw_obj_end(w);
	}
	jw_arr_end(w);
	run_params_sched(w, c->policy, c->priority);
	jw_i64(w, "interval_ns", c->interval_ns);
	jw_i64(w, "loops", c->duration_ns ? 0 : c->loops);
	jw_i64(w, "duration_ns", c->duration_ns);
	jw_i64(w, "warmup", c->warmup);
	if (c->component == C_DEADLOCK_BREAK) {
		jw_bool(w, "pi", c->pi == 0);
		jw_i64(w, "spin_ns", c->spin_ns);
		jw_i64(w, "hold_ns", c->hold_ns);
	}
	if (c->component == C_MESSAGE)
		jw_i64(w, "msg_bytes", c->msg_bytes);
	sink_out_params(w, &c->out);
	run_params_flags(w, c->no_dma_latency, c->allow_degraded);
}

/* Summary "rhealstone": rounds, samples thrown away and why, and for
 * interrupt-latency the stimulus/response accounting. */
static void rh_summary_extra(struct jw *w, int slot, const void *ctx)
{
	const struct rh *r = ctx;
	if (slot >= 0)
		return;
	jw_obj_begin(w, "rhealstone");
	jw_str(w, "component", comp_names[r->cfg.component]);
	jw_u64(w, "rounds", atomic_load(&r->rounds));
	jw_i64(w, "samples_per_round", r->comp->per_round);
	jw_u64(w, "warmup_samples", r->warm);
	jw_u64(w, "discarded", atomic_load(&r->discarded));
	if (r->comp->spins)
		jw_u64(w, "spin_capped", atomic_load(&r->spin_capped));
	if (r->cfg.component == C_DEADLOCK_BREAK)
		jw_bool(w, "pi", r->cfg.pi == 0);
	if (r->cfg.component == C_INTERRUPT) {
		jw_u64(w, "stimuli", atomic_load(&r->sent));
		jw_u64(w, "responses", atomic_load(&r->responses));
		jw_u64(w, "coalesced", atomic_load(&r->coalesced));
		jw_u64(w, "skipped_periods", atomic_load(&r->skipped_periods));
	}
	jw_obj_end(w);
}

/* Pick a default CPU: the last usable one; `not` excluded (-1: none). */
static int last_usable(int not, char *err, size_t len)
{
	struct cpulist l;
	if (cpulist_usable(&l, err, len))
		return -1;
	for (int i = l.n - 1; i >= 0; i--)
		if (l.cpu[i] != not)
			return l.cpu[i];
	snprintf(err, len, "no usable CPU other than %d", not);
	return -2;
}

static int rh_validate(struct run *run)
{
	struct rh *r = (struct rh *)run;
	struct rh_cfg *c = &r->cfg;
	char err[512];
	r->comp = &components[c->component];
	if (run_given(run, "duration"))
		c->loops = 0;
	if (run_given(&r->run, "cpu")) {
		if (cpulist_check(&c->cpu, err, sizeof(err)))
			return log_error("--cpu: %s", err);
		if (c->cpu.n != 1)
			return log_error("--cpu: give one CPU (got %d)", c->cpu.n);
		r->cpu = c->cpu.cpu[0];
	} else if ((r->cpu = last_usable(-1, err, sizeof(err))) < 0) {
		return log_error("--cpu: %s", err);
	}
	r->peer = -1;
	if (run_given(&r->run, "peer-cpu")) {
		if (c->component != C_INTERRUPT)
			return log_error("--peer-cpu applies to --component interrupt-latency only");
		if (cpulist_check(&c->peer_cpu, err, sizeof(err)))
			return log_error("--peer-cpu: %s", err);
		if (c->peer_cpu.n != 1 || c->peer_cpu.cpu[0] == r->cpu)
			return log_error("--peer-cpu: give one CPU other than --cpu %d", r->cpu);
		r->peer = c->peer_cpu.cpu[0];
	} else if (c->component == C_INTERRUPT) {
		int p = last_usable(r->cpu, err, sizeof(err));
		if (p == -2)
			return log_skip("a second usable CPU", "interrupt-latency needs two CPUs: %s", err);
		if (p < 0)
			return log_error("--peer-cpu: %s", err);
		r->peer = p;
	}
	static const struct {
		const char *opt;
		int comp;
	} only[] = {{"pi", C_DEADLOCK_BREAK}, {"spin", C_DEADLOCK_BREAK}, {"hold", C_DEADLOCK_BREAK},
		    {"msg-bytes", C_MESSAGE}};
	for (size_t i = 0; i < sizeof(only) / sizeof(only[0]); i++)
		if (run_given(&r->run, only[i].opt) && c->component != only[i].comp)
			return log_error("--%s applies to --component %s only", only[i].opt, comp_names[only[i].comp]);
	if (r->comp->spins && sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return log_skip("a second online CPU",
				"%s spins at RT priority and this host has one online CPU: refusing to block it",
				comp_names[c->component]);
	if (r->comp->needs_rt && c->policy == RT_OTHER)
		return log_error("--component %s needs --policy fifo or rr (priorities are what it measures)",
				 comp_names[c->component]);
	return sink_out_validate(&c->out, run->a->check);
}

/* Try scheduling (at the highest priority used) and memory locking. */
static int rh_privileges(struct run *run)
{
	struct rh *r = (struct rh *)run;
	static const struct rt_words words = {.priority_in_skip = true,
					      .instead = "running SCHED_OTHER (no priorities)"};
	struct rh_cfg *c = &r->cfg;
	int rc, top = (int)c->priority;
	for (int i = 0; i < r->comp->nroles; i++)
		if ((int)c->priority + r->comp->roles[i].prio_off > top)
			top = (int)c->priority + r->comp->roles[i].prio_off;
	r->run.rt.policy = c->policy;
	r->run.rt.priority = c->policy == RT_OTHER ? 0 : (int)c->priority;
	if (c->policy != RT_OTHER &&
	    (rc = rt_acquire_sched(c->policy, top, c->allow_degraded && !r->comp->needs_rt, &words, &run->rt,
				   &run->warn)))
		return rc;
	return rt_acquire_mlock(c->allow_degraded, &r->run.rt, &r->run.warn);
}

/* Semaphores, the mutex, the queue, the eventfd: what the component uses. */
static int rh_objects(struct rh *r, char *err, size_t len)
{
	sem_t *sems[] = {&r->go_b, &r->sem_s, &r->go_l, &r->sem_h, &r->sem_m};
	for (size_t i = 0; i < sizeof(sems) / sizeof(sems[0]); i++)
		sem_init(sems[i], 0, sems[i] == &r->sem_s ? 1 : 0);
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	int e = pthread_mutexattr_setprotocol(&ma, r->cfg.pi == 0 ? PTHREAD_PRIO_INHERIT : PTHREAD_PRIO_NONE);
	if (!e)
		e = pthread_mutex_init(&r->mtx, &ma);
	pthread_mutexattr_destroy(&ma);
	if (e) {
		snprintf(err, len, "pthread_mutex_init: %s", strerror(e));
		return -1;
	}
	r->mtx_ok = true;
	if (r->cfg.component == C_MESSAGE) {
		struct mq_attr at = {.mq_maxmsg = MQ_MAXMSG, .mq_msgsize = r->cfg.msg_bytes};
		char name[64];
		snprintf(name, sizeof(name), "/rtqual-rhealstone-%d", (int)getpid());
		for (int attempt = 0; attempt < 2 && r->mq == (mqd_t)-1; attempt++) {
			r->mq = mq_open(name, O_RDWR | O_CREAT | O_EXCL, 0600, &at);
			if (r->mq == (mqd_t)-1 && errno == EEXIST)
				mq_unlink(name); /* stale queue of a crashed process with our pid */
		}
		if (r->mq == (mqd_t)-1) {
			snprintf(err, len, "mq_open %s: %s", name, strerror(errno));
			return -1;
		}
		mq_unlink(name);
	}
	if (r->cfg.component == C_INTERRUPT) {
		struct epoll_event ev = {.events = EPOLLIN};
		r->efd = eventfd(0, EFD_CLOEXEC);
		r->epfd = epoll_create1(EPOLL_CLOEXEC);
		if (r->efd < 0 || r->epfd < 0 || epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->efd, &ev) != 0) {
			snprintf(err, len, "eventfd/epoll: %s", strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* The component's objects (queue, eventfd, epoll, mutex). */
static void rh_cleanup(struct run *run)
{
	struct rh *r = (struct rh *)run;
	if (!run->prepared)
		return;
	if (r->mq != (mqd_t)-1)
		mq_close(r->mq);
	if (r->efd >= 0)
		close(r->efd);
	if (r->epfd >= 0)
		close(r->epfd);
	if (r->mtx_ok)
		pthread_mutex_destroy(&r->mtx);
}

/* Start the helpers, then the driver (last role), pinned, with their
 * priorities; signals stay with the main thread. */
static int rh_start(struct run *run)
{
	struct rh *r = (struct rh *)run;
	for (int i = 0; i < r->comp->nroles; i++) {
		struct rh_thread *t = &r->th[i];
		const struct role *ro = &r->comp->roles[i];
		bool driver = i == r->comp->nroles - 1;
		char what[64];
		snprintf(what, sizeof(what), "the %s thread", ro->name);
		t->r = r;
		t->ro = ro;
		if (run_thread(run, &t->tid, &t->started, prio_of(r, ro), ro->on_peer ? r->peer : r->cpu,
			       driver ? driver_thread : helper_thread, t, what))
			return -1;
	}
	return 0;
}

/* Main thread, each round: no round for STALL_NS (plus two intervals) ends the run. */
static bool rh_tick(struct run *run, int64_t now)
{
	struct rh *r = (struct rh *)run;
	if (!run_stalled(run, atomic_load(&r->rounds), now, STALL_NS + 2 * r->cfg.interval_ns))
		return false;
	r->stalled = true;
	rh_kick(run);
	return true;
}

/* Join every thread; false if one does not end within JOIN_NS. */
static bool rh_join(struct rh *r)
{
	bool ok = true;
	for (int i = 0; i < r->comp->nroles; i++) {
		if (!r->th[i].started)
			continue;
		struct timespec ts = ns_to_ts(real_now_ns() + JOIN_NS);
		if (pthread_timedjoin_np(r->th[i].tid, NULL, &ts) != 0) {
			rh_kick(&r->run);
			ok = false;
		}
	}
	return ok;
}

/* The sink (one slot), the component's objects, /dev/cpu_dma_latency, RLIMIT_RTTIME (required
 * where the component spins); the watchdog: a hard cap of WATCHDOG_FACTOR paced runs (rounds
 * may overrun or be discarded) plus a margin (rh_tick also stops a run without rounds). */
static int rh_prepare(struct run *run)
{
	struct rh *r = (struct rh *)run;
	struct rh_cfg *c = &r->cfg;
	r->efd = r->epfd = -1;
	r->mq = (mqd_t)-1;
	if (sink_init(&run->sink, &c->out, &r->cpu, 1, run->err, sizeof(run->err)) ||
	    rh_objects(r, run->err, sizeof(run->err)))
		return log_error("%s", run->err[0] ? run->err : "out of memory");
	run->sink.summary_extra = rh_summary_extra;
	run->sink.summary_ctx = r;
	if (!c->no_dma_latency)
		rt_acquire_dma_latency(&run->dma_fd, &run->rt, &run->warn);
	if (run->rt.policy != RT_OTHER) {
		int e = rt_set_rttime_limit(RUN_RTTIME_SOFT_US, RUN_RTTIME_HARD_US);
		if (e) {
			if (r->comp->spins)
				return log_error("RLIMIT_RTTIME (safety net of the busy loop) cannot be set: %s",
						 strerror(e));
			warnings_add(&run->warn, "RLIMIT_RTTIME safety net not set: %s", strerror(e));
		}
	}
	run->raw_interval_ns = c->interval_ns;
	int64_t round_ns = c->interval_ns + (c->component == C_DEADLOCK_BREAK ? c->spin_ns + c->hold_ns : 0);
	u128 rounds = u128_divmod_u64(u128_add_u64(u128_of((uint64_t)c->loops), (uint64_t)c->warmup),
				      (uint64_t)r->comp->per_round, NULL);
	rounds = u128_add_u64(rounds, 1);
	u128 paced_ns = c->duration_ns ? u128_mul_u64_u64((uint64_t)c->warmup, (uint64_t)round_ns)
				       : u128_mul_u64(rounds, (uint64_t)round_ns);
	u128 run_ns = u128_add_u64(u128_mul_u64(paced_ns, WATCHDOG_FACTOR), (uint64_t)c->duration_ns);
	run->watchdog_s = run_watchdog_s(run_ns, 0, 0x7fff0000);
	return 0;
}

/* Join every thread (bounded: rh_join); rh_end says if one did not stop. */
static void rh_stop(struct run *run)
{
	struct rh *r = (struct rh *)run;
	r->joined = rh_join(r);
}

/* The recorder's counts into the slot; the ending: cut short, a thread that did not stop,
 * stalled, the component's failure, or the status from the data. */
static int rh_end(struct run *run)
{
	struct rh *r = (struct rh *)run;
	int rc;
	run->sink.cs[0].cpu_time_ns = atomic_load(&r->rec_cpu_time_ns);
	run->sink.cs[0].wakeups = atomic_load(&r->rec_wakeups);
	const char *stalled = r->stalled ? "watchdog: no round completed for 10 s" : NULL;
	if (!r->joined && !run->start_failed)
		rc = sink_finish(&run->sink, 1, "error", "a measurement thread did not stop");
	else
		rc = run_finish(run, stalled, r->err[0] ? r->err : NULL);
	if (!r->joined) {
		log_error("a measurement thread did not stop");
		_exit(rc ? rc : 1); /* threads still running: do not free what they use */
	}
	return rc;
}

const struct probe probe_rhealstone = {
	.name = "rhealstone",
	.summary = "Rhealstone components (task switch, preemption, semaphore shuffle, deadlock break, "
		   "intertask message, interrupt latency), one per run",
	.opts = rh_opts, .nopts = RH_NOPTS, .label_keys = PROBE_LIST("component"),
	.state_bytes = sizeof(struct rh), .exclusive = PROBE_LIST("duration", "loops"), .params = rh_params,
	.validate = rh_validate, .privileges = rh_privileges, .prepare = rh_prepare,
	.start = rh_start, .tick = rh_tick, .kick = rh_kick, .stop = rh_stop,
	.end = rh_end, .cleanup = rh_cleanup,
};
