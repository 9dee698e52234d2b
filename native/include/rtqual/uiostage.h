/* The kernel's stages of one UIO interrupt's way to a reader (hard IRQ -> IRQ thread woken -> running ->
 * reader woken -> running -> read returned), their histograms and the interrupt accounting keys of the
 * summary: shared by the event probe's uio source and the IOC probe's uio input (docs/interrupts.md). */
#ifndef RTQUAL_UIOSTAGE_H
#define RTQUAL_UIOSTAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "rtqual/emit.h"
#include "rtqual/hist.h"
#include "rtqual/uio.h"

/* In timeline order: each ends at its point (uio.h), the last at the read's return. */
enum uio_stage { ST_HARDIRQ, ST_IRQ_THREAD_WOKEN, ST_IRQ_THREAD_RUNNING, ST_READER_WOKEN, ST_READER_RUNNING,
		 ST_READ_RETURNED, UIO_STAGES };
extern const char *const uio_stage_names[UIO_STAGES];

struct uio_stages {
	bool active;              /* t0 is our trigger write (the hardirq stage), else the kernel's IRQ entry */
	int64_t threshold_ns;     /* stages above it are counted */
	struct irq_thread ith;    /* the IRQ thread (pid 0: none) */
	struct irqtrace *tr;      /* NULL: no stages */
	char trace_note[320];     /* why there are no stages */
	struct hist *stage[UIO_STAGES];
	uint64_t stage_over[UIO_STAGES];
	uint64_t point_missing[IRQ_POINTS]; /* samples whose trace lacked that point first */
	int64_t staged_total_ns, staged_sum_ns; /* over the staged samples: their totals, their stages summed */
	uint64_t staged, reader_awake;
};

/* The histograms (0, or -1: out of memory); with want_trace the tracefs instance for irq (its IRQ thread:
 * s->ith), else trace_note says why not. Returns 1 when the trace was wanted and could not be had (note set). */
int uio_stages_open(struct uio_stages *s, int irq, bool want_trace);
/* The reader's events on (in the reader's thread, or for another process's reader by its tid); a failure
 * drops the trace with its note. */
void uio_stages_reader(struct uio_stages *s, pid_t reader);
/* The kernel's points of one interrupt read at t1 (from: where its trace may begin) into p; the first point
 * missing, a reader that had not slept yet counted awake (its two stages empty). */
int uio_stages_points(struct uio_stages *s, int64_t from, int64_t t1, int64_t p[IRQ_POINTS]);
/* One staged sample from t0 to t1: each boundary at least the one before, so the stages sum to t1 - t0. */
void uio_stages_record(struct uio_stages *s, const int64_t p[IRQ_POINTS], int64_t t0, int64_t t1);
/* An active sample's stages from the trace read now (just before the next trigger); true when staged. */
bool uio_stages_later(struct uio_stages *s, int64_t t0, int64_t t1);
/* The summary's irq {number, thread, policy, priority, cpu}, stages_note and stages_missing (top level). */
void uio_stages_irq_json(struct jw *w, const struct uio_stages *s, int irq, const char *name);
/* The stage rows (inside the caller's "stages" object), the IRQ thread's two only where there is one. */
void uio_stages_rows(struct jw *w, const struct uio_stages *s);
/* The trace closed, the histograms freed. */
void uio_stages_close(struct uio_stages *s);

#endif
