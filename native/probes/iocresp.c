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
 * stimulus -> response harness (stimresp.h); this file is its transport.
 *
 * With --gpio-stim and --gpio-resp (a board whose pins are wired: our
 * stimulus line to the IOC's input line, the IOC's output line to our
 * response line) the stimulus is a toggle of the stimulus line and the
 * response is the edge on the response line, timestamped by the kernel
 * (character device v2 ABI, CLOCK_MONOTONIC); --out then carries the IOC's
 * four times (its bo's times= FIFO), t_stim being the kernel's timestamp of
 * the input edge. The stage "drive" (t_stim - our toggle) is added: the
 * stimulus ioctl and the wire. Untested on hardware (this VM has no GPIO);
 * tests/epics/fake_gpio.c runs the path against a double of the chip.
 *
 * With --uio /dev/uioN and --trigger BAR:OFFSET=VALUE (the IOC's bi reads the same UIO device: its
 * input uio:DEV) the stimulus is a device interrupt rtqual raises with a register write (t_stim: just
 * before it); the IOC's reader wakes when the UIO read returns (t_wake), and the kernel's stages of the
 * interrupt (uiostage.h: hard IRQ -> IRQ thread -> the IOC's reader running) from rtqual's tracefs
 * instance split the wake stage. Each interrupt is acknowledged (--ack) and unmasked the UIO way before
 * the next trigger, and once more at the end: nothing is left masked (docs/interrupts.md).
 * Without --trigger (passive: the interrupt comes from outside) the harness writes nothing: each request
 * only acknowledges and unmasks, and a sample's t0 is the kernel's irq_handler_entry of the IRQ (read from
 * the trace once the IOC answered: one without it is `unmatched`, not a sample); --duration runs from the
 * warm-up's end. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/gpio.h>

#include "rtqual/log.h"
#include "rtqual/stimresp.h"
#include "rtqual/uiostage.h"

#define NSTAGES 5
#define DRIVE 0 /* the stage only GPIO has (FIFO: t_stim is the stimulus itself) */

static const char *const stage_names[NSTAGES] = {"drive", "wake", "dispatch", "chain", "return"};

struct iocresp {
	struct stimresp h; /* first: the options parse into the whole struct */
	const char *in, *out, *gpio_stim, *gpio_resp;
	int fd_in;           /* FIFO: the IOC's input; GPIO: our stimulus line */
	int fd_out, fd_edge; /* the times FIFO; GPIO: our response line (else -1) */
	bool gpio;
	__u64 level;         /* GPIO: the stimulus line's value */
	int64_t stim;        /* the stimulus in flight */
	int64_t resp[4];     /* the IOC's times being read */
	size_t got;          /* bytes of them so far */
	int64_t t_edge;      /* GPIO: the response edge (0: not yet) */
	uint64_t stray_edges;
	struct hist *stage[NSTAGES];
	uint64_t stage_over[NSTAGES];
	/* --uio: the device, its registers, the kernel's stages, the sample whose stages are read next */
	const char *uio, *trigger, *ack;
	int64_t irq;
	struct uio_dev dev;
	struct uio_reg trig, ackr;
	bool have_ack, uio_open;
	struct uio_stages st;
	pid_t reader;
	int64_t events_at_open;
	bool pending;
	int64_t pend_stim, pend_resp[4], pend_answer;
	uint64_t uio_samples;
	/* passive: the answered interrupt's points (first_missing: the first not in the trace) */
	int64_t pts[IRQ_POINTS];
	int first_missing;
	int64_t events_at_send, events_at_end; /* the device's count at the last unmask, at the loop's end */
	uint64_t unmatched;                      /* answered interrupts without their irq_handler_entry */
	uint64_t stale; /* responses to an interrupt before our first unmask (the run's start), dropped */
};

#define F(x) offsetof(struct iocresp, x)
static const struct opt_def iocresp_opts[] = {
	{"in", OPT_PATH, F(in), 0, 0, NULL, NULL, "FIFO the IOC reads (stimuli: one i64 CLOCK_MONOTONIC time)"},
	{"out", OPT_PATH, F(out), 0, 0, NULL, NULL,
	 "FIFO the IOC writes (responses: i64 t_stim, t_wake, t_process, t_out)"},
	{"gpio-stim", OPT_STRING, F(gpio_stim), 0, 0, NULL, NULL,
	 "/dev/gpiochipN:LINE toggled for each stimulus, wired to the IOC's input line (replaces --in)"},
	{"gpio-resp", OPT_STRING, F(gpio_resp), 0, 0, NULL, NULL,
	 "/dev/gpiochipN:LINE wired from the IOC's output line: its edges are the responses (--out: the IOC's times)"},
	{"uio", OPT_PATH, F(uio), 0, 0, NULL, NULL,
	 "the UIO device (/dev/uioN) the IOC's bi reads (its input uio:DEV); the stimulus is --trigger (replaces --in)"},
	{"trigger", OPT_STRING, F(trigger), 0, 0, NULL, NULL,
	 "uio, active: BAR:OFFSET=VALUE, the 32-bit register write that raises the device's interrupt (e.g. 0:0x60=1; "
	 "t0 just before it); without it passive: the interrupt comes from outside, t0 = the kernel's irq_handler_entry"},
	{"ack", OPT_STRING, F(ack), 0, 0, NULL, NULL,
	 "uio: BAR:OFFSET=VALUE written after each response to acknowledge the device (e.g. 0:0x64=1)"},
	{"irq", OPT_INT, F(irq), 0, 1 << 20, NULL, NULL, "uio: the device's IRQ (default: from sysfs or /proc/interrupts)"},
	{"rate", OPT_INT, SR_F(rate_hz), 1, 100000, "50", NULL, "stimuli per second, Hz (absolute deadlines)"},
	{"cpu", OPT_INT, SR_F(cpu), 0, CPULIST_MAX - 1, NULL, NULL,
	 "CPU of the stimulus/response thread (default: the first CPU of our affinity mask)"},
	RUN_OPT_POLICY(SR_F, "scheduling policy of the harness thread"),
	RUN_OPT_PRIORITY(SR_F, "80", "RT priority of the harness thread"),
	RUN_OPTS_LENGTH(SR_F, "measured time after warm-up (stimuli = duration x rate)", 1LL << 40,
		"measured stimuli; replaces --duration", "10", "stimuli discarded before measuring"),
	RUN_OPT_THRESHOLD(SR_F, "100us", "total latencies above it emit event records; stages above it are counted"),
	{"timeout", OPT_DURATION, SR_F(timeout_ns), NS_PER_MS, 600 * NS_PER_S, "5s", NULL,
	 "a stimulus unanswered for this long ends the run (status 1)"},
	STIMRESP_COMMON_OPTS,
};
#undef F

/* Drop what is waiting on a non-blocking fd (a stale response). */
static void drain(int fd)
{
	char junk[512];
	while (fd >= 0 && read(fd, junk, sizeof(junk)) > 0)
		;
}

/* The wake/dispatch/chain/return stages of one response (r: the IOC's four times); with the kernel's
 * stages, wake is theirs (from_stage: the first of the IOC's own stages recorded). */
static void ioc_stages(struct iocresp *t, const int64_t r[4], int64_t t_stim, int64_t t_resp, int from_stage)
{
	int64_t st[NSTAGES] = {r[0] - t_stim, r[1] - r[0], r[2] - r[1], r[3] - r[2], t_resp - r[3]};
	for (int k = from_stage; k < NSTAGES; k++) {
		hist_record(t->stage[k], st[k]);
		if (st[k] > t->h.cfg.out.threshold_ns)
			t->stage_over[k]++;
		if (t->uio && t->st.tr) /* the staged sample's stages sum to its total */
			t->st.staged_sum_ns += st[k];
	}
	if (t->uio && t->st.tr)
		t->st.staged_total_ns += t_resp - r[1];
}

/* --uio: the last measured sample's kernel stages, from the trace read now (just before the next trigger,
 * or at the end: the IRQ's CPU had not always made its events readable right after the response). Only a
 * sample with every point gets its stages (the interrupt's, then dispatch, chain, return: they sum to
 * its total); without the trace every sample gets wake, dispatch, chain, return. */
static void uio_pending_stages(struct iocresp *t)
{
	t->pending = false;
	if (!t->st.tr)
		ioc_stages(t, t->pend_resp, t->pend_stim, t->pend_answer, DRIVE + 1);
	else if (uio_stages_later(&t->st, t->pend_stim, t->pend_resp[1]))
		ioc_stages(t, t->pend_resp, t->pend_stim, t->pend_answer, DRIVE + 2);
}

/* The stimulus: FIFO, its own time (one i64, < PIPE_BUF: atomic); GPIO, a toggle of our line. */
static int iocresp_send(struct stimresp *h, uint64_t seq, int64_t *t_send)
{
	struct iocresp *t = (struct iocresp *)h;
	t->got = 0;
	t->t_edge = 0;
	if (t->uio && h->passive) { /* the interrupt comes from outside: acknowledge, unmask, wait */
		if (t->have_ack)
			uio_write_reg(&t->dev, &t->ackr);
		t->events_at_send = uio_event_count(&t->dev);
		if (seq == 0) /* the run's interrupts are those after our first unmask */
			t->events_at_open = t->events_at_send;
		t->stim = *t_send = mono_now_ns(); /* its trace's entry is after it (the line was masked) */
		if (uio_unmask(&t->dev) == 0)
			return 0;
	} else if (t->uio) {
		if (t->pending)
			uio_pending_stages(t);
		if (t->have_ack)
			uio_write_reg(&t->dev, &t->ackr);
		if (uio_unmask(&t->dev) == 0) {
			t->stim = *t_send = mono_now_ns();
			uio_write_reg(&t->dev, &t->trig);
			return 0;
		}
	} else if (t->gpio) {
		drain(t->fd_edge);
		t->level ^= 1;
		struct gpio_v2_line_values v = {.bits = t->level, .mask = 1};
		t->stim = *t_send = mono_now_ns();
		if (ioctl(t->fd_in, GPIO_V2_LINE_SET_VALUES_IOCTL, &v) == 0)
			return 0;
	} else {
		t->stim = *t_send = mono_now_ns();
		if (write(t->fd_in, &t->stim, sizeof(t->stim)) == (ssize_t)sizeof(t->stim))
			return 0;
	}
	snprintf(h->fail, sizeof(h->fail), "stimulus on %s: %s", t->uio ? t->uio : t->gpio ? t->gpio_stim : t->in,
		 strerror(errno));
	return -1;
}

/* Read what there is of the response; *t_answer: when it came (FIFO: its last byte read; GPIO: the
 * kernel's timestamp of the response edge, the IOC's times read too). */
static enum stimresp_rx iocresp_receive(struct stimresp *h, int64_t *t_answer)
{
	struct iocresp *t = (struct iocresp *)h;
	struct gpio_v2_line_event ev;
	ssize_t n;
	while (t->gpio && (n = read(t->fd_edge, &ev, sizeof(ev))) == (ssize_t)sizeof(ev)) {
		if (t->t_edge)
			t->stray_edges++; /* a second edge for one stimulus: a bouncing or noisy wire */
		else
			t->t_edge = (int64_t)ev.timestamp_ns;
	}
	n = read(t->fd_out, (char *)t->resp + t->got, sizeof(t->resp) - t->got);
	*t_answer = t->gpio ? t->t_edge : mono_now_ns();
	if (n < 0 && errno != EAGAIN && errno != EINTR) {
		snprintf(h->fail, sizeof(h->fail), "read %s: %s", t->out, strerror(errno));
		return SR_FAIL;
	}
	if (n > 0)
		t->got += (size_t)n;
	if (t->got < sizeof(t->resp) || (t->gpio && !t->t_edge))
		return SR_MORE;
	if (t->uio && h->passive && t->resp[1] < t->stim) { /* an interrupt before our unmask (the run's start) */
		t->got = 0;
		t->stale++;
		return SR_MORE;
	}
	if (t->uio) /* the IOC's reader woke after our trigger (it cannot know the trigger's time) */
		return t->resp[1] >= t->stim && t->resp[3] <= *t_answer ? SR_ANSWER : SR_MISMATCH;
	if (t->gpio) /* the IOC's input edge lies between our toggle and its response edge */
		return t->resp[0] >= t->stim && t->resp[3] <= t->t_edge ? SR_ANSWER : SR_MISMATCH;
	return t->resp[0] == t->stim ? SR_ANSWER : SR_MISMATCH;
}

/* Passive: the answered interrupt's t0, the kernel's irq_handler_entry between our unmask and the IOC
 * reader's wake-up (the trace read now: the IOC answered, its events are long written); none: unmatched. */
static bool iocresp_answered(struct stimresp *h, int64_t *t_send, int64_t t_answer)
{
	struct iocresp *t = (struct iocresp *)h;
	(void)t_answer;
	if (!h->passive)
		return true;
	t->first_missing = uio_stages_points(&t->st, t->stim, t->resp[1], t->pts);
	if (t->pts[IRQ_ENTRY] < 0) {
		t->unmatched++;
		return false;
	}
	*t_send = t->pts[IRQ_ENTRY];
	return true;
}

/* The stages of a measured response. */
static void iocresp_measured(struct stimresp *h, int64_t t_stim, int64_t t_resp)
{
	struct iocresp *t = (struct iocresp *)h;
	if (t->uio && h->passive) { /* the trace read once answered: its stages now */
		t->uio_samples++;
		if (t->first_missing < IRQ_POINTS) {
			t->st.point_missing[t->first_missing]++;
			return;
		}
		uio_stages_record(&t->st, t->pts, t_stim, t->resp[1]);
		ioc_stages(t, t->resp, t_stim, t_resp, DRIVE + 2);
		return;
	}
	if (t->uio) { /* its stages once the trace has its events (uio_pending_stages) */
		t->pending = true;
		t->pend_stim = t_stim;
		t->pend_answer = t_resp;
		memcpy(t->pend_resp, t->resp, sizeof(t->resp));
		t->uio_samples++;
		return;
	}
	ioc_stages(t, t->resp, t_stim, t_resp, t->gpio ? DRIVE : DRIVE + 1);
}

/* --uio, in the harness thread: the reader's events on; at the end the last sample's stages. */
static int iocresp_thread_init(struct stimresp *h)
{
	struct iocresp *t = (struct iocresp *)h;
	if (t->uio && t->st.tr)
		uio_stages_reader(&t->st, t->reader);
	if (t->uio && h->passive && !t->st.tr) { /* no t0 without the reader's trace */
		snprintf(h->fail, sizeof(h->fail), "passive input: %.200s", t->st.trace_note);
		return -1;
	}
	return 0;
}

static void iocresp_thread_end(struct stimresp *h)
{
	struct iocresp *t = (struct iocresp *)h;
	if (t->uio)
		t->events_at_end = uio_event_count(&t->dev);
	if (t->uio && h->passive && h->timed_out) { /* what was seen, and whether the interrupt came at all */
		char d[32];
		int64_t raised = t->events_at_end - t->events_at_open;
		bool came = t->events_at_end > t->events_at_send;
		snprintf(h->fail, sizeof(h->fail), "%s %s (IRQ %d) within --timeout %s: %" PRId64 " raised, %" PRIu64
			 " samples, %" PRIu64 " warm-up, %" PRIu64 " unmatched",
			 came ? "no response from the IOC to the interrupt of" : "no interrupt from", t->uio, t->dev.irq,
			 duration_format(h->cfg.timeout_ns, d, sizeof(d)), raised, t->uio_samples, h->warm, t->unmatched);
	}
	if (!t->pending)
		return;
	sleep_until_ns(mono_now_ns() + 10 * NS_PER_MS); /* the last sample's trace, readable by now */
	uio_pending_stages(t);
}

static void iocresp_params(struct jw *w, const void *ctx)
{
	const struct iocresp *t = ctx;
	jw_str(w, "in", t->in);
	jw_str(w, "out", t->out);
	jw_str(w, "gpio_stim", t->gpio_stim);
	jw_str(w, "gpio_resp", t->gpio_resp);
	if (t->uio) {
		jw_str(w, "uio", t->uio);
		jw_str(w, "uio_name", t->dev.name);
		jw_str(w, "mode", t->h.passive ? "passive" : "active");
		jw_str(w, "t0", t->h.passive ? "the hard interrupt's entry (passive): the kernel's irq_handler_entry of the IRQ"
					     : "just before the trigger write");
		jw_str(w, "trigger", t->trigger);
		jw_str(w, "ack", t->ack);
		jw_i64(w, "irq", t->dev.irq);
	}
	stimresp_params(w, &t->h, "stimuli_planned");
}

/* --uio: interrupts {raised, samples, missed, ...} (every trigger an interrupt: a sample, a warm-up one or a
 * miss), irq {number, thread, policy, priority, cpu}, the stages' notes. */
static void uio_summary(struct jw *w, const struct iocresp *t)
{
	const struct stimresp *h = &t->h;
	int64_t now = t->events_at_end ? t->events_at_end : uio_event_count(&t->dev);
	bool seen = now >= 0 && t->events_at_open >= 0;
	/* active: the triggers written; passive: the device's own count over the run */
	uint64_t raised = !h->passive ? h->sent : seen ? (uint64_t)(now - t->events_at_open) : 0;
	uint64_t accounted = t->uio_samples + h->warm;
	jw_obj_begin(w, "interrupts");
	jw_u64(w, "raised", raised);
	jw_u64(w, "samples", t->uio_samples);
	jw_u64(w, "missed", raised > accounted ? raised - accounted : 0);
	jw_u64(w, "warmup", h->warm);
	if (seen)
		jw_i64(w, "seen", now - t->events_at_open); /* the device's own count over the run */
	else
		jw_null(w, "seen");
	jw_u64(w, "unmatched", t->unmatched);
	if (h->passive)
		jw_u64(w, "stale", t->stale);
	jw_u64(w, "staged", t->st.staged);
	jw_u64(w, "reader_awake", t->st.reader_awake);
	jw_i64(w, "staged_total_ns", t->st.staged_total_ns);
	jw_i64(w, "staged_stages_ns", t->st.staged_sum_ns);
	jw_bool(w, "timed_out", h->timed_out);
	jw_obj_end(w);
	uio_stages_irq_json(w, &t->st, t->dev.irq, t->dev.name);
	jw_i64(w, "reader_tid", t->reader);
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
	if (t->gpio)
		jw_u64(w, "stray_edges", t->stray_edges);
	jw_obj_end(w);
	int from_stage = t->gpio ? DRIVE : DRIVE + 1;
	if (t->uio) {
		uio_summary(w, t);
		if (t->st.tr && !t->st.staged)
			return;
		from_stage = t->st.tr ? DRIVE + 2 : DRIVE + 1;
	}
	jw_obj_begin(w, "stages");
	if (t->uio && t->st.tr)
		uio_stages_rows(w, &t->st);
	for (int k = from_stage; k < NSTAGES; k++) {
		jw_obj_begin(w, stage_names[k]);
		sink_hist_keys(w, t->stage[k]);
		jw_u64(w, "over_threshold", t->stage_over[k]);
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

/* "/dev/gpiochipN:LINE" -> chip path and line offset. */
static int parse_gpio(const char *opt, const char *spec, char *chip, size_t len, unsigned *line)
{
	const char *colon = strrchr(spec, ':');
	char *end;
	long v = colon && colon[1] ? strtol(colon + 1, &end, 10) : -1;
	if (!colon || colon == spec || v < 0 || *end || v > 65535 || (size_t)(colon - spec) >= len)
		return log_error("--%s %s: want /dev/gpiochipN:LINE", opt, spec);
	snprintf(chip, len, "%.*s", (int)(colon - spec), spec);
	*line = (unsigned)v;
	return 0;
}

/* --uio: the device, its interrupt and IRQ thread, the registers inside their BAR (the device is opened
 * here: closed by cleanup, acknowledged and unmasked first). */
static int uio_validate(struct iocresp *t)
{
	struct stimresp *h = &t->h;
	char err[640];
	int rc;
	if (t->in || t->gpio)
		return log_error("--uio and --in or --gpio-stim: one stimulus, a device interrupt, a FIFO or a GPIO line");
	h->passive = !t->trigger;
	if (t->trigger && uio_parse_reg(t->trigger, &t->trig, err, sizeof(err)))
		return log_error("--trigger %s", err);
	if (t->ack && uio_parse_reg(t->ack, &t->ackr, err, sizeof(err)))
		return log_error("--ack %s", err);
	t->have_ack = t->ack != NULL;
	rc = uio_open(&t->dev, t->uio, run_given(&h->run, "irq") ? (int)t->irq : -1, err, sizeof(err));
	t->uio_open = t->dev.fd >= 0;
	if (!rc && t->trigger)
		rc = uio_check_reg(&t->dev, &t->trig, "trigger", err, sizeof(err));
	if (!rc && t->ack)
		rc = uio_check_reg(&t->dev, &t->ackr, "ack", err, sizeof(err));
	if (rc == 3)
		return log_skip("root, or read/write access to the UIO device and its sysfs files", "%s", err);
	if (rc)
		return log_error("%s", err);
	if (h->passive && !irqtrace_root())
		return log_error("--uio %s without --trigger (passive) takes its t0 from the kernel's irq_handler_entry: "
				 "no tracefs here (mount -t tracefs nodev /sys/kernel/tracing), or give --trigger", t->uio);
	if ((rc = check_fifo("out", t->out)))
		return rc;
	irq_thread_find(t->dev.irq, t->dev.name, &t->st.ith);
	h->timeout_incomplete = true; /* an interrupt that never comes: incomplete, with what was seen */
	snprintf(h->no_answer, sizeof(h->no_answer), "no response from the IOC to the interrupt of %s (IRQ %d)",
		 t->uio, t->dev.irq);
	return 0;
}

static int iocresp_validate(struct stimresp *h)
{
	struct iocresp *t = (struct iocresp *)h;
	char chip[256];
	unsigned line;
	int rc;
	t->gpio = t->gpio_stim || t->gpio_resp;
	if (t->uio)
		return uio_validate(t);
	if (t->trigger || t->ack || run_given(&h->run, "irq"))
		return log_error("--trigger, --ack and --irq go with a UIO input (rtqual run ioc --input uio:DEV; the probe's --uio)");
	if (t->gpio && !(t->gpio_stim && t->gpio_resp))
		return log_error("--gpio-stim and --gpio-resp go together (a stimulus line and a response line)");
	if (t->gpio && t->in)
		return log_error("--in and --gpio-stim: one stimulus, a FIFO or a GPIO line");
	if ((t->gpio && ((rc = parse_gpio("gpio-stim", t->gpio_stim, chip, sizeof(chip), &line)) ||
			 (rc = parse_gpio("gpio-resp", t->gpio_resp, chip, sizeof(chip), &line)))) ||
	    (!t->gpio && (rc = check_fifo("in", t->in))) || (rc = check_fifo("out", t->out)))
		return rc;
	if (t->gpio)
		snprintf(h->no_answer, sizeof(h->no_answer), "no response from the IOC (are %s -> the IOC's input "
			 "and the IOC's output -> %s wired?)", t->gpio_stim, t->gpio_resp);
	else
		snprintf(h->no_answer, sizeof(h->no_answer), "no response from the IOC");
	return 0;
}

/* Request one GPIO line (v2 ABI): our stimulus output, or our response input with edge events. */
static int open_gpio(const char *opt, const char *spec, __u64 flags, char *err, size_t len)
{
	char chip[256];
	unsigned line;
	parse_gpio(opt, spec, chip, sizeof(chip), &line); /* checked in validate */
	struct gpio_v2_line_request req = {.offsets = {line}, .num_lines = 1, .config.flags = flags};
	snprintf(req.consumer, sizeof(req.consumer), "rtqual");
	int fd = open(chip, O_RDWR | O_CLOEXEC);
	if (fd < 0 || ioctl(fd, GPIO_V2_GET_LINE_IOCTL, &req) < 0 || fcntl(req.fd, F_SETFL, O_NONBLOCK) < 0) {
		snprintf(err, len, "--%s %s: %s", opt, spec, strerror(errno));
		req.fd = -1;
	}
	if (fd >= 0)
		close(fd);
	return req.fd;
}

/* --uio: the kernel's stages (a trace that cannot be had leaves the total and the IOC's stages, warned),
 * the IOC's reader found (the thread of the process holding the device open), the device's count, the
 * interrupt unmasked. */
static int uio_open_trace(struct iocresp *t, char *err, size_t len)
{
	t->st.active = !t->h.passive;
	t->st.threshold_ns = t->h.cfg.out.threshold_ns;
	int rc = uio_stages_open(&t->st, t->dev.irq, true);
	if (rc < 0)
		return snprintf(err, len, "out of memory"), -1;
	t->reader = uio_reader_find(t->uio, "rtqIn");
	if (!rc && !t->reader) {
		snprintf(t->st.trace_note, sizeof(t->st.trace_note),
			 "no stages: no IOC reader thread (rtqIn*) holds %s open", t->uio);
		irqtrace_close(t->st.tr);
		free(t->st.tr);
		t->st.tr = NULL;
		rc = 1;
	}
	if (rc && t->h.passive)
		return snprintf(err, len, "--uio %s without --trigger (passive) needs the kernel's irq_handler_entry "
			 "for its t0: %s", t->uio, t->st.trace_note + strlen("no stages: ")), -1;
	if (rc)
		warnings_add(&t->h.run.warn, "%s: the total and the IOC's stages only", t->st.trace_note);
	if (t->have_ack) /* an interrupt left pending by someone else: acknowledged before we unmask */
		uio_write_reg(&t->dev, &t->ackr);
	t->events_at_open = uio_event_count(&t->dev);
	if (uio_unmask(&t->dev) < 0)
		return snprintf(err, len, "--uio %s: cannot unmask its interrupt: %s", t->uio, strerror(errno)), -1;
	return 0;
}

/* The lines (FIFOs opened read-write: the opens never block and never see
 * hang-up on Linux) and the stage histograms. */
static int iocresp_open(struct stimresp *h, char *err, size_t len)
{
	struct iocresp *t = (struct iocresp *)h;
	t->fd_in = t->fd_out = t->fd_edge = -1;
	if (t->uio) {
		if (uio_open_trace(t, err, len))
			return -1;
	} else if (t->gpio) {
		const __u64 edges = GPIO_V2_LINE_FLAG_INPUT | GPIO_V2_LINE_FLAG_EDGE_RISING | GPIO_V2_LINE_FLAG_EDGE_FALLING;
		if ((t->fd_in = open_gpio("gpio-stim", t->gpio_stim, GPIO_V2_LINE_FLAG_OUTPUT, err, len)) < 0 ||
		    (t->fd_edge = open_gpio("gpio-resp", t->gpio_resp, edges, err, len)) < 0)
			return -1;
	} else if ((t->fd_in = open(t->in, O_RDWR | O_NONBLOCK | O_CLOEXEC)) < 0) {
		return snprintf(err, len, "--in %s: %s", t->in, strerror(errno)), -1;
	}
	t->fd_out = open(t->out, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (t->fd_out < 0)
		return snprintf(err, len, "--out %s: %s", t->out, strerror(errno)), -1;
	drain(t->fd_out); /* a stale response left in the output FIFO */
	if (!t->gpio) {
		h->answer_fd = t->fd_out;
	} else { /* the answer is the edge and the IOC's times: wait for either */
		struct epoll_event e = {.events = EPOLLIN};
		if ((h->answer_fd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
		    epoll_ctl(h->answer_fd, EPOLL_CTL_ADD, t->fd_out, &e) < 0 ||
		    epoll_ctl(h->answer_fd, EPOLL_CTL_ADD, t->fd_edge, &e) < 0)
			return snprintf(err, len, "epoll: %s", strerror(errno)), -1;
	}
	for (int k = 0; k < NSTAGES; k++) {
		if (!(t->stage[k] = malloc(sizeof(struct hist))))
			return -1; /* err empty: out of memory */
		hist_reset(t->stage[k]);
		rt_pretouch(t->stage[k], sizeof(struct hist));
	}
	return 0;
}

/* Nothing left masked: the device acknowledged, its interrupt enabled, then closed. */
static void uio_close_all(struct iocresp *t)
{
	if (t->uio_open) {
		if (t->have_ack)
			uio_write_reg(&t->dev, &t->ackr);
		uio_unmask(&t->dev);
		uio_close(&t->dev);
		t->uio_open = false;
	}
	uio_stages_close(&t->st);
}

static void iocresp_close(struct stimresp *h)
{
	struct iocresp *t = (struct iocresp *)h;
	if (t->fd_in >= 0)
		close(t->fd_in);
	if (t->fd_out >= 0)
		close(t->fd_out);
	if (t->fd_edge >= 0)
		close(t->fd_edge);
	if (h->answer_fd >= 0 && h->answer_fd != t->fd_out)
		close(h->answer_fd);
	for (int k = 0; k < NSTAGES; k++)
		free(t->stage[k]);
	uio_close_all(t);
}

static const struct stimresp_ops iocresp_ops = {
	.request = "stimulus", .requests = "stimuli", .answers = "responses", .thread = "harness",
	.validate = iocresp_validate, .open = iocresp_open, .close = iocresp_close, .send = iocresp_send,
	.thread_init = iocresp_thread_init, .thread_end = iocresp_thread_end,
	.receive = iocresp_receive, .answered = iocresp_answered, .measured = iocresp_measured,
	.summary_extra = iocresp_summary_extra,
};

const struct probe probe_iocresp = {
	.name = "iocresp",
	.summary = "EPICS IOC response: stimulus written to the IOC's input FIFO to its response on the output "
		   "FIFO, with the IOC's stage times (wake, dispatch, chain, return)",
	.opts = iocresp_opts, .nopts = (int)(sizeof(iocresp_opts) / sizeof(iocresp_opts[0])),
	.service = &(const struct probe_service){.name = "ioc", .run_as = "ioc",
						  .fixed = PROBE_LIST("in", "$(IOC_IN)", "out", "$(IOC_OUT)", "uio", "$(IOC_UIO)")},
	.sections = PROBE_LIST("stages"),
	.state_bytes = sizeof(struct iocresp), .family = &iocresp_ops, .params = iocresp_params,
	STIMRESP_HOOKS,
};
