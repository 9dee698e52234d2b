/* Stimulus -> response harness shared by the round-trip probes (iocresp,
 * ca-rtt, pva-rtt): one pinned thread sends request k at the absolute
 * deadline first + k * period, waits (one request in flight) for its answer
 * on an fd with --timeout, and records answer - send time; warm-up, late,
 * unanswered and mismatched answers are counted. The harness gives the
 * lifecycle hooks (STIMRESP_HOOKS) of all of them: options common to all,
 * RT setup, the watchdog and the ending; a transport (struct stimresp_ops,
 * the probe's .family) only sends and receives. */
#ifndef RTQUAL_STIMRESP_H
#define RTQUAL_STIMRESP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "rtqual/cpulist.h"
#include "rtqual/lifecycle.h"
#include "rtqual/probe.h"
#include "rtqual/sink.h"

/* What stimresp_ops.receive found on the answer fd. */
enum stimresp_rx { SR_MORE, SR_ANSWER, SR_MISMATCH, SR_FAIL };

struct stimresp;

struct stimresp_ops {
	/* words of the messages: "stimulus", "stimuli", "responses", "harness" (thread) */
	const char *request, *requests, *answers, *thread;
	bool timeout_incomplete; /* an unanswered request ends with status 4 (else 1) */
	int (*validate)(struct stimresp *h);                   /* the transport's options; log_error's rc */
	int (*open)(struct stimresp *h, char *err, size_t len); /* before the sink; sets h->answer_fd */
	void (*close)(struct stimresp *h);                     /* always, if open was called */
	int (*thread_init)(struct stimresp *h);                /* optional, in the harness thread; -1: h->fail set */
	void (*thread_end)(struct stimresp *h);                /* optional, in the harness thread after its loop */
	/* send request `seq` (0..total-1); *t_send: its CLOCK_MONOTONIC time; -1: h->fail set */
	int (*send)(struct stimresp *h, uint64_t seq, int64_t *t_send);
	/* answer_fd is readable: read it; *t_answer when complete */
	enum stimresp_rx (*receive)(struct stimresp *h, int64_t *t_answer);
	/* optional, once answered: the request's send time replaced by the stimulus' own (a passive input: the
	 * kernel's time of the interrupt); false: it has none, not a sample (the transport counts it) */
	bool (*answered)(struct stimresp *h, int64_t *t_send, int64_t t_answer);
	/* optional: a measured (not warm-up) round trip */
	void (*measured)(struct stimresp *h, int64_t t_send, int64_t t_answer);
	void (*summary_extra)(struct jw *w, int slot, const void *ctx); /* calls stimresp_counts() */
};

struct stimresp_cfg {
	int policy;
	int64_t rate_hz, cpu, priority, duration_ns, loops, warmup, timeout_ns;
	bool no_dma_latency, allow_degraded;
	struct sink_out out;
};

/* The first member of each probe's state; options parse into the whole state. */
struct stimresp {
	struct run run; /* first: the driver's part */
	struct stimresp_cfg cfg;
	const struct stimresp_ops *ops;
	int64_t period_ns, first_deadline_ns;
	uint64_t total;
	int answer_fd;
	char no_answer[160]; /* timeout message lead, e.g. "no response from the IOC" */
	bool timeout_incomplete; /* as ops->timeout_incomplete, for this run (set by validate) */
	bool passive; /* the stimulus comes from outside (set by validate): no deadlines, --duration runs from the
		       * warm-up's end and bounds the last wait (its end is no timeout), each wait at most --timeout */
	pthread_t tid;
	bool started;
	/* thread results, read after join */
	uint64_t sent, answered, warm, late, mismatched;
	bool timed_out;
	char fail[256];
};

/* The option entries identical in every stimulus/response probe (h at offset 0); the probe's
 * table has its own "threshold" row, SR_F(out.threshold_ns). */
#define SR_F(x) offsetof(struct stimresp, cfg.x)
#define STIMRESP_COMMON_OPTS                                                                                   \
	{"no-dma-latency", OPT_FLAG, SR_F(no_dma_latency), 0, 0, NULL, NULL, "do not hold /dev/cpu_dma_latency at 0"}, \
	{"allow-degraded", OPT_FLAG, SR_F(allow_degraded), 0, 0, NULL, NULL,                                   \
	 "run with what is permitted (SCHED_OTHER, no mlock), marked degraded"},                              \
	SINK_OUT_OPTS(SR_F, "1000")

/* The rows of a put -> monitor echo round trip (ca-rtt, pva-rtt), from --rate to --timeout. */
#define STIMRESP_PUT_ECHO_OPTS \
	{"rate", OPT_INT, SR_F(rate_hz), 1, 10000, "50", NULL, "puts per second, Hz (absolute deadlines)"}, \
	{"cpu", OPT_INT, SR_F(cpu), 0, CPULIST_MAX - 1, NULL, NULL, \
	 "CPU of the put/measure thread (default: the first CPU of our affinity mask)"}, \
	RUN_OPT_POLICY(SR_F, "scheduling policy of the put thread"), \
	RUN_OPT_PRIORITY(SR_F, "80", "RT priority of the put thread"), \
	RUN_OPTS_LENGTH(SR_F, "measured time after warm-up (puts = duration x rate)", 1LL << 40, \
		"measured puts; replaces --duration", "10", "round trips discarded before measuring"), \
	RUN_OPT_THRESHOLD(SR_F, "1ms", "round trips above it emit event records"), \
	{"timeout", OPT_DURATION, SR_F(timeout_ns), NS_PER_MS, 600 * NS_PER_S, "5s", NULL, \
	 "connecting, and each echo: missing for this long ends the run (status 4)"}

/* A put -> monitor echo probe (ca-rtt, pva-rtt): its state starts with this; its ops take
 * STIMRESP_ECHO_OPS (the words, the timeout is "incomplete", the validation of --put/--monitor). */
struct stimresp_echo {
	struct stimresp h;
	const char *put, *monitor;
	int64_t base; /* value of the first put */
};
/* The whole option table of such a probe: --put, --monitor (their help is the probe's), the
 * put/echo rows and the common ones. */
#define STIMRESP_ECHO_OPTION_ROWS(put_help, monitor_help)                                            \
	{"put", OPT_STRING, offsetof(struct stimresp_echo, put), 0, 0, NULL, NULL, put_help},        \
	{"monitor", OPT_STRING, offsetof(struct stimresp_echo, monitor), 0, 0, NULL, NULL, monitor_help}, \
	STIMRESP_PUT_ECHO_OPTS, STIMRESP_COMMON_OPTS
int stimresp_echo_validate(struct stimresp *h);
/* params: put, monitor, then stimresp_params with puts_planned. */
void stimresp_echo_params(struct jw *w, const struct stimresp_echo *e);
/* summary: the "puts" object (stimresp_counts and stray_events). */
void stimresp_echo_summary(struct jw *w, const struct stimresp_echo *e, uint64_t stray_events);
#define STIMRESP_ECHO_OPS                                                                         \
	.request = "put", .requests = "puts", .answers = "echoes", .thread = "put", .timeout_incomplete = true, \
	.validate = stimresp_echo_validate

/* The options a put -> monitor echo probe's IOC service fills (its struct probe_service.fixed). */
#define STIMRESP_PUT_ECHO_FIXED PROBE_LIST("put", "$(P)rtt:put", "monitor", "$(P)rtt:echo")

/* The lifecycle hooks of a stimulus/response probe (its struct probe: .family = &its
 * stimresp_ops, .state_bytes = sizeof its state, which starts with struct stimresp). */
int stimresp_validate(struct run *r);
int stimresp_privileges(struct run *r);
int stimresp_prepare(struct run *r);
int stimresp_start(struct run *r);
void stimresp_stop(struct run *r);
int stimresp_end(struct run *r);
void stimresp_cleanup(struct run *r);
#define STIMRESP_HOOKS                                                                              \
	.exclusive = PROBE_LIST("duration", "loops"), .validate = stimresp_validate,                \
	.privileges = stimresp_privileges, .prepare = stimresp_prepare, .start = stimresp_start,    \
	.stop = stimresp_stop, .end = stimresp_end, .cleanup = stimresp_cleanup
/* The params keys from rate_hz to progress_ms; planned_key names the planned count. */
void stimresp_params(struct jw *w, const struct stimresp *h, const char *planned_key);
/* planned, sent, answered, warmup, unanswered, late (inside the caller's object). */
void stimresp_counts(struct jw *w, const struct stimresp *h);

#endif
