/* The kernel's stages of one UIO interrupt, their histograms and summary keys (uiostage.h). */
#include "rtqual/uiostage.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rtqual/rtenv.h"
#include "rtqual/sink.h"

const char *const uio_stage_names[UIO_STAGES] = {"hardirq",	 "irq_thread_woken", "irq_thread_running",
						  "reader_woken", "reader_running",   "read_returned"};

int uio_stages_open(struct uio_stages *s, int irq, bool want_trace)
{
	for (int k = 0; k < UIO_STAGES; k++) {
		if (!(s->stage[k] = malloc(sizeof(struct hist))))
			return -1;
		hist_reset(s->stage[k]);
		rt_pretouch(s->stage[k], sizeof(struct hist));
	}
	if (!want_trace) {
		snprintf(s->trace_note, sizeof(s->trace_note), "no stages: --stages off");
		return 0;
	}
	char why[256];
	s->tr = malloc(sizeof(*s->tr));
	if (s->tr && irqtrace_open(s->tr, irq, s->ith.pid, why, sizeof(why)) == 0)
		return 0;
	if (s->tr)
		irqtrace_close(s->tr);
	else
		snprintf(why, sizeof(why), "out of memory");
	free(s->tr);
	s->tr = NULL;
	snprintf(s->trace_note, sizeof(s->trace_note), "no stages: %s", why);
	return 1;
}

void uio_stages_reader(struct uio_stages *s, pid_t reader)
{
	if (!s->tr || irqtrace_reader(s->tr, reader) == 0)
		return;
	snprintf(s->trace_note, sizeof(s->trace_note), "tracefs: cannot trace the reader: %s", strerror(errno));
	irqtrace_close(s->tr);
	free(s->tr);
	s->tr = NULL;
}

int uio_stages_points(struct uio_stages *s, int64_t from, int64_t t1, int64_t p[IRQ_POINTS])
{
	for (int k = 0; k < IRQ_POINTS; k++)
		p[k] = -1;
	int first_missing = s->tr ? irqtrace_event(s->tr, from, t1, p) : IRQ_ENTRY;
	if (first_missing == READER_WOKEN) { /* the reader had not slept yet: its two stages are empty */
		p[READER_WOKEN] = p[READER_RUNNING] = p[s->ith.pid ? IRQ_THREAD_RUNNING : IRQ_ENTRY];
		first_missing = IRQ_POINTS;
		s->reader_awake++;
	}
	return first_missing;
}

void uio_stages_record(struct uio_stages *s, const int64_t p[IRQ_POINTS], int64_t t0, int64_t t1)
{
	int64_t at = t0;
	int64_t ends[UIO_STAGES] = {p[IRQ_ENTRY], p[IRQ_THREAD_WOKEN], p[IRQ_THREAD_RUNNING], p[READER_WOKEN],
				    p[READER_RUNNING], t1};
	for (int k = s->active ? ST_HARDIRQ : ST_IRQ_THREAD_WOKEN; k < UIO_STAGES; k++) {
		if (ends[k] < 0)
			continue; /* no IRQ thread */
		int64_t end = ends[k] < at ? at : ends[k] > t1 ? t1 : ends[k];
		hist_record(s->stage[k], end - at);
		if (end - at > s->threshold_ns)
			s->stage_over[k]++;
		s->staged_sum_ns += end - at;
		at = end;
	}
	s->staged_total_ns += t1 - t0;
	s->staged++;
}

bool uio_stages_later(struct uio_stages *s, int64_t t0, int64_t t1)
{
	int64_t p[IRQ_POINTS];
	int first_missing = uio_stages_points(s, t0, t1, p);
	if (first_missing == IRQ_POINTS) {
		uio_stages_record(s, p, t0, t1);
		return true;
	}
	if (s->tr)
		s->point_missing[first_missing]++;
	return false;
}

static const char *policy_name(int policy)
{
	switch (policy & ~SCHED_RESET_ON_FORK) {
	case SCHED_FIFO: return "fifo";
	case SCHED_RR: return "rr";
	default: return "other";
	}
}

void uio_stages_irq_json(struct jw *w, const struct uio_stages *s, int irq, const char *name)
{
	struct irq_thread now;
	irq_thread_find(irq, name, &now); /* its CPU now, after the run */
	jw_obj_begin(w, "irq");
	jw_i64(w, "number", irq);
	jw_str(w, "thread", s->ith.pid ? s->ith.comm : NULL);
	if (s->ith.pid) {
		jw_i64(w, "pid", s->ith.pid);
		jw_str(w, "policy", policy_name(s->ith.policy));
		jw_i64(w, "priority", s->ith.priority);
		jw_i64(w, "cpu", now.pid == s->ith.pid ? now.cpu : s->ith.cpu);
	} else {
		jw_null(w, "policy");
		jw_null(w, "priority");
		jw_null(w, "cpu");
		jw_str(w, "note", "no IRQ thread: the handler runs in the hard interrupt (a kernel without "
				  "threadirqs); no IRQ-thread stages");
	}
	jw_obj_end(w);
	jw_str(w, "stages_note", s->tr ? NULL : s->trace_note);
	if (s->tr) { /* samples without every stage: the first point their trace lacked */
		static const char *const point_names[] = {"irq_handler_entry", "irq_thread_woken", "irq_thread_running",
							  "reader_woken", "reader_running"};
		jw_obj_begin(w, "stages_missing");
		for (int k = 0; k < IRQ_POINTS; k++)
			jw_u64(w, point_names[k], s->point_missing[k]);
		jw_obj_end(w);
	}
}

void uio_stages_rows(struct jw *w, const struct uio_stages *s)
{
	for (int k = s->active ? ST_HARDIRQ : ST_IRQ_THREAD_WOKEN; k < UIO_STAGES; k++) {
		if (!s->ith.pid && (k == ST_IRQ_THREAD_WOKEN || k == ST_IRQ_THREAD_RUNNING))
			continue;
		jw_obj_begin(w, uio_stage_names[k]);
		sink_hist_keys(w, s->stage[k]);
		jw_u64(w, "over_threshold", s->stage_over[k]);
		jw_obj_end(w);
	}
}

void uio_stages_close(struct uio_stages *s)
{
	if (s->tr) {
		irqtrace_close(s->tr);
		free(s->tr);
		s->tr = NULL;
	}
	for (int k = 0; k < UIO_STAGES; k++) {
		free(s->stage[k]);
		s->stage[k] = NULL;
	}
}
