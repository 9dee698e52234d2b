/* Sample sink shared by all latency probes: per-CPU histogram and live
 * counters (written by the measuring thread), rings to the main thread, and
 * the emitters for header/progress/event/hist/summary/end and the raw file. */
#ifndef RTQUAL_SINK_H
#define RTQUAL_SINK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "rtqual/emit.h"
#include "rtqual/hist.h"
#include "rtqual/log.h"
#include "rtqual/ring.h"
#include "rtqual/rtenv.h"
#include "rtqual/timens.h"

#define SCHEMA_VERSION 1
#define SINK_EVENT_RING 1024      /* threshold events per CPU in flight */
#define SINK_RAW_RING (1u << 16)  /* raw samples per CPU in flight (1 MiB) */
#define RAW_HEADER_BYTES 64
#define RAW_RECORD_BYTES 16
#define SINK_POLL_NS (50 * NS_PER_MS) /* main thread drains the rings this often */

struct thr_event {
	int64_t latency_ns, mono_ns, real_ns;
	int32_t cpu, pad;
};

struct raw_rec {
	int64_t time_ns;
	uint32_t latency_ns;
	uint16_t cpu, skipped;
};

/* One measured CPU. Atomics are written (relaxed) by the measuring thread
 * and read by the main thread for progress; hist is read only after join. */
struct cpu_state {
	struct spsc ev;  /* struct thr_event */
	struct spsc raw; /* struct raw_rec, if raw_on */
	_Alignas(64) _Atomic uint64_t count, overruns, over_threshold, ev_lost, raw_dropped;
	_Atomic int64_t min_ns, max_ns, window_max_ns;
	_Atomic bool raw_active;
	struct hist *hist;
	int64_t threshold_ns;
	int cpu;
	bool raw_on;
	uint64_t *delta_prev; /* main thread, --hist-delta: counts at the last hist_delta record */
	uint64_t wakeups;    /* owner thread, read after join */
	int64_t cpu_time_ns; /* owner thread, read after join */
};

struct overhead {
	int64_t clock_read_ns, sample_update_ns;
};

struct sink {
	int fd;
	struct jw jw;
	int write_errno; /* first failure writing JSON lines (0: none) */
	int ncpu;
	struct cpu_state *cs;
	int64_t threshold_ns;
	uint64_t max_events; /* threshold events per second, all CPUs */
	int64_t rl_start_ns;
	uint64_t rl_emitted, rl_suppressed;
	_Atomic bool stop; /* measuring threads end at their next wake-up */
	int64_t start_mono_ns;
	const char *raw_path;
	int raw_fd;
	uint64_t raw_max_bytes, raw_bytes, raw_samples, raw_dropped;
	bool raw_truncated;
	unsigned char *raw_buf;
	size_t raw_buf_len;
	/* optional: probe-specific OPTIONAL summary keys, called inside each
	 * summary cpus[] object (slot = index) and once at the top level (slot -1) */
	void (*summary_extra)(struct jw *w, int slot, const void *ctx);
	const void *summary_ctx;
	int64_t progress_ms; /* period of progress records (--progress-ms) */
	bool hist_delta;     /* --hist-delta: a hist_delta record per slot after each progress record */
};

typedef void (*sink_params_fn)(struct jw *w, const void *ctx);

/* The output options of every probe: a `struct sink_out out` in its configuration, its own
 * "threshold" row (the default and meaning are the probe's) and the rows SINK_OUT_OPTS(F, ...) in
 * its option table (F(x): offsetof the configuration's x); checked by sink_out_validate, printed
 * by sink_out_params, used by sink_init. */
struct sink_out {
	int64_t threshold_ns, max_events, raw_max_bytes, json_fd, progress_ms;
	const char *raw;
	bool hist_delta;
};

#define SINK_OUT_OPTS(F, progress_default)                                                                \
	{"max-events", OPT_INT, F(out.max_events), 0, 1000000, "100", NULL,                                \
	 "threshold events per second, all slots; the rest counted as suppressed"},                        \
	{"raw", OPT_PATH, F(out.raw), 0, 0, NULL, NULL, "keep every sample in FILE (protocol.md raw format)"}, \
	{"raw-max-bytes", OPT_INT, F(out.raw_max_bytes), 4096, 1LL << 40, "268435456", NULL,               \
	 "cap of the raw file; capture stops (flagged) at the cap"},                                       \
	{"json-fd", OPT_INT, F(out.json_fd), 1, 65535, "1", NULL, "fd for JSON Lines"},                     \
	{"progress-ms", OPT_INT, F(out.progress_ms), 50, 60000, progress_default, NULL,                    \
	 "period of progress records, ms"},                                                                \
	{"hist-delta", OPT_FLAG, F(out.hist_delta), 0, 0, NULL, NULL,                                      \
	 "after each progress record, one hist_delta record per slot: the buckets filled since the last"}

/* --json-fd is open; with `check`, --raw would be writable (creates nothing). log_error's rc. */
int sink_out_validate(const struct sink_out *o, bool check);
/* params keys threshold_ns, max_events, raw, raw_max_bytes, progress_ms, hist_delta */
void sink_out_params(struct jw *w, const struct sink_out *o);
/* Allocate and pre-touch the state of `n` slots (cpus: each slot's CPU) and create the raw file
 * if asked, so a bad path fails before measuring. */
int sink_init(struct sink *s, const struct sink_out *o, const int *cpus, int n, char *err, size_t errlen);
void sink_free(struct sink *s);
/* A histogram's statistics (a slot's, a stage's, an edge's): count, min_ns, p50_ns, mean_ns,
 * p99_ns, p999_ns, p9999_ns, max_ns, stddev_ns, out_of_range, inside the caller's object. */
void sink_hist_keys(struct jw *w, const struct hist *h);
int sink_raw_start(struct sink *s, int64_t interval_ns, int64_t start_mono_ns, int64_t start_real_ns);
int sink_header(struct sink *s, const char *probe, int argc, char **argv, sink_params_fn params,
		const void *ctx, const struct rt_info *rt, const struct overhead *ov,
		int64_t start_mono_ns, int64_t start_real_ns);
void sink_warning(struct sink *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sink_warnings(struct sink *s, const struct warnings *w);
void sink_poll(struct sink *s);
void sink_progress(struct sink *s);
int sink_finish(struct sink *s, int status, const char *reason, const char *message);
int64_t sink_measure_update_ns(int iterations);

/* A measuring thread's last word on its slot (after its loop): its wake-ups and CPU time. */
static inline void sink_slot_end(struct cpu_state *cs, uint64_t wakeups)
{
	cs->wakeups = wakeups;
	cs->cpu_time_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* Hot path: account one wake-up of `cs` (latency, wake-up time, periods it
 * skipped). Only histogram/counter updates and ring pushes; returns true if
 * the sample is above the threshold (caller may mark the trace). */
static inline bool sink_sample(struct cpu_state *cs, int64_t lat_ns, int64_t mono_ns, uint64_t skipped)
{
	const memory_order rx = memory_order_relaxed;
	bool over = lat_ns > cs->threshold_ns;

	if (skipped)
		atomic_store_explicit(&cs->overruns, atomic_load_explicit(&cs->overruns, rx) + skipped, rx);
	if (hist_record(cs->hist, lat_ns)) {
		atomic_store_explicit(&cs->count, cs->hist->count, rx);
		atomic_store_explicit(&cs->min_ns, cs->hist->min_ns, rx);
		atomic_store_explicit(&cs->max_ns, cs->hist->max_ns, rx);
		int64_t wm = atomic_load_explicit(&cs->window_max_ns, rx);
		while (lat_ns > wm && !atomic_compare_exchange_weak_explicit(&cs->window_max_ns, &wm, lat_ns, rx, rx))
			;
		if (over)
			atomic_store_explicit(&cs->over_threshold,
					      atomic_load_explicit(&cs->over_threshold, rx) + 1, rx);
	}
	if (over) {
		struct thr_event e = {lat_ns, mono_ns, real_now_ns(), cs->cpu, 0};
		if (!spsc_push(&cs->ev, &e))
			atomic_fetch_add_explicit(&cs->ev_lost, 1, rx);
	}
	if (cs->raw_on && atomic_load_explicit(&cs->raw_active, rx)) {
		struct raw_rec r = {
			.time_ns = mono_ns,
			.latency_ns = lat_ns < 0 ? 0 : lat_ns > (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)lat_ns,
			.cpu = (uint16_t)cs->cpu,
			.skipped = skipped > UINT16_MAX ? UINT16_MAX : (uint16_t)skipped,
		};
		if (!spsc_push(&cs->raw, &r))
			atomic_fetch_add_explicit(&cs->raw_dropped, 1, rx);
	}
	return over;
}

#endif
