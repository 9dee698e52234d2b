/* Sample sink: allocation, raw file writer and every JSON record but the
 * probe-specific header params. Runs in the main thread only, except
 * sink_sample() (sink.h) which runs in the measuring threads. */
#include "rtqual/sink.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "rtqual/log.h"

#define RAW_BUF_BYTES (64 * 1024)

#ifndef RTQUAL_VERSION
#define RTQUAL_VERSION "0.0.0"
#endif

/* Release everything sink_init acquired. */
void sink_free(struct sink *s)
{
	for (int i = 0; s->cs && i < s->ncpu; i++) {
		free(s->cs[i].hist);
		free(s->cs[i].delta_prev);
		spsc_free(&s->cs[i].ev);
		spsc_free(&s->cs[i].raw);
	}
	free(s->cs);
	free(s->raw_buf);
	if (s->raw_fd >= 0)
		close(s->raw_fd);
	jw_free(&s->jw);
	s->cs = NULL;
	s->raw_buf = NULL;
	s->raw_fd = -1;
}

/* --check: would --raw PATH be writable? Creates nothing. */
static int raw_check(const char *path, char *err, size_t errlen)
{
	struct stat st;
	char dir[4096];
	if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode)) {
			snprintf(err, errlen, "--raw: %s is a directory", path);
			return -1;
		}
		if (access(path, W_OK) != 0)
			goto fail;
		return 0;
	}
	snprintf(dir, sizeof(dir), "%s", path);
	if (access(dirname(dir), W_OK | X_OK) != 0)
		goto fail;
	return 0;
fail:
	snprintf(err, errlen, "--raw: cannot write %s: %s", path, strerror(errno));
	return -1;
}

/* Create/truncate the raw file now, so a bad path fails before measuring. */
static int raw_open(struct sink *s, const char *path, uint64_t max_bytes, char *err, size_t errlen)
{
	s->raw_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (s->raw_fd < 0) {
		snprintf(err, errlen, "--raw: cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	s->raw_path = path;
	s->raw_max_bytes = max_bytes;
	return 0;
}

int sink_init(struct sink *s, const struct sink_out *o, const int *cpus, int n, char *err, size_t errlen)
{
	bool raw = o->raw != NULL;
	memset(s, 0, sizeof(*s));
	s->fd = (int)o->json_fd;
	jw_init(&s->jw);
	s->threshold_ns = o->threshold_ns;
	s->max_events = (uint64_t)o->max_events;
	s->progress_ms = o->progress_ms;
	s->hist_delta = o->hist_delta;
	s->raw_fd = -1;
	atomic_init(&s->stop, false);
	s->ncpu = n;
	size_t bytes = ((size_t)(n ? n : 1) * sizeof(struct cpu_state) + 63) / 64 * 64;
	s->cs = aligned_alloc(64, bytes);
	if (!s->cs)
		goto oom;
	memset(s->cs, 0, bytes);
	for (int i = 0; i < n; i++) {
		struct cpu_state *c = &s->cs[i];
		c->cpu = cpus[i];
		c->threshold_ns = o->threshold_ns;
		c->raw_on = raw;
		atomic_init(&c->raw_active, raw);
		c->hist = malloc(sizeof(struct hist));
		if (!c->hist)
			goto oom;
		hist_reset(c->hist); /* writes every page */
		if (o->hist_delta && !(c->delta_prev = calloc(HIST_LEN, sizeof(uint64_t))))
			goto oom;
		if (spsc_init(&c->ev, SINK_EVENT_RING, sizeof(struct thr_event)))
			goto oom;
		if (raw && spsc_init(&c->raw, SINK_RAW_RING, sizeof(struct raw_rec)))
			goto oom;
	}
	if (raw && !(s->raw_buf = malloc(RAW_BUF_BYTES)))
		goto oom;
	return raw ? raw_open(s, o->raw, (uint64_t)o->raw_max_bytes, err, errlen) : 0;
oom:
	snprintf(err, errlen, "out of memory allocating histograms for %d CPUs", n);
	return -1;
}

int sink_out_validate(const struct sink_out *o, bool check)
{
	char err[512];
	if (fcntl((int)o->json_fd, F_GETFD) < 0)
		return log_error("--json-fd: fd %" PRId64 " is not open", o->json_fd);
	if (o->raw && check && raw_check(o->raw, err, sizeof(err)))
		return log_error("%s", err);
	return 0;
}

void sink_hist_keys(struct jw *w, const struct hist *h)
{
	struct hist_stats st;
	hist_get_stats(h, &st);
	jw_u64(w, "count", st.count);
	jw_i64(w, "min_ns", st.min_ns);
	jw_i64(w, "p50_ns", st.p50_ns);
	jw_i64(w, "mean_ns", st.mean_ns);
	jw_i64(w, "p99_ns", st.p99_ns);
	jw_i64(w, "p999_ns", st.p999_ns);
	jw_i64(w, "p9999_ns", st.p9999_ns);
	jw_i64(w, "max_ns", st.max_ns);
	jw_i64(w, "stddev_ns", st.stddev_ns);
	jw_u64(w, "out_of_range", st.out_of_range);
}

void sink_out_params(struct jw *w, const struct sink_out *o)
{
	jw_i64(w, "threshold_ns", o->threshold_ns);
	jw_i64(w, "max_events", o->max_events);
	jw_str(w, "raw", o->raw);
	jw_i64(w, "raw_max_bytes", o->raw_max_bytes);
	jw_i64(w, "progress_ms", o->progress_ms);
	jw_bool(w, "hist_delta", o->hist_delta);
}

/* Little-endian encoding, whatever the host byte order. */
static void put_le(unsigned char *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* Stop raw capture for good (cap reached or write error). */
static void raw_stop(struct sink *s)
{
	s->raw_truncated = true;
	for (int i = 0; i < s->ncpu; i++)
		atomic_store(&s->cs[i].raw_active, false);
}

/* Write the 64-byte raw file header (protocol.md "Raw sample file"). */
int sink_raw_start(struct sink *s, int64_t interval_ns, int64_t start_mono_ns, int64_t start_real_ns)
{
	unsigned char h[RAW_HEADER_BYTES] = "RTQRAW1";
	if (s->raw_fd < 0)
		return 0;
	put_le(h + 8, 1, 4);
	put_le(h + 12, RAW_RECORD_BYTES, 4);
	put_le(h + 16, (uint64_t)interval_ns, 8);
	put_le(h + 24, (uint64_t)start_mono_ns, 8);
	put_le(h + 32, (uint64_t)start_real_ns, 8);
	put_le(h + 40, (uint64_t)s->ncpu, 4);
	if (write_all(s->raw_fd, h, sizeof(h)) != 0) {
		sink_warning(s, "raw: writing %s failed: %s; no raw capture", s->raw_path, strerror(errno));
		raw_stop(s);
		return -1;
	}
	s->raw_bytes = sizeof(h);
	return 0;
}

/* Write the JSON line built in s->jw; remember the first failure and stop
 * the run (nobody is listening any more). */
static void emit_line(struct sink *s)
{
	if (jw_write_line(&s->jw, s->fd) != 0 && !s->write_errno) {
		s->write_errno = errno ? errno : EIO;
		atomic_store(&s->stop, true);
	}
}

/* The header record: identity, params (probe callback), clock, host, hist
 * layout, what the RT setup really got, and self-overhead. */
int sink_header(struct sink *s, const char *probe, int argc, char **argv, sink_params_fn params,
		const void *ctx, const struct rt_info *rt, const struct overhead *ov,
		int64_t start_mono_ns, int64_t start_real_ns)
{
	struct jw *w = &s->jw;
	struct utsname u;
	memset(&u, 0, sizeof(u));
	uname(&u);
	s->start_mono_ns = start_mono_ns;
	s->rl_start_ns = start_mono_ns;

	jw_obj_begin(w, NULL);
	jw_str(w, "type", "header");
	jw_i64(w, "schema", SCHEMA_VERSION);
	jw_str(w, "probe", probe);
	jw_str(w, "version", RTQUAL_VERSION);
	jw_arr_begin(w, "argv");
	for (int i = 0; i < argc; i++)
		jw_str(w, NULL, argv[i]);
	jw_arr_end(w);
	jw_obj_begin(w, "params");
	params(w, ctx);
	jw_obj_end(w);
	jw_str(w, "clock", "CLOCK_MONOTONIC");
	jw_i64(w, "start_mono_ns", start_mono_ns);
	jw_i64(w, "start_real_ns", start_real_ns);
	jw_obj_begin(w, "host");
	jw_str(w, "sysname", u.sysname);
	jw_str(w, "release", u.release);
	jw_str(w, "version", u.version);
	jw_str(w, "machine", u.machine);
	jw_str(w, "nodename", u.nodename);
	jw_i64(w, "ncpus_online", sysconf(_SC_NPROCESSORS_ONLN));
	jw_obj_end(w);
	jw_obj_begin(w, "hist");
	jw_i64(w, "lowest_ns", HIST_LOWEST_NS);
	jw_i64(w, "highest_ns", HIST_HIGHEST_NS);
	jw_i64(w, "sig_digits", HIST_SIG_DIGITS);
	jw_str(w, "layout", "hdr");
	jw_obj_end(w);
	jw_obj_begin(w, "rt");
	jw_str(w, "policy", rt_policy_names_all[rt->policy]);
	jw_i64(w, "priority", rt->priority);
	jw_bool(w, "mlockall", rt->mlockall);
	jw_bool(w, "dma_latency", rt->dma_latency);
	jw_bool(w, "tracemark", rt->tracemark);
	jw_bool(w, "degraded", rt->degraded);
	jw_obj_end(w);
	jw_obj_begin(w, "overhead");
	jw_i64(w, "clock_read_ns", ov->clock_read_ns);
	jw_i64(w, "sample_update_ns", ov->sample_update_ns);
	jw_obj_end(w);
	jw_obj_end(w);
	emit_line(s);
	return s->write_errno ? -1 : 0;
}

/* {"type":"event","kind":"warning","message":...}; also logged on stderr. */
void sink_warning(struct sink *s, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_info("warning: %s", msg);
	jw_obj_begin(&s->jw, NULL);
	jw_str(&s->jw, "type", "event");
	jw_str(&s->jw, "kind", "warning");
	jw_str(&s->jw, "message", msg);
	jw_obj_end(&s->jw);
	emit_line(s);
}

/* Emit the warnings kept while the header was not yet written. */
void sink_warnings(struct sink *s, const struct warnings *w)
{
	for (int i = 0; i < w->n; i++)
		sink_warning(s, "%s", w->msg[i]);
}

/* {"kind":"suppressed","count":N} for events held back by the rate limit. */
static void emit_suppressed(struct sink *s)
{
	if (!s->rl_suppressed)
		return;
	jw_obj_begin(&s->jw, NULL);
	jw_str(&s->jw, "type", "event");
	jw_str(&s->jw, "kind", "suppressed");
	jw_u64(&s->jw, "count", s->rl_suppressed);
	jw_obj_end(&s->jw);
	emit_line(s);
	s->rl_suppressed = 0;
}

/* Emit queued threshold events within --max-events per second; the rest
 * (and ring overflows) are counted and reported once per second. */
static void drain_events(struct sink *s, int64_t now)
{
	if (now - s->rl_start_ns >= NS_PER_S) {
		emit_suppressed(s);
		s->rl_start_ns = now;
		s->rl_emitted = 0;
	}
	for (int i = 0; i < s->ncpu; i++) {
		struct cpu_state *c = &s->cs[i];
		struct thr_event e;
		s->rl_suppressed += atomic_exchange_explicit(&c->ev_lost, 0, memory_order_relaxed);
		while (spsc_pop(&c->ev, &e)) {
			if (s->rl_emitted >= s->max_events) {
				s->rl_suppressed++;
				continue;
			}
			s->rl_emitted++;
			jw_obj_begin(&s->jw, NULL);
			jw_str(&s->jw, "type", "event");
			jw_str(&s->jw, "kind", "threshold");
			jw_i64(&s->jw, "cpu", e.cpu);
			jw_i64(&s->jw, "latency_ns", e.latency_ns);
			jw_i64(&s->jw, "mono_ns", e.mono_ns);
			jw_i64(&s->jw, "real_ns", e.real_ns);
			jw_obj_end(&s->jw);
			emit_line(s);
		}
	}
}

/* Write the buffered raw records; a failure stops capture with a warning. */
static void raw_flush(struct sink *s)
{
	if (s->raw_buf_len == 0)
		return;
	if (write_all(s->raw_fd, s->raw_buf, s->raw_buf_len) != 0) {
		sink_warning(s, "raw: writing %s failed: %s; capture stopped", s->raw_path, strerror(errno));
		raw_stop(s);
	} else {
		s->raw_bytes += s->raw_buf_len;
		s->raw_samples += s->raw_buf_len / RAW_RECORD_BYTES;
	}
	s->raw_buf_len = 0;
}

/* Move queued raw samples to the file, up to --raw-max-bytes. */
static void drain_raw(struct sink *s)
{
	if (s->raw_fd < 0)
		return;
	for (int i = 0; i < s->ncpu; i++) {
		struct cpu_state *c = &s->cs[i];
		struct raw_rec r;
		while (spsc_pop(&c->raw, &r)) {
			if (s->raw_truncated)
				continue;
			if (s->raw_bytes + s->raw_buf_len + RAW_RECORD_BYTES > s->raw_max_bytes) {
				raw_flush(s);
				raw_stop(s);
				continue;
			}
			unsigned char *p = s->raw_buf + s->raw_buf_len;
			put_le(p, (uint64_t)r.time_ns, 8);
			put_le(p + 8, r.latency_ns, 4);
			put_le(p + 12, r.cpu, 2);
			put_le(p + 14, r.skipped, 2);
			s->raw_buf_len += RAW_RECORD_BYTES;
			if (s->raw_buf_len + RAW_RECORD_BYTES > RAW_BUF_BYTES)
				raw_flush(s);
		}
	}
	raw_flush(s);
}

/* Main-thread housekeeping, every ~50 ms: events and raw samples. */
void sink_poll(struct sink *s)
{
	drain_events(s, mono_now_ns());
	drain_raw(s);
}

/* {"type":"hist_delta"} of one slot: the buckets that grew since the last one (sparse), so a
 * monitor builds per-window histograms without raw samples. The measuring thread keeps counting
 * while the main thread reads (relaxed loads of aligned counters); a bucket read lower than last
 * time (a torn read on a 32-bit CPU) waits for the next record, so deltas never go negative and
 * their sum is the histogram. Constant memory: one copy of the counts per slot. */
static void emit_hist_delta(struct sink *s, struct cpu_state *c, int64_t elapsed_ns)
{
	struct jw *w = &s->jw;
	uint64_t n = 0;
	jw_obj_begin(w, NULL);
	jw_str(w, "type", "hist_delta");
	jw_i64(w, "cpu", c->cpu);
	jw_i64(w, "elapsed_ns", elapsed_ns);
	jw_arr_begin(w, "counts");
	for (int i = 0; i < HIST_LEN; i++) {
		uint64_t now = __atomic_load_n(&c->hist->counts[i], __ATOMIC_RELAXED);
		if (now <= c->delta_prev[i])
			continue;
		jw_arr_begin(w, NULL);
		jw_i64(w, NULL, i);
		jw_u64(w, NULL, now - c->delta_prev[i]);
		jw_arr_end(w);
		n += now - c->delta_prev[i];
		c->delta_prev[i] = now;
	}
	jw_arr_end(w);
	jw_u64(w, "count", n);
	jw_obj_end(w);
	emit_line(s);
}

/* {"type":"progress"} from the live counters; resets each window max. With --hist-delta, one
 * hist_delta record per slot follows. */
void sink_progress(struct sink *s)
{
	struct jw *w = &s->jw;
	const memory_order rx = memory_order_relaxed;
	jw_obj_begin(w, NULL);
	jw_str(w, "type", "progress");
	int64_t elapsed_ns = mono_now_ns() - s->start_mono_ns;
	jw_i64(w, "elapsed_ns", elapsed_ns);
	jw_arr_begin(w, "cpus");
	for (int i = 0; i < s->ncpu; i++) {
		struct cpu_state *c = &s->cs[i];
		uint64_t n = atomic_load_explicit(&c->count, rx);
		jw_obj_begin(w, NULL);
		jw_i64(w, "cpu", c->cpu);
		jw_u64(w, "count", n);
		jw_i64(w, "min_ns", n ? atomic_load_explicit(&c->min_ns, rx) : 0);
		jw_i64(w, "max_ns", n ? atomic_load_explicit(&c->max_ns, rx) : 0);
		jw_i64(w, "window_max_ns", atomic_exchange_explicit(&c->window_max_ns, 0, rx));
		jw_u64(w, "overruns", atomic_load_explicit(&c->overruns, rx));
		jw_u64(w, "over_threshold", atomic_load_explicit(&c->over_threshold, rx));
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
	emit_line(s);
	for (int i = 0; s->hist_delta && i < s->ncpu; i++)
		emit_hist_delta(s, &s->cs[i], elapsed_ns);
}

/* {"type":"hist"}: exact moments plus sparse [index,count] pairs. */
static void emit_hist(struct sink *s, const struct cpu_state *c)
{
	struct jw *w = &s->jw;
	const struct hist *h = c->hist;
	jw_obj_begin(w, NULL);
	jw_str(w, "type", "hist");
	jw_i64(w, "cpu", c->cpu);
	jw_u64(w, "count", h->count);
	jw_i64(w, "min_ns", h->count ? h->min_ns : 0);
	jw_i64(w, "max_ns", h->count ? h->max_ns : 0);
	jw_u128(w, "sum_ns", h->sum_ns);
	jw_u128(w, "sumsq_ns2", h->sumsq_ns2);
	jw_u64(w, "out_of_range", h->out_of_range);
	jw_arr_begin(w, "counts");
	for (int i = 0; i < HIST_LEN; i++) {
		if (!h->counts[i])
			continue;
		jw_arr_begin(w, NULL);
		jw_i64(w, NULL, i);
		jw_u64(w, NULL, h->counts[i]);
		jw_arr_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
	emit_line(s);
}

/* {"type":"summary"}: per-CPU statistics from the histograms, raw capture. */
static void emit_summary(struct sink *s)
{
	struct jw *w = &s->jw;
	jw_obj_begin(w, NULL);
	jw_str(w, "type", "summary");
	jw_arr_begin(w, "cpus");
	for (int i = 0; i < s->ncpu; i++) {
		struct cpu_state *c = &s->cs[i];
		uint64_t over = atomic_load(&c->over_threshold), n = c->hist->count;
		jw_obj_begin(w, NULL);
		jw_i64(w, "cpu", c->cpu);
		sink_hist_keys(w, c->hist);
		jw_u64(w, "overruns", atomic_load(&c->overruns));
		jw_u64(w, "over_threshold", over);
		jw_double(w, "over_threshold_pct", n ? 100.0 * (double)over / (double)n : 0.0);
		jw_i64(w, "cpu_time_ns", c->cpu_time_ns);
		jw_u64(w, "wakeups", c->wakeups);
		if (s->summary_extra)
			s->summary_extra(w, i, s->summary_ctx);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	if (s->raw_path) {
		jw_obj_begin(w, "raw");
		jw_str(w, "path", s->raw_path);
		jw_u64(w, "samples", s->raw_samples);
		jw_u64(w, "dropped", s->raw_dropped);
		jw_bool(w, "truncated", s->raw_truncated);
		jw_obj_end(w);
	} else {
		jw_null(w, "raw");
	}
	if (s->summary_extra)
		s->summary_extra(w, -1, s->summary_ctx);
	jw_obj_end(w);
	emit_line(s);
}

/* Final drain, then hist per CPU, summary and end. status < 0 means "work
 * it out": 4/out_of_range, 4/raw_dropped or 0/completed. Returns the status
 * (1 if the JSON stream itself failed). Call after the threads are joined. */
int sink_finish(struct sink *s, int status, const char *reason, const char *message)
{
	uint64_t oor = 0;
	char msg[256];

	sink_poll(s);
	emit_suppressed(s);
	for (int i = 0; i < s->ncpu; i++) {
		oor += s->cs[i].hist->out_of_range;
		s->raw_dropped += atomic_load(&s->cs[i].raw_dropped);
	}
	if (s->raw_dropped)
		sink_warning(s, "raw: %llu samples dropped (writer could not keep up)",
			     (unsigned long long)s->raw_dropped);
	if (status < 0) {
		if (oor) {
			status = 4, reason = "out_of_range";
			snprintf(msg, sizeof(msg), "%llu samples outside 0..%lld ns", (unsigned long long)oor,
				 (long long)HIST_HIGHEST_NS);
			message = msg;
		} else if (s->raw_dropped) {
			status = 4, reason = "raw_dropped";
			snprintf(msg, sizeof(msg), "%llu raw samples dropped", (unsigned long long)s->raw_dropped);
			message = msg;
		} else {
			status = 0, reason = "completed";
		}
	}
	if (s->hist_delta) /* the last window: progress and deltas, so the deltas sum to the hist */
		sink_progress(s);
	for (int i = 0; i < s->ncpu; i++)
		emit_hist(s, &s->cs[i]);
	emit_summary(s);
	jw_obj_begin(&s->jw, NULL);
	jw_str(&s->jw, "type", "end");
	jw_i64(&s->jw, "status", status);
	jw_str(&s->jw, "reason", reason);
	jw_str(&s->jw, "message", message ? message : "");
	jw_obj_end(&s->jw);
	emit_line(s);
	if (s->write_errno) {
		log_error("--json-fd %d: write failed: %s", s->fd, strerror(s->write_errno));
		return 1;
	}
	return status;
}

/* Cost of one sink_sample() (histogram + live counters) on a scratch CPU
 * state, averaged over `iterations`: the probe's own per-sample overhead. */
int64_t sink_measure_update_ns(int iterations)
{
	struct cpu_state *c = aligned_alloc(64, (sizeof(*c) + 63) / 64 * 64);
	if (!c)
		return -1;
	memset(c, 0, sizeof(*c));
	c->threshold_ns = INT64_MAX;
	c->hist = malloc(sizeof(struct hist));
	if (!c->hist) {
		free(c);
		return -1;
	}
	hist_reset(c->hist);
	uint64_t x = 88172645463325252ULL;
	int64_t t0 = mono_now_ns();
	for (int i = 0; i < iterations; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift: spread buckets */
		sink_sample(c, (int64_t)(x % 200000), 0, 0);
	}
	int64_t t1 = mono_now_ns();
	free(c->hist);
	free(c);
	return (t1 - t0 + iterations / 2) / iterations;
}
