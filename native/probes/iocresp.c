/* iocresp probe: external response latency of an EPICS IOC running rtqual's
 * device support (protocol.md "EPICS device support lines"). One pinned
 * thread writes each stimulus (its CLOCK_MONOTONIC time, one i64) into the
 * FIFO the IOC's bi reads (--in) on absolute deadlines at --rate, then waits
 * for the bo's response on --out (4 x i64: t_stim, t_wake, t_process,
 * t_out) and timestamps it (t_resp). Sample = total = t_resp - t_stim; the
 * stages wake (t_wake - t_stim), dispatch (t_process - t_wake), chain
 * (t_out - t_process) and return (t_resp - t_out) go to the summary.
 * Exactly one response per stimulus: one stimulus is in flight at a time; no
 * response within --timeout ends the run with status 1. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rtqual/cpulist.h"
#include "rtqual/log.h"
#include "rtqual/probe.h"
#include "rtqual/rtenv.h"
#include "rtqual/sink.h"

#define THREAD_STACK_BYTES (256 * 1024)
#define WATCHDOG_MARGIN_S 10
#define RTTIME_SOFT_US 200000
#define RTTIME_HARD_US 400000
#define START_DELAY_NS (50 * NS_PER_MS)
#define NSTAGES 4

static const char *const stage_names[NSTAGES] = {"wake", "dispatch", "chain", "return"};

struct iocresp_cfg {
	const char *in, *out;
	int policy;
	int64_t rate_hz, cpu, priority, duration_ns, loops, warmup, threshold_ns, timeout_ns, max_events;
	bool no_dma_latency, allow_degraded;
	const char *raw;
	int64_t raw_max_bytes, json_fd, progress_ms;
};

#define F(x) offsetof(struct iocresp_cfg, x)
static const struct opt_def iocresp_opts[] = {
	{"in", OPT_PATH, F(in), 0, 0, NULL, NULL, "FIFO the IOC reads (stimuli: one i64 CLOCK_MONOTONIC time)"},
	{"out", OPT_PATH, F(out), 0, 0, NULL, NULL,
	 "FIFO the IOC writes (responses: i64 t_stim, t_wake, t_process, t_out)"},
	{"rate", OPT_INT, F(rate_hz), 1, 100000, "50", NULL, "stimuli per second, Hz (absolute deadlines)"},
	{"cpu", OPT_INT, F(cpu), 0, CPULIST_MAX - 1, NULL, NULL,
	 "CPU of the stimulus/response thread (default: the first CPU of our affinity mask)"},
	{"policy", OPT_ENUM, F(policy), 0, 0, "fifo", rt_policy_names, "scheduling policy of the harness thread"},
	{"priority", OPT_INT, F(priority), 1, 99, "80", NULL, "RT priority of the harness thread"},
	{"duration", OPT_DURATION, F(duration_ns), NS_PER_MS, 365 * 24 * 3600 * NS_PER_S, "10s", NULL,
	 "measured time after warm-up (stimuli = duration x rate)"},
	{"loops", OPT_INT, F(loops), 1, 1LL << 40, NULL, NULL, "measured stimuli; replaces --duration"},
	{"warmup", OPT_INT, F(warmup), 0, 1000000000, "10", NULL, "stimuli discarded before measuring"},
	{"threshold", OPT_DURATION, F(threshold_ns), 1, 60 * NS_PER_S, "100us", NULL,
	 "total latencies above it emit event records; stages above it are counted"},
	{"timeout", OPT_DURATION, F(timeout_ns), NS_PER_MS, 600 * NS_PER_S, "5s", NULL,
	 "a stimulus unanswered for this long ends the run (status 1)"},
	{"max-events", OPT_INT, F(max_events), 0, 1000000, "100", NULL,
	 "threshold events per second; the rest counted as suppressed"},
	{"no-dma-latency", OPT_FLAG, F(no_dma_latency), 0, 0, NULL, NULL, "do not hold /dev/cpu_dma_latency at 0"},
	{"raw", OPT_PATH, F(raw), 0, 0, NULL, NULL, "keep every sample in FILE (protocol.md raw format)"},
	{"raw-max-bytes", OPT_INT, F(raw_max_bytes), 4096, 1LL << 40, "268435456", NULL,
	 "cap of the raw file; capture stops (flagged) at the cap"},
	{"allow-degraded", OPT_FLAG, F(allow_degraded), 0, 0, NULL, NULL,
	 "run with what is permitted (SCHED_OTHER, no mlock), marked degraded"},
	{"json-fd", OPT_INT, F(json_fd), 1, 65535, "1", NULL, "fd for JSON Lines"},
	{"progress-ms", OPT_INT, F(progress_ms), 50, 60000, "1000", NULL, "period of progress records, ms"},
};
#undef F
#define IOCRESP_NOPTS ((int)(sizeof(iocresp_opts) / sizeof(iocresp_opts[0])))

struct iocresp {
	struct iocresp_cfg cfg;
	uint64_t given;
	struct rt_info rt;
	struct sink sink;
	int64_t period_ns, first_deadline_ns;
	uint64_t total;
	int fd_in, fd_out, dma_fd;
	pthread_t tid;
	bool started;
	_Atomic bool done;
	/* thread results, read after join */
	uint64_t sent, answered, warm, late, mismatched, write_failed;
	bool timed_out;
	char fail[256];
	struct hist *stage[NSTAGES];
	uint64_t stage_over[NSTAGES];
	struct warnings warn; /* until the header is out */
};

/* Read one whole response (32 bytes) within the timeout. 0, or -1 with
 * t->fail set. *t_resp: the time the last byte was read. */
static int read_response(struct iocresp *t, int64_t resp[4], int64_t *t_resp)
{
	size_t got = 0;
	int64_t give_up = mono_now_ns() + t->cfg.timeout_ns;
	char d[32];
	while (got < 4 * sizeof(int64_t)) {
		int64_t left = give_up - mono_now_ns();
		if (left <= 0) {
			t->timed_out = true;
			snprintf(t->fail, sizeof(t->fail), "no response from the IOC within --timeout %s (stimulus %" PRIu64
				 " of %" PRIu64 ")", duration_format(t->cfg.timeout_ns, d, sizeof(d)), t->sent, t->total);
			return -1;
		}
		if (atomic_load_explicit(&t->sink.stop, memory_order_relaxed))
			return -1;
		struct pollfd p = {.fd = t->fd_out, .events = POLLIN};
		int ms = left > 100 * NS_PER_MS ? 100 : (int)((left + NS_PER_MS - 1) / NS_PER_MS);
		int r = poll(&p, 1, ms);
		if (r < 0 && errno != EINTR) {
			snprintf(t->fail, sizeof(t->fail), "poll %s: %s", t->cfg.out, strerror(errno));
			return -1;
		}
		if (r <= 0)
			continue;
		ssize_t n = read(t->fd_out, (char *)resp + got, 4 * sizeof(int64_t) - got);
		*t_resp = mono_now_ns();
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			snprintf(t->fail, sizeof(t->fail), "read %s: %s", t->cfg.out, strerror(errno));
			return -1;
		}
		if (n > 0)
			got += (size_t)n;
	}
	return 0;
}

static void *iocresp_thread(void *arg)
{
	struct iocresp *t = arg;
	struct cpu_state *cs = &t->sink.cs[0];
	uint64_t wakeups = 0;
	rt_prefault_stack();
	prctl(PR_SET_TIMERSLACK, 1UL);
	for (uint64_t i = 0; i < t->total && !atomic_load_explicit(&t->sink.stop, memory_order_relaxed); i++) {
		int64_t dl = t->first_deadline_ns + (int64_t)i * t->period_ns;
		if (sleep_until_ns(dl) != 0 && atomic_load(&t->sink.stop))
			break;
		wakeups++;
		int64_t stim = mono_now_ns();
		if (write(t->fd_in, &stim, sizeof(stim)) != (ssize_t)sizeof(stim)) { /* < PIPE_BUF: atomic */
			t->write_failed++;
			snprintf(t->fail, sizeof(t->fail), "write %s: %s", t->cfg.in, strerror(errno));
			break;
		}
		t->sent++;
		int64_t r[4], t_resp = 0;
		if (read_response(t, r, &t_resp))
			break;
		t->answered++;
		if (r[0] != stim) { /* not our stimulus: the lines are out of step */
			t->mismatched++;
			continue;
		}
		bool late = t_resp > dl + t->period_ns; /* answered after the next deadline */
		if (late)
			t->late++;
		if (i < (uint64_t)t->cfg.warmup) {
			t->warm++;
			continue;
		}
		int64_t st[NSTAGES] = {r[1] - r[0], r[2] - r[1], r[3] - r[2], t_resp - r[3]};
		for (int k = 0; k < NSTAGES; k++) {
			hist_record(t->stage[k], st[k]);
			if (st[k] > t->cfg.threshold_ns)
				t->stage_over[k]++;
		}
		sink_sample(cs, t_resp - stim, t_resp, late ? 1 : 0);
	}
	cs->wakeups = wakeups;
	cs->cpu_time_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	atomic_store(&t->done, true);
	return NULL;
}

static void iocresp_params(struct jw *w, const void *ctx)
{
	const struct iocresp *t = ctx;
	const struct iocresp_cfg *c = &t->cfg;
	jw_str(w, "in", c->in);
	jw_str(w, "out", c->out);
	jw_i64(w, "rate_hz", c->rate_hz);
	jw_i64(w, "period_ns", t->period_ns);
	jw_i64(w, "cpu", c->cpu);
	jw_str(w, "policy", rt_policy_names[c->policy]);
	jw_i64(w, "priority", c->priority);
	jw_i64(w, "duration_ns", c->duration_ns);
	jw_i64(w, "loops", c->loops);
	jw_i64(w, "warmup", c->warmup);
	jw_u64(w, "stimuli_planned", t->total);
	jw_i64(w, "threshold_ns", c->threshold_ns);
	jw_i64(w, "timeout_ns", c->timeout_ns);
	jw_i64(w, "max_events", c->max_events);
	jw_bool(w, "dma_latency", !c->no_dma_latency);
	jw_str(w, "raw", c->raw);
	jw_i64(w, "raw_max_bytes", c->raw_max_bytes);
	jw_bool(w, "allow_degraded", c->allow_degraded);
	jw_i64(w, "progress_ms", c->progress_ms);
}

/* Summary extension (top level): stimulus accounting and the stages. */
static void iocresp_summary_extra(struct jw *w, int slot, const void *ctx)
{
	const struct iocresp *t = ctx;
	if (slot >= 0)
		return;
	jw_obj_begin(w, "stimuli");
	jw_u64(w, "planned", t->total);
	jw_u64(w, "sent", t->sent);
	jw_u64(w, "answered", t->answered);
	jw_u64(w, "warmup", t->warm);
	jw_u64(w, "unanswered", t->sent - t->answered);
	jw_u64(w, "late", t->late);
	jw_u64(w, "mismatched", t->mismatched);
	jw_obj_end(w);
	jw_obj_begin(w, "stages");
	for (int k = 0; k < NSTAGES; k++) {
		struct hist_stats st;
		hist_get_stats(t->stage[k], &st);
		jw_obj_begin(w, stage_names[k]);
		jw_u64(w, "count", st.count);
		jw_i64(w, "min_ns", st.min_ns);
		jw_i64(w, "p50_ns", st.p50_ns);
		jw_i64(w, "mean_ns", st.mean_ns);
		jw_i64(w, "p99_ns", st.p99_ns);
		jw_i64(w, "max_ns", st.max_ns);
		jw_i64(w, "stddev_ns", st.stddev_ns);
		jw_u64(w, "over_threshold", t->stage_over[k]);
		jw_u64(w, "out_of_range", st.out_of_range);
		jw_obj_end(w);
	}
	jw_obj_end(w);
}

static int check_fifo(const char *opt, const char *path)
{
	struct stat sb;
	if (!path)
		return log_error("--%s PATH is required (the FIFO of the IOC's %s line)", opt,
				 strcmp(opt, "in") == 0 ? "input" : "output");
	if (stat(path, &sb) != 0)
		return log_error("--%s %s: %s", opt, path, strerror(errno));
	if (!S_ISFIFO(sb.st_mode))
		return log_error("--%s %s: not a FIFO", opt, path);
	return 0;
}

static int iocresp_validate(struct iocresp *t)
{
	struct iocresp_cfg *c = &t->cfg;
	char err[512], d1[32], d2[32];
	int rc;
	bool have_loops = opts_given(iocresp_opts, IOCRESP_NOPTS, t->given, "loops");
	if (have_loops && opts_given(iocresp_opts, IOCRESP_NOPTS, t->given, "duration"))
		return log_error("--duration and --loops exclude each other: give one");
	if ((rc = check_fifo("in", c->in)) || (rc = check_fifo("out", c->out)))
		return rc;
	t->period_ns = NS_PER_S / c->rate_hz;
	if (have_loops)
		c->duration_ns = 0;
	else if (c->duration_ns < t->period_ns)
		return log_error("--duration (%s) is shorter than one period (%s at --rate %" PRId64
				 "): nothing would be measured",
				 duration_format(c->duration_ns, d1, sizeof(d1)),
				 duration_format(t->period_ns, d2, sizeof(d2)), c->rate_hz);
	t->total = (uint64_t)c->warmup + (have_loops ? (uint64_t)c->loops : (uint64_t)(c->duration_ns / t->period_ns));
	struct cpulist usable, one;
	if (cpulist_usable(&usable, err, sizeof(err)))
		return log_error("%s", err);
	if (!opts_given(iocresp_opts, IOCRESP_NOPTS, t->given, "cpu"))
		c->cpu = usable.cpu[0];
	one.n = 1;
	one.cpu[0] = (int)c->cpu;
	if (cpulist_check(&one, err, sizeof(err)))
		return log_error("--cpu: %s", err);
	if (fcntl((int)c->json_fd, F_GETFD) < 0)
		return log_error("--json-fd: fd %" PRId64 " is not open", c->json_fd);
	if (c->raw && sink_raw_check(c->raw, err, sizeof(err)))
		return log_error("%s", err);
	return 0;
}

static void iocresp_cleanup(struct iocresp *t)
{
	int fds[] = {t->fd_in, t->fd_out, t->dma_fd};
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	for (int k = 0; k < NSTAGES; k++)
		free(t->stage[k]);
	sink_free(&t->sink);
	free(t);
}

static int iocresp_run(const struct probe_args *a)
{
	struct iocresp *t = calloc(1, sizeof(*t));
	char err[512] = "";
	int rc;
	if (!t)
		return log_error("out of memory");
	t->fd_in = t->fd_out = t->dma_fd = -1;
	t->sink.raw_fd = -1;
	if (opts_parse(iocresp_opts, IOCRESP_NOPTS, &t->cfg, a->opt_argc, a->opt_argv, &t->given, err, sizeof(err))) {
		free(t);
		return log_error("%s", err);
	}
	struct iocresp_cfg *c = &t->cfg;
	if ((rc = iocresp_validate(t)) ||
	    (rc = rt_acquire(c->policy, (int)c->priority, c->allow_degraded, &t->rt, &t->warn)) || a->check) {
		free(t);
		return rc;
	}
	int cpu = (int)c->cpu;
	for (int k = 0; k < NSTAGES; k++)
		if ((t->stage[k] = malloc(sizeof(struct hist))))
			hist_reset(t->stage[k]);
	/* read-write opens never block and never see hang-up (Linux FIFOs) */
	t->fd_in = open(c->in, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (t->fd_in < 0)
		snprintf(err, sizeof(err), "--in %s: %s", c->in, strerror(errno));
	t->fd_out = open(c->out, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (t->fd_out < 0 && !err[0])
		snprintf(err, sizeof(err), "--out %s: %s", c->out, strerror(errno));
	if (err[0] || !t->stage[0] || !t->stage[1] || !t->stage[2] || !t->stage[3] ||
	    sink_init(&t->sink, (int)c->json_fd, &cpu, 1, c->threshold_ns, (uint64_t)c->max_events, c->raw != NULL,
		      err, sizeof(err)) ||
	    (c->raw && sink_raw_open(&t->sink, c->raw, (uint64_t)c->raw_max_bytes, err, sizeof(err)))) {
		rc = log_error("%s", err[0] ? err : "out of memory");
		iocresp_cleanup(t);
		return rc;
	}
	/* drop a stale response left in the output FIFO */
	{
		char junk[512];
		while (read(t->fd_out, junk, sizeof(junk)) > 0)
			;
	}
	for (int k = 0; k < NSTAGES; k++)
		rt_pretouch(t->stage[k], sizeof(struct hist));
	t->sink.summary_extra = iocresp_summary_extra;
	t->sink.summary_ctx = t;
	if (!c->no_dma_latency)
		rt_acquire_dma_latency(&t->dma_fd, &t->rt, &t->warn);
	if (t->rt.policy != RT_OTHER)
		rt_acquire_rttime_limit(RTTIME_SOFT_US, RTTIME_HARD_US, &t->warn);
	if ((rc = sink_begin(&t->sink, "iocresp", a, iocresp_params, t, &t->rt, &t->warn, t->period_ns))) {
		iocresp_cleanup(t);
		return rc;
	}

	u128 wd_s = ((u128)t->total * (uint64_t)t->period_ns) / NS_PER_S + 1 + WATCHDOG_MARGIN_S +
		    (uint64_t)(c->timeout_ns / NS_PER_S);
	alarm(wd_s < 0x7fffffff ? (unsigned)wd_s : 0x7fffffff);
	t->first_deadline_ns = mono_now_ns() + START_DELAY_NS;
	int e = rt_thread_start(&t->tid, t->rt.policy, t->rt.priority, cpu, THREAD_STACK_BYTES, iocresp_thread, t);
	bool start_failed = e != 0;
	if (start_failed) {
		snprintf(err, sizeof(err), "cannot start the harness thread on CPU %d: %s", cpu, strerror(e));
	} else {
		sink_pace_start(&t->sink, SINK_POLL_NS, c->progress_ms);
		while (!atomic_load(&t->done) && !sink_stopping(&t->sink))
			sink_pace(&t->sink);
		pthread_join(t->tid, NULL);
	}
	alarm(0);
	if (t->mismatched)
		sink_warning(&t->sink, "%" PRIu64 " responses did not carry the stimulus they answered", t->mismatched);
	if (t->late)
		sink_warning(&t->sink, "%" PRIu64 " responses came after the next stimulus was due (the next stimulus "
			     "was sent late)", t->late);
	if (!sink_end_early(&t->sink, start_failed ? err : NULL, &rc)) {
		if (t->fail[0]) {
			rc = sink_finish(&t->sink, 1, "error", t->fail);
			log_error("%s", t->fail);
		} else if (t->mismatched) {
			rc = sink_finish(&t->sink, 4, "incomplete", "responses out of step with the stimuli (see summary)");
		} else {
			rc = sink_finish(&t->sink, -1, NULL, NULL);
		}
	}
	iocresp_cleanup(t);
	return rc;
}

const struct probe probe_iocresp = {
	.name = "iocresp",
	.summary = "EPICS IOC response: stimulus written to the IOC's input FIFO to its response on the output "
		   "FIFO, with the IOC's stage times (wake, dispatch, chain, return)",
	.opts = iocresp_opts,
	.nopts = IOCRESP_NOPTS,
	.run = iocresp_run,
};
