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

#define START_DELAY_NS (50 * NS_PER_MS)
#define POLL_SLICE_MS 100 /* the stop flag is seen at least this often while waiting */

/* Wait for the answer of the request in flight: SR_ANSWER or SR_MISMATCH with
 * *t_answer, or SR_FAIL (timed out: h->fail set; stopped; or end_ns, a passive run's end, reached). */
static enum stimresp_rx wait_answer(struct stimresp *h, int64_t *t_answer, int64_t end_ns)
{
	int64_t give_up = h->cfg.timeout_ns + mono_now_ns();
	bool ends = end_ns && end_ns < give_up;
	if (ends)
		give_up = end_ns;
	for (;;) {
		int64_t left = give_up - mono_now_ns();
		if (left <= 0 && ends)
			return SR_FAIL; /* the run's end, no timeout */
		if (left <= 0) {
			char d[32];
			h->timed_out = true;
			snprintf(h->fail, sizeof(h->fail), "%s within --timeout %s (%s %" PRIu64 " of %" PRIu64 ")",
				 h->no_answer, duration_format(h->cfg.timeout_ns, d, sizeof(d)), h->ops->request, h->sent,
				 h->total);
			return SR_FAIL;
		}
		if (atomic_load_explicit(&h->run.sink.stop, memory_order_relaxed))
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
	struct cpu_state *cs = &h->run.sink.cs[0];
	uint64_t wakeups = 0;
	rt_prefault_stack();
	prctl(PR_SET_TIMERSLACK, 1UL);
	bool ready = !ops->thread_init || ops->thread_init(h) == 0;
	_Atomic bool *stop = &h->run.sink.stop;
	const uint64_t warmup = (uint64_t)h->cfg.warmup;
	const bool timed = h->passive && !run_given(&h->run, "loops"); /* --duration from the warm-up's end */
	int64_t end_ns = timed && warmup == 0 ? mono_now_ns() + h->cfg.duration_ns : 0;
	for (uint64_t i = 0; ready && i < h->total && !atomic_load_explicit(stop, memory_order_relaxed); i++) {
		int64_t dl = h->first_deadline_ns + (int64_t)i * h->period_ns;
		if (h->passive ? end_ns && mono_now_ns() >= end_ns
			       : sleep_until_ns(dl) != 0 && atomic_load(&h->run.sink.stop))
			break;
		wakeups++;
		int64_t t_send = 0, t_answer = 0;
		if (ops->send(h, i, &t_send))
			break;
		h->sent++;
		enum stimresp_rx rx = wait_answer(h, &t_answer, end_ns);
		if (rx == SR_FAIL)
			break;
		h->answered++;
		if (timed && !end_ns && i + 1 >= warmup)
			end_ns = t_answer + h->cfg.duration_ns;
		if (rx == SR_MISMATCH) { /* not the answer to this request: the two sides are out of step */
			h->mismatched++;
			continue;
		}
		if (ops->answered && !ops->answered(h, &t_send, t_answer))
			continue;
		bool late = !h->passive && t_answer > dl + h->period_ns; /* answered after the next deadline */
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
	if (ready && ops->thread_end)
		ops->thread_end(h);
	return run_slot_done(&h->run, cs, wakeups);
}

void stimresp_params(struct jw *w, const struct stimresp *h, const char *planned_key)
{
	const struct stimresp_cfg *c = &h->cfg;
	jw_i64(w, "rate_hz", c->rate_hz);
	jw_i64(w, "period_ns", h->period_ns);
	jw_i64(w, "cpu", c->cpu);
	run_params_sched(w, c->policy, c->priority);
	run_params_length(w, c->duration_ns, c->loops, c->warmup);
	jw_u64(w, planned_key, h->total);
	jw_i64(w, "timeout_ns", c->timeout_ns);
	run_params_flags(w, c->no_dma_latency, c->allow_degraded);
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

int stimresp_echo_validate(struct stimresp *h)
{
	struct stimresp_echo *e = (struct stimresp_echo *)h;
	if (!e->put || !e->put[0])
		return log_error("--put PV is required (the PV the round trip writes)");
	if (!e->monitor || !e->monitor[0])
		e->monitor = e->put;
	snprintf(h->no_answer, sizeof(h->no_answer), "no echo on %s", e->monitor);
	return 0;
}

void stimresp_echo_params(struct jw *w, const struct stimresp_echo *e)
{
	jw_str(w, "put", e->put);
	jw_str(w, "monitor", e->monitor);
	stimresp_params(w, &e->h, "puts_planned");
}

void stimresp_echo_summary(struct jw *w, const struct stimresp_echo *e, uint64_t stray_events)
{
	jw_obj_begin(w, "puts");
	stimresp_counts(w, &e->h);
	jw_u64(w, "stray_events", stray_events);
	jw_obj_end(w);
}

/* Options: the common ones here, the transport's through ops->validate. */
int stimresp_validate(struct run *r)
{
	struct stimresp *h = (struct stimresp *)r;
	const struct stimresp_ops *ops = h->ops = r->p->family;
	struct stimresp_cfg *c = &h->cfg;
	int rc;
	if ((rc = ops->validate(h)))
		return rc;
	rc = run_plan_rate(c->rate_hz, run_given(r, "loops"), &c->duration_ns, c->loops, c->warmup, &h->period_ns,
			   &h->total);
	if (rc)
		return rc;
	struct cpulist usable;
	if ((rc = run_pick_cpu(r, &c->cpu, false, &usable)))
		return rc;
	return sink_out_validate(&c->out, true);
}

/* The harness thread's policy and priority, tried for real; memory locking. */
int stimresp_privileges(struct run *r)
{
	struct stimresp *h = (struct stimresp *)r;
	return rt_acquire(h->cfg.policy, (int)h->cfg.priority, h->cfg.allow_degraded, &r->rt, &r->warn);
}

/* The transport's fds, the sink (one slot), /dev/cpu_dma_latency, RLIMIT_RTTIME; the
 * watchdog: every request plus one --timeout and a margin. */
int stimresp_prepare(struct run *r)
{
	struct stimresp *h = (struct stimresp *)r;
	const struct stimresp_cfg *c = &h->cfg;
	int cpu = (int)c->cpu;
	h->answer_fd = -1;
	if (h->ops->open(h, r->err, sizeof(r->err)) || sink_init(&r->sink, &c->out, &cpu, 1, r->err, sizeof(r->err)))
		return log_error("%s", r->err[0] ? r->err : "out of memory");
	r->sink.summary_extra = h->ops->summary_extra;
	r->sink.summary_ctx = h;
	run_hold(r, !c->no_dma_latency);
	r->raw_interval_ns = h->period_ns;
	r->watchdog_s = run_watchdog_s(u128_mul_u64_u64(h->total, (uint64_t)h->period_ns),
				       (uint64_t)(c->timeout_ns / NS_PER_S), 0x7fffffff);
	if (h->passive) /* each request waited for at most --timeout */
		r->watchdog_s = run_watchdog_s(u128_mul_u64_u64(h->total, (uint64_t)c->timeout_ns), 0, 0x7fffffff);
	return 0;
}

/* The harness thread, its first request START_DELAY_NS from now. */
int stimresp_start(struct run *r)
{
	struct stimresp *h = (struct stimresp *)r;
	int cpu = (int)h->cfg.cpu;
	h->first_deadline_ns = mono_now_ns() + START_DELAY_NS;
	char what[64];
	snprintf(what, sizeof(what), "the %s thread", h->ops->thread);
	return run_thread(r, &h->tid, &h->started, r->rt.priority, cpu, stimresp_thread, h, what);
}

/* Join the harness thread. */
void stimresp_stop(struct run *r)
{
	struct stimresp *h = (struct stimresp *)r;
	if (h->started)
		pthread_join(h->tid, NULL);
}

/* Warnings for answers out of step or late, then the ending: cut short, the thread's failure
 * (a timeout is "incomplete" where the transport says so), mismatches, or the data's status. */
int stimresp_end(struct run *r)
{
	struct stimresp *h = (struct stimresp *)r;
	const struct stimresp_ops *ops = h->ops;
	char msg[512];
	int rc;
	if (h->mismatched)
		sink_warning(&r->sink, "%" PRIu64 " %s did not carry the %s they answered", h->mismatched, ops->answers,
			     ops->request);
	if (h->late)
		sink_warning(&r->sink, "%" PRIu64 " %s came after the next %s was due (the next %s was sent late)",
			     h->late, ops->answers, ops->request, ops->request);
	if (run_end_early(r, &rc))
		return rc;
	if (h->timed_out && (ops->timeout_incomplete || h->timeout_incomplete)) {
		rc = sink_finish(&r->sink, 4, "incomplete", h->fail);
		log_error("%s", h->fail);
	} else if (h->fail[0]) {
		rc = sink_finish(&r->sink, 1, "error", h->fail);
		log_error("%s", h->fail);
	} else if (h->mismatched) {
		snprintf(msg, sizeof(msg), "%s out of step with the %s (see summary)", ops->answers, ops->requests);
		rc = sink_finish(&r->sink, 4, "incomplete", msg);
	} else {
		rc = sink_finish(&r->sink, -1, NULL, NULL);
	}
	return rc;
}

/* The transport's fds (ops->close), once it was opened. */
void stimresp_cleanup(struct run *r)
{
	struct stimresp *h = (struct stimresp *)r;
	if (r->prepared)
		h->ops->close(h);
}
