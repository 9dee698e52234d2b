/* ca-rtt probe: Channel Access round trip through an IOC. One pinned thread
 * puts a double carrying a sequence number to --put (ca_put + ca_flush_io)
 * on absolute deadlines at --rate; the monitor (DBE_VALUE) of --monitor
 * delivers that same value in libca's receive thread, which timestamps it and
 * hands the time over an eventfd. Sample = t_echo - t_put (CLOCK_MONOTONIC,
 * t_put read just before ca_put). One put in flight; an echo missing for
 * --timeout ends the run (status 4, incomplete). The loop is the stimulus ->
 * response harness (stimresp.h); this file is its CA transport. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cadef.h>
#include <epicsVersion.h>

#include "cautil.h"
#include "rtqual/log.h"
#include "rtqual/stimresp.h"

#define NO_SEQ (-1)

struct cartt {
	struct stimresp_echo e; /* first: the options parse into the whole struct */
	chid put_ch, mon_ch;
	evid sub;
	struct ca_client_context *cactx;
	/* between the monitor callback and the put thread */
	_Atomic int64_t want;   /* sequence number awaited, NO_SEQ: none */
	_Atomic int64_t t_echo; /* when it arrived */
	_Atomic uint64_t stray; /* monitor values that were not the awaited one */
};

static const struct opt_def cartt_opts[] = {
	STIMRESP_ECHO_OPTION_ROWS("PV written with ca_put (a double carrying a sequence number)",
				  "PV whose DBE_VALUE monitor echoes the put value (default: the --put PV)"),
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
		if (write(t->e.h.answer_fd, &one, sizeof(one)) != (ssize_t)sizeof(one))
			atomic_fetch_add(&t->stray, 1);
	} else {
		atomic_fetch_add(&t->stray, 1);
	}
}

static int cartt_thread_init(struct stimresp *h)
{
	if (ca_attach_context(((struct cartt *)h)->cactx) == ECA_NORMAL)
		return 0;
	snprintf(h->fail, sizeof(h->fail), "cannot attach the CA context to the put thread");
	return -1;
}

static int cartt_send(struct stimresp *h, uint64_t seq, int64_t *t_send)
{
	struct cartt *t = (struct cartt *)h;
	double v = (double)(t->e.base + (int64_t)seq);
	atomic_store(&t->want, t->e.base + (int64_t)seq);
	*t_send = mono_now_ns();
	int st = ca_put(DBR_DOUBLE, t->put_ch, &v);
	if (st == ECA_NORMAL)
		st = ca_flush_io();
	if (st != ECA_NORMAL) {
		snprintf(h->fail, sizeof(h->fail), "ca_put %s: %s", t->e.put, ca_message(st));
		return -1;
	}
	return 0;
}

static enum stimresp_rx cartt_receive(struct stimresp *h, int64_t *t_answer)
{
	uint64_t n;
	if (read(h->answer_fd, &n, sizeof(n)) != (ssize_t)sizeof(n))
		return SR_MORE;
	*t_answer = atomic_load(&((struct cartt *)h)->t_echo);
	return SR_ANSWER;
}

static void cartt_params(struct jw *w, const void *ctx)
{
	const struct cartt *t = ctx;
	stimresp_echo_params(w, &t->e);
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
	stimresp_echo_summary(w, &t->e, atomic_load(&t->stray));
}

/* The eventfd, the preemptive CA context (libca's threads keep libca's own
 * priorities, as in any CA client: as root SCHED_FIFO 1-10), the channels,
 * the start value and the monitor. */
static int cartt_open(struct stimresp *h, char *err, size_t len)
{
	struct cartt *t = (struct cartt *)h;
	h->answer_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (h->answer_fd < 0)
		return snprintf(err, len, "eventfd: %s", strerror(errno)), -1;
	if (cau_context(true, err, len))
		return -1;
	t->cactx = ca_current_context();
	double tmo = (double)h->cfg.timeout_ns / NS_PER_S;
	char *names[2] = {(char *)t->e.put, (char *)t->e.monitor};
	bool same = strcmp(t->e.put, t->e.monitor) == 0;
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
	if (st != ECA_NORMAL)
		return snprintf(err, len, "ca_get %s: %s", t->e.monitor, ca_message(st)), -1;
	t->e.base = isfinite(v0) && fabs(v0) < 1e12 ? (int64_t)floor(v0) + 1 : 1;
	if (t->e.base < 1)
		t->e.base = 1;
	atomic_store(&t->want, NO_SEQ);
	st = ca_create_subscription(DBR_DOUBLE, 1, t->mon_ch, DBE_VALUE, cartt_event, t, &t->sub);
	if (st == ECA_NORMAL)
		st = ca_flush_io();
	if (st != ECA_NORMAL)
		return snprintf(err, len, "monitor %s: %s", t->e.monitor, ca_message(st)), -1;
	return 0;
}

static void cartt_close(struct stimresp *h)
{
	if (((struct cartt *)h)->cactx)
		ca_context_destroy();
	if (h->answer_fd >= 0)
		close(h->answer_fd);
}

static const struct stimresp_ops cartt_ops = {
	STIMRESP_ECHO_OPS, .open = cartt_open, .close = cartt_close, .thread_init = cartt_thread_init,
	.send = cartt_send, .receive = cartt_receive, .summary_extra = cartt_summary_extra,
};

const struct probe probe_cartt = {
	.name = "ca-rtt",
	.summary = "Channel Access round trip: ca_put of a sequence number to the monitor event carrying it back "
		   "(through the IOC's record processing)",
	.opts = cartt_opts, .nopts = (int)(sizeof(cartt_opts) / sizeof(cartt_opts[0])),
	.service = &(const struct probe_service){"ioc", "ca-rtt", STIMRESP_PUT_ECHO_FIXED, "put"},
	.state_bytes = sizeof(struct cartt), .family = &cartt_ops, .params = cartt_params,
	STIMRESP_HOOKS,
};
