/* Stimulus -> response harness (stimresp.h): the periodic loop, one request
 * in flight, its accounting, and the probe's life from options to the end
 * record, around a transport's send/receive hooks. */
#include "rtqual/stimresp.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "rtqual/log.h"
#include "rtqual/rtenv.h"

#define THREAD_STACK_BYTES (256 * 1024)
#define WATCHDOG_MARGIN_S 10
#define RTTIME_SOFT_US 200000
#define RTTIME_HARD_US 400000
#define START_DELAY_NS (50 * NS_PER_MS)
#define POLL_SLICE_MS 100 /* the stop flag is seen at least this often while waiting */

/* Wait for the answer of the request in flight: SR_ANSWER or SR_MISMATCH with
 * *t_answer, or SR_FAIL (timed out: h->fail set; or stopped). */
static enum stimresp_rx wait_answer(struct stimresp *h, int64_t *t_answer)
{
	int64_t give_up = h->cfg.timeout_ns + mono_now_ns();
	for (;;) {
		int64_t left = give_up - mono_now_ns();
		if (left <= 0) {
			char d[32];
			h->timed_out = true;
			snprintf(h->fail, sizeof(h->fail), "%s within --timeout %s (%s %" PRIu64 " of %" PRIu64 ")",
				 h->no_answer, duration_format(h->cfg.timeout_ns, d, sizeof(d)), h->ops->request, h->sent,
				 h->total);
			return SR_FAIL;
		}
		if (atomic_load_explicit(&h->sink.stop, memory_order_relaxed))
			return SR_FAIL;
		struct pollfd p = {.fd = h->answer_fd, .events = POLLIN};
		int ms = left > POLL_SLICE_MS * NS_PER_MS ? POLL_SLICE_MS : (int)((left + NS_PER_MS - 1) / NS_PER_MS);
		int r = poll(&p, 1, ms);
		if (r < 0 && errno != EINTR) {
			snprintf(h->fail, sizeof(h->fail), "poll: %s", strerror(errno));
			return SR_FAIL;
		}
		if (r > 0) {
			enum stimresp_rx rx = h->ops->receive(h, t_answer);
			if (rx != SR_MORE)
				return rx;
		}
	}
}

static void *stimresp_thread(void *arg)
{
	struct stimresp *h = arg;
	const struct stimresp_ops *ops = h->ops;
	struct cpu_state *cs = &h->sink.cs[0];
	uint64_t wakeups = 0;
	rt_prefault_stack();
	prctl(PR_SET_TIMERSLACK, 1UL);
	bool ready = !ops->thread_init || ops->thread_init(h) == 0;
	for (uint64_t i = 0; ready && i < h->total && !atomic_load_explicit(&h->sink.stop, memory_order_relaxed); i++) {
		int64_t dl = h->first_deadline_ns + (int64_t)i * h->period_ns;
		if (sleep_until_ns(dl) != 0 && atomic_load(&h->sink.stop))
			break;
		wakeups++;
		int64_t t_send = 0, t_answer = 0;
		if (ops->send(h, i, &t_send))
			break;
		h->sent++;
		enum stimresp_rx rx = wait_answer(h, &t_answer);
		if (rx == SR_FAIL)
			break;
		h->answered++;
		if (rx == SR_MISMATCH) { /* not the answer to this request: the two sides are out of step */
			h->mismatched++;
			continue;
		}
		bool late = t_answer > dl + h->period_ns; /* answered after the next deadline */
		if (late)
			h->late++;
		if (i < (uint64_t)h->cfg.warmup) {
			h->warm++;
			continue;
		}
		if (ops->measured)
			ops->measured(h, t_send, t_answer);
		sink_sample(cs, t_answer - t_send, t_answer, late ? 1 : 0);
	}
	cs->wakeups = wakeups;
	cs->cpu_time_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	atomic_store(&h->done, true);
	return NULL;
}

void stimresp_params(struct jw *w, const struct stimresp *h, const char *planned_key)
{
	const struct stimresp_cfg *c = &h->cfg;
	jw_i64(w, "rate_hz", c->rate_hz);
	jw_i64(w, "period_ns", h->period_ns);
	jw_i64(w, "cpu", c->cpu);
	jw_str(w, "policy", rt_policy_names[c->policy]);
	jw_i64(w, "priority", c->priority);
	jw_i64(w, "duration_ns", c->duration_ns);
	jw_i64(w, "loops", c->loops);
	jw_i64(w, "warmup", c->warmup);
	jw_u64(w, planned_key, h->total);
	jw_i64(w, "timeout_ns", c->timeout_ns);
	jw_bool(w, "dma_latency", !c->no_dma_latency);
	jw_bool(w, "allow_degraded", c->allow_degraded);
	sink_out_params(w, &c->out);
}

void stimresp_counts(struct jw *w, const struct stimresp *h)
{
	jw_u64(w, "planned", h->total);
	jw_u64(w, "sent", h->sent);
	jw_u64(w, "answered", h->answered);
	jw_u64(w, "warmup", h->warm);
	jw_u64(w, "unanswered", h->sent - h->answered);
	jw_u64(w, "late", h->late);
}

/* Options: the common ones here, the transport's through ops->validate. */
static int stimresp_validate(struct stimresp *h)
{
	const struct stimresp_ops *ops = h->ops;
	struct stimresp_cfg *c = &h->cfg;
	char err[512], d1[32], d2[32];
	int rc;
	bool have_loops = opts_given(ops->opts, ops->nopts, h->given, "loops");
	if (have_loops && opts_given(ops->opts, ops->nopts, h->given, "duration"))
		return log_error("--duration and --loops exclude each other: give one");
	if ((rc = ops->validate(h)))
		return rc;
	h->period_ns = NS_PER_S / c->rate_hz;
	if (have_loops)
		c->duration_ns = 0;
	else if (c->duration_ns < h->period_ns)
		return log_error("--duration (%s) is shorter than one period (%s at --rate %" PRId64
				 "): nothing would be measured",
				 duration_format(c->duration_ns, d1, sizeof(d1)),
				 duration_format(h->period_ns, d2, sizeof(d2)), c->rate_hz);
	h->total = (uint64_t)c->warmup + (have_loops ? (uint64_t)c->loops : (uint64_t)(c->duration_ns / h->period_ns));
	struct cpulist usable, one;
	if (cpulist_usable(&usable, err, sizeof(err)))
		return log_error("%s", err);
	if (!opts_given(ops->opts, ops->nopts, h->given, "cpu"))
		c->cpu = usable.cpu[0];
	one.n = 1;
	one.cpu[0] = (int)c->cpu;
	if (cpulist_check(&one, err, sizeof(err)))
		return log_error("--cpu: %s", err);
	return sink_out_validate(&c->out, true);
}

/* Measure from the header to the end record; returns the exit code. */
static int stimresp_measure(struct stimresp *h, const struct probe_args *a)
{
	const struct stimresp_ops *ops = h->ops;
	const struct stimresp_cfg *c = &h->cfg;
	int cpu = (int)c->cpu, rc;
	char err[512] = "";
	if (ops->open(h, err, sizeof(err)) ||
	    sink_init(&h->sink, &c->out, &cpu, 1, err, sizeof(err)))
		return log_error("%s", err[0] ? err : "out of memory");
	h->sink.summary_extra = ops->summary_extra;
	h->sink.summary_ctx = h;
	if (!c->no_dma_latency)
		rt_acquire_dma_latency(&h->dma_fd, &h->rt, &h->warn);
	if (h->rt.policy != RT_OTHER)
		rt_acquire_rttime_limit(RTTIME_SOFT_US, RTTIME_HARD_US, &h->warn);
	if ((rc = sink_begin(&h->sink, ops->name, a, ops->params, h, &h->rt, &h->warn, h->period_ns)))
		return rc;

	u128 wd_s = ((u128)h->total * (uint64_t)h->period_ns) / NS_PER_S + 1 + WATCHDOG_MARGIN_S +
		    (uint64_t)(c->timeout_ns / NS_PER_S);
	alarm(wd_s < 0x7fffffff ? (unsigned)wd_s : 0x7fffffff);
	h->first_deadline_ns = mono_now_ns() + START_DELAY_NS;
	int e = rt_thread_start(&h->tid, h->rt.policy, h->rt.priority, cpu, THREAD_STACK_BYTES, stimresp_thread, h);
	bool start_failed = e != 0;
	if (start_failed) {
		snprintf(err, sizeof(err), "cannot start the %s thread on CPU %d: %s", ops->thread, cpu, strerror(e));
	} else {
		sink_pace_start(&h->sink, SINK_POLL_NS, c->out.progress_ms);
		while (!atomic_load(&h->done) && !sink_stopping(&h->sink))
			sink_pace(&h->sink);
		pthread_join(h->tid, NULL);
	}
	alarm(0);
	if (h->mismatched)
		sink_warning(&h->sink, "%" PRIu64 " %s did not carry the %s they answered", h->mismatched, ops->answers,
			     ops->request);
	if (h->late)
		sink_warning(&h->sink, "%" PRIu64 " %s came after the next %s was due (the next %s was sent late)",
			     h->late, ops->answers, ops->request, ops->request);
	if (sink_end_early(&h->sink, start_failed ? err : NULL, &rc))
		return rc;
	if (h->timed_out && ops->timeout_incomplete) {
		rc = sink_finish(&h->sink, 4, "incomplete", h->fail);
		log_error("%s", h->fail);
	} else if (h->fail[0]) {
		rc = sink_finish(&h->sink, 1, "error", h->fail);
		log_error("%s", h->fail);
	} else if (h->mismatched) {
		snprintf(err, sizeof(err), "%s out of step with the %s (see summary)", ops->answers, ops->requests);
		rc = sink_finish(&h->sink, 4, "incomplete", err);
	} else {
		rc = sink_finish(&h->sink, -1, NULL, NULL);
	}
	return rc;
}

static int stimresp_run(struct stimresp *h, const struct probe_args *a)
{
	const struct stimresp_ops *ops = h->ops;
	char err[512];
	int rc;
	h->answer_fd = h->dma_fd = -1;
	h->sink.raw_fd = -1;
	if (opts_parse(ops->opts, ops->nopts, h, a->opt_argc, a->opt_argv, &h->given, err, sizeof(err)))
		return log_error("%s", err);
	if ((rc = stimresp_validate(h)) ||
	    (rc = rt_acquire(h->cfg.policy, (int)h->cfg.priority, h->cfg.allow_degraded, &h->rt, &h->warn)) || a->check)
		return rc;
	rc = stimresp_measure(h, a);
	ops->close(h);
	if (h->dma_fd >= 0)
		close(h->dma_fd);
	sink_free(&h->sink);
	return rc;
}

int stimresp_main(size_t state_bytes, const struct stimresp_ops *ops, const struct probe_args *a)
{
	struct stimresp *h = calloc(1, state_bytes);
	if (!h)
		return log_error("out of memory");
	h->ops = ops;
	int rc = stimresp_run(h, a);
	free(h);
	return rc;
}
