/* One probe lifecycle for every probe of every binary: run_probe() (lib/lifecycle.c) drives a
 * probe through the hooks of its struct probe (probe.h):
 *
 *   parse options into the state -> validate -> privileges -> (--check: stop here) -> prepare
 *   -> begin (self-overhead, signals, raw header, JSON header, kept warnings) -> watchdog alarm
 *   -> start threads -> measure (pacing loop: drain, progress, until r->done, tick or a stop)
 *   -> stop (join)
 *   -> alarm off -> end (hist, summary, end record) -> cleanup (always: r->prepared says
 *   whether prepare was called, so whether what it acquires needs releasing).
 *
 * A probe's state is one zeroed allocation of probe.state_bytes that starts with struct run;
 * a hook gets the struct run and casts it to the probe's state. */
#ifndef RTQUAL_LIFECYCLE_H
#define RTQUAL_LIFECYCLE_H

#include <stdbool.h>
#include <stdint.h>

#include "rtqual/cpulist.h"
#include "rtqual/probe.h"
#include "rtqual/rtenv.h"
#include "rtqual/sink.h"

#define RUN_RTTIME_SOFT_US 200000 /* RLIMIT_RTTIME of a probe that blocks between samples */
#define RUN_RTTIME_HARD_US 400000
#define RUN_WATCHDOG_MARGIN_S 10 /* the alarm beyond the planned run */
#define RUN_THREAD_STACK_BYTES (256 * 1024)

/* The option rows most probes share: names, types and ranges in one place; the default and the
 * help are the probe's. F(x): the offset of its configuration's x. */
#define RUN_OPT_POLICY(F, help) {"policy", OPT_ENUM, F(policy), 0, 0, "fifo", rt_policy_names, help}
#define RUN_OPT_PRIORITY(F, def, help) {"priority", OPT_INT, F(priority), 1, 99, def, NULL, help}
#define RUN_OPT_DURATION(F, def, help) \
	{"duration", OPT_DURATION, F(duration_ns), NS_PER_MS, 365 * 24 * 3600 * NS_PER_S, def, NULL, help}
#define RUN_OPT_LOOPS(F, max, def, help) {"loops", OPT_INT, F(loops), 1, max, def, NULL, help}
#define RUN_OPT_WARMUP(F, def, help) {"warmup", OPT_INT, F(warmup), 0, 1000000000, def, NULL, help}
/* duration, loops and warmup, the rows of a run's length, together */
#define RUN_OPTS_LENGTH(F, duration_help, loops_max, loops_help, warmup_def, warmup_help) \
	RUN_OPT_DURATION(F, "10s", duration_help), RUN_OPT_LOOPS(F, loops_max, NULL, loops_help), \
		RUN_OPT_WARMUP(F, warmup_def, warmup_help)
#define RUN_OPT_THRESHOLD(F, def, help) \
	{"threshold", OPT_DURATION, F(out.threshold_ns), 1, 60 * NS_PER_S, def, NULL, help}
#define RUN_OPT_NO_DMA_LATENCY(F) \
	{"no-dma-latency", OPT_FLAG, F(no_dma_latency), 0, 0, NULL, NULL, "do not hold /dev/cpu_dma_latency at 0"}
#define RUN_DEGRADED_HELP "run with what is permitted (SCHED_OTHER, no mlock), marked degraded"
#define RUN_OPT_ALLOW_DEGRADED(F, help) {"allow-degraded", OPT_FLAG, F(allow_degraded), 0, 0, NULL, NULL, help}

/* The part of every probe's state the driver owns: first member of the state. */
struct run {
	const struct probe *p;
	const struct probe_args *a;
	uint64_t given; /* options given on the command line (opts_given) */
	struct rt_info rt;
	struct warnings warn; /* kept until the header is out */
	struct sink sink;
	int dma_fd;              /* /dev/cpu_dma_latency held by run_hold (-1: none) */
	int64_t raw_interval_ns; /* prepare: the raw file header's interval (0: none) */
	unsigned watchdog_s;     /* prepare: alarm() from the header to the end (0: none) */
	uint64_t rttime_soft_us, rttime_hard_us; /* prepare, run_bound_busy: a busy loop's RLIMIT_RTTIME */
	bool prepared;           /* prepare was called (cleanup: release what it took) */
	bool start_failed;       /* start returned -1; err says why */
	_Atomic bool done;       /* set by the measuring side when it has finished: the pacing loop ends */
	char err[512];
	/* the main thread's pacing: drain every poll_ns, progress every progress_ns */
	int64_t pace_now_ns, pace_poll_ns, progress_ns, next_progress_ns;
	uint64_t seen_progress; /* run_stalled: the progress count seen at seen_at_ns */
	int64_t seen_at_ns;
};

/* Run probe `p` with arguments `a` (driver_main calls it); returns the exit code
 * (0 pass, 1 error, 3 skip, 4 inconclusive). */
int run_probe(const struct probe *p, const struct probe_args *a);

/* validate's helper: the options `a` and `b` exclude each other (log_error's rc); *b_given. */
int run_one_of(struct run *r, const char *a, const char *b, bool *b_given);
/* validate's helper for a --cpu option: not given, the first (or `last`) CPU we may use; then
 * it must be one (log_error's rc). *usable: the CPUs we may use. */
int run_pick_cpu(struct run *r, int64_t *cpu, bool last, struct cpulist *usable);
/* Was option `name` given on the command line? */
bool run_given(const struct run *r, const char *name);

/* params' helpers: the keys policy, priority (what was asked; the header's "rt" says what it
 * got); duration_ns, loops, warmup; dma_latency, allow_degraded. */
void run_params_sched(struct jw *w, int policy, int64_t priority);
void run_params_length(struct jw *w, int64_t duration_ns, int64_t loops, int64_t warmup);
void run_params_flags(struct jw *w, bool no_dma_latency, bool allow_degraded);

/* The end of a measuring thread with one slot: sink_slot_end, then r->done; returns NULL. */
void *run_slot_done(struct run *r, struct cpu_state *cs, uint64_t wakeups);

/* prepare's helper: hold /dev/cpu_dma_latency at 0 (if `dma`), then RLIMIT_RTTIME at the
 * RUN_RTTIME_* values if the policy is RT; refusals become warnings. */
void run_hold(struct run *r, bool dma);
/* prepare's helper for a probe whose RT busy loop runs up to busy_ns without blocking: SIGXCPU
 * sets rt_xcpu_caught(), RLIMIT_RTTIME is busy_ns plus the margins (SIGXCPU, then SIGKILL), kept
 * in r->rttime_*; `what` names that bound in the error line. log_error's rc. */
int run_bound_busy(struct run *r, int64_t busy_ns, uint64_t soft_margin_us, uint64_t hard_margin_us,
		   const char *what);
/* params' helper of such a probe: rlimit_rttime_soft_us, rlimit_rttime_hard_us, alarm_s (the watchdog). */
void run_params_busy(struct jw *w, const struct run *r);
/* A watchdog of `run_ns` plus `extra_s` and the margin, in whole seconds, capped at `cap_s`. */
unsigned run_watchdog_s(u128 run_ns, uint64_t extra_s, unsigned cap_s);

/* validate's helper for a probe paced at --rate: *period_ns, and *total requests (the warm-up,
 * then --loops or as many as fit in --duration, which becomes 0 with --loops); log_error's rc if
 * --duration is shorter than one period. */
int run_plan_rate(int64_t rate_hz, bool have_loops, int64_t *duration_ns, int64_t loops, int64_t warmup,
		  int64_t *period_ns, uint64_t *total);

/* start's helper: a thread (RUN_THREAD_STACK_BYTES, the run's policy at `priority`, pinned to
 * `cpu`); *started on success, else -1 with r->err "cannot start WHAT on CPU N: why". */
int run_thread(struct run *r, pthread_t *tid, bool *started, int priority, int cpu, void *(*fn)(void *), void *arg,
	       const char *what);
/* tick's helper: true once `progress` has not moved for `limit_ns` (a stalled measurement). */
bool run_stalled(struct run *r, uint64_t progress, int64_t now_ns, int64_t limit_ns);

/* The pacing loop's pieces, for a probe with its own measure hook. */
int64_t run_pace_start(struct run *r, int64_t poll_ns);
int64_t run_pace(struct run *r);
/* True once a stop signal (any RT_SIG_*) arrived or the JSON stream failed; then sink.stop is
 * set, so the measuring threads end at their next wake-up. */
bool run_stopping(struct run *r);

/* The end of a measuring thread among the run's ncpu (one slot each): sink_slot_end, then count
 * itself in `done`; the last one sets r->done. Returns NULL. */
void *run_thread_done(struct run *r, _Atomic int *done, struct cpu_state *cs, uint64_t wakeups);

/* The end of a run cut short, first match wins: start failed (r->err, also logged after the
 * records), the watchdog fired, a stop signal arrived. Emits the final records and returns true
 * with the exit code in *rc; false: the run went its course (the end hook finishes it). */
bool run_end_early(struct run *r, int *rc);
/* The ending probes share, in this order: a start that failed, the watchdog, `stalled` (the watchdog's
 * "no progress" message, or NULL), a stop signal, `fail` (the probe's own error, or NULL), else the
 * status from the data; an error is also said on stderr. */
int run_finish(struct run *r, const char *stalled, const char *fail);
/* The default end: run_finish with nothing stalled and no failure of the probe's own. */
int run_end(struct run *r);

#endif
