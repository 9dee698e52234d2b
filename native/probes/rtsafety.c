/* rtsafety probe: the runaway real-time loop of the SPring-8 multi-core
 * study ("an RT while(1) on N of N processors hangs the OS"), bounded.
 * K SCHED_FIFO busy loops run for --duration on K of N CPUs; meanwhile
 *  (a) a SCHED_OTHER thread pinned to each spinner CPU reads the clock in a
 *      loop: every gap longer than --gap is one sample (a stall), slot =
 *      that CPU;
 *  (b) a SCHED_OTHER launcher (any CPU) fork+execs /bin/true every
 *      --login-interval: each completion time is one sample, slot = the
 *      first CPU that is not a spinner ("can I still log in").
 * Every spinner is bounded by its clock, RLIMIT_RTTIME (SIGXCPU, then
 * SIGKILL) and alarm() (the main thread then demotes it to SCHED_OTHER). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rtqual/cpulist.h"
#include "rtqual/lifecycle.h"
#include "rtqual/log.h"
#include "rtqual/probe.h"
#include "rtqual/rtenv.h"
#include "rtqual/sink.h"

#define THREAD_STACK_BYTES (256 * 1024)
#define POLL_NS (20 * NS_PER_MS)
#define START_DELAY_NS (20 * NS_PER_MS)  /* victims run this long before the spin */
#define RTTIME_SOFT_MARGIN_US 100000      /* SIGXCPU 100 ms after --duration */
#define RTTIME_HARD_MARGIN_US 500000      /* SIGKILL 500 ms after --duration */
#define ALARM_MARGIN_S 2
#define DEMOTE_GRACE_NS (200 * NS_PER_MS) /* spinner past its end: demoted */
#define VICTIM_MAX_AFTER_NS (2 * NS_PER_S)
#define IRQ_THREAD_PRIO 50

struct rts_cfg {
	int64_t spinners, spin_priority, spin_time_ns, gap_ns, login_interval_ns;
	bool force;
	struct sink_out out;
};


struct rts;

struct spinner {
	struct rts *t;
	int cpu;
	pthread_t tid;
	bool started;
	_Atomic bool done;
	int64_t spun_ns, cpu_time_ns;
	const char *stopped_by; /* clock | rlimit_rttime | signal */
};

struct victim {
	struct rts *t;
	struct cpu_state *cs;
	pthread_t tid;
	bool started;
	_Atomic bool done;
	int64_t window_ns, longest_ns, stalled_ns;
};

/* All state of one rtsafety run. */
struct rts {
	struct run run; /* first: the driver's part */
	struct rts_cfg cfg;
	int ncpus_online, nspin, login_cpu; /* login_cpu -1: no free CPU (--force) */
	int slot_cpus[CPULIST_MAX], slot_vic[CPULIST_MAX];
	struct spinner sp[CPULIST_MAX];
	struct victim *vic; /* one per spinner */
	struct cpu_state *login_cs;
	int64_t spin_start_ns, spin_end_ns;
	_Atomic int spinners_done;
	_Atomic bool victims_stop, login_done;
	pthread_t login_tid;
	bool login_started;
	uint64_t login_attempts, login_completed, login_failed;
	int64_t login_max_ns;
	const char *login_cmd;
	int64_t rt_runtime_us, rt_period_us;
	int demoted;
};

#define F(x) offsetof(struct rts, cfg.x)
static const struct opt_def rts_opts[] = {
	{"spinners", OPT_INT, F(spinners), 1, CPULIST_MAX, "1", NULL,
	 "SCHED_FIFO busy loops, one per CPU, on the last K CPUs of our affinity mask (K < online CPUs)"},
	{"spin-priority", OPT_INT, F(spin_priority), 1, 99, "10", NULL,
	 "SCHED_FIFO priority of the spinners (>= 50, above threaded IRQs, needs --force)"},
	{"duration", OPT_DURATION, F(spin_time_ns), 10 * NS_PER_MS, 60 * NS_PER_S, "2s", NULL,
	 "how long each spinner runs"},
	{"gap", OPT_DURATION, F(gap_ns), 10 * NS_PER_US, NS_PER_S, "1ms", NULL,
	 "a SCHED_OTHER clock-read gap longer than this is a stall (one sample)"},
	{"login-interval", OPT_DURATION, F(login_interval_ns), NS_PER_MS, 10 * NS_PER_S, "100ms", NULL,
	 "period of the fork+exec /bin/true attempts during the spin"},
	{"force", OPT_FLAG, F(force), 0, 0, NULL, NULL,
	 "allow spinners on every online CPU or at priority >= 50 (can freeze the machine)"},
	RUN_OPT_THRESHOLD(F, "100ms", "samples above it emit event records"),
	SINK_OUT_OPTS(F, "500"),
};
#undef F
#define RTS_NOPTS ((int)(sizeof(rts_opts) / sizeof(rts_opts[0])))

/* One integer from a /proc or /sys file; false if unreadable. */
static bool read_i64(const char *path, int64_t *v)
{
	FILE *f = fopen(path, "r");
	long long x;
	if (!f)
		return false;
	bool ok = fscanf(f, "%lld", &x) == 1;
	fclose(f);
	if (ok)
		*v = x;
	return ok;
}

/* Spinner: wait for the common start, then a bounded SCHED_FIFO busy loop. */
static void *spinner_main(void *arg)
{
	struct spinner *s = arg;
	struct rts *t = s->t;
	sleep_until_ns(t->spin_start_ns);
	int64_t t0 = mono_now_ns(), now = t0;
	const int64_t end = t->spin_end_ns;
	volatile uint64_t work = 0;
	s->stopped_by = "clock";
	while (now < end) {
		for (int i = 0; i < 256; i++)
			work += (uint64_t)i;
		if (rt_xcpu_caught()) {
			s->stopped_by = "rlimit_rttime";
			break;
		}
		if (rt_signals_caught() || atomic_load_explicit(&t->run.sink.stop, memory_order_relaxed)) {
			s->stopped_by = "signal";
			break;
		}
		now = mono_now_ns();
	}
	s->spun_ns = mono_now_ns() - t0;
	s->cpu_time_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	atomic_store(&s->done, true);
	atomic_fetch_add(&t->spinners_done, 1);
	return NULL;
}

/* Victim (SCHED_OTHER, pinned to a spinner CPU): consecutive clock reads;
 * a gap longer than --gap is a stall sample. Ends at the first read after
 * every spinner finished, so the last stall is measured to its end. */
static void *victim_main(void *arg)
{
	struct victim *v = arg;
	struct rts *t = v->t;
	const int64_t gap = t->cfg.gap_ns, hard_end = t->spin_end_ns + VICTIM_MAX_AFTER_NS;
	int64_t start = mono_now_ns(), prev = start, now = start;
	uint64_t stalls = 0;
	for (;;) {
		bool last = atomic_load_explicit(&t->victims_stop, memory_order_acquire);
		now = mono_now_ns();
		int64_t d = now - prev;
		if (d > gap) {
			sink_sample(v->cs, d, now, 0);
			stalls++;
			v->stalled_ns += d;
			if (d > v->longest_ns)
				v->longest_ns = d;
		}
		prev = now;
		if (last || now > hard_end || atomic_load_explicit(&t->run.sink.stop, memory_order_relaxed))
			break;
	}
	v->window_ns = now - start;
	sink_slot_end(v->cs, stalls);
	atomic_store(&v->done, true);
	return NULL;
}

/* Launcher (SCHED_OTHER, any CPU): fork+exec the login command every
 * --login-interval while the spinners run; sample = fork to reaped exit. */
static void *login_main(void *arg)
{
	struct rts *t = arg;
	char *const argv_true[] = {(char *)t->login_cmd, NULL};
	char *const argv_self[] = {(char *)t->login_cmd, "--version", NULL};
	char *const envp[] = {NULL};
	bool self = strcmp(t->login_cmd, "/proc/self/exe") == 0;
	int64_t next = t->spin_start_ns + NS_PER_MS; /* spinners are running */
	int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	while (next < t->spin_end_ns && !atomic_load(&t->run.sink.stop) && !rt_signals_caught() &&
	       atomic_load(&t->spinners_done) < t->nspin) {
		sleep_until_ns(next);
		int64_t t0 = mono_now_ns();
		t->login_attempts++;
		pid_t pid = fork();
		if (pid == 0) {
			if (devnull >= 0)
				dup2(devnull, 1);
			execve(t->login_cmd, self ? argv_self : argv_true, envp);
			_exit(127);
		}
		int st = 0;
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			t->login_failed++;
		} else {
			int64_t now = mono_now_ns(), d = now - t0;
			t->login_completed++;
			if (d > t->login_max_ns)
				t->login_max_ns = d;
			if (t->login_cs)
				sink_sample(t->login_cs, d, now, 0);
		}
		next += t->cfg.login_interval_ns;
		int64_t now = mono_now_ns();
		if (next < now) /* the launch itself took longer than the period */
			next = now;
	}
	if (devnull >= 0)
		close(devnull);
	if (t->login_cs) {
		sink_slot_end(t->login_cs, t->login_attempts);
	}
	atomic_store(&t->login_done, true);
	return NULL;
}

/* RT throttling, what a SCHED_OTHER task gets on a spinner CPU: sched_rt_runtime_us,
 * sched_rt_period_us, and the fair-server settings per CPU (debugfs, 6.12+), if readable. */
static void params_throttling(struct jw *w, const struct rts *t)
{
	jw_i64(w, "sched_rt_runtime_us", t->rt_runtime_us);
	jw_i64(w, "sched_rt_period_us", t->rt_period_us);
	int64_t rt, per;
	char p1[128], p2[128];
	bool any = false;
	for (int cpu = 0; cpu < CPULIST_MAX; cpu++) {
		snprintf(p1, sizeof(p1), "/sys/kernel/debug/sched/fair_server/cpu%d/runtime", cpu);
		snprintf(p2, sizeof(p2), "/sys/kernel/debug/sched/fair_server/cpu%d/period", cpu);
		if (!read_i64(p1, &rt)) {
			if (cpu == 0)
				break;
			continue;
		}
		if (!any)
			jw_obj_begin(w, "fair_server");
		any = true;
		char key[16];
		snprintf(key, sizeof(key), "%d", cpu);
		jw_obj_begin(w, key);
		jw_i64(w, "runtime_ns", rt);
		if (read_i64(p2, &per))
			jw_i64(w, "period_ns", per);
		else
			jw_null(w, "period_ns");
		jw_obj_end(w);
	}
	if (any) {
		jw_obj_end(w);
		return;
	}
	jw_null(w, "fair_server");
	jw_str(w, "fair_server_note",
	       access("/sys/kernel/debug/sched", F_OK) == 0
		       ? "no fair_server in debugfs (kernel before 6.12)"
		       : "unknown: debugfs not mounted or not readable (/sys/kernel/debug/sched)");
}

/* The spinners' CPUs as an array `key`. */
static void spin_cpus(struct jw *w, const char *key, const struct rts *t)
{
	jw_arr_begin(w, key);
	for (int i = 0; i < t->nspin; i++)
		jw_i64(w, NULL, t->sp[i].cpu);
	jw_arr_end(w);
}

static void rts_params(struct jw *w, const void *ctx)
{
	const struct rts *t = ctx;
	const struct rts_cfg *c = &t->cfg;
	jw_i64(w, "spinners", t->nspin);
	spin_cpus(w, "spin_cpus", t);
	jw_i64(w, "spin_priority", c->spin_priority);
	jw_i64(w, "spin_time_ns", c->spin_time_ns);
	jw_i64(w, "gap_ns", c->gap_ns);
	jw_i64(w, "login_interval_ns", c->login_interval_ns);
	jw_str(w, "login_cmd", t->login_cmd);
	spin_cpus(w, "stall_slots", t);
	if (t->login_cpu >= 0)
		jw_i64(w, "login_slot", t->login_cpu);
	else
		jw_null(w, "login_slot");
	jw_i64(w, "ncpus_online", t->ncpus_online);
	jw_bool(w, "force", c->force);
	params_throttling(w, t);
	run_params_busy(w, &t->run);
	sink_out_params(w, &c->out);
}

/* Summary extension (optional keys): per slot its role; at the top level
 * what each spinner did and the login tally. */
static void rts_summary_extra(struct jw *w, int slot, const void *ctx)
{
	const struct rts *t = ctx;
	if (slot >= 0) {
		if (t->slot_vic[slot] >= 0) {
			const struct victim *v = &t->vic[t->slot_vic[slot]];
			jw_str(w, "role", "stall");
			jw_i64(w, "window_ns", v->window_ns);
			jw_i64(w, "stalled_ns", v->stalled_ns);
			jw_i64(w, "longest_stall_ns", v->longest_ns);
		} else {
			jw_str(w, "role", "login");
			jw_u64(w, "attempts", t->login_attempts);
			jw_u64(w, "failed", t->login_failed);
		}
		return;
	}
	jw_obj_begin(w, "rtsafety");
	int64_t longest = 0;
	for (int i = 0; i < t->nspin; i++)
		if (t->vic[i].longest_ns > longest)
			longest = t->vic[i].longest_ns;
	jw_i64(w, "longest_stall_ns", longest);
	jw_arr_begin(w, "spinners");
	for (int i = 0; i < t->nspin; i++) {
		jw_obj_begin(w, NULL);
		jw_i64(w, "cpu", t->sp[i].cpu);
		jw_i64(w, "spun_ns", t->sp[i].spun_ns);
		jw_i64(w, "cpu_time_ns", t->sp[i].cpu_time_ns);
		jw_str(w, "stopped_by", t->sp[i].stopped_by);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_i64(w, "demoted", t->demoted);
	jw_obj_begin(w, "login");
	jw_u64(w, "attempts", t->login_attempts);
	jw_u64(w, "completed", t->login_completed);
	jw_u64(w, "failed", t->login_failed);
	jw_i64(w, "max_ns", t->login_max_ns);
	jw_obj_end(w);
	jw_obj_end(w);
}

/* Options that need more than a range check; choose spinner CPUs and the
 * login slot. */
static int rts_validate(struct run *run)
{
	struct rts *t = (struct rts *)run;
	struct rts_cfg *c = &t->cfg;
	char err[512];
	struct cpulist usable;
	if (cpulist_usable(&usable, err, sizeof(err)))
		return log_error("%s", err);
	t->ncpus_online = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (c->spinners >= t->ncpus_online && !c->force)
		return log_error("refusing --spinners %" PRId64 " on %d online CPUs: a runaway RT loop on every CPU "
				 "can freeze the machine (use fewer spinners, or --force to insist)",
				 c->spinners, t->ncpus_online);
	if (c->spinners > usable.n)
		return log_error("--spinners %" PRId64 ": only %d CPUs in our affinity mask", c->spinners, usable.n);
	if (c->spin_priority >= IRQ_THREAD_PRIO && !c->force)
		return log_error("--spin-priority %" PRId64 " is at or above threaded IRQ handlers (%d): use a lower "
				 "one, or --force to insist",
				 c->spin_priority, IRQ_THREAD_PRIO);
	t->nspin = (int)c->spinners;
	for (int i = 0; i < t->nspin; i++)
		t->sp[i].cpu = usable.cpu[usable.n - t->nspin + i];
	t->login_cpu = t->nspin < usable.n ? usable.cpu[0] : -1;
	if (sink_out_validate(&c->out, run->a->check))
		return 1;
	t->login_cmd = access("/bin/true", X_OK) == 0 ? "/bin/true" : "/proc/self/exe";
	return 0;
}

/* SCHED_FIFO is the point of this probe: no degraded mode. */
static int rts_privileges(struct run *run)
{
	struct rts *t = (struct rts *)run;
	t->run.rt.policy = RT_FIFO;
	t->run.rt.priority = (int)t->cfg.spin_priority;
	int e = rt_acquire_sched(RT_FIFO, (int)t->cfg.spin_priority, false, NULL, &t->run.rt, &t->run.warn);
	if (e)
		return e;
	e = rt_lock_memory();
	t->run.rt.mlockall = e == 0;
	if (e)
		warnings_add(&t->run.warn, "mlockall not permitted (%s): page faults may add to the measured stalls",
			     strerror(e));
	return 0;
}

/* Start victims, launcher and spinners (in that order). */
static int rts_threads(struct rts *t, char *err, size_t errlen)
{
	int e = 0;
	for (int i = 0; i < t->nspin; i++) {
		struct victim *v = &t->vic[i];
		if ((e = rt_thread_start(&v->tid, RT_OTHER, 0, t->sp[i].cpu, THREAD_STACK_BYTES, victim_main, v)))
			goto fail;
		v->started = true;
	}
	if ((e = rt_thread_start(&t->login_tid, RT_OTHER, 0, -1, THREAD_STACK_BYTES, login_main, t)))
		goto fail;
	t->login_started = true;
	for (int i = 0; i < t->nspin; i++) {
		struct spinner *s = &t->sp[i];
		if ((e = rt_thread_start(&s->tid, RT_FIFO, (int)t->cfg.spin_priority, s->cpu, THREAD_STACK_BYTES,
					 spinner_main, s)))
			goto fail;
		s->started = true;
	}
	return 0;
fail:
	snprintf(err, errlen, "cannot start a thread: %s", strerror(e));
	return -1;
}

/* Third bound, independent of the spinner's own checks: drop a spinner
 * that outlived its time (or the alarm) to SCHED_OTHER. */
static void rts_demote_late(struct rts *t, bool all)
{
	int64_t now = mono_now_ns();
	struct sched_param sp = {.sched_priority = 0};
	for (int i = 0; i < t->nspin; i++) {
		struct spinner *s = &t->sp[i];
		if (!s->started || atomic_load(&s->done))
			continue;
		if (all || now > t->spin_end_ns + DEMOTE_GRACE_NS) {
			if (pthread_setschedparam(s->tid, SCHED_OTHER, &sp) == 0)
				t->demoted++;
		}
	}
}

/* Main thread (pinned off the spinner CPUs): progress and the watchdog. */
static void rts_supervise(struct run *run)
{
	struct rts *t = (struct rts *)run;
	bool victims_told = false;
	run_pace_start(run, POLL_NS);
	for (;;) {
		if (run_stopping(run) && (rt_signals_caught() & RT_SIG_WATCHDOG))
			rts_demote_late(t, true);
		rts_demote_late(t, false);
		if (!victims_told && atomic_load(&t->spinners_done) == t->nspin) {
			atomic_store_explicit(&t->victims_stop, true, memory_order_release);
			victims_told = true;
		}
		bool victims_done = true;
		for (int i = 0; i < t->nspin; i++)
			victims_done &= !t->vic[i].started || atomic_load(&t->vic[i].done);
		if (victims_done && atomic_load(&t->spinners_done) == t->nspin &&
		    (!t->login_started || atomic_load(&t->login_done)))
			break;
		run_pace(run);
	}
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Slots (one per spinner CPU for the stalls, plus the login slot), RLIMIT_RTTIME just above
 * the spin (bound 2: SIGXCPU, then SIGKILL) and the alarm shortly after it (bound 3: then
 * demotion). */
static int rts_prepare(struct run *run)
{
	struct rts *t = (struct rts *)run;
	struct rts_cfg *c = &t->cfg;
	int n = 0;
	for (int i = 0; i < t->nspin; i++)
		t->slot_cpus[n++] = t->sp[i].cpu;
	if (t->login_cpu >= 0)
		t->slot_cpus[n++] = t->login_cpu;
	qsort(t->slot_cpus, (size_t)n, sizeof(int), cmp_int);
	t->vic = calloc((size_t)t->nspin, sizeof(*t->vic));
	if (!t->vic || sink_init(&run->sink, &c->out, t->slot_cpus, n, run->err, sizeof(run->err)))
		return log_error("%s", run->err[0] ? run->err : "out of memory");
	/* slots are in CPU order: spinner k (ascending CPU) and its victim own
	 * the slot of that CPU; slot_vic maps a slot to its victim, -1: login */
	for (int i = 0, k = 0; i < n; i++) {
		if (t->slot_cpus[i] == t->login_cpu) {
			t->login_cs = &run->sink.cs[i];
			t->slot_vic[i] = -1;
			continue;
		}
		t->sp[k].cpu = t->slot_cpus[i];
		t->vic[k].cs = &run->sink.cs[i];
		t->slot_vic[i] = k++;
	}
	for (int i = 0; i < t->nspin; i++) {
		t->sp[i].t = t;
		t->vic[i].t = t;
		atomic_init(&t->sp[i].done, false);
		atomic_init(&t->vic[i].done, false);
	}
	run->sink.summary_extra = rts_summary_extra;
	run->sink.summary_ctx = t;
	t->rt_runtime_us = t->rt_period_us = -2; /* -2: unreadable */
	read_i64("/proc/sys/kernel/sched_rt_runtime_us", &t->rt_runtime_us);
	read_i64("/proc/sys/kernel/sched_rt_period_us", &t->rt_period_us);
	if (t->rt_runtime_us == -1)
		warnings_add(&run->warn, "RT throttling is off (sched_rt_runtime_us = -1): SCHED_OTHER tasks on the "
			     "spinner CPUs get no time until the spin ends");
	if (run_bound_busy(run, c->spin_time_ns, RTTIME_SOFT_MARGIN_US, RTTIME_HARD_MARGIN_US,
			   "a safety bound of every spinner"))
		return 1;
	run->watchdog_s = (unsigned)((START_DELAY_NS + c->spin_time_ns) / NS_PER_S) + 1 + ALARM_MARGIN_S;
	return 0;
}

/* Victims, login, spinners; then the main thread (progress, demotion) leaves the spinner CPUs. */
static int rts_start(struct run *run)
{
	struct rts *t = (struct rts *)run;
	t->spin_start_ns = mono_now_ns() + START_DELAY_NS;
	t->spin_end_ns = t->spin_start_ns + t->cfg.spin_time_ns;
	int rc = rts_threads(t, run->err, sizeof(run->err));
	if (t->login_cpu >= 0) {
		cpu_set_t set;
		if (pthread_getaffinity_np(pthread_self(), sizeof(set), &set) == 0) {
			for (int i = 0; i < t->nspin; i++)
				CPU_CLR(t->sp[i].cpu, &set);
			pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
		}
	}
	return rc;
}

/* Victims stop at their next wake-up (the spinners end by their own clock). */
static void rts_kick(struct run *run)
{
	atomic_store(&((struct rts *)run)->victims_stop, true);
}

static void rts_stop(struct run *run)
{
	struct rts *t = (struct rts *)run;
	atomic_store(&t->victims_stop, true);
	for (int i = 0; i < t->nspin; i++)
		if (t->sp[i].started)
			pthread_join(t->sp[i].tid, NULL);
	for (int i = 0; i < t->nspin; i++)
		if (t->vic[i].started)
			pthread_join(t->vic[i].tid, NULL);
	if (t->login_started)
		pthread_join(t->login_tid, NULL);
}

/* Warnings for the safety bounds that acted, then the ending. */
static int rts_end(struct run *run)
{
	struct rts *t = (struct rts *)run;
	int sig = rt_signals_caught();
	if (t->demoted)
		sink_warning(&run->sink, "%d spinner(s) outlived --duration and were demoted to SCHED_OTHER",
			     t->demoted);
	if (rt_xcpu_caught())
		sink_warning(&run->sink, "RLIMIT_RTTIME soft limit hit (SIGXCPU): a spinner ran past --duration");
	if (t->login_failed)
		sink_warning(&run->sink, "%" PRIu64 " of %" PRIu64 " fork+exec attempts failed", t->login_failed,
			     t->login_attempts);
	if (!run->start_failed && (sig & RT_SIG_WATCHDOG))
		return sink_finish(&run->sink, 1, "error", "watchdog: a spinner outlived its alarm");
	return run_end(run);
}

/* The victims' table. */
static void rts_cleanup(struct run *run)
{
	free(((struct rts *)run)->vic);
}

const struct probe probe_rtsafety = {
	.name = "rtsafety",
	.summary = "runaway RT loop test: bounded SCHED_FIFO spinners on K of N CPUs; stalls of a SCHED_OTHER task "
		   "on those CPUs and fork+exec completion times (can I still log in)",
	.opts = rts_opts, .nopts = RTS_NOPTS, .supported = probe_spare_cpu_supported,
	.state_bytes = sizeof(struct rts), .params = rts_params,
	.validate = rts_validate, .privileges = rts_privileges, .prepare = rts_prepare,
	.start = rts_start, .measure = rts_supervise, .kick = rts_kick, .stop = rts_stop,
	.end = rts_end, .cleanup = rts_cleanup,
};
