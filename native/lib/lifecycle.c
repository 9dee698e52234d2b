/* The one probe lifecycle (rtqual/lifecycle.h): options, validation, privileges, --check, the
 * probe's set-up, the header, the watchdog, threads, the main thread's pacing loop, the end
 * records and one cleanup, around the hooks of a struct probe. */
#include "rtqual/lifecycle.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rtqual/log.h"

void run_hold(struct run *r, bool dma)
{
	if (dma)
		rt_acquire_dma_latency(&r->dma_fd, &r->rt, &r->warn);
	if (r->rt.policy != RT_OTHER)
		rt_acquire_rttime_limit(RUN_RTTIME_SOFT_US, RUN_RTTIME_HARD_US, &r->warn);
}

int run_bound_busy(struct run *r, int64_t busy_ns, uint64_t soft_margin_us, uint64_t hard_margin_us,
		   const char *what)
{
	rt_xcpu_catch();
	r->rttime_soft_us = (uint64_t)(busy_ns / NS_PER_US) + soft_margin_us;
	r->rttime_hard_us = (uint64_t)(busy_ns / NS_PER_US) + hard_margin_us;
	int e = rt_set_rttime_limit(r->rttime_soft_us, r->rttime_hard_us);
	return e ? log_error("cannot set RLIMIT_RTTIME (%s): %s", what, strerror(e)) : 0;
}

void run_params_busy(struct jw *w, const struct run *r)
{
	jw_u64(w, "rlimit_rttime_soft_us", r->rttime_soft_us);
	jw_u64(w, "rlimit_rttime_hard_us", r->rttime_hard_us);
	jw_i64(w, "alarm_s", r->watchdog_s);
}

unsigned run_watchdog_s(u128 run_ns, uint64_t extra_s, unsigned cap_s)
{
	u128 s = u128_add_u64(u128_divmod_u64(run_ns, NS_PER_S, NULL), 1 + RUN_WATCHDOG_MARGIN_S);
	s = u128_add_u64(s, extra_s);
	return u128_cmp(s, u128_of(cap_s)) < 0 ? (unsigned)s.lo : cap_s;
}

int run_one_of(struct run *r, const char *a, const char *b, bool *b_given)
{
	*b_given = run_given(r, b);
	if (*b_given && run_given(r, a))
		return log_error("--%s and --%s exclude each other: give one", a, b);
	return 0;
}

int run_pick_cpu(struct run *r, int64_t *cpu, bool last, struct cpulist *usable)
{
	char err[512];
	struct cpulist one = {.n = 1};
	if (cpulist_usable(usable, err, sizeof(err)))
		return log_error("%s", err);
	if (!run_given(r, "cpu"))
		*cpu = usable->cpu[last ? usable->n - 1 : 0];
	one.cpu[0] = (int)*cpu;
	if (cpulist_check(&one, err, sizeof(err)))
		return log_error("--cpu: %s", err);
	return 0;
}

bool run_given(const struct run *r, const char *name)
{
	return opts_given(r->p->opts, r->p->nopts, r->given, name);
}

void run_params_sched(struct jw *w, int policy, int64_t priority)
{
	jw_str(w, "policy", rt_policy_names_all[policy]);
	jw_i64(w, "priority", priority);
}

void run_params_length(struct jw *w, int64_t duration_ns, int64_t loops, int64_t warmup)
{
	jw_i64(w, "duration_ns", duration_ns);
	jw_i64(w, "loops", loops);
	jw_i64(w, "warmup", warmup);
}

void run_params_flags(struct jw *w, bool no_dma_latency, bool allow_degraded)
{
	jw_bool(w, "dma_latency", !no_dma_latency);
	jw_bool(w, "allow_degraded", allow_degraded);
}

void *run_slot_done(struct run *r, struct cpu_state *cs, uint64_t wakeups)
{
	sink_slot_end(cs, wakeups);
	atomic_store(&r->done, true);
	return NULL;
}

int run_thread(struct run *r, pthread_t *tid, bool *started, int priority, int cpu, void *(*fn)(void *), void *arg,
	       const char *what)
{
	int e = rt_thread_start(tid, r->rt.policy, priority, cpu, RUN_THREAD_STACK_BYTES, fn, arg);
	if (e) {
		snprintf(r->err, sizeof(r->err), "cannot start %s on CPU %d: %s", what, cpu, strerror(e));
		return -1;
	}
	*started = true;
	return 0;
}

bool run_stalled(struct run *r, uint64_t progress, int64_t now_ns, int64_t limit_ns)
{
	if (!r->seen_at_ns || progress != r->seen_progress) {
		r->seen_progress = progress;
		r->seen_at_ns = now_ns;
		return false;
	}
	return now_ns - r->seen_at_ns > limit_ns;
}

int run_plan_rate(int64_t rate_hz, bool have_loops, int64_t *duration_ns, int64_t loops, int64_t warmup,
		  int64_t *period_ns, uint64_t *total)
{
	char d1[32], d2[32];
	*period_ns = NS_PER_S / rate_hz;
	if (have_loops)
		*duration_ns = 0;
	else if (*duration_ns < *period_ns)
		return log_error("--duration (%s) is shorter than one period (%s at --rate %" PRId64
				 "): nothing would be measured",
				 duration_format(*duration_ns, d1, sizeof(d1)),
				 duration_format(*period_ns, d2, sizeof(d2)), rate_hz);
	*total = (uint64_t)warmup + (have_loops ? (uint64_t)loops : (uint64_t)(*duration_ns / *period_ns));
	return 0;
}

/* Start of the measurement, after the probe's own set-up: self-overhead, stop signals, the raw
 * file header, the JSON header, then the warnings kept until it. Returns 0, or 1 (logged) if
 * the JSON stream cannot be written. */
static int run_begin(struct run *r)
{
	struct overhead ov = {0, 0};
	if (!r->p->no_rt) {
		ov.clock_read_ns = measure_clock_read_ns(10000);
		ov.sample_update_ns = sink_measure_update_ns(100000);
	}
	rt_signals_install();
	int64_t start_mono = mono_now_ns(), start_real = real_now_ns();
	sink_raw_start(&r->sink, r->raw_interval_ns, start_mono, start_real);
	if (sink_header(&r->sink, r->p->name, r->a->argc, r->a->argv, r->p->params, r, &r->rt, &ov, start_mono,
			start_real) != 0)
		return log_error("--json-fd %d: write failed: %s", r->sink.fd, strerror(r->sink.write_errno));
	sink_warnings(&r->sink, &r->warn);
	return 0;
}

void *run_thread_done(struct run *r, _Atomic int *done, struct cpu_state *cs, uint64_t wakeups)
{
	sink_slot_end(cs, wakeups);
	if (atomic_fetch_add(done, 1) + 1 == r->sink.ncpu)
		atomic_store(&r->done, true); /* the last one */
	return NULL;
}

bool run_stopping(struct run *r)
{
	if (!rt_signals_caught() && !atomic_load(&r->sink.stop))
		return false;
	atomic_store(&r->sink.stop, true);
	return true;
}

/* Before the main thread's wait loop: drain every poll_ns, progress every --progress-ms from
 * now. Returns now. */
int64_t run_pace_start(struct run *r, int64_t poll_ns)
{
	r->pace_now_ns = mono_now_ns();
	r->pace_poll_ns = poll_ns;
	r->progress_ns = r->sink.progress_ms * NS_PER_MS;
	r->next_progress_ns = r->pace_now_ns + r->progress_ns;
	return r->pace_now_ns;
}

/* One round of the main thread's wait: sleep to the next poll or progress time, whichever is
 * first (a signal ends the sleep early: the caller looks again), drain the rings, and emit
 * progress when due; after a stall the progress period restarts from now instead of catching
 * up in a burst. Returns the time it woke. */
int64_t run_pace(struct run *r)
{
	int64_t wake = r->pace_now_ns + r->pace_poll_ns;
	sleep_until_ns(wake < r->next_progress_ns ? wake : r->next_progress_ns);
	int64_t now = r->pace_now_ns = mono_now_ns();
	sink_poll(&r->sink);
	if (now >= r->next_progress_ns) {
		sink_progress(&r->sink);
		r->next_progress_ns += r->progress_ns;
		if (r->next_progress_ns < now)
			r->next_progress_ns = now + r->progress_ns;
	}
	return now;
}

/* The main thread while the probe's threads measure: until r->done, a stop (kick the
 * threads) or the probe's tick says so. */
static void run_measure(struct run *r)
{
	const struct probe *p = r->p;
	int64_t now = run_pace_start(r, SINK_POLL_NS);
	while (!atomic_load(&r->done)) {
		if (run_stopping(r)) {
			if (p->kick)
				p->kick(r);
			break;
		}
		if (p->tick && p->tick(r, now))
			break;
		now = run_pace(r);
	}
}

bool run_end_early(struct run *r, int *rc)
{
	int sig = rt_signals_caught();
	if (r->start_failed)
		*rc = sink_finish(&r->sink, 1, "error", r->err);
	else if (sig & RT_SIG_WATCHDOG)
		*rc = sink_finish(&r->sink, 1, "error", "watchdog");
	else if (sig & RT_SIG_STOP)
		*rc = sink_finish(&r->sink, 4, "interrupted", "stopped by signal");
	else
		return false;
	if (r->start_failed)
		log_error("%s", r->err);
	return true;
}

int run_finish(struct run *r, const char *stalled, const char *fail)
{
	int sig = rt_signals_caught(), rc;
	if (r->start_failed)
		rc = sink_finish(&r->sink, 1, "error", r->err);
	else if (sig & RT_SIG_WATCHDOG)
		rc = sink_finish(&r->sink, 1, "error", "watchdog");
	else if (stalled)
		rc = sink_finish(&r->sink, 1, "error", stalled);
	else if (sig & RT_SIG_STOP)
		rc = sink_finish(&r->sink, 4, "interrupted", "stopped by signal");
	else if (fail)
		rc = sink_finish(&r->sink, 1, "error", fail);
	else
		rc = sink_finish(&r->sink, -1, NULL, NULL);
	if (r->start_failed)
		log_error("%s", r->err);
	else if (stalled && !sig)
		log_error("%s", stalled);
	else if (fail && !(sig & (RT_SIG_WATCHDOG | RT_SIG_STOP)))
		log_error("%s", fail);
	return rc;
}

int run_end(struct run *r)
{
	return run_finish(r, NULL, NULL);
}

/* From the header to the end record: watchdog, start, measure, stop, end. */
static int run_measurement(struct run *r)
{
	const struct probe *p = r->p;
	int rc = run_begin(r);
	if (rc)
		return rc;
	if (r->watchdog_s)
		rt_watchdog_arm(r->watchdog_s);
	if (p->start && p->start(r) != 0) {
		r->start_failed = true;
		atomic_store(&r->sink.stop, true);
		if (p->kick)
			p->kick(r);
	} else if (p->measure) {
		p->measure(r);
	} else {
		run_measure(r);
	}
	if (p->stop)
		p->stop(r);
	alarm(0);
	return p->end ? p->end(r) : run_end(r);
}

/* Options to the end record; cleanup is the caller's. */
static int run_life(struct run *r)
{
	const struct probe *p = r->p;
	const struct probe_args *a = r->a;
	int rc;
	if (opts_parse(p->opts, p->nopts, r, a->opt_argc, a->opt_argv, &r->given, r->err, sizeof(r->err)))
		return log_error("%s", r->err);
	r->err[0] = '\0';
	for (int i = 0; p->exclusive && p->exclusive[i]; i += 2)
		if (run_given(r, p->exclusive[i]) && run_given(r, p->exclusive[i + 1]))
			return log_error("--%s and --%s exclude each other: give one", p->exclusive[i],
					 p->exclusive[i + 1]);
	if ((rc = p->validate(r)) || (p->privileges && (rc = p->privileges(r))) || a->check)
		return rc;
	r->prepared = true;
	if ((rc = p->prepare(r)))
		return rc;
	return run_measurement(r);
}

int run_probe(const struct probe *p, const struct probe_args *a)
{
	struct run *r = calloc(1, p->state_bytes);
	if (!r)
		return log_error("out of memory");
	r->p = p;
	r->a = a;
	r->dma_fd = r->sink.raw_fd = -1;
	if (p->no_rt)
		r->rt.policy = RT_OTHER;
	int rc = run_life(r);
	if (p->cleanup)
		p->cleanup(r);
	if (r->dma_fd >= 0)
		close(r->dma_fd);
	sink_free(&r->sink);
	free(r);
	return rc;
}
