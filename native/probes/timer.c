/* timer probe: cyclictest-class wake-up latency. One pinned measurement
 * thread per CPU sleeps to absolute CLOCK_MONOTONIC deadlines; the main
 * thread (SCHED_OTHER) emits progress, events and the final records. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "rtqual/cpulist.h"
#include "rtqual/deadline.h"
#include "rtqual/lifecycle.h"
#include "rtqual/log.h"
#include "rtqual/probe.h"
#include "rtqual/rtenv.h"
#include "rtqual/sink.h"

#define THREAD_STACK_BYTES (256 * 1024)

struct timer_cfg {
	struct cpulist cpus;
	int policy;
	int64_t priority, interval_ns, duration_ns, loops, warmup;
	struct dl_params dl; /* --policy deadline */
	bool no_dma_latency, no_tracemark, allow_degraded;
	struct sink_out out;
};

struct timer;

struct timer_thread {
	struct timer *t;
	struct cpu_state *cs;
	pthread_t tid;
	bool started;
	_Atomic int dl_state; /* --policy deadline: 0 not yet, 1 entered, else -errno */
};

/* All state of one timer run. */
struct timer {
	struct run run; /* first: the driver's part */
	struct timer_cfg cfg;
	struct timer_thread *thr;
	_Atomic int threads_done;
	int mark_fd;
	struct cpulist wide; /* --policy deadline: the CPUs a thread may widen to (online) */
	bool dl_pinned;      /* the deadline trial kept the threads pinned */
};

#define F(x) offsetof(struct timer, cfg.x)
static const struct opt_def timer_opts[] = {
	{"cpus", OPT_CPULIST, F(cpus), 0, 0, NULL, NULL, "one measurement thread per CPU, pinned (default: all online)"},
	{"policy", OPT_ENUM, F(policy), 0, 0, "fifo", rt_policy_names_all,
	 "scheduling policy (deadline: SCHED_DEADLINE with --runtime, --deadline, --period)"},
	RUN_OPT_PRIORITY(F, "80", "RT priority (ignored for other)"),
	{"interval", OPT_DURATION, F(interval_ns), 10 * NS_PER_US, 10 * NS_PER_S, "1ms", NULL, "wake-up period"},
	RUN_OPTS_LENGTH(F, "measured time after warm-up", 1LL << 62,
		"measured periods (samples + overruns) per CPU; replaces --duration", "100",
		"samples discarded per CPU before measuring"),
	{"runtime", OPT_DURATION, F(dl.runtime_ns), NS_PER_US, 10 * NS_PER_S, NULL, NULL,
	 "--policy deadline: CPU time per period (default: a tenth of --deadline, at least 2us)"},
	{"deadline", OPT_DURATION, F(dl.deadline_ns), 10 * NS_PER_US, 10 * NS_PER_S, NULL, NULL,
	 "--policy deadline: relative deadline (default: --period)"},
	{"period", OPT_DURATION, F(dl.period_ns), 10 * NS_PER_US, 10 * NS_PER_S, NULL, NULL,
	 "--policy deadline: the period, which is also the wake-up interval (default: --interval)"},
	RUN_OPT_THRESHOLD(F, "100us", "samples above it emit event records"),
	SINK_OUT_OPTS(F, "1000"),
	RUN_OPT_NO_DMA_LATENCY(F),
	{"no-tracemark", OPT_FLAG, F(no_tracemark), 0, 0, NULL, NULL, "do not write threshold events to trace_marker"},
	RUN_OPT_ALLOW_DEGRADED(F, RUN_DEGRADED_HELP),
};
#undef F
#define TIMER_NOPTS ((int)(sizeof(timer_opts) / sizeof(timer_opts[0])))

/* Write a threshold mark into the kernel trace, at most max_events per
 * second per thread. Runs in the measurement thread, only above threshold. */
static void trace_mark(int fd, int cpu, int64_t lat_ns, int64_t thr_ns, int64_t now, int64_t *sec,
		       uint64_t *n, uint64_t budget)
{
	char buf[128];
	if (now / NS_PER_S != *sec) {
		*sec = now / NS_PER_S;
		*n = 0;
	}
	if (*n >= budget)
		return;
	(*n)++;
	int len = snprintf(buf, sizeof(buf), "rtqual: cpu %d latency %" PRId64 " ns > threshold %" PRId64 " ns\n",
			   cpu, lat_ns, thr_ns);
	if (write(fd, buf, (size_t)len) < 0) {
		/* tracing is best effort */
	}
}

/* Measurement thread: sleep to absolute deadlines, one sample per wake-up
 * from the deadline slept for, skipped periods to overruns (protocol.md).
 * Stops when the next deadline passes start+duration, after --loops
 * periods, or at the first wake-up after sink.stop is set. */
static void *timer_thread_main(void *arg)
{
	struct timer_thread *th = arg;
	struct timer *t = th->t;
	struct cpu_state *cs = th->cs;
	const int64_t iv = t->cfg.interval_ns;
	const uint64_t loops = (uint64_t)t->cfg.loops, warmup = (uint64_t)t->cfg.warmup;
	const int mark_fd = t->mark_fd;
	uint64_t warm = 0, periods = 0, wakeups = 0, marks = 0;
	int64_t mark_sec = 0;

	rt_prefault_stack();
	prctl(PR_SET_TIMERSLACK, 1UL); /* SCHED_OTHER default is 50 us of slack */
	if (t->run.rt.policy == RT_DEADLINE) {
		bool pinned;
		int e = dl_enter(&t->cfg.dl, t->wide.cpu, t->wide.n, &pinned);
		atomic_store(&th->dl_state, e ? -e : 1);
		if (e)
			return run_slot_done(&t->run, cs, 0);
	}
	int64_t deadline = mono_now_ns() + iv;
	bool measuring = warmup == 0;
	int64_t end_ns = loops ? INT64_MAX : deadline - iv + t->cfg.duration_ns;

	while (!atomic_load_explicit(&t->run.sink.stop, memory_order_relaxed)) {
		struct timespec ts = ns_to_ts(deadline);
		int r;
		while ((r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)) == EINTR)
			;
		if (r)
			break;
		int64_t now = mono_now_ns();
		int64_t lat = now - deadline;
		uint64_t skipped = lat >= iv ? (uint64_t)(lat / iv) : 0;
		wakeups++;
		if (!measuring) {
			if (++warm >= warmup) {
				measuring = true;
				if (!loops)
					end_ns = deadline + (int64_t)skipped * iv + t->cfg.duration_ns;
			}
		} else {
			/* periods still inside the run, this one included */
			uint64_t left = loops ? loops - periods : (uint64_t)((end_ns - deadline) / iv) + 1;
			uint64_t sk = skipped < left - 1 ? skipped : left - 1;
			if (sink_sample(cs, lat, now, sk) && mark_fd >= 0)
				trace_mark(mark_fd, cs->cpu, lat, cs->threshold_ns, now, &mark_sec, &marks,
					   (uint64_t)t->cfg.out.max_events);
			periods += 1 + sk;
			if (loops && periods >= loops)
				break;
		}
		deadline += (int64_t)(skipped + 1) * iv;
		if (measuring && deadline > end_ns)
			break;
	}
	return run_thread_done(&t->run, &t->threads_done, cs, wakeups);
}

/* Header "params": the effective configuration. */
static void timer_params(struct jw *w, const void *ctx)
{
	const struct timer *t = ctx;
	const struct timer_cfg *c = &t->cfg;
	jw_cpus(w, "cpus", c->cpus.cpu, c->cpus.n);
	run_params_sched(w, c->policy, c->policy == RT_DEADLINE ? 0 : c->priority);
	jw_i64(w, "interval_ns", c->interval_ns);
	if (c->policy == RT_DEADLINE) {
		jw_obj_begin(w, "deadline");
		jw_i64(w, "runtime_ns", c->dl.runtime_ns);
		jw_i64(w, "deadline_ns", c->dl.deadline_ns);
		jw_i64(w, "period_ns", c->dl.period_ns);
		jw_bool(w, "pinned", t->dl_pinned);
		jw_obj_end(w);
	}
	run_params_length(w, c->duration_ns, c->loops, c->warmup);
	sink_out_params(w, &c->out);
	jw_bool(w, "dma_latency", !c->no_dma_latency);
	jw_bool(w, "tracemark", !c->no_tracemark);
	jw_bool(w, "allow_degraded", c->allow_degraded);
}

/* --policy deadline: the period is the interval; defaults; the kernel's rules (one line each).
 * The three options go only with it. log_error's rc. */
static int timer_validate_dl(struct run *run)
{
	struct timer_cfg *c = &((struct timer *)run)->cfg;
	char err[256], d1[32], d2[32];
	bool any = run_given(run, "runtime") || run_given(run, "deadline") || run_given(run, "period");
	if (c->policy != RT_DEADLINE)
		return any ? log_error("--runtime, --deadline and --period go with --policy deadline") : 0;
	if (run_given(run, "period")) {
		if (run_given(run, "interval") && c->interval_ns != c->dl.period_ns)
			return log_error("--period (%s) and --interval (%s) differ: a deadline thread wakes once per "
					 "period; give one",
					 duration_format(c->dl.period_ns, d1, sizeof(d1)),
					 duration_format(c->interval_ns, d2, sizeof(d2)));
		c->interval_ns = c->dl.period_ns;
	} else {
		c->dl.period_ns = c->interval_ns;
	}
	if (!run_given(run, "deadline"))
		c->dl.deadline_ns = c->dl.period_ns;
	if (!run_given(run, "runtime"))
		c->dl.runtime_ns = c->dl.deadline_ns / 10 > 2 * NS_PER_US ? c->dl.deadline_ns / 10 : 2 * NS_PER_US;
	if (dl_check(&c->dl, err, sizeof(err)))
		return log_error("--policy deadline: %s", err);
	return 0;
}

/* Options that need more than a range check. */
static int timer_validate(struct run *run)
{
	struct timer *t = (struct timer *)run;
	struct timer_cfg *c = &t->cfg;
	char err[512], d1[32], d2[32];
	if (timer_validate_dl(run))
		return 1;
	if (run_given(run, "loops"))
		c->duration_ns = 0;
	else if (c->duration_ns < c->interval_ns)
		return log_error("--duration (%s) is shorter than --interval (%s): nothing would be measured",
				 duration_format(c->duration_ns, d1, sizeof(d1)),
				 duration_format(c->interval_ns, d2, sizeof(d2)));
	if (!run_given(run, "cpus")) {
		if (cpulist_usable(&c->cpus, err, sizeof(err)))
			return log_error("--cpus: %s", err);
	} else if (cpulist_check(&c->cpus, err, sizeof(err))) {
		return log_error("--cpus: %s", err);
	}
	return sink_out_validate(&c->out, run->a->check);
}

/* --policy deadline: the admission tried for real with every thread at once (refusals: one
 * line naming the reason, exit 1; not permitted: skip 3, or with --allow-degraded SCHED_OTHER),
 * then memory locking. */
static int timer_privileges_dl(struct timer *t)
{
	struct run *run = &t->run;
	char err[512];
	if (cpulist_online(&t->wide, err, sizeof(err)))
		return log_error("%s", err);
	run->rt.policy = RT_DEADLINE;
	run->rt.priority = 0;
	int e = dl_trial(&t->cfg.dl, t->cfg.cpus.cpu, t->cfg.cpus.n, t->wide.cpu, t->wide.n, &t->dl_pinned);
	if (e) {
		dl_refusal(e, &t->cfg.dl, t->cfg.cpus.n, err, sizeof(err));
		if (e == EPERM && geteuid() != 0) {
			if (!t->cfg.allow_degraded)
				return log_skip("run as root, or CAP_SYS_NICE", "SCHED_DEADLINE not permitted (EPERM)");
			warnings_add(&run->warn, "degraded: SCHED_DEADLINE not permitted (EPERM); running SCHED_OTHER");
			run->rt.policy = RT_OTHER;
			run->rt.degraded = true;
		} else {
			return log_error("%s", err);
		}
	}
	if (run->rt.policy == RT_DEADLINE && !t->dl_pinned)
		warnings_add(&run->warn, "SCHED_DEADLINE threads are not pinned: the kernel refuses a deadline task an "
			     "affinity narrower than its root domain (isolate the CPUs in their own cpuset to pin)");
	return rt_acquire_mlock(t->cfg.allow_degraded, &run->rt, &run->warn);
}

/* Scheduling and memory locking: try them for real. Not permitted ->
 * skip (exit 3) or, with --allow-degraded, SCHED_OTHER / no mlock. */
static int timer_privileges(struct run *run)
{
	struct timer *t = (struct timer *)run;
	if (t->cfg.policy == RT_DEADLINE)
		return timer_privileges_dl(t);
	return rt_acquire(t->cfg.policy, (int)t->cfg.priority, t->cfg.allow_degraded, &run->rt, &run->warn);
}

/* Histograms and threads per CPU, /dev/cpu_dma_latency, trace_marker, RLIMIT_RTTIME; the
 * watchdog: the whole run (warm-up included) plus a margin. */
static int timer_prepare(struct run *run)
{
	struct timer *t = (struct timer *)run;
	struct timer_cfg *c = &t->cfg;
	t->mark_fd = -1;
	if (sink_init(&run->sink, &c->out, c->cpus.cpu, c->cpus.n, run->err, sizeof(run->err)) ||
	    !(t->thr = calloc((size_t)c->cpus.n, sizeof(*t->thr))))
		return log_error("%s%s", run->err[0] ? run->err : "out of memory",
				 run->rt.mlockall ? " (memory is locked: is the memlock limit too low?)" : "");
	run_hold(run, !c->no_dma_latency);
	if (!c->no_tracemark) {
		t->mark_fd = rt_tracemark_open();
		run->rt.tracemark = t->mark_fd >= 0;
	}
	run->raw_interval_ns = c->interval_ns;
	uint64_t measured = c->loops ? (uint64_t)c->loops : (uint64_t)(c->duration_ns / c->interval_ns);
	u128 periods = u128_add_u64(u128_of(measured), (uint64_t)c->warmup);
	run->watchdog_s = run_watchdog_s(u128_mul_u64(periods, (uint64_t)c->interval_ns), 0, 0x7fffffff);
	return 0;
}

/* --policy deadline: wait until every thread has entered SCHED_DEADLINE (or a stop); -1 with
 * run.err naming the refusal of the first that could not. */
static int timer_dl_wait(struct timer *t)
{
	struct run *run = &t->run;
	for (int i = 0; i < run->sink.ncpu; i++) {
		int s;
		while (!(s = atomic_load(&t->thr[i].dl_state)) && !rt_signals_caught())
			sleep_until_ns(mono_now_ns() + NS_PER_MS);
		if (s < 0) {
			dl_refusal(-s, &t->cfg.dl, run->sink.ncpu, run->err, sizeof(run->err));
			return -1;
		}
	}
	return 0;
}

/* Start one pinned thread per CPU with explicit sched attributes. */
static int timer_start(struct run *run)
{
	struct timer *t = (struct timer *)run;
	for (int i = 0; i < run->sink.ncpu; i++) {
		struct timer_thread *th = &t->thr[i];
		th->t = t;
		th->cs = &run->sink.cs[i];
		int pol = run->rt.policy == RT_DEADLINE ? RT_OTHER : run->rt.policy;
		int e = rt_thread_start(&th->tid, pol, run->rt.priority, th->cs->cpu, THREAD_STACK_BYTES,
					timer_thread_main, th);
		if (e) {
			snprintf(run->err, sizeof(run->err), "cannot start the thread for CPU %d: %s%s", th->cs->cpu,
				 strerror(e),
				 e == EAGAIN && run->rt.mlockall ? " (memory is locked: is the memlock limit too low?)"
								 : "");
			return -1;
		}
		th->started = true;
	}
	return run->rt.policy == RT_DEADLINE ? timer_dl_wait(t) : 0;
}

/* Join the measurement threads that started. */
static void timer_stop(struct run *run)
{
	struct timer *t = (struct timer *)run;
	for (int i = 0; i < run->sink.ncpu; i++)
		if (t->thr[i].started)
			pthread_join(t->thr[i].tid, NULL);
}

/* Release the trace_marker fd and the thread table. */
static void timer_cleanup(struct run *run)
{
	struct timer *t = (struct timer *)run;
	if (run->prepared && t->mark_fd >= 0)
		close(t->mark_fd);
	free(t->thr);
}

/* The timer needs only POSIX clocks, present on every Linux. */
static bool timer_supported(char *why_not, size_t len)
{
	struct timespec ts;
	if (clock_getres(CLOCK_MONOTONIC, &ts) != 0) {
		snprintf(why_not, len, "CLOCK_MONOTONIC not available");
		return false;
	}
	return true;
}

const struct probe probe_timer = {
	.name = "timer",
	.summary = "wake-up latency of periodic clock_nanosleep threads, one per CPU (cyclictest-like)",
	.opts = timer_opts, .nopts = TIMER_NOPTS, .supported = timer_supported,
	.label_keys = PROBE_LIST("interval"), .sections = PROBE_LIST("baseline"),
	.state_bytes = sizeof(struct timer), .exclusive = PROBE_LIST("duration", "loops"), .params = timer_params,
	.validate = timer_validate, .privileges = timer_privileges, .prepare = timer_prepare,
	.start = timer_start, .stop = timer_stop, .cleanup = timer_cleanup,
};
