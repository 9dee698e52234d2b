/* noise probe: OS and hardware noise (the oslat / osnoise / hwlat class). One pinned thread per
 * measured CPU busy-loops reading CLOCK_MONOTONIC; a gap between two consecutive reads longer
 * than --gap is noise: one sample (the histogram holds gap lengths), and above --threshold one
 * event record (so --trace names the gap's cause, as for the timer's spikes). Per CPU the
 * summary adds the noise per second of measured time, the largest gap, the steal time of
 * /proc/stat over the run and the SMI count (MSR 0x34) where /dev/cpu/N/msr is readable.
 *
 * The loop runs in windows of WINDOW_NS with a short sleep between them (the sleep is not
 * measured): an RT spinner then blocks often enough for RLIMIT_RTTIME to be a real bound.
 * Bounded three ways: its own clock check (--duration), RLIMIT_RTTIME (SIGXCPU ends the loop,
 * SIGKILL later) and the watchdog alarm (the stop flag; the main thread demotes a spinner still
 * running to SCHED_OTHER). Never at an RT policy on every online CPU: refused. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "rtqual/cpulist.h"
#include "rtqual/lifecycle.h"
#include "rtqual/log.h"
#include "rtqual/noise.h"
#include "rtqual/probe.h"
#include "rtqual/rtenv.h"
#include "rtqual/sink.h"

/* Spin WINDOW_NS, then sleep SLEEP_NS: a 90 % duty cycle (osnoise's default), under the kernel's RT
 * throttling (sched_rt_runtime_us, 95 % by default), which would otherwise stop the loop some 50 ms
 * of every second and be measured as noise of its own making; the sleep (not measured) also resets
 * RLIMIT_RTTIME. */
#define WINDOW_NS (45 * NS_PER_MS)
#define SLEEP_NS (5 * NS_PER_MS)
#define MSR_SMI_COUNT 0x34
#define STAT_BYTES 65536

struct noise_cfg {
	struct cpulist cpus;
	int policy;
	int64_t priority, duration_ns, gap_ns;
	bool no_dma_latency, allow_degraded;
	struct sink_out out;
};

struct noise;

struct spin {
	struct noise *t;
	struct cpu_state *cs;
	pthread_t tid;
	bool started;
	_Atomic bool done;
	struct noise_tally tally;
	const char *stopped_by; /* clock | rlimit_rttime | signal */
	uint64_t steal0, steal1, smi0, smi1;
	bool steal_ok, smi_ok;
};

/* All state of one noise run. */
struct noise {
	struct run run; /* first: the driver's part */
	struct noise_cfg cfg;
	struct spin *sp;
	_Atomic int spins_done;
	int demoted;
	char smi_note[160], tracer_note[160];
	bool osnoise, hwlat;
};

#define F(x) offsetof(struct noise, cfg.x)
static const struct opt_def noise_opts[] = {
	{"cpus", OPT_CPULIST, F(cpus), 0, 0, NULL, NULL,
	 "one busy loop per CPU, pinned (default: the CPUs we may use; at an RT policy never all online CPUs)"},
	RUN_OPT_POLICY(F, "scheduling policy of the loops (fifo: only IRQs, softirqs and higher tasks interrupt)"),
	RUN_OPT_PRIORITY(F, "1", "RT priority (ignored for other); 1 stays below threaded IRQs and every RT task"),
	RUN_OPT_DURATION(F, "10s", "measured time per CPU"),
	{"gap", OPT_DURATION, F(gap_ns), 100, NS_PER_S, "1us", NULL,
	 "a gap between two clock reads longer than this is noise (one sample)"},
	RUN_OPT_THRESHOLD(F, "100us", "gaps above it emit event records (--trace names their cause)"),
	SINK_OUT_OPTS(F, "1000"),
	RUN_OPT_NO_DMA_LATENCY(F),
	RUN_OPT_ALLOW_DEGRADED(F, RUN_DEGRADED_HELP),
};
#undef F
#define NOISE_NOPTS ((int)(sizeof(noise_opts) / sizeof(noise_opts[0])))

/* Read /proc/stat into buf; false if unreadable. */
static bool read_stat(char *buf, size_t len)
{
	int fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return true;
}

/* MSR_SMI_COUNT of `cpu` (Intel); false if /dev/cpu/N/msr is absent or unreadable. */
static bool read_smi(int cpu, uint64_t *v)
{
	char path[48];
	snprintf(path, sizeof(path), "/dev/cpu/%d/msr", cpu);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool ok = pread(fd, v, sizeof(*v), MSR_SMI_COUNT) == (ssize_t)sizeof(*v);
	close(fd);
	return ok;
}

/* Steal ticks and SMI counts of every measured CPU, before (`end` false) or after the run. */
static void snapshot(struct noise *t, bool end)
{
	static char stat[STAT_BYTES];
	bool have_stat = read_stat(stat, sizeof(stat));
	for (int i = 0; i < t->run.sink.ncpu; i++) {
		struct spin *s = &t->sp[i];
		int cpu = s->cs->cpu;
		uint64_t v = 0;
		bool ok = have_stat && noise_stat_steal(stat, cpu, &v);
		if (!end) {
			s->steal_ok = ok;
			s->steal0 = v;
			s->smi_ok = read_smi(cpu, &s->smi0);
		} else {
			s->steal_ok &= ok;
			s->steal1 = ok ? v : 0;
			s->smi_ok &= read_smi(cpu, &s->smi1);
		}
	}
}

/* Is `name` in tracefs available_tracers? */
static bool tracer_available(const char *name)
{
	static const char *const paths[] = {"/sys/kernel/tracing/available_tracers",
					    "/sys/kernel/debug/tracing/available_tracers"};
	char buf[1024];
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		FILE *f = fopen(paths[i], "r");
		if (!f)
			continue;
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = '\0';
		for (char *tok = strtok(buf, " \n"); tok; tok = strtok(NULL, " \n"))
			if (strcmp(tok, name) == 0)
				return true;
		return false;
	}
	return false;
}

/* The busy loop of one CPU: windows of WINDOW_NS (the last one shorter) separated by a sleep;
 * every gap longer than --gap is a sample. After a sample the clock is read again, so the
 * probe's own bookkeeping is never counted as noise. */
static void *spin_main(void *arg)
{
	struct spin *s = arg;
	struct noise *t = s->t;
	struct cpu_state *cs = s->cs;
	const int64_t gap_min = t->cfg.gap_ns;
	const memory_order rx = memory_order_relaxed;
	struct noise_tally *ty = &s->tally;

	rt_prefault_stack();
	prctl(PR_SET_TIMERSLACK, 1UL);
	int64_t start = mono_now_ns(), end = start + t->cfg.duration_ns;
	s->stopped_by = "clock";
	for (int64_t w0 = start; w0 < end;) {
		int64_t wend = w0 + WINDOW_NS < end ? w0 + WINDOW_NS : end, prev = w0, now = w0;
		bool stop = false;
		while (now < wend) {
			now = mono_now_ns();
			int64_t d = noise_gap(ty, prev, now, gap_min);
			if (d) {
				sink_sample(cs, d, now, 0);
				ty->measured_ns += now - w0; /* the window so far, bookkeeping excluded */
				now = w0 = mono_now_ns();
			}
			prev = now;
			if (atomic_load_explicit(&t->run.sink.stop, rx)) {
				s->stopped_by = "signal";
				stop = true;
				break;
			}
			if (rt_xcpu_caught()) {
				s->stopped_by = "rlimit_rttime";
				stop = true;
				break;
			}
		}
		ty->measured_ns += now - w0;
		if (stop)
			break;
		sleep_until_ns(mono_now_ns() + SLEEP_NS);
		w0 = mono_now_ns();
	}
	atomic_store(&s->done, true);
	return run_thread_done(&t->run, &t->spins_done, cs, ty->gaps);
}

/* Header "params": the effective configuration and the run's bounds. */
static void noise_params(struct jw *w, const void *ctx)
{
	const struct noise *t = ctx;
	const struct noise_cfg *c = &t->cfg;
	jw_cpus(w, "cpus", c->cpus.cpu, c->cpus.n);
	run_params_sched(w, c->policy, c->priority);
	jw_i64(w, "duration_ns", c->duration_ns);
	jw_i64(w, "gap_ns", c->gap_ns);
	jw_i64(w, "window_ns", WINDOW_NS);
	jw_i64(w, "window_sleep_ns", SLEEP_NS);
	sink_out_params(w, &c->out);
	run_params_flags(w, c->no_dma_latency, c->allow_degraded);
}

/* Summary keys: per CPU the noise figures; at the top level what was (not) available. */
static void noise_summary_extra(struct jw *w, int slot, const void *ctx)
{
	const struct noise *t = ctx;
	long hz = sysconf(_SC_CLK_TCK);
	if (slot >= 0) {
		const struct spin *s = &t->sp[slot];
		jw_u64(w, "gaps", s->tally.gaps);
		jw_u64(w, "noise_ns", s->tally.noise_ns);
		jw_i64(w, "measured_ns", s->tally.measured_ns);
		jw_u64(w, "noise_ns_per_s", noise_per_s(s->tally.noise_ns, s->tally.measured_ns));
		jw_i64(w, "largest_gap_ns", s->tally.largest_ns);
		if (s->steal_ok && hz > 0)
			jw_u64(w, "steal_ns", (s->steal1 - s->steal0) * (uint64_t)(NS_PER_S / hz));
		else
			jw_null(w, "steal_ns");
		if (s->smi_ok)
			jw_u64(w, "smi", s->smi1 - s->smi0);
		else
			jw_null(w, "smi");
		jw_str(w, "stopped_by", s->stopped_by);
		return;
	}
	jw_obj_begin(w, "noise");
	jw_i64(w, "gap_ns", t->cfg.gap_ns);
	uint64_t noise = 0, gaps = 0;
	int64_t measured = 0, largest = 0;
	for (int i = 0; i < t->run.sink.ncpu; i++) {
		noise += t->sp[i].tally.noise_ns;
		gaps += t->sp[i].tally.gaps;
		measured += t->sp[i].tally.measured_ns;
		if (t->sp[i].tally.largest_ns > largest)
			largest = t->sp[i].tally.largest_ns;
	}
	jw_u64(w, "gaps", gaps);
	jw_u64(w, "noise_ns_per_s", noise_per_s(noise, measured));
	jw_i64(w, "largest_gap_ns", largest);
	jw_str(w, "smi_note", t->smi_note[0] ? t->smi_note : NULL);
	jw_bool(w, "osnoise_tracer", t->osnoise);
	jw_bool(w, "hwlat_tracer", t->hwlat);
	jw_str(w, "tracer_note", t->tracer_note);
	jw_i64(w, "demoted", t->demoted);
	jw_obj_end(w);
}

/* CPUs: the default and the refusal of an RT loop on every online CPU. */
static int noise_validate(struct run *run)
{
	struct noise *t = (struct noise *)run;
	struct noise_cfg *c = &t->cfg;
	char err[512], list[256];
	struct cpulist online;
	if (cpulist_online(&online, err, sizeof(err)))
		return log_error("%s", err);
	bool rt = c->policy != RT_OTHER;
	if (!run_given(run, "cpus")) {
		if (cpulist_usable(&c->cpus, err, sizeof(err)))
			return log_error("--cpus: %s", err);
		if (rt && c->cpus.n >= online.n && c->cpus.n > 1) { /* leave the first CPU to the system */
			memmove(c->cpus.cpu, c->cpus.cpu + 1, (size_t)(c->cpus.n - 1) * sizeof(c->cpus.cpu[0]));
			c->cpus.n--;
		}
	} else if (cpulist_check(&c->cpus, err, sizeof(err))) {
		return log_error("--cpus: %s", err);
	}
	if (rt && c->cpus.n >= online.n)
		return log_error("refusing a SCHED_%s busy loop on every online CPU (--cpus %s of %d online): it can "
				 "freeze the machine; leave one CPU out, or use --policy other",
				 c->policy == RT_FIFO ? "FIFO" : "RR", cpulist_format(&c->cpus, list, sizeof(list)),
				 online.n);
	return sink_out_validate(&c->out, run->a->check);
}

static int noise_privileges(struct run *run)
{
	struct noise *t = (struct noise *)run;
	return rt_acquire(t->cfg.policy, (int)t->cfg.priority, t->cfg.allow_degraded, &run->rt, &run->warn);
}

/* Slots, /dev/cpu_dma_latency, RLIMIT_RTTIME (SIGXCPU sets a flag), what is available for the
 * side notes, the watchdog; the steal/SMI snapshot is taken at start. */
static int noise_prepare(struct run *run)
{
	struct noise *t = (struct noise *)run;
	struct noise_cfg *c = &t->cfg;
	if (sink_init(&run->sink, &c->out, c->cpus.cpu, c->cpus.n, run->err, sizeof(run->err)) ||
	    !(t->sp = calloc((size_t)c->cpus.n, sizeof(*t->sp))))
		return log_error("%s", run->err[0] ? run->err : "out of memory");
	rt_xcpu_catch();
	run_hold(run, !c->no_dma_latency);
	run->sink.summary_extra = noise_summary_extra;
	run->sink.summary_ctx = t;
	uint64_t v;
	if (!read_smi(c->cpus.cpu[0], &v))
		snprintf(t->smi_note, sizeof(t->smi_note),
			 "/dev/cpu/%d/msr not readable (msr module, root, an Intel CPU): SMI count unknown", c->cpus.cpu[0]);
	t->osnoise = tracer_available("osnoise");
	t->hwlat = tracer_available("hwlat");
	snprintf(t->tracer_note, sizeof(t->tracer_note), "%s; %s",
		 t->osnoise ? "osnoise tracer present (rtla osnoise gives the kernel's view)" : "osnoise tracer absent",
		 t->hwlat ? "hwlat tracer present" : "hwlat tracer absent");
	run->watchdog_s = run_watchdog_s(u128_of((uint64_t)c->duration_ns), 0, 0x7fffffff);
	return 0;
}

static int noise_start(struct run *run)
{
	struct noise *t = (struct noise *)run;
	for (int i = 0; i < run->sink.ncpu; i++) {
		t->sp[i].t = t;
		t->sp[i].cs = &run->sink.cs[i];
	}
	snapshot(t, false); /* reads each spin's CPU: after cs is set */
	for (int i = 0; i < run->sink.ncpu; i++) {
		struct spin *s = &t->sp[i];
		if (run_thread(run, &s->tid, &s->started, run->rt.priority, s->cs->cpu, spin_main, s, "the busy loop"))
			return -1;
	}
	return 0;
}

/* Bound 3: a loop still running at a stop or the watchdog goes down to SCHED_OTHER (it also
 * sees sink.stop at its next clock read). */
static void noise_kick(struct run *run)
{
	struct noise *t = (struct noise *)run;
	struct sched_param sp = {.sched_priority = 0};
	if (run->rt.policy == RT_OTHER)
		return;
	for (int i = 0; i < run->sink.ncpu; i++)
		if (t->sp[i].started && !atomic_load(&t->sp[i].done) &&
		    pthread_setschedparam(t->sp[i].tid, SCHED_OTHER, &sp) == 0)
			t->demoted++;
}

static void noise_stop(struct run *run)
{
	struct noise *t = (struct noise *)run;
	for (int i = 0; i < run->sink.ncpu; i++)
		if (t->sp[i].started)
			pthread_join(t->sp[i].tid, NULL);
	snapshot(t, true);
}

static int noise_end(struct run *run)
{
	if (rt_xcpu_caught())
		sink_warning(&run->sink, "RLIMIT_RTTIME soft limit hit (SIGXCPU): a busy loop ran a window without "
			     "sleeping; it stopped");
	return run_end(run);
}

static void noise_cleanup(struct run *run)
{
	free(((struct noise *)run)->sp);
}

const struct probe probe_noise = {
	.name = "noise",
	.summary = "OS and hardware noise: a bounded busy loop per CPU reads the clock; every gap above --gap is "
		   "a sample (oslat/osnoise-like)",
	.opts = noise_opts, .nopts = NOISE_NOPTS,
	.state_bytes = sizeof(struct noise), .params = noise_params,
	.validate = noise_validate, .privileges = noise_privileges, .prepare = noise_prepare,
	.start = noise_start, .kick = noise_kick, .stop = noise_stop, .end = noise_end, .cleanup = noise_cleanup,
};
