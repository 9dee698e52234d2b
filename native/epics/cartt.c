/* ca-rtt probe: Channel Access round trip through an IOC. One pinned thread
 * puts a double carrying a sequence number to --put (ca_put + ca_flush_io)
 * on absolute deadlines at --rate; the monitor (DBE_VALUE) of --monitor
 * delivers that same value in libca's receive thread, which timestamps it and
 * hands the time over an eventfd. Sample = t_echo - t_put (CLOCK_MONOTONIC,
 * t_put read just before ca_put). One put in flight; an echo missing for
 * --timeout ends the run (status 4, incomplete). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cadef.h>
#include <epicsVersion.h>

#include "cautil.h"
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
#define NO_SEQ (-1)

struct cartt_cfg {
	const char *put, *monitor;
	int policy;
	int64_t rate_hz, cpu, priority, duration_ns, loops, warmup, threshold_ns, timeout_ns, max_events;
	bool no_dma_latency, allow_degraded;
	const char *raw;
	int64_t raw_max_bytes, json_fd, progress_ms;
};

#define F(x) offsetof(struct cartt_cfg, x)
static const struct opt_def cartt_opts[] = {
	{"put", OPT_STRING, F(put), 0, 0, NULL, NULL, "PV written with ca_put (a double carrying a sequence number)"},
	{"monitor", OPT_STRING, F(monitor), 0, 0, NULL, NULL,
	 "PV whose DBE_VALUE monitor echoes the put value (default: the --put PV)"},
	{"rate", OPT_INT, F(rate_hz), 1, 10000, "50", NULL, "puts per second, Hz (absolute deadlines)"},
	{"cpu", OPT_INT, F(cpu), 0, CPULIST_MAX - 1, NULL, NULL,
	 "CPU of the put/measure thread (default: the first CPU of our affinity mask)"},
	{"policy", OPT_ENUM, F(policy), 0, 0, "fifo", rt_policy_names,
	 "scheduling policy of the put thread"},
	{"priority", OPT_INT, F(priority), 1, 99, "80", NULL, "RT priority of the put thread"},
	{"duration", OPT_DURATION, F(duration_ns), NS_PER_MS, 365 * 24 * 3600 * NS_PER_S, "10s", NULL,
	 "measured time after warm-up (puts = duration x rate)"},
	{"loops", OPT_INT, F(loops), 1, 1LL << 40, NULL, NULL, "measured puts; replaces --duration"},
	{"warmup", OPT_INT, F(warmup), 0, 1000000000, "10", NULL, "round trips discarded before measuring"},
	{"threshold", OPT_DURATION, F(threshold_ns), 1, 60 * NS_PER_S, "1ms", NULL,
	 "round trips above it emit event records"},
	{"timeout", OPT_DURATION, F(timeout_ns), NS_PER_MS, 600 * NS_PER_S, "5s", NULL,
	 "connecting, and each echo: missing for this long ends the run (status 4)"},
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
#define CARTT_NOPTS ((int)(sizeof(cartt_opts) / sizeof(cartt_opts[0])))

struct cartt {
	struct cartt_cfg cfg;
	uint64_t given;
	struct rt_info rt;
	struct sink sink;
	int64_t period_ns, first_deadline_ns, base;
	uint64_t total;
	int efd, dma_fd;
	chid put_ch, mon_ch;
	evid sub;
	struct ca_client_context *cactx;
	pthread_t tid;
	_Atomic bool done;
	/* between the monitor callback and the put thread */
	_Atomic int64_t want;   /* sequence number awaited, NO_SEQ: none */
	_Atomic int64_t t_echo; /* when it arrived */
	_Atomic uint64_t stray; /* monitor values that were not the awaited one */
	/* thread results, read after join */
	uint64_t sent, answered, warm, late;
	bool timed_out;
	char fail[256];
	struct warnings warn; /* until the header is out */
};

/* libca's receive thread: timestamp first, then hand over the awaited value. */
static void cartt_event(struct event_handler_args a)
{
	int64_t now = mono_now_ns();
	struct cartt *t = a.usr;
	if (a.status != ECA_NORMAL || !a.dbr)
		return;
	double v = *(const double *)a.dbr;
	int64_t want = atomic_load(&t->want);
	if (want != NO_SEQ && v == (double)want) {
		atomic_store(&t->t_echo, now);
		atomic_store(&t->want, NO_SEQ);
		uint64_t one = 1;
		if (write(t->efd, &one, sizeof(one)) != (ssize_t)sizeof(one))
			atomic_fetch_add(&t->stray, 1);
	} else {
		atomic_fetch_add(&t->stray, 1);
	}
}

/* Wait for the echo of the current put. 0 with *t_echo, or -1 (fail set, or stopped). */
static int wait_echo(struct cartt *t, int64_t *t_echo)
{
	int64_t give_up = mono_now_ns() + t->cfg.timeout_ns;
	for (;;) {
		int64_t left = give_up - mono_now_ns();
		if (left <= 0) {
			char d[32];
			t->timed_out = true;
			snprintf(t->fail, sizeof(t->fail), "no echo on %s within --timeout %s (put %" PRIu64 " of %" PRIu64 ")",
				 t->cfg.monitor, duration_format(t->cfg.timeout_ns, d, sizeof(d)), t->sent, t->total);
			return -1;
		}
		if (atomic_load_explicit(&t->sink.stop, memory_order_relaxed))
			return -1;
		struct pollfd p = {.fd = t->efd, .events = POLLIN};
		int ms = left > 100 * NS_PER_MS ? 100 : (int)((left + NS_PER_MS - 1) / NS_PER_MS);
		int r = poll(&p, 1, ms);
		if (r < 0 && errno != EINTR) {
			snprintf(t->fail, sizeof(t->fail), "poll eventfd: %s", strerror(errno));
			return -1;
		}
		uint64_t n;
		if (r > 0 && read(t->efd, &n, sizeof(n)) == (ssize_t)sizeof(n)) {
			*t_echo = atomic_load(&t->t_echo);
			return 0;
		}
	}
}

static void *cartt_thread(void *arg)
{
	struct cartt *t = arg;
	struct cpu_state *cs = &t->sink.cs[0];
	uint64_t wakeups = 0;
	rt_prefault_stack();
	prctl(PR_SET_TIMERSLACK, 1UL);
	if (ca_attach_context(t->cactx) != ECA_NORMAL) {
		snprintf(t->fail, sizeof(t->fail), "cannot attach the CA context to the put thread");
		atomic_store(&t->done, true);
		return NULL;
	}
	for (uint64_t i = 0; i < t->total && !atomic_load_explicit(&t->sink.stop, memory_order_relaxed); i++) {
		int64_t dl = t->first_deadline_ns + (int64_t)i * t->period_ns;
		if (sleep_until_ns(dl) != 0 && atomic_load(&t->sink.stop))
			break;
		wakeups++;
		double v = (double)(t->base + (int64_t)i);
		atomic_store(&t->want, t->base + (int64_t)i);
		int64_t t_put = mono_now_ns();
		int st = ca_put(DBR_DOUBLE, t->put_ch, &v);
		if (st == ECA_NORMAL)
			st = ca_flush_io();
		if (st != ECA_NORMAL) {
			snprintf(t->fail, sizeof(t->fail), "ca_put %s: %s", t->cfg.put, ca_message(st));
			break;
		}
		t->sent++;
		int64_t t_echo = 0;
		if (wait_echo(t, &t_echo))
			break;
		t->answered++;
		bool late = t_echo > dl + t->period_ns; /* echoed after the next deadline */
		if (late)
			t->late++;
		if (i < (uint64_t)t->cfg.warmup) {
			t->warm++;
			continue;
		}
		sink_sample(cs, t_echo - t_put, t_echo, late ? 1 : 0);
	}
	cs->wakeups = wakeups;
	cs->cpu_time_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	atomic_store(&t->done, true);
	return NULL;
}

static void cartt_params(struct jw *w, const void *ctx)
{
	const struct cartt *t = ctx;
	const struct cartt_cfg *c = &t->cfg;
	jw_str(w, "put", c->put);
	jw_str(w, "monitor", c->monitor);
	jw_i64(w, "rate_hz", c->rate_hz);
	jw_i64(w, "period_ns", t->period_ns);
	jw_i64(w, "cpu", c->cpu);
	jw_str(w, "policy", rt_policy_names[c->policy]);
	jw_i64(w, "priority", c->priority);
	jw_i64(w, "duration_ns", c->duration_ns);
	jw_i64(w, "loops", c->loops);
	jw_i64(w, "warmup", c->warmup);
	jw_u64(w, "puts_planned", t->total);
	jw_i64(w, "threshold_ns", c->threshold_ns);
	jw_i64(w, "timeout_ns", c->timeout_ns);
	jw_i64(w, "max_events", c->max_events);
	jw_bool(w, "dma_latency", !c->no_dma_latency);
	jw_str(w, "raw", c->raw);
	jw_i64(w, "raw_max_bytes", c->raw_max_bytes);
	jw_bool(w, "allow_degraded", c->allow_degraded);
	jw_i64(w, "progress_ms", c->progress_ms);
	jw_str(w, "ca_addr_list", getenv("EPICS_CA_ADDR_LIST"));
	jw_str(w, "ca_server_port", getenv("EPICS_CA_SERVER_PORT"));
	jw_str(w, "epics_version", EPICS_VERSION_STRING);
}

/* Summary extension (top level): put accounting. */
static void cartt_summary_extra(struct jw *w, int slot, const void *ctx)
{
	const struct cartt *t = ctx;
	if (slot >= 0)
		return;
	jw_obj_begin(w, "puts");
	jw_u64(w, "planned", t->total);
	jw_u64(w, "sent", t->sent);
	jw_u64(w, "answered", t->answered);
	jw_u64(w, "warmup", t->warm);
	jw_u64(w, "unanswered", t->sent - t->answered);
	jw_u64(w, "late", t->late);
	jw_u64(w, "stray_events", atomic_load(&t->stray));
	jw_obj_end(w);
}

static int cartt_validate(struct cartt *t)
{
	struct cartt_cfg *c = &t->cfg;
	char err[512], d1[32], d2[32];
	bool have_loops = opts_given(cartt_opts, CARTT_NOPTS, t->given, "loops");
	if (have_loops && opts_given(cartt_opts, CARTT_NOPTS, t->given, "duration"))
		return log_error("--duration and --loops exclude each other: give one");
	if (!c->put || !c->put[0])
		return log_error("--put PV is required (the PV the round trip writes)");
	if (!c->monitor || !c->monitor[0])
		c->monitor = c->put;
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
	if (!opts_given(cartt_opts, CARTT_NOPTS, t->given, "cpu"))
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

static void cartt_cleanup(struct cartt *t)
{
	if (t->cactx)
		ca_context_destroy();
	if (t->efd >= 0)
		close(t->efd);
	if (t->dma_fd >= 0)
		close(t->dma_fd);
	sink_free(&t->sink);
	free(t);
}

/* The preemptive CA context (libca's threads keep libca's own priorities, as
 * in any CA client: as root SCHED_FIFO 1-10), the channels, the start value
 * and the monitor. */
static int cartt_connect(struct cartt *t, char *err, size_t len)
{
	if (cau_context(true, err, len))
		return -1;
	t->cactx = ca_current_context();
	double tmo = (double)t->cfg.timeout_ns / NS_PER_S;
	char *names[2] = {(char *)t->cfg.put, (char *)t->cfg.monitor};
	bool same = strcmp(t->cfg.put, t->cfg.monitor) == 0;
	chid ch[2];
	if (cau_connect(ch, same ? 1 : 2, names, tmo, err, len))
		return -1;
	t->put_ch = ch[0];
	t->mon_ch = same ? ch[0] : ch[1];
	/* start above the current value so every put changes it (monitors post changes only) */
	double v0 = 0;
	int st = ca_get(DBR_DOUBLE, t->mon_ch, &v0);
	if (st == ECA_NORMAL)
		st = ca_pend_io(tmo);
	if (st != ECA_NORMAL) {
		snprintf(err, len, "ca_get %s: %s", t->cfg.monitor, ca_message(st));
		return -1;
	}
	t->base = isfinite(v0) && fabs(v0) < 1e12 ? (int64_t)floor(v0) + 1 : 1;
	if (t->base < 1)
		t->base = 1;
	atomic_store(&t->want, NO_SEQ);
	st = ca_create_subscription(DBR_DOUBLE, 1, t->mon_ch, DBE_VALUE, cartt_event, t, &t->sub);
	if (st == ECA_NORMAL)
		st = ca_flush_io();
	if (st != ECA_NORMAL) {
		snprintf(err, len, "monitor %s: %s", t->cfg.monitor, ca_message(st));
		return -1;
	}
	return 0;
}

static int cartt_run(const struct probe_args *a)
{
	struct cartt *t = calloc(1, sizeof(*t));
	char err[512] = "";
	int rc;
	if (!t)
		return log_error("out of memory");
	t->efd = t->dma_fd = -1;
	t->sink.raw_fd = -1;
	if (opts_parse(cartt_opts, CARTT_NOPTS, &t->cfg, a->opt_argc, a->opt_argv, &t->given, err, sizeof(err))) {
		free(t);
		return log_error("%s", err);
	}
	struct cartt_cfg *c = &t->cfg;
	if ((rc = cartt_validate(t)) ||
	    (rc = rt_acquire(c->policy, (int)c->priority, c->allow_degraded, &t->rt, &t->warn)) || a->check) {
		free(t);
		return rc;
	}
	int cpu = (int)c->cpu;
	t->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (t->efd < 0)
		snprintf(err, sizeof(err), "eventfd: %s", strerror(errno));
	if (err[0] || cartt_connect(t, err, sizeof(err)) ||
	    sink_init(&t->sink, (int)c->json_fd, &cpu, 1, c->threshold_ns, (uint64_t)c->max_events, c->raw != NULL,
		      err, sizeof(err)) ||
	    (c->raw && sink_raw_open(&t->sink, c->raw, (uint64_t)c->raw_max_bytes, err, sizeof(err)))) {
		rc = log_error("%s", err[0] ? err : "out of memory");
		cartt_cleanup(t);
		return rc;
	}
	t->sink.summary_extra = cartt_summary_extra;
	t->sink.summary_ctx = t;
	if (!c->no_dma_latency)
		rt_acquire_dma_latency(&t->dma_fd, &t->rt, &t->warn);
	if (t->rt.policy != RT_OTHER)
		rt_acquire_rttime_limit(RTTIME_SOFT_US, RTTIME_HARD_US, &t->warn);
	if ((rc = sink_begin(&t->sink, "ca-rtt", a, cartt_params, t, &t->rt, &t->warn, t->period_ns))) {
		cartt_cleanup(t);
		return rc;
	}

	u128 wd_s = ((u128)t->total * (uint64_t)t->period_ns) / NS_PER_S + 1 + WATCHDOG_MARGIN_S +
		    (uint64_t)(c->timeout_ns / NS_PER_S);
	alarm(wd_s < 0x7fffffff ? (unsigned)wd_s : 0x7fffffff);
	t->first_deadline_ns = mono_now_ns() + START_DELAY_NS;
	int e = rt_thread_start(&t->tid, t->rt.policy, t->rt.priority, cpu, THREAD_STACK_BYTES, cartt_thread, t);
	bool start_failed = e != 0;
	if (start_failed) {
		snprintf(err, sizeof(err), "cannot start the put thread on CPU %d: %s", cpu, strerror(e));
	} else {
		sink_pace_start(&t->sink, SINK_POLL_NS, c->progress_ms);
		while (!atomic_load(&t->done) && !sink_stopping(&t->sink))
			sink_pace(&t->sink);
		pthread_join(t->tid, NULL);
	}
	alarm(0);
	if (t->late)
		sink_warning(&t->sink, "%" PRIu64 " echoes came after the next put was due (the next put was sent late)",
			     t->late);
	if (!sink_end_early(&t->sink, start_failed ? err : NULL, &rc)) {
		if (t->timed_out) {
			rc = sink_finish(&t->sink, 4, "incomplete", t->fail);
			log_error("%s", t->fail);
		} else if (t->fail[0]) {
			rc = sink_finish(&t->sink, 1, "error", t->fail);
			log_error("%s", t->fail);
		} else {
			rc = sink_finish(&t->sink, -1, NULL, NULL);
		}
	}
	cartt_cleanup(t);
	return rc;
}

const struct probe probe_cartt = {
	.name = "ca-rtt",
	.summary = "Channel Access round trip: ca_put of a sequence number to the monitor event carrying it back "
		   "(through the IOC's record processing)",
	.opts = cartt_opts,
	.nopts = CARTT_NOPTS,
	.run = cartt_run,
};
