/* event probe: interrupt-to-user response (APS: "bottom half to user-level
 * ISR", "total response"). A stimulus (thread, process, kernel timer or a
 * GPIO loopback edge) fires at --rate on absolute deadlines and carries its
 * CLOCK_MONOTONIC time; one pinned responder blocked in epoll_wait
 * timestamps its wake-up. sample = t_wake - t_stimulus.
 * --source uio: a device's real interrupt through Linux UIO (docs/interrupts.md):
 * the reader raises it with a register write (--trigger, active) or waits for
 * it (passive, t0 = the kernel's irq_handler_entry), with the kernel's stages. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <linux/gpio.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rtqual/cpulist.h"
#include "rtqual/lifecycle.h"
#include "rtqual/log.h"
#include "rtqual/probe.h"
#include "rtqual/rtenv.h"
#include "rtqual/sink.h"
#include "rtqual/uio.h"
#include "rtqual/uiostage.h"

#define THREAD_STACK_BYTES (256 * 1024)
#define START_DELAY_NS (50 * NS_PER_MS) /* first deadline after launch */
#define STIM_RING 65536u                /* stimulus timestamps in flight (power of 2) */
#define READ_BATCH 256                  /* records read per read() */
#define EPOLL_TIMEOUT_MS 100
#define STOP_SLICE_NS (100 * NS_PER_MS) /* longest sleep of the stimulus between looks at the stop flag */
#define STIM_REAP_NS (500 * NS_PER_MS)  /* the stimulus process ends this long after the stop, or is killed */

enum ev_source { SRC_EVENTFD, SRC_FIFO, SRC_TIMERFD, SRC_GPIO, SRC_UIO };
static const char *const source_names[] = {"eventfd", "fifo", "timerfd", "gpio", "uio", NULL};
static const char *const stages_names[] = {"auto", "off", NULL};
enum ev_stimulus { STIM_THREAD, STIM_PROCESS };
static const char *const stimulus_names[] = {"thread", "process", NULL};

struct event_cfg {
	int source, stimulus, policy;
	int64_t rate_hz, cpu, stimulus_cpu, priority, duration_ns, loops, warmup;
	const char *gpiochip;
	int64_t out_line, in_line;
	const char *uio, *trigger, *ack;
	int64_t irq, timeout_ns;
	int stages;
	bool timerlat, no_dma_latency, allow_degraded;
	struct sink_out out;
};

struct event {
	struct run run; /* first: the driver's part */
	struct event_cfg cfg;
	struct ev_shared *sh;
	int64_t period_ns;
	uint64_t total;             /* stimuli planned: warm-up + measured */
	int efd, pipe_r, pipe_w, tfd, gpio_out, gpio_in, epfd;
	pthread_t resp_tid, stim_tid;
	bool resp_started, stim_started;
	pid_t stim_pid;
	int stim_cpu;
	/* responder results, read after join */
	uint64_t answered, warm_stimuli, ring_overwritten;
	int64_t *lt, *le;           /* local stimulus / edge times, STIM_RING each */
	struct hist *edge;          /* gpio: kernel edge timestamp -> user wake-up */
	/* --source uio */
	struct uio_dev uio;
	bool uio_open, active, have_ack;
	struct uio_reg trig, ack;
	struct uio_stages st;      /* the kernel's stages (uiostage.h) */
	int64_t events_at_open;     /* the device's event count when we opened it (-1: unknown) */
	uint64_t raised, seen, coalesced, unmatched, warm_irqs, samples;
	bool timed_out;
	int wait_errno;
};

#define F(x) offsetof(struct event, cfg.x)
static const struct opt_def event_opts[] = {
	{"source", OPT_ENUM, F(source), 0, 0, "eventfd", source_names,
	 "what wakes the responder: eventfd, fifo (pipe carrying the timestamp), timerfd (kernel timer), "
	 "gpio (loopback of two lines, needs --gpiochip)"},
	{"stimulus", OPT_ENUM, F(stimulus), 0, 0, "thread", stimulus_names,
	 "who fires eventfd/fifo/gpio stimuli: a thread of this process or a forked process"},
	{"rate", OPT_INT, F(rate_hz), 1, 100000, "1000", NULL, "stimuli per second, Hz (absolute deadlines)"},
	{"cpu", OPT_INT, F(cpu), 0, CPULIST_MAX - 1, NULL, NULL,
	 "responder CPU (default: the last CPU of our affinity mask)"},
	{"stimulus-cpu", OPT_INT, F(stimulus_cpu), 0, CPULIST_MAX - 1, NULL, NULL,
	 "stimulus CPU (default: another CPU than the responder when there are >= 2)"},
	RUN_OPT_POLICY(F, "scheduling policy of responder and stimulus"),
	RUN_OPT_PRIORITY(F, "80", "RT priority of responder and stimulus"),
	RUN_OPTS_LENGTH(F, "measured time after warm-up (stimuli = duration x rate)", 1LL << 40,
		"measured stimuli; replaces --duration", "100", "stimuli discarded before measuring"),
	RUN_OPT_THRESHOLD(F, "100us", "samples above it emit event records"),
	SINK_OUT_OPTS(F, "1000"),
	{"gpiochip", OPT_PATH, F(gpiochip), 0, 0, NULL, NULL, "GPIO character device for --source gpio"},
	{"out-line", OPT_INT, F(out_line), 0, 1023, "0", NULL, "GPIO output line offset (wired to --in-line)"},
	{"in-line", OPT_INT, F(in_line), 0, 1023, "1", NULL, "GPIO input line offset (edge events)"},
	{"uio", OPT_PATH, F(uio), 0, 0, NULL, NULL, "UIO device for --source uio (/dev/uioN)"},
	{"trigger", OPT_STRING, F(trigger), 0, 0, NULL, NULL,
	 "uio, active: the register write that raises the interrupt, BAR:OFFSET=VALUE (32-bit; t0 just before it); "
	 "without it passive: t0 = the kernel's irq_handler_entry"},
	{"ack", OPT_STRING, F(ack), 0, 0, NULL, NULL,
	 "uio: the register write that acknowledges the interrupt at the device, BAR:OFFSET=VALUE (edu: 0:0x64=1)"},
	{"irq", OPT_INT, F(irq), 0, 1 << 20, NULL, NULL, "uio: the device's IRQ (default: from sysfs or /proc/interrupts)"},
	{"timeout", OPT_DURATION, F(timeout_ns), NS_PER_MS, 600 * NS_PER_S, "1s", NULL,
	 "uio: longest wait for an interrupt; past it the run ends incomplete (exit 4)"},
	{"stages", OPT_ENUM, F(stages), 0, 0, "auto", stages_names,
	 "uio: the kernel's stages of each interrupt from a tracefs instance (auto: where tracefs allows; passive needs "
	 "it)"},
	{"timerlat", OPT_FLAG, F(timerlat), 0, 0, NULL, NULL,
	 "use the kernel timerlat tracer instead (not implemented: exits 3 saying why)"},
	RUN_OPT_NO_DMA_LATENCY(F),
	RUN_OPT_ALLOW_DEGRADED(F, RUN_DEGRADED_HELP),
};
#undef F
#define EVENT_NOPTS ((int)(sizeof(event_opts) / sizeof(event_opts[0])))

/* Shared with the stimulus (MAP_SHARED: also across fork). */
struct ev_shared {
	_Atomic uint64_t sent;   /* stimuli delivered */
	_Atomic uint64_t failed; /* deliveries that failed (full pipe, ioctl error) */
	_Atomic bool stop, done;
	int64_t first_deadline_ns;
	_Atomic int64_t t[STIM_RING]; /* stimulus time of seq k at k % STIM_RING */
};

/* All state of one event run. */

/* Fire one stimulus: timestamp, publish, deliver. Runs in the stimulus. */
static void stim_fire(struct event *t, uint64_t k, int *level)
{
	struct ev_shared *sh = t->sh;
	int64_t now = mono_now_ns();
	bool ok = false;
	atomic_store_explicit(&sh->t[k & (STIM_RING - 1)], now, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	switch (t->cfg.source) {
	case SRC_EVENTFD: {
		uint64_t one = 1;
		ok = write(t->efd, &one, sizeof(one)) == (ssize_t)sizeof(one);
		break;
	}
	case SRC_FIFO:
		ok = write(t->pipe_w, &now, sizeof(now)) == (ssize_t)sizeof(now); /* < PIPE_BUF: atomic */
		break;
	case SRC_GPIO: {
		struct gpio_v2_line_values v = {.bits = (uint64_t)(*level ^= 1), .mask = 1};
		ok = ioctl(t->gpio_out, GPIO_V2_LINE_SET_VALUES_IOCTL, &v) == 0;
		break;
	}
	}
	if (ok)
		atomic_store_explicit(&sh->sent, k + 1, memory_order_release);
	else
		atomic_fetch_add(&sh->failed, 1);
}

/* Sleep until the deadline `dl_ns`, in slices of at most STOP_SLICE_NS when it is further
 * (only below 10 Hz): a stop is seen within one slice. Returns true when stopped. */
static bool stim_sleep_until(struct ev_shared *sh, int64_t dl_ns)
{
	for (;;) {
		if (atomic_load(&sh->stop))
			return true;
		int64_t now = mono_now_ns();
		if (now >= dl_ns)
			return false;
		sleep_until_ns(dl_ns - now > STOP_SLICE_NS ? now + STOP_SLICE_NS : dl_ns);
	}
}

/* Stimulus loop: stimulus k at first_deadline + k * period, all of them
 * sent even when late (the sample starts at the stimulus' own timestamp). */
static void stim_loop(struct event *t)
{
	struct ev_shared *sh = t->sh;
	int level = 0;
	uint64_t k = 0;
	rt_prefault_stack();
	prctl(PR_SET_TIMERSLACK, 1UL);
	for (uint64_t i = 0; i < t->total && !atomic_load(&sh->stop); i++) {
		int64_t dl = sh->first_deadline_ns + (int64_t)i * t->period_ns;
		if (stim_sleep_until(sh, dl))
			break;
		/* stimuli are numbered by delivery: a failed one is not numbered */
		uint64_t before = atomic_load(&sh->sent);
		stim_fire(t, k, &level);
		if (atomic_load(&sh->sent) != before)
			k++;
	}
	atomic_store(&sh->done, true);
}

static void *stim_thread_main(void *arg)
{
	stim_loop(arg);
	return NULL;
}

/* Learn new stimuli after a wake-up: append their stimulus (and edge)
 * times to the local ring. Returns how many, 0 if none, -1 on error. */
static int64_t resp_drain(struct event *t, uint64_t avail)
{
	const uint64_t M = STIM_RING - 1;
	switch (t->cfg.source) {
	case SRC_EVENTFD: {
		uint64_t n;
		if (read(t->efd, &n, sizeof(n)) != (ssize_t)sizeof(n))
			return errno == EAGAIN ? 0 : -1;
		atomic_thread_fence(memory_order_acquire);
		uint64_t sent = atomic_load_explicit(&t->sh->sent, memory_order_acquire);
		if (sent < avail + n) /* the eventfd write precedes the counter store */
			sent = avail + n;
		if (n > STIM_RING)
			t->ring_overwritten += n - STIM_RING;
		for (uint64_t k = avail; k < avail + n; k++) {
			int64_t ts = atomic_load_explicit(&t->sh->t[k & M], memory_order_relaxed);
			if (k + STIM_RING < avail + n) /* overwritten: its scheduled deadline bounds it */
				ts = t->sh->first_deadline_ns + (int64_t)k * t->period_ns;
			t->lt[k & M] = ts;
		}
		return (int64_t)n;
	}
	case SRC_FIFO: {
		int64_t buf[READ_BATCH];
		int64_t got = 0;
		for (;;) {
			ssize_t r = read(t->pipe_r, buf, sizeof(buf));
			if (r <= 0)
				return r < 0 && errno != EAGAIN && got == 0 ? -1 : got;
			for (size_t i = 0; i < (size_t)r / sizeof(int64_t); i++)
				t->lt[(avail + (uint64_t)got++) & M] = buf[i];
			if ((size_t)r < sizeof(buf) || got >= (int64_t)(STIM_RING / 2))
				return got;
		}
	}
	case SRC_TIMERFD: {
		uint64_t n;
		if (read(t->tfd, &n, sizeof(n)) != (ssize_t)sizeof(n))
			return errno == EAGAIN ? 0 : -1;
		for (uint64_t k = avail; k < avail + n; k++)
			t->lt[k & M] = t->sh->first_deadline_ns + (int64_t)k * t->period_ns;
		uint64_t sent = avail + n < t->total ? avail + n : t->total;
		atomic_store(&t->sh->sent, sent);
		return (int64_t)n;
	}
	case SRC_GPIO: {
		struct gpio_v2_line_event evs[16];
		ssize_t r = read(t->gpio_in, evs, sizeof(evs));
		if (r <= 0)
			return r < 0 && errno != EAGAIN ? -1 : 0;
		int64_t n = (int64_t)((size_t)r / sizeof(evs[0]));
		for (int64_t i = 0; i < n; i++) {
			uint64_t k = avail + (uint64_t)i;
			t->lt[k & M] = atomic_load_explicit(&t->sh->t[k & M], memory_order_relaxed);
			t->le[k & M] = (int64_t)evs[i].timestamp_ns;
		}
		return n;
	}
	}
	return -1;
}

/* Responder: block in epoll_wait, timestamp the wake-up, answer every
 * stimulus that happened before it. One sample per wake-up measured from
 * the earliest unanswered stimulus; the others it answers go to overruns.
 * Stimuli learnt in the same read but fired after the wake-up stay pending
 * and are answered at once (their wake-up is "now"). */
static void *resp_thread_main(void *arg)
{
	struct event *t = arg;
	struct cpu_state *cs = &t->run.sink.cs[0];
	const uint64_t M = STIM_RING - 1, warm = (uint64_t)t->cfg.warmup;
	uint64_t e = 0, avail = 0, wakeups = 0;
	int64_t idle_since = mono_now_ns();
	struct epoll_event ev;

	rt_prefault_stack();
	while (e < t->total && !atomic_load_explicit(&t->run.sink.stop, memory_order_relaxed)) {
		int64_t now;
		if (e == avail) {
			int r = epoll_wait(t->epfd, &ev, 1, EPOLL_TIMEOUT_MS);
			now = mono_now_ns();
			if (r < 0 && errno != EINTR)
				break;
			if (r <= 0) {
				/* the stimulus ended and nothing came for a while: unanswered */
				if (atomic_load(&t->sh->done) && now - idle_since > 2 * t->period_ns + 200 * NS_PER_MS)
					break;
				continue;
			}
			wakeups++;
			int64_t n = resp_drain(t, avail);
			if (n < 0)
				break;
			avail += (uint64_t)n;
			if (avail > t->total)
				avail = t->total; /* timerfd expirations past the run */
		} else {
			now = mono_now_ns();
		}
		uint64_t m = 0;
		while (e + m < avail && t->lt[(e + m) & M] <= now)
			m++;
		if (m == 0) {
			if (avail > e) /* stimulus stamped after our wake-up: answer it next round */
				continue;
			continue;
		}
		idle_since = now;
		/* of these m, the warm-up's first (a wake-up may answer stimuli on both sides of its end: a timerfd
		 * read of several expirations); the first after it is the sample, the rest overruns */
		uint64_t w = e < warm ? (warm - e < m ? warm - e : m) : 0;
		t->warm_stimuli += w;
		if (m > w) {
			uint64_t first = e + w;
			sink_sample(cs, now - t->lt[first & M], now, m - w - 1);
			if (t->edge)
				hist_record(t->edge, now - t->le[first & M]);
		}
		e += m;
	}
	if (t->cfg.source == SRC_TIMERFD) {
		struct itimerspec off = {{0, 0}, {0, 0}};
		timerfd_settime(t->tfd, 0, &off, NULL);
	}
	t->answered = e;
	return run_slot_done(&t->run, cs, wakeups);
}

/* --source uio: the reader. Active: at each deadline t0, write the trigger; passive: wait. Then the
 * interrupt (bounded by --timeout), the read's return t1, the acknowledge, the unmask. A passive
 * interrupt's t0 is its irq_handler_entry; one without it in the trace is `unmatched`. */
static void *uio_thread_main(void *arg)
{
	struct event *t = arg;
	struct cpu_state *cs = &t->run.sink.cs[0];
	const uint64_t warm = (uint64_t)t->cfg.warmup;
	uint64_t k = 0, wakeups = 0;
	uint32_t prev = t->events_at_open >= 0 ? (uint32_t)t->events_at_open : 0;
	bool have_prev = t->events_at_open >= 0;
	int64_t from = mono_now_ns(), end_ns = 0;
	rt_prefault_stack();
	uio_stages_reader(&t->st, (pid_t)gettid());
	if (t->have_ack) /* an interrupt left pending by someone else: acknowledged before we unmask */
		uio_write_reg(&t->uio, &t->ack);
	uio_unmask(&t->uio);
	const bool passive_timed = !t->active && !run_given(&t->run, "loops"); /* --duration from the warm-up's end */
	if (passive_timed && warm == 0)
		end_ns = mono_now_ns() + t->cfg.duration_ns;
	int64_t pend_t0 = -1, pend_t1 = 0; /* an active sample whose stages are still to be read */
	while (k < t->total && !atomic_load_explicit(&t->run.sink.stop, memory_order_relaxed)) {
		int64_t t0 = 0;
		if (t->active) {
			if (stim_sleep_until(t->sh, t->sh->first_deadline_ns + (int64_t)k * t->period_ns))
				break;
			if (pend_t0 >= 0)
				uio_stages_later(&t->st, pend_t0, pend_t1);
			pend_t0 = -1;
			t0 = mono_now_ns();
			uio_write_reg(&t->uio, &t->trig);
			t->raised++;
		} else if (end_ns && from >= end_ns && k >= warm) {
			break;
		}
		uint32_t count;
		int64_t wait_ns = t->cfg.timeout_ns, before = mono_now_ns();
		if (end_ns && end_ns - before < wait_ns) /* passive: the duration's end bounds the wait too */
			wait_ns = end_ns > before ? end_ns - before : 0;
		int r = uio_wait(&t->uio, wait_ns, &count);
		int64_t t1 = mono_now_ns();
		if (r <= 0) {
			if (atomic_load(&t->run.sink.stop) || atomic_load(&t->sh->stop) || (r == 0 && end_ns && t1 >= end_ns))
				break;
			t->timed_out = r == 0;
			t->wait_errno = r < 0 ? errno : 0;
			break;
		}
		wakeups++;
		if (t->have_ack)
			uio_write_reg(&t->uio, &t->ack);
		uint32_t n = have_prev ? count - prev : 1;
		prev = count;
		have_prev = true;
		if (n == 0) { /* nothing new (an interrupt between our open and the count we read) */
			uio_unmask(&t->uio);
			continue;
		}
		t->seen += n;
		t->coalesced += n - 1;
		int64_t p[IRQ_POINTS] = {-1, -1, -1, -1, -1};
		int first_missing = t->active ? IRQ_POINTS : uio_stages_points(&t->st, from, t1, p);
		bool staged = first_missing == IRQ_POINTS;
		if (!t->active && p[IRQ_ENTRY] < 0) {
			t->unmatched++; /* no t0: not a sample */
		} else {
			if (!t->active)
				t0 = p[IRQ_ENTRY];
			if (k < warm) {
				t->warm_irqs++;
				if (passive_timed && k + 1 == warm)
					end_ns = t1 + t->cfg.duration_ns;
			} else {
				sink_sample(cs, t1 - t0, t1, 0);
				t->samples++;
				if (t->active)
					pend_t0 = t0, pend_t1 = t1;
				else if (staged)
					uio_stages_record(&t->st, p, t0, t1);
				else if (t->st.tr)
					t->st.point_missing[first_missing]++;
			}
			k++;
		}
		from = t1;
		uio_unmask(&t->uio);
	}
	if (pend_t0 >= 0) {
		sleep_until_ns(mono_now_ns() + 10 * NS_PER_MS); /* the last sample's trace, readable by now */
		uio_stages_later(&t->st, pend_t0, pend_t1);
	}
	if (!t->active)
		t->raised = t->seen; /* the device's event count over the run: each read's step */
	t->answered = k;
	return run_slot_done(&t->run, cs, wakeups);
}

/* Header "params": the effective configuration. */
static void event_params(struct jw *w, const void *ctx)
{
	const struct event *t = ctx;
	const struct event_cfg *c = &t->cfg;
	jw_str(w, "source", source_names[c->source]);
	jw_str(w, "stimulus", c->source == SRC_TIMERFD ? "kernel_timer"
			      : c->source == SRC_UIO  ? (t->active ? "register_write" : "external")
						      : stimulus_names[c->stimulus]);
	jw_i64(w, "rate_hz", c->rate_hz);
	jw_i64(w, "period_ns", t->period_ns);
	jw_i64(w, "cpu", c->cpu);
	if (c->source == SRC_TIMERFD)
		jw_null(w, "stimulus_cpu");
	else
		jw_i64(w, "stimulus_cpu", t->stim_cpu);
	run_params_sched(w, c->policy, c->priority);
	run_params_length(w, c->duration_ns, c->loops, c->warmup);
	jw_u64(w, "stimuli_planned", t->total);
	sink_out_params(w, &c->out);
	if (c->source == SRC_GPIO) {
		jw_str(w, "gpiochip", c->gpiochip);
		jw_i64(w, "out_line", c->out_line);
		jw_i64(w, "in_line", c->in_line);
	}
	if (c->source == SRC_UIO) {
		jw_str(w, "uio", c->uio);
		jw_str(w, "uio_name", t->uio.name);
		jw_str(w, "mode", t->active ? "active" : "passive");
		jw_str(w, "t0", t->active ? "just before the trigger write" : "the kernel's irq_handler_entry of the IRQ");
		jw_str(w, "trigger", c->trigger);
		jw_str(w, "ack", c->ack);
		jw_i64(w, "irq", t->uio.irq);
		jw_i64(w, "timeout_ns", c->timeout_ns);
		jw_str(w, "stages", stages_names[c->stages]);
	}
	run_params_flags(w, c->no_dma_latency, c->allow_degraded);
}

/* --source uio's summary keys: interrupts {raised, samples, missed, ...}, irq {number, thread, policy,
 * priority, cpu}, and stages (name -> statistics, timeline order) where the trace gave them. */
static void uio_summary(struct jw *w, const struct event *t)
{
	uint64_t accounted = t->samples + t->warm_irqs;
	jw_obj_begin(w, "interrupts");
	jw_u64(w, "raised", t->raised);
	jw_u64(w, "samples", t->samples);
	jw_u64(w, "missed", t->raised > accounted ? t->raised - accounted : 0);
	jw_u64(w, "warmup", t->warm_irqs);
	jw_u64(w, "seen", t->seen);
	jw_u64(w, "coalesced", t->coalesced);
	jw_u64(w, "unmatched", t->unmatched);
	jw_u64(w, "staged", t->st.staged);
	jw_u64(w, "reader_awake", t->st.reader_awake);
	jw_i64(w, "staged_total_ns", t->st.staged_total_ns);
	jw_i64(w, "staged_stages_ns", t->st.staged_sum_ns);
	jw_bool(w, "timed_out", t->timed_out);
	jw_obj_end(w);
	uio_stages_irq_json(w, &t->st, t->uio.irq, t->uio.name);
	if (!t->st.staged)
		return;
	jw_obj_begin(w, "stages");
	uio_stages_rows(w, &t->st);
	jw_obj_end(w);
}

/* Summary extension (optional keys, top level): stimulus accounting, and
 * for gpio the kernel-edge-to-user distribution. */
static void event_summary_extra(struct jw *w, int slot, const void *ctx)
{
	const struct event *t = ctx;
	if (slot >= 0)
		return;
	if (t->cfg.source == SRC_UIO) {
		uio_summary(w, t);
		return;
	}
	uint64_t sent = atomic_load(&t->sh->sent);
	jw_obj_begin(w, "stimuli");
	jw_u64(w, "planned", t->total);
	jw_u64(w, "sent", sent);
	jw_u64(w, "failed", atomic_load(&t->sh->failed));
	jw_u64(w, "warmup", t->warm_stimuli);
	jw_u64(w, "unanswered", sent > t->answered ? sent - t->answered : 0);
	jw_u64(w, "timestamps_overwritten", t->ring_overwritten);
	jw_obj_end(w);
	if (t->edge) {
		jw_obj_begin(w, "edge_to_user");
		sink_hist_keys(w, t->edge);
		jw_obj_end(w);
	}
}

/* The kernel timerlat tracer: where its list of tracers would be. */
static int timerlat_skip(void)
{
	static const char *const lists[] = {"/sys/kernel/tracing/available_tracers",
					    "/sys/kernel/debug/tracing/available_tracers"};
	for (size_t i = 0; i < 2; i++) {
		FILE *f = fopen(lists[i], "r");
		char buf[4096] = "";
		if (!f)
			continue;
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = 0;
		if (strstr(buf, "timerlat"))
			return log_skip("use rtla timerlat for the kernel-side measurement",
					"--timerlat: the timerlat tracer is present (%s) but this probe does not drive "
					"it yet",
					lists[i]);
		return log_skip("a kernel built with CONFIG_TIMERLAT_TRACER",
				"--timerlat: the kernel has no timerlat tracer (not listed in %s)", lists[i]);
	}
	return log_skip("mount tracefs (mount -t tracefs nodev /sys/kernel/tracing) on a kernel with "
			"CONFIG_TIMERLAT_TRACER",
			"--timerlat: no tracefs: neither /sys/kernel/tracing/available_tracers nor "
			"/sys/kernel/debug/tracing/available_tracers exists");
}

/* --source gpio: the chip must exist; say exactly what is missing. */
static int gpio_check(const struct event_cfg *c)
{
	glob_t g;
	int n = glob("/dev/gpiochip*", 0, NULL, &g) == 0 ? (int)g.gl_pathc : 0;
	if (n)
		globfree(&g);
	if (!n)
		return log_skip("a GPIO character device (/dev/gpiochipN, CONFIG_GPIO_CDEV) with an output line "
				"wired to an input line",
				"--source gpio: no GPIO character device on this host (no /dev/gpiochip*)");
	if (!c->gpiochip)
		return log_error("--source gpio needs --gpiochip /dev/gpiochipN (%d chip%s present)", n,
				 n == 1 ? "" : "s");
	if (access(c->gpiochip, R_OK | W_OK) != 0)
		return log_skip("read/write access to the GPIO chip (root or the gpio group)",
				"--gpiochip %s: %s", c->gpiochip, strerror(errno));
	if (c->out_line == c->in_line)
		return log_error("--out-line and --in-line must be two different lines wired together");
	return 0;
}

/* --source uio: the device, its interrupt and IRQ thread, the registers inside their BAR; passive needs
 * the trace (its t0). Opens the device (closed by cleanup). */
static int uio_check(struct event *t)
{
	struct event_cfg *c = &t->cfg;
	char err[640];
	int rc;
	if (!c->uio)
		return log_error("--source uio needs --uio /dev/uioN");
	t->active = c->trigger != NULL;
	if (c->trigger && uio_parse_reg(c->trigger, &t->trig, err, sizeof(err)))
		return log_error("--trigger %s", err);
	if (c->ack && uio_parse_reg(c->ack, &t->ack, err, sizeof(err)))
		return log_error("--ack %s", err);
	t->have_ack = c->ack != NULL;
	if (!t->active && c->stages == 1)
		return log_error("--source uio without --trigger (passive) takes its t0 from the kernel's trace: "
				 "not with --stages off");
	rc = uio_open(&t->uio, c->uio, run_given(&t->run, "irq") ? (int)c->irq : -1, err, sizeof(err));
	t->uio_open = t->uio.fd >= 0;
	if (!rc && c->trigger)
		rc = uio_check_reg(&t->uio, &t->trig, "trigger", err, sizeof(err));
	if (!rc && c->ack)
		rc = uio_check_reg(&t->uio, &t->ack, "ack", err, sizeof(err));
	if (rc == 3)
		return log_skip("root, or read/write access to the UIO device and its sysfs files", "%s", err);
	if (rc)
		return log_error("%s", err);
	if (!t->active && !irqtrace_root())
		return log_skip("tracefs mounted (mount -t tracefs nodev /sys/kernel/tracing), or --trigger (active)",
				"--source uio without --trigger (passive) takes its t0 from the kernel's "
				"irq_handler_entry: no tracefs here");
	irq_thread_find(t->uio.irq, t->uio.name, &t->st.ith);
	return 0;
}

/* Request one GPIO line (v2 uAPI); fd or -1 with errno. */
static int gpio_request(int chip, uint32_t line, uint64_t flags, const char *label)
{
	struct gpio_v2_line_request req;
	memset(&req, 0, sizeof(req));
	req.offsets[0] = line;
	req.num_lines = 1;
	req.config.flags = flags;
	snprintf(req.consumer, sizeof(req.consumer), "%s", label);
	if (ioctl(chip, GPIO_V2_GET_LINE_IOCTL, &req) < 0)
		return -1;
	return req.fd;
}

/* Options that need more than a range check; picks the CPUs. */
static int event_validate(struct run *run)
{
	struct event *t = (struct event *)run;
	struct event_cfg *c = &t->cfg;
	char err[512];
	int rc = run_plan_rate(c->rate_hz, run_given(run, "loops"), &c->duration_ns, c->loops, c->warmup,
			       &t->period_ns, &t->total);
	if (rc)
		return rc;

	struct cpulist usable, one = {.n = 1};
	if ((rc = run_pick_cpu(run, &c->cpu, true, &usable)))
		return rc;
	if (run_given(&t->run, "stimulus-cpu")) {
		one.cpu[0] = (int)c->stimulus_cpu;
		if (cpulist_check(&one, err, sizeof(err)))
			return log_error("--stimulus-cpu: %s", err);
		t->stim_cpu = (int)c->stimulus_cpu;
	} else {
		t->stim_cpu = (int)c->cpu;
		for (int i = 0; i < usable.n; i++)
			if (usable.cpu[i] != c->cpu) {
				t->stim_cpu = usable.cpu[i];
				break;
			}
	}
	if (sink_out_validate(&c->out, run->a->check))
		return 1;
	if (c->timerlat)
		return timerlat_skip();
	if (c->source == SRC_GPIO)
		return gpio_check(c);
	if (c->source == SRC_UIO)
		return uio_check(t);
	if (c->uio || c->trigger || c->ack || run_given(run, "irq"))
		return log_error("--uio, --trigger, --ack and --irq go with --source uio");
	return 0;
}

/* Scheduling and memory locking, tried for real (as the timer probe). */
static int event_privileges(struct run *run)
{
	struct event *t = (struct event *)run;
	return rt_acquire(t->cfg.policy, (int)t->cfg.priority, t->cfg.allow_degraded, &t->run.rt, &t->run.warn);
}

/* --source uio: the stage histograms, the trace (passive: required), the device's count now. */
static int uio_prepare(struct event *t, char *err, size_t errlen)
{
	t->st.active = t->active;
	t->st.threshold_ns = t->cfg.out.threshold_ns;
	int rc = uio_stages_open(&t->st, t->uio.irq, t->cfg.stages == 0);
	if (rc < 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (rc > 0 && !t->active) {
		snprintf(err, errlen, "--source uio without --trigger (passive) needs the kernel's "
			 "irq_handler_entry for its t0: %s", t->st.trace_note + strlen("no stages: "));
		return -1;
	}
	if (rc > 0)
		warnings_add(&t->run.warn, "%s: the total only", t->st.trace_note);
	t->events_at_open = uio_event_count(&t->uio);
	return 0;
}

/* Create the source fds and the epoll set. */
static int event_open_source(struct event *t, char *err, size_t errlen)
{
	struct event_cfg *c = &t->cfg;
	int fd = -1;
	if (c->source == SRC_UIO)
		return uio_prepare(t, err, errlen);
	switch (c->source) {
	case SRC_EVENTFD:
		fd = t->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		break;
	case SRC_FIFO: {
		int p[2];
		if (pipe2(p, O_CLOEXEC) == 0) {
			t->pipe_r = p[0];
			t->pipe_w = p[1];
			fcntl(p[0], F_SETFL, O_NONBLOCK);
			fcntl(p[1], F_SETFL, O_NONBLOCK); /* a full pipe is a failed stimulus, never a block */
			fd = p[0];
		}
		break;
	}
	case SRC_TIMERFD:
		fd = t->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
		break;
	case SRC_GPIO: {
		int chip = open(c->gpiochip, O_RDWR | O_CLOEXEC);
		if (chip < 0) {
			snprintf(err, errlen, "--gpiochip %s: %s", c->gpiochip, strerror(errno));
			return -1;
		}
		t->gpio_out = gpio_request(chip, (uint32_t)c->out_line, GPIO_V2_LINE_FLAG_OUTPUT, "rtqual-out");
		int e1 = errno;
		t->gpio_in = gpio_request(chip, (uint32_t)c->in_line,
					  GPIO_V2_LINE_FLAG_INPUT | GPIO_V2_LINE_FLAG_EDGE_RISING |
						  GPIO_V2_LINE_FLAG_EDGE_FALLING,
					  "rtqual-in");
		int e2 = errno;
		close(chip);
		if (t->gpio_out < 0 || t->gpio_in < 0) {
			snprintf(err, errlen, "%s %s line %" PRId64 ": %s", c->gpiochip,
				 t->gpio_out < 0 ? "output" : "input", t->gpio_out < 0 ? c->out_line : c->in_line,
				 strerror(t->gpio_out < 0 ? e1 : e2));
			return -1;
		}
		fcntl(t->gpio_in, F_SETFL, O_NONBLOCK);
		if (!(t->edge = malloc(sizeof(*t->edge)))) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		hist_reset(t->edge);
		fd = t->gpio_in;
		break;
	}
	}
	if (fd < 0) {
		snprintf(err, errlen, "cannot create the %s: %s", source_names[c->source], strerror(errno));
		return -1;
	}
	struct epoll_event ev = {.events = EPOLLIN};
	t->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (t->epfd < 0 || epoll_ctl(t->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		snprintf(err, errlen, "epoll: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Start responder, then the stimulus (thread, forked process, or the
 * armed timerfd). The stop signals are blocked only around fork: the
 * threads get them blocked through their attributes (rt_thread_start). */
static int event_start(struct run *run)
{
	struct event *t = (struct event *)run;
	char *err = run->err;
	size_t errlen = sizeof(run->err);
	struct event_cfg *c = &t->cfg;
	sigset_t old;
	int e;
	t->sh->first_deadline_ns = mono_now_ns() + START_DELAY_NS;
	if (c->source == SRC_UIO) { /* the reader is its own stimulus */
		atomic_store(&t->sh->done, true);
		e = rt_thread_start(&t->resp_tid, t->run.rt.policy, t->run.rt.priority, (int)c->cpu,
				    THREAD_STACK_BYTES, uio_thread_main, t);
		if (e) {
			snprintf(err, errlen, "cannot start the reader on CPU %" PRId64 ": %s", c->cpu, strerror(e));
			return -1;
		}
		t->resp_started = true;
		return 0;
	}
	e = rt_thread_start(&t->resp_tid, t->run.rt.policy, t->run.rt.priority, (int)c->cpu, THREAD_STACK_BYTES,
			    resp_thread_main, t);
	if (e) {
		snprintf(err, errlen, "cannot start the responder on CPU %" PRId64 ": %s", c->cpu, strerror(e));
		return -1;
	}
	t->resp_started = true;
	if (c->source == SRC_TIMERFD) {
		struct itimerspec its = {.it_interval = ns_to_ts(t->period_ns),
					 .it_value = ns_to_ts(t->sh->first_deadline_ns)};
		if (timerfd_settime(t->tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0) {
			snprintf(err, errlen, "timerfd_settime: %s", strerror(errno));
			return -1;
		}
		atomic_store(&t->sh->done, true); /* no stimulus to wait for */
	} else if (c->stimulus == STIM_THREAD) {
		e = rt_thread_start(&t->stim_tid, t->run.rt.policy, t->run.rt.priority, t->stim_cpu,
				    THREAD_STACK_BYTES, stim_thread_main, t);
		if (e) {
			snprintf(err, errlen, "cannot start the stimulus on CPU %d: %s", t->stim_cpu, strerror(e));
			return -1;
		}
		t->stim_started = true;
	} else {
		unsigned wd = run_watchdog_s(u128_mul_u64_u64(t->total, (uint64_t)t->period_ns), 0, 0xffffffffu);
		rt_signals_block(&old);
		pid_t pid = fork();
		if (pid < 0) {
			rt_signals_restore(&old);
			snprintf(err, errlen, "fork: %s", strerror(errno));
			return -1;
		}
		if (pid == 0) {
			/* the stimulus process: default signals, dies with us, own watchdog */
			signal(SIGINT, SIG_DFL);
			signal(SIGTERM, SIG_DFL);
			signal(SIGALRM, SIG_DFL);
			rt_signals_restore(&old);
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			alarm(wd);
			if (t->run.rt.mlockall)
				mlockall(MCL_CURRENT | MCL_FUTURE);
			if (rt_self_sched(t->stim_cpu, t->run.rt.policy, t->run.rt.priority, NULL, 0))
				_exit(2);
			stim_loop(t);
			_exit(0);
		}
		rt_signals_restore(&old);
		t->stim_pid = pid;
	}
	return 0;
}

/* Main thread, each round: a dead stimulus process ends the stimuli. */
static bool event_tick(struct run *run, int64_t now_ns)
{
	struct event *t = (struct event *)run;
	int st;
	(void)now_ns;
	if (t->stim_pid > 0 && waitpid(t->stim_pid, &st, WNOHANG) == t->stim_pid) {
		t->stim_pid = 0;
		atomic_store(&t->sh->done, true);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			sink_warning(&run->sink, "stimulus process ended abnormally (%s %d)",
				     WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	}
	return false;
}

/* Stop and reap the stimulus, join the responder. */
static void event_stop(struct run *run)
{
	struct event *t = (struct event *)run;
	if (rt_signals_caught())
		atomic_store(&run->sink.stop, true);
	atomic_store(&t->sh->stop, true);
	if (t->stim_started)
		pthread_join(t->stim_tid, NULL);
	if (t->stim_pid > 0) {
		int64_t give_up = mono_now_ns() + STIM_REAP_NS;
		while (waitpid(t->stim_pid, NULL, WNOHANG) == 0) {
			if (mono_now_ns() > give_up) {
				kill(t->stim_pid, SIGKILL);
				waitpid(t->stim_pid, NULL, 0);
				break;
			}
			usleep(10000);
		}
		t->stim_pid = 0;
	}
	atomic_store(&t->sh->done, true);
	if (t->resp_started)
		pthread_join(t->resp_tid, NULL);
}

/* The source fds, the shared ring and the local time rings. */
static void event_cleanup(struct run *run)
{
	struct event *t = (struct event *)run;
	if (t->uio_open) { /* nothing left masked: the device acknowledged, its interrupt enabled */
		if (t->have_ack)
			uio_write_reg(&t->uio, &t->ack);
		uio_unmask(&t->uio);
		uio_close(&t->uio);
		t->uio_open = false;
	}
	uio_stages_close(&t->st);
	if (!run->prepared)
		return;
	int fds[] = {t->efd, t->pipe_r, t->pipe_w, t->tfd, t->gpio_out, t->gpio_in, t->epfd};
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (t->sh)
		munmap(t->sh, sizeof(*t->sh));
	free(t->lt);
	free(t->le);
	free(t->edge);
}

/* The shared stimulus ring, local time rings, the source fds; the watchdog: every stimulus
 * plus a margin. */
static int event_prepare(struct run *run)
{
	struct event *t = (struct event *)run;
	struct event_cfg *c = &t->cfg;
	int cpu = (int)c->cpu;
	t->efd = t->pipe_r = t->pipe_w = t->tfd = t->gpio_out = t->gpio_in = t->epfd = -1;
	t->sh = mmap(NULL, sizeof(*t->sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (t->sh == MAP_FAILED) {
		t->sh = NULL;
		return log_error("mmap of the stimulus ring: %s", strerror(errno));
	}
	t->lt = calloc(STIM_RING, sizeof(int64_t));
	t->le = calloc(STIM_RING, sizeof(int64_t));
	if (sink_init(&run->sink, &c->out, &cpu, 1, run->err, sizeof(run->err)) || !t->lt || !t->le ||
	    event_open_source(t, run->err, sizeof(run->err)))
		return log_error("%s", run->err[0] ? run->err : "out of memory");
	rt_pretouch(t->sh, sizeof(*t->sh));
	rt_pretouch(t->lt, STIM_RING * sizeof(int64_t));
	rt_pretouch(t->le, STIM_RING * sizeof(int64_t));
	run->sink.summary_extra = event_summary_extra;
	run->sink.summary_ctx = t;
	run_hold(run, !c->no_dma_latency);
	if (t->stim_cpu == cpu && c->source != SRC_TIMERFD && c->source != SRC_UIO)
		warnings_add(&run->warn, "stimulus and responder share CPU %d: the response includes the stimulus' own "
			     "return to sleep", cpu);
	run->raw_interval_ns = t->period_ns;
	run->watchdog_s = run_watchdog_s(u128_mul_u64_u64(t->total, (uint64_t)t->period_ns), 0, 0x7fffffff);
	if (c->source == SRC_UIO) /* each interrupt waited for at most --timeout */
		run->watchdog_s = run_watchdog_s(
			u128_mul_u64_u64(t->total, (uint64_t)(t->active ? t->period_ns + c->timeout_ns : c->timeout_ns)),
			0, 0x7fffffff);
	return 0;
}

/* --source uio: an interrupt that never came, or one not accounted for, ends the run incomplete with
 * what was seen. */
static int uio_end(struct event *t)
{
	struct run *run = &t->run;
	char msg[400];
	int rc;
	uint64_t accounted = t->samples + t->warm_irqs, missed = t->raised > accounted ? t->raised - accounted : 0;
	if (t->coalesced)
		sink_warning(&run->sink, "%" PRIu64 " interrupts came while one was pending (one read counted several)",
			     t->coalesced);
	if (t->unmatched)
		sink_warning(&run->sink, "%" PRIu64 " interrupts without their irq_handler_entry in the trace: no t0, "
			     "not sampled", t->unmatched);
	if (t->st.tr && t->st.tr->dropped)
		sink_warning(&run->sink, "%" PRIu64 " trace events dropped (the reader fell behind)", t->st.tr->dropped);
	if (t->st.tr && t->st.staged < t->samples)
		sink_warning(&run->sink, "%" PRIu64 " of %" PRIu64 " samples without every stage in the trace",
			     t->samples - t->st.staged, t->samples);
	if (run_end_early(run, &rc))
		return rc;
	snprintf(msg, sizeof(msg), "%" PRIu64 " raised, %" PRIu64 " samples, %" PRIu64 " warm-up, %" PRIu64 " missed",
		 t->raised, t->samples, t->warm_irqs, missed);
	if (t->wait_errno) {
		char m[512];
		snprintf(m, sizeof(m), "reading %s: %s (%s)", t->cfg.uio, strerror(t->wait_errno), msg);
		log_error("%s", m);
		return sink_finish(&run->sink, 1, "error", m);
	}
	if (t->timed_out) {
		char m[512];
		snprintf(m, sizeof(m), "no interrupt from %s (IRQ %d) within --timeout %" PRId64 " ms%s: %s", t->cfg.uio,
			 t->uio.irq, (int64_t)(t->cfg.timeout_ns / NS_PER_MS), t->active ? " of the trigger" : "", msg);
		log_line(4, "incomplete: ", NULL, "%s", m);
		return sink_finish(&run->sink, 4, "incomplete", m);
	}
	if (missed)
		return sink_finish(&run->sink, 4, "incomplete", msg);
	if (!t->samples)
		return sink_finish(&run->sink, 4, "incomplete", "no interrupt sampled after the warm-up");
	return sink_finish(&run->sink, -1, NULL, NULL);
}

/* Stimuli lost or unanswered: warnings, and the run is incomplete. */
static int event_end(struct run *run)
{
	struct event *t = (struct event *)run;
	int sig = rt_signals_caught(), rc;
	if (t->cfg.source == SRC_UIO)
		return uio_end(t);
	uint64_t sent = atomic_load(&t->sh->sent);
	if (!run->start_failed && !sig && sent > t->answered)
		sink_warning(&run->sink, "%" PRIu64 " of %" PRIu64 " stimuli were never answered", sent - t->answered,
			     sent);
	if (!run->start_failed && !sig && atomic_load(&t->sh->failed))
		sink_warning(&run->sink, "%" PRIu64 " stimuli could not be delivered",
			     (uint64_t)atomic_load(&t->sh->failed));
	if (t->ring_overwritten)
		sink_warning(&run->sink, "%" PRIu64 " stimulus timestamps overwritten (responder stalled): measured "
			     "from their scheduled deadline", t->ring_overwritten);
	if (run_end_early(run, &rc))
		return rc;
	if (sent > t->answered || atomic_load(&t->sh->failed))
		return sink_finish(&run->sink, 4, "incomplete", "stimuli lost or unanswered (see summary stimuli)");
	return sink_finish(&run->sink, -1, NULL, NULL);
}

/* eventfd, pipes, timerfd and epoll exist on every supported Linux; the
 * gpio and --timerlat modes say at run time what they miss (exit 3). */
static bool event_supported(char *why_not, size_t len)
{
	return probe_fd_supported(eventfd(0, EFD_CLOEXEC), "eventfd", why_not, len);
}

const struct probe probe_event = {
	.name = "event",
	.summary = "interrupt-to-user response: stimulus (eventfd, pipe, timerfd; gpio loopback where wired; a "
		   "device's interrupt through UIO) to the wake-up of a responder blocked in epoll_wait or read",
	.opts = event_opts, .nopts = EVENT_NOPTS, .supported = event_supported,
	.label_keys = PROBE_LIST("source"),
	.state_bytes = sizeof(struct event), .exclusive = PROBE_LIST("duration", "loops"), .params = event_params,
	.validate = event_validate, .privileges = event_privileges, .prepare = event_prepare,
	.start = event_start, .tick = event_tick, .stop = event_stop,
	.end = event_end, .cleanup = event_cleanup,
};
