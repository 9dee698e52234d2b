/* pva-rtt probe: PV Access round trip through an IOC, like ca-rtt over
 * pvxs. One pinned thread puts a double carrying a sequence number to --put
 * on absolute deadlines at --rate; the monitor of --monitor delivers that
 * value in pvxs's worker thread, which timestamps it and hands the time over
 * an eventfd (pvac.cpp). Sample = t_echo - t_put (CLOCK_MONOTONIC). One put
 * in flight; an echo missing for --timeout ends the run (status 4). The loop
 * is the stimulus -> response harness (stimresp.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "pvac.h"
#include "rtqual/log.h"
#include "rtqual/stimresp.h"

struct pvartt {
	struct stimresp_echo e; /* first: the options parse into the whole struct */
	struct pvac *client;
};

static const struct opt_def pvartt_opts[] = {
	STIMRESP_ECHO_OPTION_ROWS("PV written with a PVA put of its value field (a double carrying a sequence number)",
				  "PV whose PVA monitor echoes the put value (default: the --put PV)"),
};

static int pvartt_send(struct stimresp *h, uint64_t seq, int64_t *t_send)
{
	struct pvartt *t = (struct pvartt *)h;
	return pvac_put(t->client, t->e.base + (int64_t)seq, t_send, h->fail, sizeof(h->fail));
}

static enum stimresp_rx pvartt_receive(struct stimresp *h, int64_t *t_answer)
{
	int r = pvac_take(((struct pvartt *)h)->client, t_answer, h->fail, sizeof(h->fail));
	return r > 0 ? SR_ANSWER : r == 0 ? SR_MORE : SR_FAIL;
}

static void pvartt_params(struct jw *w, const void *ctx)
{
	const struct pvartt *t = ctx;
	stimresp_echo_params(w, &t->e);
	jw_str(w, "pva_addr_list", getenv("EPICS_PVA_ADDR_LIST"));
	jw_str(w, "pva_server_port", getenv("EPICS_PVA_SERVER_PORT"));
	jw_str(w, "pvxs_version", pvac_version());
}

/* Summary extension (top level): put accounting, as ca-rtt. */
static void pvartt_summary_extra(struct jw *w, int slot, const void *ctx)
{
	const struct pvartt *t = ctx;
	if (slot >= 0)
		return;
	stimresp_echo_summary(w, &t->e, t->client ? pvac_stray(t->client) : 0);
}

static int pvartt_open(struct stimresp *h, char *err, size_t len)
{
	struct pvartt *t = (struct pvartt *)h;
	h->answer_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (h->answer_fd < 0)
		return snprintf(err, len, "eventfd: %s", strerror(errno)), -1;
	t->client = pvac_open(t->e.put, t->e.monitor, h->answer_fd, h->cfg.timeout_ns, &t->e.base, err, len);
	return t->client ? 0 : -1;
}

static void pvartt_close(struct stimresp *h)
{
	pvac_close(((struct pvartt *)h)->client);
	if (h->answer_fd >= 0)
		close(h->answer_fd);
}

static const struct stimresp_ops pvartt_ops = {
	STIMRESP_ECHO_OPS, .open = pvartt_open, .close = pvartt_close, .send = pvartt_send,
	.receive = pvartt_receive, .summary_extra = pvartt_summary_extra,
};

const struct probe probe_pvartt = {
	.name = "pva-rtt",
	.summary = "PV Access round trip: put of a sequence number to the monitor update carrying it back "
		   "(through the IOC's record processing, pvxs client)",
	.opts = pvartt_opts, .nopts = (int)(sizeof(pvartt_opts) / sizeof(pvartt_opts[0])),
	.service = &(const struct probe_service){"ioc", "pva-rtt", STIMRESP_PUT_ECHO_FIXED, "put"},
	.state_bytes = sizeof(struct pvartt), .family = &pvartt_ops, .params = pvartt_params,
	STIMRESP_HOOKS,
};
