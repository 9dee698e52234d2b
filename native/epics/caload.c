/* rtqual-ca's load commands (not probes: no latency stream, JSON Lines on
 * stdout with a ready line and a summary):
 *   put      HZ puts per second in total, round-robin over field A of P load:0000..N-1
 *   monitor  DBE_VALUE monitors on the same records, events counted
 *   repeater libca's CA repeater on EPICS_CA_REPEATER_PORT
 * All run until SIGINT/SIGTERM or --duration. */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cadef.h>

#include "cautil.h"
#include "rtqual/emit.h"
#include "rtqual/log.h"
#include "rtqual/opts.h"
#include "rtqual/rtenv.h"
#include "rtqual/timens.h"
#include "rtqual/u128.h"

#define LOAD_RECORD_FMT "%sload:%04d"
#define LOAD_PUT_FIELD ".A" /* pp(TRUE) in calc: a put processes the record */
#define MAX_BATCH 10000        /* puts per wake-up at most (then the rate falls behind) */
#define FLUSH_EVERY 100        /* puts between ca_flush_io inside a batch */
#define IDLE_POLL_NS (100 * NS_PER_MS)

struct load_cfg {
	const char *prefix;
	int64_t records, rate_hz, duration_ns, timeout_ns, progress_ms;
};

#define F(x) offsetof(struct load_cfg, x)
static const struct opt_def put_opts[] = {
	{"prefix", OPT_STRING, F(prefix), 0, 0, NULL, NULL, "record name prefix P (records P load:0000 ...)"},
	{"records", OPT_INT, F(records), 1, 100000, "1000", NULL, "number of load records N"},
	{"rate", OPT_INT, F(rate_hz), 1, 1000000, "1000", NULL, "puts per second in total, Hz (absolute deadlines)"},
	{"duration", OPT_DURATION, F(duration_ns), NS_PER_MS, 365 * 24 * 3600 * NS_PER_S, NULL, NULL,
	 "stop after this long (default: at SIGINT/SIGTERM)"},
	{"timeout", OPT_DURATION, F(timeout_ns), NS_PER_MS, 600 * NS_PER_S, "10s", NULL, "connection timeout"},
	{"progress-ms", OPT_INT, F(progress_ms), 0, 3600000, "0", NULL, "period of progress lines, ms (0: none)"},
};
static const struct opt_def monitor_opts[] = {
	{"prefix", OPT_STRING, F(prefix), 0, 0, NULL, NULL, "record name prefix P (records P load:0000 ...)"},
	{"records", OPT_INT, F(records), 1, 100000, "1000", NULL, "number of load records N"},
	{"duration", OPT_DURATION, F(duration_ns), NS_PER_MS, 365 * 24 * 3600 * NS_PER_S, NULL, NULL,
	 "stop after this long (default: at SIGINT/SIGTERM)"},
	{"timeout", OPT_DURATION, F(timeout_ns), NS_PER_MS, 600 * NS_PER_S, "10s", NULL, "connection timeout"},
	{"progress-ms", OPT_INT, F(progress_ms), 0, 3600000, "0", NULL, "period of progress lines, ms (0: none)"},
};
#undef F
#define NOPTS(t) ((int)(sizeof(t) / sizeof(t[0])))

struct load {
	struct load_cfg cfg;
	const char *role;
	int n;
	char **names;
	chid *ch;
	evid *sub;
	int64_t t0;
	uint64_t puts, errors;
	_Atomic uint64_t events;
	uint64_t events_at_ready;
};

/* One JSON line on stdout: type, role, then the role's counters. */
static void load_line(struct load *l, const char *type, bool final)
{
	struct jw w;
	double el = (double)(mono_now_ns() - l->t0) / NS_PER_S;
	jw_init(&w);
	jw_obj_begin(&w, NULL);
	jw_str(&w, "type", type);
	jw_str(&w, "role", l->role);
	jw_i64(&w, "records", l->n);
	if (strcmp(type, "ready") == 0) {
		jw_i64(&w, "pid", getpid());
		jw_str(&w, "prefix", l->cfg.prefix);
	} else if (l->sub) {
		int conn = 0;
		for (int i = 0; i < l->n; i++)
			conn += ca_state(l->ch[i]) == cs_conn;
		uint64_t ev = atomic_load(&l->events) - l->events_at_ready;
		jw_i64(&w, "connected", conn);
		jw_u64(&w, "events", ev);
		jw_double(&w, "elapsed_s", el);
		jw_double(&w, "rate_hz", el > 0 ? (double)ev / el : 0);
	} else {
		if (final)
			jw_i64(&w, "requested_rate_hz", l->cfg.rate_hz);
		jw_u64(&w, "puts", l->puts);
		jw_u64(&w, "errors", l->errors);
		jw_double(&w, "elapsed_s", el);
		jw_double(&w, "rate_hz", el > 0 ? (double)l->puts / el : 0);
	}
	jw_obj_end(&w);
	jw_write_line(&w, 1);
	jw_free(&w);
}

static void monitor_event(struct event_handler_args a)
{
	struct load *l = a.usr;
	if (a.status == ECA_NORMAL)
		atomic_fetch_add_explicit(&l->events, 1, memory_order_relaxed);
}

/* The put loop: deadline k at t0 + k/rate; every wake-up puts what is due
 * (at most MAX_BATCH) and flushes. Ends at a signal or the duration. */
static void put_loop(struct load *l)
{
	int64_t period = NS_PER_S / l->cfg.rate_hz, rem = NS_PER_S % l->cfg.rate_hz;
	int64_t end = l->cfg.duration_ns ? l->t0 + l->cfg.duration_ns : INT64_MAX;
	int64_t next_progress = l->cfg.progress_ms ? l->t0 + l->cfg.progress_ms * NS_PER_MS : INT64_MAX;
	uint64_t k = 0; /* puts done = index of the next deadline */
	while (!rt_signals_caught()) {
		int64_t now = mono_now_ns();
		if (now >= end)
			break;
		/* deadlines passed: floor((now - t0) * rate / 1 s) + 1 */
		u128 passed = u128_mul_u64_u64((uint64_t)(now - l->t0), (uint64_t)l->cfg.rate_hz); /* now >= t0 */
		uint64_t due = u128_divmod_u64(passed, NS_PER_S, NULL).lo + 1;
		for (int b = 0; k < due && b < MAX_BATCH; b++, k++) {
			double v = (double)k;
			if (ca_put(DBR_DOUBLE, l->ch[k % (uint64_t)l->n], &v) == ECA_NORMAL)
				l->puts++;
			else
				l->errors++;
			if (b % FLUSH_EVERY == FLUSH_EVERY - 1)
				ca_flush_io();
		}
		ca_flush_io();
		if (now >= next_progress) {
			load_line(l, "progress", false);
			next_progress += l->cfg.progress_ms * NS_PER_MS;
		}
		u128 rem_ns = u128_divmod_u64(u128_mul_u64_u64(k, (uint64_t)rem), (uint64_t)l->cfg.rate_hz, NULL);
		int64_t next = l->t0 + (int64_t)k * period + (int64_t)rem_ns.lo;
		sleep_until_ns(next < end ? next : end);
	}
}

/* Idle until a signal or the duration; progress lines if asked. */
static void monitor_loop(struct load *l)
{
	int64_t end = l->cfg.duration_ns ? l->t0 + l->cfg.duration_ns : INT64_MAX;
	int64_t next_progress = l->cfg.progress_ms ? l->t0 + l->cfg.progress_ms * NS_PER_MS : INT64_MAX;
	while (!rt_signals_caught()) {
		int64_t now = mono_now_ns();
		if (now >= end)
			break;
		if (now >= next_progress) {
			load_line(l, "progress", false);
			next_progress += l->cfg.progress_ms * NS_PER_MS;
		}
		int64_t wake = now + IDLE_POLL_NS;
		wake = wake < end ? wake : end;
		sleep_until_ns(wake < next_progress ? wake : next_progress);
	}
}

static void load_free(struct load *l)
{
	if (l->names)
		for (int i = 0; i < l->n; i++)
			free(l->names[i]);
	free(l->names);
	free(l->ch);
	free(l->sub);
}

/* `rtqual-ca put|monitor [options]`. */
int ca_load_main(const char *role, int argc, char **argv)
{
	bool mon = strcmp(role, "monitor") == 0;
	const struct opt_def *defs = mon ? monitor_opts : put_opts;
	int nopts = mon ? NOPTS(monitor_opts) : NOPTS(put_opts);
	const char *summary = mon ? "CA load client: DBE_VALUE monitors on P load:0000..N-1, events counted"
				  : "CA load client: puts at --rate in total, round-robin over P load:0000..N-1";
	struct load l = {.role = role};
	char err[512] = "";
	uint64_t given = 0;
	for (int i = 0; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			opts_help(stdout, role, summary, defs, nopts);
			return 0;
		}
	if (opts_parse(defs, nopts, &l.cfg, argc, argv, &given, err, sizeof(err)))
		return log_error("%s", err);
	if (!l.cfg.prefix)
		return log_error("%s: --prefix P is required (the IOC's record prefix)", role);
	l.n = (int)l.cfg.records;
	l.names = calloc((size_t)l.n, sizeof(char *));
	l.ch = calloc((size_t)l.n, sizeof(chid));
	l.sub = mon ? calloc((size_t)l.n, sizeof(evid)) : NULL;
	if (!l.names || !l.ch || (mon && !l.sub)) {
		load_free(&l);
		return log_error("out of memory");
	}
	for (int i = 0; i < l.n; i++)
		if (asprintf(&l.names[i], LOAD_RECORD_FMT "%s", l.cfg.prefix, i, mon ? "" : LOAD_PUT_FIELD) < 0) {
			l.names[i] = NULL;
			load_free(&l);
			return log_error("out of memory");
		}
	rt_signals_install();
	if (cau_context(true, err, sizeof(err)) ||
	    cau_connect(l.ch, l.n, l.names, (double)l.cfg.timeout_ns / NS_PER_S, err, sizeof(err))) {
		load_free(&l);
		return log_error("%s: %s", role, err);
	}
	for (int i = 0; mon && i < l.n; i++) {
		int st = ca_create_subscription(DBR_DOUBLE, 1, l.ch[i], DBE_VALUE, monitor_event, &l, &l.sub[i]);
		if (st != ECA_NORMAL) {
			ca_context_destroy();
			load_free(&l);
			return log_error("monitor %s: %s", l.names[i], ca_message(st));
		}
	}
	ca_flush_io();
	l.t0 = mono_now_ns();
	l.events_at_ready = atomic_load(&l.events);
	load_line(&l, "ready", false);
	if (mon)
		monitor_loop(&l);
	else
		put_loop(&l);
	load_line(&l, "summary", true);
	ca_context_destroy();
	load_free(&l);
	return 0;
}

/* `rtqual-ca repeater`: libca's repeater in a thread until SIGINT/SIGTERM. */
int ca_repeater_main(int argc, char **argv)
{
	unsigned port = cau_repeater_port();
	if (argc > 0 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0)) {
		printf("usage: rtqual-ca repeater\nCA repeater on EPICS_CA_REPEATER_PORT (now %u) until SIGINT/SIGTERM\n",
		       port);
		return 0;
	}
	if (argc > 0)
		return log_error("repeater: no options (the port is EPICS_CA_REPEATER_PORT), got '%s'", argv[0]);
	if (cau_port_busy(port))
		return log_error("repeater: UDP port %u is in use (another CA repeater?)", port);
	rt_signals_install();
	if (cau_repeater_start())
		return log_error("repeater: libca's repeater did not bind UDP port %u", port);
	printf("{\"type\":\"ready\",\"role\":\"repeater\",\"port\":%u,\"pid\":%d}\n", port, (int)getpid());
	fflush(stdout);
	while (!rt_signals_caught())
		sleep_until_ns(mono_now_ns() + IDLE_POLL_NS);
	return 0;
}
