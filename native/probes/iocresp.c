/* iocresp probe: external response latency of an EPICS IOC running rtqual's
 * device support (protocol.md "EPICS device support lines"). One pinned
 * thread writes each stimulus (its CLOCK_MONOTONIC time, one i64) into the
 * FIFO the IOC's bi reads (--in) on absolute deadlines at --rate, then waits
 * for the bo's response on --out (4 x i64: t_stim, t_wake, t_process,
 * t_out) and timestamps it (t_resp). Sample = total = t_resp - t_stim; the
 * stages wake (t_wake - t_stim), dispatch (t_process - t_wake), chain
 * (t_out - t_process) and return (t_resp - t_out) go to the summary.
 * Exactly one response per stimulus: one stimulus is in flight at a time; no
 * response within --timeout ends the run with status 1. The loop is the
 * stimulus -> response harness (stimresp.h); this file is its FIFO transport. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rtqual/log.h"
#include "rtqual/stimresp.h"

#define NSTAGES 4

static const char *const stage_names[NSTAGES] = {"wake", "dispatch", "chain", "return"};

struct iocresp {
	struct stimresp h; /* first: the options parse into the whole struct */
	const char *in, *out;
	int fd_in;
	int64_t stim;        /* the stimulus in flight */
	int64_t resp[4];     /* the response being read */
	size_t got;          /* bytes of it so far */
	struct hist *stage[NSTAGES];
	uint64_t stage_over[NSTAGES];
};

#define F(x) offsetof(struct iocresp, x)
static const struct opt_def iocresp_opts[] = {
	{"in", OPT_PATH, F(in), 0, 0, NULL, NULL, "FIFO the IOC reads (stimuli: one i64 CLOCK_MONOTONIC time)"},
	{"out", OPT_PATH, F(out), 0, 0, NULL, NULL,
	 "FIFO the IOC writes (responses: i64 t_stim, t_wake, t_process, t_out)"},
	{"rate", OPT_INT, SR_F(rate_hz), 1, 100000, "50", NULL, "stimuli per second, Hz (absolute deadlines)"},
	{"cpu", OPT_INT, SR_F(cpu), 0, CPULIST_MAX - 1, NULL, NULL,
	 "CPU of the stimulus/response thread (default: the first CPU of our affinity mask)"},
	{"policy", OPT_ENUM, SR_F(policy), 0, 0, "fifo", rt_policy_names, "scheduling policy of the harness thread"},
	{"priority", OPT_INT, SR_F(priority), 1, 99, "80", NULL, "RT priority of the harness thread"},
	{"duration", OPT_DURATION, SR_F(duration_ns), NS_PER_MS, 365 * 24 * 3600 * NS_PER_S, "10s", NULL,
	 "measured time after warm-up (stimuli = duration x rate)"},
	{"loops", OPT_INT, SR_F(loops), 1, 1LL << 40, NULL, NULL, "measured stimuli; replaces --duration"},
	{"warmup", OPT_INT, SR_F(warmup), 0, 1000000000, "10", NULL, "stimuli discarded before measuring"},
	{"threshold", OPT_DURATION, SR_F(out.threshold_ns), 1, 60 * NS_PER_S, "100us", NULL,
	 "total latencies above it emit event records; stages above it are counted"},
	{"timeout", OPT_DURATION, SR_F(timeout_ns), NS_PER_MS, 600 * NS_PER_S, "5s", NULL,
	 "a stimulus unanswered for this long ends the run (status 1)"},
	STIMRESP_COMMON_OPTS,
};
#undef F

/* Write the stimulus: its own time, one i64 (< PIPE_BUF: atomic). */
static int iocresp_send(struct stimresp *h, uint64_t seq, int64_t *t_send)
{
	struct iocresp *t = (struct iocresp *)h;
	(void)seq;
	t->stim = *t_send = mono_now_ns();
	t->got = 0;
	if (write(t->fd_in, &t->stim, sizeof(t->stim)) != (ssize_t)sizeof(t->stim)) {
		snprintf(h->fail, sizeof(h->fail), "write %s: %s", t->in, strerror(errno));
		return -1;
	}
	return 0;
}

/* Read what there is of the response; *t_answer: when its last byte came. */
static enum stimresp_rx iocresp_receive(struct stimresp *h, int64_t *t_answer)
{
	struct iocresp *t = (struct iocresp *)h;
	ssize_t n = read(h->answer_fd, (char *)t->resp + t->got, sizeof(t->resp) - t->got);
	*t_answer = mono_now_ns();
	if (n < 0 && errno != EAGAIN && errno != EINTR) {
		snprintf(h->fail, sizeof(h->fail), "read %s: %s", t->out, strerror(errno));
		return SR_FAIL;
	}
	if (n > 0)
		t->got += (size_t)n;
	if (t->got < sizeof(t->resp))
		return SR_MORE;
	return t->resp[0] == t->stim ? SR_ANSWER : SR_MISMATCH;
}

/* The stages of a measured response. */
static void iocresp_measured(struct stimresp *h, int64_t t_stim, int64_t t_resp)
{
	struct iocresp *t = (struct iocresp *)h;
	const int64_t *r = t->resp;
	int64_t st[NSTAGES] = {r[1] - t_stim, r[2] - r[1], r[3] - r[2], t_resp - r[3]};
	for (int k = 0; k < NSTAGES; k++) {
		hist_record(t->stage[k], st[k]);
		if (st[k] > h->cfg.out.threshold_ns)
			t->stage_over[k]++;
	}
}

static void iocresp_params(struct jw *w, const void *ctx)
{
	const struct iocresp *t = ctx;
	jw_str(w, "in", t->in);
	jw_str(w, "out", t->out);
	stimresp_params(w, &t->h, "stimuli_planned");
}

/* Summary extension (top level): stimulus accounting and the stages. */
static void iocresp_summary_extra(struct jw *w, int slot, const void *ctx)
{
	const struct iocresp *t = ctx;
	if (slot >= 0)
		return;
	jw_obj_begin(w, "stimuli");
	stimresp_counts(w, &t->h);
	jw_u64(w, "mismatched", t->h.mismatched);
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

static int iocresp_validate(struct stimresp *h)
{
	struct iocresp *t = (struct iocresp *)h;
	int rc;
	if ((rc = check_fifo("in", t->in)) || (rc = check_fifo("out", t->out)))
		return rc;
	snprintf(h->no_answer, sizeof(h->no_answer), "no response from the IOC");
	return 0;
}

/* The FIFOs (read-write opens never block and never see hang-up on Linux)
 * and the stage histograms. */
static int iocresp_open(struct stimresp *h, char *err, size_t len)
{
	struct iocresp *t = (struct iocresp *)h;
	t->fd_in = open(t->in, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (t->fd_in < 0)
		return snprintf(err, len, "--in %s: %s", t->in, strerror(errno)), -1;
	h->answer_fd = open(t->out, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (h->answer_fd < 0)
		return snprintf(err, len, "--out %s: %s", t->out, strerror(errno)), -1;
	char junk[512]; /* drop a stale response left in the output FIFO */
	while (read(h->answer_fd, junk, sizeof(junk)) > 0)
		;
	for (int k = 0; k < NSTAGES; k++) {
		if (!(t->stage[k] = malloc(sizeof(struct hist))))
			return -1; /* err empty: out of memory */
		hist_reset(t->stage[k]);
		rt_pretouch(t->stage[k], sizeof(struct hist));
	}
	return 0;
}

static void iocresp_close(struct stimresp *h)
{
	struct iocresp *t = (struct iocresp *)h;
	if (t->fd_in >= 0)
		close(t->fd_in);
	if (h->answer_fd >= 0)
		close(h->answer_fd);
	for (int k = 0; k < NSTAGES; k++)
		free(t->stage[k]);
}

static const struct stimresp_ops iocresp_ops = {
	.name = "iocresp",
	.opts = iocresp_opts,
	.nopts = (int)(sizeof(iocresp_opts) / sizeof(iocresp_opts[0])),
	.request = "stimulus",
	.requests = "stimuli",
	.answers = "responses",
	.thread = "harness",
	.validate = iocresp_validate,
	.open = iocresp_open,
	.close = iocresp_close,
	.send = iocresp_send,
	.receive = iocresp_receive,
	.measured = iocresp_measured,
	.params = iocresp_params,
	.summary_extra = iocresp_summary_extra,
};

static int iocresp_run(const struct probe_args *a)
{
	return stimresp_main(sizeof(struct iocresp), &iocresp_ops, a);
}

const struct probe probe_iocresp = {
	.name = "iocresp",
	.summary = "EPICS IOC response: stimulus written to the IOC's input FIFO to its response on the output "
		   "FIFO, with the IOC's stage times (wake, dispatch, chain, return)",
	.opts = iocresp_opts,
	.nopts = (int)(sizeof(iocresp_opts) / sizeof(iocresp_opts[0])),
	.run = iocresp_run,
};
