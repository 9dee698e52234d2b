/* inject: the stall injector of `rtqual selftest` (and of the --trace tests). Not a measurement:
 * it makes latency of known size so the probes can be shown to catch it. The process renames
 * itself `rtqual-stall`, pins itself to --cpu, becomes SCHED_FIFO at --priority (above the
 * probes' default 80) and busy-loops --stall, --count times, sleeping --gap between the end of
 * one stall and the start of the next (clock_nanosleep), after --start-delay. Each stall is one
 * record {"type":"stall","cpu","start_ns","end_ns","claimed_ns","index","planned_ns"} on CLOCK_MONOTONIC (the
 * probes' clock) and one sample (its real length) in the slot of its CPU, so the end records
 * are the usual hist/summary/end. --claim makes the records claim another length than the one
 * spun: the lie that `rtqual selftest` must catch.
 * Every stall is bounded three ways: its own clock check on each spin, RLIMIT_RTTIME (SIGXCPU
 * just after the stall's length, SIGKILL later) and alarm() over the whole plan (the spin
 * stops at SIGALRM). It refuses a stall above STALL_MAX and a machine with one online CPU. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "rtqual/cpulist.h"
#include "rtqual/lifecycle.h"
#include "rtqual/log.h"
#include "rtqual/probe.h"
#include "rtqual/rtenv.h"
#include "rtqual/sink.h"

#define INJECT_COMM "rtqual-stall"
#define STALL_MAX "200ms"              /* the cap of --stall (as the option table says it) */
#define RTTIME_SOFT_MARGIN_US 50000    /* SIGXCPU 50 ms past the stall's length */
#define RTTIME_HARD_MARGIN_US 250000   /* SIGKILL 250 ms past it */

struct inject_cfg {
	int64_t cpu, stall_ns, count, gap_ns, priority, start_delay_ns, claim_ns, json_fd;
};

/* All state of one injector run. */
struct inject {
	struct run run; /* first: the driver's part */
	struct inject_cfg cfg;
	struct sink_out out;   /* the sink's settings (no threshold events, no raw file) */
	int64_t claimed_ns;    /* what each stall record claims: --claim, else --stall */
	int64_t stalls;        /* stalls done */
	const char *stopped_by; /* the last stall ended by: clock | rlimit_rttime | signal */
};

#define F(x) offsetof(struct inject, cfg.x)
static const struct opt_def inject_opts[] = {
	{"cpu", OPT_INT, F(cpu), 0, CPULIST_MAX - 1, NULL, NULL,
	 "the CPU to stall (default: the last one we may use)"},
	{"stall", OPT_DURATION, F(stall_ns), 100 * NS_PER_US, 200 * NS_PER_MS, "10ms", NULL,
	 "length of each SCHED_FIFO busy loop (at most " STALL_MAX ")"},
	{"count", OPT_INT, F(count), 1, 10000, "5", NULL, "stalls"},
	{"gap", OPT_DURATION, F(gap_ns), NS_PER_MS, 60 * NS_PER_S, "500ms", NULL,
	 "sleep between the end of one stall and the start of the next"},
	{"priority", OPT_INT, F(priority), 1, 99, "90", NULL,
	 "SCHED_FIFO priority of the stalls (above the probes' default 80)"},
	{"start-delay", OPT_DURATION, F(start_delay_ns), 0, 60 * NS_PER_S, "0s", NULL,
	 "sleep before the first stall"},
	{"claim", OPT_DURATION, F(claim_ns), 0, 60 * NS_PER_S, NULL, NULL,
	 "claim this length in the stall records instead of --stall (a lie, to test the selftest)"},
	{"json-fd", OPT_INT, F(json_fd), 1, 65535, "1", NULL, "fd for JSON Lines"},
};
#undef F
#define INJECT_NOPTS ((int)(sizeof(inject_opts) / sizeof(inject_opts[0])))

/* Write the JSON line built in the sink's writer; a failure stops the run (nobody listens). */
static void emit(struct sink *s)
{
	if (jw_write_line(&s->jw, s->fd) != 0 && !s->write_errno) {
		s->write_errno = errno ? errno : EIO;
		atomic_store(&s->stop, true);
	}
}

/* One busy loop of `stall_ns` from now, checking its clock (bound 1), SIGXCPU (bound 2) and
 * SIGALRM or a stop signal (bound 3) on each spin; *end_ns: when it ended. Returns what ended it. */
static const char *spin(int64_t stall_ns, int64_t *start_ns, int64_t *end_ns)
{
	volatile uint64_t work = 0;
	int64_t now = *start_ns = mono_now_ns();
	const int64_t until = now + stall_ns;
	const char *by = "clock";
	while (now < until) {
		for (int i = 0; i < 64; i++)
			work += (uint64_t)i;
		if (rt_xcpu_caught()) {
			by = "rlimit_rttime";
			break;
		}
		if (rt_signals_caught()) {
			by = "signal";
			break;
		}
		now = mono_now_ns();
	}
	*end_ns = mono_now_ns();
	return by;
}

/* {"type":"stall","cpu","start_ns","end_ns","claimed_ns","index","planned_ns"}: planned_ns is when the
 * stall was meant to start (start_ns - planned_ns: how long the CPU was held from the injector then). */
static void emit_stall(struct inject *t, int64_t planned_ns, int64_t start_ns, int64_t end_ns)
{
	struct jw *w = &t->run.sink.jw;
	jw_obj_begin(w, NULL);
	jw_str(w, "type", "stall");
	jw_i64(w, "cpu", t->cfg.cpu);
	jw_i64(w, "start_ns", start_ns);
	jw_i64(w, "end_ns", end_ns);
	jw_i64(w, "claimed_ns", t->claimed_ns);
	jw_i64(w, "index", t->stalls);
	jw_i64(w, "planned_ns", planned_ns);
	jw_obj_end(w);
	emit(&t->run.sink);
}

static void inject_params(struct jw *w, const void *ctx)
{
	const struct inject *t = ctx;
	const struct inject_cfg *c = &t->cfg;
	jw_str(w, "comm", INJECT_COMM);
	jw_i64(w, "cpu", c->cpu);
	jw_i64(w, "stall_ns", c->stall_ns);
	jw_i64(w, "count", c->count);
	jw_i64(w, "gap_ns", c->gap_ns);
	run_params_sched(w, RT_FIFO, c->priority);
	jw_i64(w, "start_delay_ns", c->start_delay_ns);
	if (run_given(&t->run, "claim"))
		jw_i64(w, "claim_ns", c->claim_ns);
	else
		jw_null(w, "claim_ns");
	run_params_busy(w, &t->run);
}

/* Summary extension: the slot's role, and at the top level what was injected. */
static void inject_summary_extra(struct jw *w, int slot, const void *ctx)
{
	const struct inject *t = ctx;
	if (slot >= 0) {
		jw_str(w, "role", "stall");
		return;
	}
	jw_obj_begin(w, "inject");
	jw_i64(w, "stalls", t->stalls);
	jw_i64(w, "claimed_ns", t->claimed_ns);
	jw_str(w, "stopped_by", t->stopped_by);
	jw_obj_end(w);
}

/* The CPU (the last usable one by default), --json-fd open, the claim. */
static int inject_validate(struct run *run)
{
	struct inject *t = (struct inject *)run;
	struct inject_cfg *c = &t->cfg;
	struct cpulist usable;
	if (run_pick_cpu(run, &c->cpu, true, &usable))
		return 1;
	t->claimed_ns = run_given(run, "claim") ? c->claim_ns : c->stall_ns;
	t->out = (struct sink_out){.threshold_ns = INT64_MAX, .json_fd = c->json_fd, .progress_ms = 1000};
	return sink_out_validate(&t->out, run->a->check);
}

/* SCHED_FIFO is the point: no degraded mode (exit 3, naming what to grant). */
static int inject_privileges(struct run *run)
{
	struct inject *t = (struct inject *)run;
	static const struct rt_words words = {.role = "stall injector", .priority_in_skip = true};
	run->rt.policy = RT_FIFO;
	run->rt.priority = (int)t->cfg.priority;
	int e = rt_acquire_sched(RT_FIFO, (int)t->cfg.priority, false, &words, &run->rt, &run->warn);
	if (e)
		return e;
	e = rt_lock_memory();
	run->rt.mlockall = e == 0;
	if (e)
		warnings_add(&run->warn, "mlockall not permitted (%s): a page fault may lengthen a stall",
			     strerror(e));
	return 0;
}

/* Our name, the one slot, the bounds: RLIMIT_RTTIME just past one stall (bound 2: SIGXCPU, then
 * SIGKILL) and the watchdog alarm past the whole plan (bound 3). */
static int inject_prepare(struct run *run)
{
	struct inject *t = (struct inject *)run;
	struct inject_cfg *c = &t->cfg;
	int cpu = (int)c->cpu;
	prctl(PR_SET_NAME, INJECT_COMM, 0, 0, 0);
	if (sink_init(&run->sink, &t->out, &cpu, 1, run->err, sizeof(run->err)))
		return log_error("%s", run->err);
	run->sink.summary_extra = inject_summary_extra;
	run->sink.summary_ctx = t;
	if (run_bound_busy(run, c->stall_ns, RTTIME_SOFT_MARGIN_US, RTTIME_HARD_MARGIN_US, "a bound of every stall"))
		return 1;
	u128 plan = u128_add_u64(u128_mul_u64(u128_of((uint64_t)c->count), (uint64_t)(c->stall_ns + c->gap_ns)),
				 (uint64_t)c->start_delay_ns);
	run->watchdog_s = run_watchdog_s(plan, 0, 0x7fffffff);
	t->stopped_by = "clock";
	return 0;
}

/* Pin ourselves to the CPU and become SCHED_FIFO (the process is the stall). */
static int inject_start(struct run *run)
{
	struct inject *t = (struct inject *)run;
	return rt_self_sched((int)t->cfg.cpu, RT_FIFO, (int)t->cfg.priority, run->err, sizeof(run->err));
}

/* The plan: sleep, stall, record; until --count stalls, or a stop. Ends SCHED_OTHER. */
static void inject_measure(struct run *run)
{
	struct inject *t = (struct inject *)run;
	struct inject_cfg *c = &t->cfg;
	struct cpu_state *cs = &run->sink.cs[0];
	int64_t next = mono_now_ns() + c->start_delay_ns;
	while (t->stalls < c->count && !run_stopping(run)) {
		int e = sleep_until_ns(next);
		if (e == EINTR)
			continue; /* a signal: look again */
		if (e)
			break;
		int64_t start, end;
		t->stopped_by = spin(c->stall_ns, &start, &end);
		sink_sample(cs, end - start, end, 0);
		emit_stall(t, next, start, end);
		t->stalls++;
		if (strcmp(t->stopped_by, "clock") != 0)
			break;
		next = end + c->gap_ns;
	}
	sink_slot_end(cs, (uint64_t)t->stalls);
	rt_self_sched(-1, RT_OTHER, 0, NULL, 0);
}

/* Warnings for the bounds that acted, then the ending. */
static int inject_end(struct run *run)
{
	struct inject *t = (struct inject *)run;
	if (rt_xcpu_caught())
		sink_warning(&run->sink, "RLIMIT_RTTIME soft limit hit (SIGXCPU): stall %" PRId64 " was cut short",
			     t->stalls - 1);
	if (!run->start_failed && (rt_signals_caught() & RT_SIG_WATCHDOG))
		return sink_finish(&run->sink, 1, "error", "watchdog: the stalls outlived their alarm");
	return run_end(run);
}

const struct probe probe_inject = {
	.name = "inject",
	.summary = "stall injector for the selftest: bounded SCHED_FIFO busy loops of known length on one CPU, "
		   "one stall record each (not a measurement)",
	.opts = inject_opts, .nopts = INJECT_NOPTS, .supported = probe_spare_cpu_supported,
	.state_bytes = sizeof(struct inject), .params = inject_params,
	.validate = inject_validate, .privileges = inject_privileges, .prepare = inject_prepare,
	.start = inject_start, .measure = inject_measure, .end = inject_end,
};
