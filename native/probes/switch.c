/* switch probe: context-switch (wake-up) latency of a ping-pong between two
 * threads or two processes over a pipe, a futex, a POSIX semaphore or a
 * POSIX message queue. Side A (a thread of this process) drives and records
 * every sample; side B (a thread, or a forked child) echoes and hands its
 * measurement over in shared memory. One sample per switch: the waker stores
 * CLOCK_MONOTONIC t_send right before the wake operation (side B: the time
 * stamp of its own wake-up, taken a few stores before), the woken side
 * reads CLOCK_MONOTONIC right after its wait returns; latency = difference.
 * Per round trip: one write and one read per side, three clock reads, two
 * histogram updates; nothing else (no syscall beyond the pair).
 * The sample goes to the slot of the woken side's CPU. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <mqueue.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rtqual/cpulist.h"
#include "rtqual/lifecycle.h"
#include "rtqual/log.h"
#include "rtqual/probe.h"
#include "rtqual/rtenv.h"
#include "rtqual/sink.h"

#define LOOP_BUDGET_NS NS_PER_MS /* hard-cap allowance per round trip with --loops */
#define STALL_NS (10 * NS_PER_S)  /* no round trip for this long: watchdog */
#define PEER_START_NS (5 * NS_PER_S)     /* side B must be ready within this */
#define PEER_EXIT_NS (2 * NS_PER_S)      /* then SIGKILL */
#define MQ_MSG_BYTES 8
/* Same CPU at an RT priority the ping-pong never idles: after 950 ms per second the
 * kernel's RT throttling would stall it 50 ms (and nothing else runs there meanwhile).
 * Side A rests this long every REST_EVERY_NS, outside every timed window. */
#define REST_EVERY_NS (10 * NS_PER_MS)
#define REST_NS NS_PER_MS
#define MQ_MAXMSG 4 /* one message in flight + the stop wake-ups */

enum sw_mode { MODE_THREAD, MODE_PROCESS };
enum sw_ipc { IPC_PIPE, IPC_FUTEX, IPC_SEM, IPC_MQ };
static const char *const mode_names[] = {"thread", "process", NULL};
static const char *const ipc_names[] = {"pipe", "futex", "sem", "mq", NULL};

enum { DIR_AB, DIR_BA }; /* direction of a wake-up: A wakes B, B wakes A */

struct switch_cfg {
	struct cpulist cpus;
	int mode, ipc, policy;
	int64_t priority, duration_ns, loops, warmup;
	bool no_dma_latency, allow_degraded;
	struct sink_out out;
};


/* Shared between the sides (MAP_SHARED|MAP_ANONYMOUS: survives fork). Each
 * direction's line is written by its waker and read by its waiter. */
struct sw_shm {
	struct {
		_Alignas(64) _Atomic int64_t t_send; /* CLOCK_MONOTONIC right before the wake */
		_Atomic uint32_t fut;               /* futex word: 1 = token pending */
		sem_t sem;
	} dir[2];
	/* side B -> side A */
	_Alignas(64) _Atomic int64_t b_lat, b_wake;
	_Atomic int b_nosleep; /* futex: B's last wait found the token without sleeping */
	_Atomic uint64_t b_wakeups;
	_Atomic int64_t b_cpu_time_ns;
	_Atomic int b_state; /* 0 starting, 1 ready, 2 finished, -1 failed (b_err) */
	_Atomic int b_mlock; /* child process locked its memory */
	char b_err[256];
	_Alignas(64) _Atomic int stop;
};

/* All state of one switch run. */
struct sw {
	struct run run; /* first: the driver's part */
	struct switch_cfg cfg;
	struct sw_shm *shm;
	int pfd[2][2]; /* [dir][read, write] */
	mqd_t mq[2];
	int futex_op_flags; /* FUTEX_PRIVATE_FLAG for threads */
	int cpu_a, cpu_b, slot_a, slot_b;
	pthread_t tid_a, tid_b;
	bool a_started, b_started;
	pid_t child;
	_Atomic bool kicked;
	_Atomic uint64_t progress; /* round trips so far, warm-up included */
	bool stalled;
	char a_err[256];
	/* results of side A, read after join */
	uint64_t round_trips, rests, nosleep[2]; /* nosleep: per slot, measured futex waits */
	int64_t measured_ns, rested_ns;
	bool rest_on;
	const char *fail; /* a peer's failure seen by the main thread, or NULL */
	char fail_msg[512];
};

#define F(x) offsetof(struct sw, cfg.x)
static const struct opt_def switch_opts[] = {
	{"cpus", OPT_CPULIST, F(cpus), 0, 0, NULL, NULL,
	 "A,B: side A on CPU A, side B on CPU B (cross-CPU wake-ups); one CPU: both there (pure switch); "
	 "default: the last usable CPU"},
	{"mode", OPT_ENUM, F(mode), 0, 0, "thread", mode_names, "two threads of one process, or two processes (fork)"},
	{"ipc", OPT_ENUM, F(ipc), 0, 0, "pipe", ipc_names,
	 "wake-up mechanism: a pair of pipes, a raw futex, a POSIX semaphore, a POSIX message queue"},
	RUN_OPT_POLICY(F, "scheduling policy of both sides"),
	RUN_OPT_PRIORITY(F, "40", "RT priority of both sides (ignored for other)"),
	RUN_OPTS_LENGTH(F, "measured time after warm-up", 1LL << 40, "measured round trips; replaces --duration",
		"1000", "round trips discarded before measuring"),
	RUN_OPT_THRESHOLD(F, "100us", "samples above it emit event records"),
	SINK_OUT_OPTS(F, "1000"),
	RUN_OPT_NO_DMA_LATENCY(F),
	RUN_OPT_ALLOW_DEGRADED(F, RUN_DEGRADED_HELP),
};
#undef F
#define SWITCH_NOPTS ((int)(sizeof(switch_opts) / sizeof(switch_opts[0])))

/* Wake the waiter of direction `d`. Returns 0 or an errno value. Pipe reads and writes go through
 * syscall(): glibc's read()/write() wrappers are cancellation points, which in a process with
 * more than one thread (side A's) cost two calls around every system call; nothing here is
 * ever cancelled. */
static inline int chan_wake(struct sw *s, int d)
{
	static const char byte = 'x';
	char msg[MQ_MSG_BYTES] = {0};
	switch (s->cfg.ipc) {
	case IPC_PIPE:
		for (;;) {
			long r = syscall(SYS_write, s->pfd[d][1], &byte, 1);
			if (r == 1)
				return 0;
			if (r < 0 && errno != EINTR)
				return errno;
		}
	case IPC_FUTEX:
		atomic_store_explicit(&s->shm->dir[d].fut, 1, memory_order_release);
		if (syscall(SYS_futex, &s->shm->dir[d].fut, FUTEX_WAKE | s->futex_op_flags, 1, NULL, NULL, 0) < 0)
			return errno;
		return 0;
	case IPC_SEM:
		return sem_post(&s->shm->dir[d].sem) == 0 ? 0 : errno;
	default:
		while (mq_send(s->mq[d], msg, sizeof(msg), 0) != 0)
			if (errno != EINTR)
				return errno;
		return 0;
	}
}

/* Block until direction `d` has a token, consume it. 0 or an errno value.
 * futex: *nosleep = the token was there without a FUTEX_WAIT (no switch). */
static inline int chan_wait(struct sw *s, int d, int *nosleep)
{
	char buf[MQ_MSG_BYTES];
	switch (s->cfg.ipc) {
	case IPC_PIPE:
		for (;;) {
			long r = syscall(SYS_read, s->pfd[d][0], buf, 1);
			if (r == 1)
				return 0;
			if (r == 0)
				return EPIPE;
			if (errno != EINTR)
				return errno;
		}
	case IPC_FUTEX:
		for (*nosleep = 1;; *nosleep = 0) {
			uint32_t one = 1;
			if (atomic_compare_exchange_strong_explicit(&s->shm->dir[d].fut, &one, 0, memory_order_acquire,
								    memory_order_relaxed))
				return 0;
			if (syscall(SYS_futex, &s->shm->dir[d].fut, FUTEX_WAIT | s->futex_op_flags, 0, NULL, NULL, 0) < 0 &&
			    errno != EAGAIN && errno != EINTR)
				return errno;
		}
	case IPC_SEM:
		while (sem_wait(&s->shm->dir[d].sem) != 0)
			if (errno != EINTR)
				return errno;
		return 0;
	default:
		while (mq_receive(s->mq[d], buf, sizeof(buf), NULL) < 0)
			if (errno != EINTR)
				return errno;
		return 0;
	}
}

/* Stop both sides wherever they are: set the flag, then leave one token in
 * each direction (tokens persist, so a side that is not waiting yet still
 * finds it). Called once, from the main thread. */
static void sw_kick(struct run *run)
{
	struct sw *s = (struct sw *)run;
	atomic_store(&s->shm->stop, 1);
	if (atomic_exchange(&s->kicked, true))
		return;
	chan_wake(s, DIR_AB);
	chan_wake(s, DIR_BA);
}

/* Side B: wait for A, measure, echo. Same code in a thread and in the child. */
static int side_b_loop(struct sw *s)
{
	struct sw_shm *m = s->shm;
	uint64_t wakeups = 0;
	int e = 0, nosleep = 0;
	rt_prefault_stack();
	atomic_store(&m->b_state, 1);
	for (;;) {
		if ((e = chan_wait(s, DIR_AB, &nosleep)))
			break;
		int64_t tw = mono_now_ns();
		if (atomic_load_explicit(&m->stop, memory_order_relaxed))
			break;
		wakeups++;
		atomic_store_explicit(&m->b_lat, tw - atomic_load_explicit(&m->dir[DIR_AB].t_send, memory_order_acquire),
				      memory_order_relaxed);
		atomic_store_explicit(&m->b_wake, tw, memory_order_relaxed);
		atomic_store_explicit(&m->b_nosleep, nosleep, memory_order_relaxed);
		/* the reply's send time is the wake-up's time stamp: a clock read fewer per round trip,
		 * the three stores above (a few ns) counted in A's wake-up */
		atomic_store_explicit(&m->dir[DIR_BA].t_send, tw, memory_order_release);
		if ((e = chan_wake(s, DIR_BA)))
			break;
	}
	atomic_store(&m->b_wakeups, wakeups);
	atomic_store(&m->b_cpu_time_ns, clock_ns(CLOCK_THREAD_CPUTIME_ID));
	if (e)
		snprintf(m->b_err, sizeof(m->b_err), "side B: %s %s: %s", e == EPIPE ? "pipe" : ipc_names[s->cfg.ipc],
			 "wait/wake failed", strerror(e));
	atomic_store(&m->b_state, e ? -1 : 2);
	return e;
}

static void *side_b_thread(void *arg)
{
	side_b_loop(arg);
	return NULL;
}

/* Child process of --mode process: pin, schedule, lock, then echo. Never
 * returns. Dies with the parent; ignores the stop signals (the parent stops
 * it through shared memory); its own alarm is the last-resort watchdog. */
static void side_b_child(struct sw *s, pid_t parent, unsigned alarm_s)
{
	struct sw_shm *m = s->shm;
	cpu_set_t set;
	struct sched_param sp = {.sched_priority = s->run.rt.priority};
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGALRM, SIG_DFL);
	alarm(alarm_s);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	CPU_ZERO(&set);
	CPU_SET(s->cpu_b, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0) {
		snprintf(m->b_err, sizeof(m->b_err), "child: cannot pin to CPU %d: %s", s->cpu_b, strerror(errno));
		atomic_store(&m->b_state, -1);
		_exit(1);
	}
	if (sched_setscheduler(0, rt_sched_policy(s->run.rt.policy), &sp) != 0) {
		snprintf(m->b_err, sizeof(m->b_err), "child: cannot set SCHED_%s %d: %s",
			 s->run.rt.policy == RT_FIFO ? "FIFO" : s->run.rt.policy == RT_RR ? "RR" : "OTHER",
			 s->run.rt.priority, strerror(errno));
		atomic_store(&m->b_state, -1);
		_exit(1);
	}
	if (s->run.rt.mlockall)
		atomic_store(&m->b_mlock, rt_lock_memory() == 0);
	_exit(side_b_loop(s) ? 1 : 0);
}

/* Side A: drive round trips, record both directions. */
static void *side_a_thread(void *arg)
{
	struct sw *s = arg;
	struct sw_shm *m = s->shm;
	struct cpu_state *cs_a = &s->run.sink.cs[s->slot_a], *cs_b = &s->run.sink.cs[s->slot_b];
	const uint64_t loops = (uint64_t)s->cfg.loops, warmup = (uint64_t)s->cfg.warmup;
	const memory_order rx = memory_order_relaxed;
	uint64_t warm = 0, n = 0, wakeups = 0;
	bool measuring = warmup == 0;
	int64_t t0 = 0, tend = 0, end_ns = INT64_MAX, burst_start = mono_now_ns();
	int e = 0, nosleep = 0;

	rt_prefault_stack();
	if (measuring && !loops)
		end_ns = mono_now_ns() + s->cfg.duration_ns;
	while (!atomic_load_explicit(&m->stop, rx)) {
		int64_t ts = mono_now_ns();
		if (measuring && !t0)
			t0 = ts;
		atomic_store_explicit(&m->dir[DIR_AB].t_send, ts, memory_order_release);
		if ((e = chan_wake(s, DIR_AB)) || (e = chan_wait(s, DIR_BA, &nosleep)))
			break;
		int64_t tw = mono_now_ns();
		if (atomic_load_explicit(&m->stop, rx))
			break;
		wakeups++;
		atomic_store_explicit(&s->progress, wakeups, rx);
		int64_t lat_a = tw - atomic_load_explicit(&m->dir[DIR_BA].t_send, memory_order_acquire);
		if (measuring) {
			sink_sample(cs_b, atomic_load_explicit(&m->b_lat, rx), atomic_load_explicit(&m->b_wake, rx), 0);
			sink_sample(cs_a, lat_a, tw, 0);
			s->nosleep[s->slot_b] += (uint64_t)atomic_load_explicit(&m->b_nosleep, rx);
			s->nosleep[s->slot_a] += (uint64_t)nosleep;
			tend = tw;
			if (++n >= loops && loops)
				break;
			if (tw >= end_ns)
				break;
		} else if (++warm >= warmup) {
			measuring = true;
			if (!loops)
				end_ns = tw + s->cfg.duration_ns;
		}
		if (s->rest_on && tw - burst_start >= REST_EVERY_NS) {
			struct timespec until = ns_to_ts(tw + REST_NS);
			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
				;
			burst_start = mono_now_ns();
			if (t0) {
				s->rests++;
				s->rested_ns += burst_start - tw;
			}
		}
	}
	if (e)
		snprintf(s->a_err, sizeof(s->a_err), "side A: %s wait/wake failed: %s", ipc_names[s->cfg.ipc],
			 strerror(e));
	s->round_trips = n;
	s->measured_ns = n ? tend - t0 - s->rested_ns : 0;
	cs_a->wakeups += wakeups;
	cs_a->cpu_time_ns += clock_ns(CLOCK_THREAD_CPUTIME_ID);
	/* let B see the end: stop flag, then one more token towards B */
	atomic_store(&m->stop, 1);
	chan_wake(s, DIR_AB);
	atomic_store(&s->run.done, true);
	return NULL;
}

/* Header "params": the effective configuration and the slot meaning. */
static void switch_params(struct jw *w, const void *ctx)
{
	const struct sw *s = ctx;
	const struct switch_cfg *c = &s->cfg;
	jw_arr_begin(w, "cpus");
	jw_i64(w, NULL, s->cpu_a);
	if (s->cpu_b != s->cpu_a)
		jw_i64(w, NULL, s->cpu_b);
	jw_arr_end(w);
	jw_i64(w, "cpu_a", s->cpu_a);
	jw_i64(w, "cpu_b", s->cpu_b);
	jw_str(w, "placement", s->cpu_a == s->cpu_b ? "same-cpu" : "cross-cpu");
	jw_str(w, "slot", "CPU of the woken side (same CPU: both directions in one slot)");
	jw_i64(w, "rest_every_ns", s->rest_on ? REST_EVERY_NS : 0);
	jw_i64(w, "rest_ns", s->rest_on ? REST_NS : 0);
	jw_str(w, "mode", mode_names[c->mode]);
	jw_str(w, "ipc", ipc_names[c->ipc]);
	run_params_sched(w, c->policy, c->priority);
	run_params_length(w, c->duration_ns, c->loops, c->warmup);
	sink_out_params(w, &c->out);
	run_params_flags(w, c->no_dma_latency, c->allow_degraded);
}

/* Summary additions: which side each slot saw woken, and the round-trip
 * mean (comparable with `perf bench sched pipe` usecs/op). */
static void switch_summary_extra(struct jw *w, int slot, const void *ctx)
{
	const struct sw *s = ctx;
	if (slot >= 0) {
		jw_str(w, "woken", s->cpu_a == s->cpu_b ? "a+b" : slot == s->slot_a ? "a" : "b");
		if (s->cfg.ipc == IPC_FUTEX)
			jw_u64(w, "waits_without_sleep", s->nosleep[slot]);
		return;
	}
	jw_obj_begin(w, "switch");
	jw_u64(w, "round_trips", s->round_trips);
	jw_i64(w, "measured_ns", s->measured_ns);
	jw_u64(w, "rests", s->rests);
	jw_i64(w, "rested_ns", s->rested_ns);
	jw_i64(w, "round_trip_mean_ns",
	       s->round_trips ? (s->measured_ns + (int64_t)s->round_trips / 2) / (int64_t)s->round_trips : 0);
	jw_obj_end(w);
}

/* Options that need more than a range check. */
static int switch_validate(struct run *run)
{
	struct sw *s = (struct sw *)run;
	struct switch_cfg *c = &s->cfg;
	char err[512];
	if (run_given(run, "loops"))
		c->duration_ns = 0;
	if (!run_given(&s->run, "cpus")) {
		if (cpulist_usable(&c->cpus, err, sizeof(err)))
			return log_error("--cpus: %s", err);
		c->cpus.cpu[0] = c->cpus.cpu[c->cpus.n - 1];
		c->cpus.n = 1;
	} else if (cpulist_check(&c->cpus, err, sizeof(err))) {
		return log_error("--cpus: %s", err);
	}
	if (c->cpus.n > 2)
		return log_error("--cpus: give one CPU (both sides there) or two (A,B), not %d", c->cpus.n);
	s->cpu_a = c->cpus.cpu[0];
	s->cpu_b = c->cpus.cpu[c->cpus.n - 1];
	s->slot_a = 0;
	s->slot_b = c->cpus.n - 1;
	return sink_out_validate(&c->out, run->a->check);
}

/* Scheduling and memory locking: try them for real. Not permitted ->
 * skip (exit 3) or, with --allow-degraded, SCHED_OTHER / no mlock. */
static int switch_privileges(struct run *run)
{
	struct sw *s = (struct sw *)run;
	return rt_acquire(s->cfg.policy, (int)s->cfg.priority, s->cfg.allow_degraded, &s->run.rt, &s->run.warn);
}

/* Open one unnamed-in-effect message queue: a unique name, unlinked at once. */
static int mq_open_private(mqd_t *out, int d, char *err, size_t errlen)
{
	struct mq_attr at = {.mq_maxmsg = MQ_MAXMSG, .mq_msgsize = MQ_MSG_BYTES};
	char name[64];
	snprintf(name, sizeof(name), "/rtqual-switch-%d-%d", (int)getpid(), d);
	for (int attempt = 0; attempt < 2; attempt++) {
		mqd_t q = mq_open(name, O_RDWR | O_CREAT | O_EXCL, 0600, &at);
		if (q != (mqd_t)-1) {
			mq_unlink(name);
			*out = q;
			return 0;
		}
		if (errno != EEXIST)
			break;
		mq_unlink(name); /* stale queue of a crashed process with our pid */
	}
	snprintf(err, errlen, "mq_open %s: %s", name, strerror(errno));
	return -1;
}

/* Shared memory and both channels. */
static int switch_ipc_setup(struct sw *s, char *err, size_t errlen)
{
	bool proc = s->cfg.mode == MODE_PROCESS;
	s->shm = mmap(NULL, sizeof(struct sw_shm), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (s->shm == MAP_FAILED) {
		s->shm = NULL;
		snprintf(err, errlen, "mmap shared memory: %s", strerror(errno));
		return -1;
	}
	memset(s->shm, 0, sizeof(*s->shm));
	s->futex_op_flags = proc ? 0 : FUTEX_PRIVATE_FLAG;
	for (int d = 0; d < 2; d++) {
		switch (s->cfg.ipc) {
		case IPC_PIPE:
			if (pipe2(s->pfd[d], O_CLOEXEC) != 0) {
				snprintf(err, errlen, "pipe: %s", strerror(errno));
				return -1;
			}
			break;
		case IPC_SEM:
			if (sem_init(&s->shm->dir[d].sem, proc, 0) != 0) {
				snprintf(err, errlen, "sem_init: %s", strerror(errno));
				return -1;
			}
			break;
		case IPC_MQ:
			if (mq_open_private(&s->mq[d], d, err, errlen))
				return -1;
			break;
		default:
			break;
		}
	}
	return 0;
}

/* Release the run's resources. */
static void switch_cleanup(struct run *run)
{
	struct sw *s = (struct sw *)run;
	if (!run->prepared)
		return;
	for (int d = 0; d < 2; d++) {
		for (int k = 0; k < 2; k++)
			if (s->pfd[d][k] >= 0)
				close(s->pfd[d][k]);
		if (s->mq[d] != (mqd_t)-1)
			mq_close(s->mq[d]);
		if (s->shm && s->cfg.ipc == IPC_SEM)
			sem_destroy(&s->shm->dir[d].sem);
	}
	if (s->shm)
		munmap(s->shm, sizeof(*s->shm));
}

/* Start side B (thread or child) and wait until it is ready to echo. */
static int start_side_b(struct sw *s, unsigned alarm_s, char *err, size_t errlen)
{
	if (s->cfg.mode == MODE_PROCESS) {
		pid_t parent = getpid();
		pid_t pid = fork();
		if (pid < 0) {
			snprintf(err, errlen, "fork: %s", strerror(errno));
			return -1;
		}
		if (pid == 0)
			side_b_child(s, parent, alarm_s);
		s->child = pid;
	} else {
		if (run_thread(&s->run, &s->tid_b, &s->b_started, s->run.rt.priority, s->cpu_b, side_b_thread, s,
			       "side B"))
			return -1; /* err is s->run.err */
	}
	int64_t limit = mono_now_ns() + PEER_START_NS;
	while (atomic_load(&s->shm->b_state) == 0) {
		int st;
		if (s->child > 0 && waitpid(s->child, &st, WNOHANG) == s->child) {
			s->child = -1;
			break;
		}
		if (mono_now_ns() > limit || rt_signals_caught())
			break;
		sleep_until_ns(mono_now_ns() + NS_PER_MS);
	}
	if (atomic_load(&s->shm->b_state) != 1) {
		snprintf(err, errlen, "side B did not start%s%s", s->shm->b_err[0] ? ": " : "", s->shm->b_err);
		return -1;
	}
	return 0;
}

/* Main thread, each round: no round trip for STALL_NS, side B's process ended or side B
 * failed: kick both sides and end the loop (fail: the peer's failure). */
static bool switch_tick(struct run *run, int64_t now)
{
	struct sw *s = (struct sw *)run;
	if (run_stalled(run, atomic_load(&s->progress), now, STALL_NS)) {
		s->stalled = true;
		sw_kick(run);
		return true;
	}
	int st;
	if (s->child > 0 && waitpid(s->child, &st, WNOHANG) == s->child) {
		s->child = -1;
		snprintf(s->fail_msg, sizeof(s->fail_msg), "side B process ended early (%s %d)%s%s",
			 WIFSIGNALED(st) ? "signal" : "exit status", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st),
			 s->shm->b_err[0] ? ": " : "", s->shm->b_err);
		s->fail = s->fail_msg;
		sw_kick(&s->run);
		return true;
	}
	if (atomic_load(&s->shm->b_state) == -1 && !s->fail) {
		snprintf(s->fail_msg, sizeof(s->fail_msg), "%s", s->shm->b_err);
		s->fail = s->fail_msg;
		sw_kick(&s->run);
		return true;
	}
	return false;
}

/* Wait for the child (it has seen the stop token), SIGKILL if it lingers. */
static void reap_child(struct sw *s)
{
	if (s->child <= 0)
		return;
	int64_t limit = mono_now_ns() + PEER_EXIT_NS;
	int st;
	while (waitpid(s->child, &st, WNOHANG) == 0) {
		if (mono_now_ns() > limit) {
			kill(s->child, SIGKILL);
			waitpid(s->child, &st, 0);
			break;
		}
		sleep_until_ns(mono_now_ns() + NS_PER_MS);
	}
	s->child = -1;
}

/* Slots, the IPC objects, /dev/cpu_dma_latency, RLIMIT_RTTIME; the watchdog: the run plus a
 * margin (with --loops: a generous budget per round trip). */
static int switch_prepare(struct run *run)
{
	struct sw *s = (struct sw *)run;
	struct switch_cfg *c = &s->cfg;
	s->pfd[0][0] = s->pfd[0][1] = s->pfd[1][0] = s->pfd[1][1] = -1;
	s->mq[0] = s->mq[1] = (mqd_t)-1;
	s->child = -1;
	int cpus[2] = {s->cpu_a, s->cpu_b};
	s->rest_on = run->rt.policy != RT_OTHER && s->cpu_a == s->cpu_b;
	if (sink_init(&run->sink, &c->out, cpus, c->cpus.n, run->err, sizeof(run->err)) ||
	    switch_ipc_setup(s, run->err, sizeof(run->err)))
		return log_error("%s", run->err[0] ? run->err : "out of memory");
	run->sink.summary_extra = switch_summary_extra;
	run->sink.summary_ctx = s;
	run_hold(run, !c->no_dma_latency);
	u128 run_ns = u128_mul_u64_u64((uint64_t)c->warmup, LOOP_BUDGET_NS);
	run_ns = u128_add(run_ns, c->loops ? u128_mul_u64_u64((uint64_t)c->loops, LOOP_BUDGET_NS)
					   : u128_of((uint64_t)c->duration_ns));
	run->watchdog_s = run_watchdog_s(run_ns, 0, 0x7fff0000);
	return 0;
}

/* Side B (thread or child, ready to echo), then side A. */
static int switch_start(struct run *run)
{
	struct sw *s = (struct sw *)run;
	if (start_side_b(s, run->watchdog_s + 5, run->err, sizeof(run->err)))
		return -1;
	return run_thread(run, &s->tid_a, &s->a_started, run->rt.priority, s->cpu_a, side_a_thread, s, "side A");
}

/* Join both sides, reap side B's process. */
static void switch_stop(struct run *run)
{
	struct sw *s = (struct sw *)run;
	if (s->a_started)
		pthread_join(s->tid_a, NULL);
	if (s->b_started)
		pthread_join(s->tid_b, NULL);
	reap_child(s);
}

/* Side B's counts into its slot; the ending: cut short, stalled, a peer's failure, or the
 * status from the data. */
static int switch_end(struct run *run)
{
	struct sw *s = (struct sw *)run;
	struct cpu_state *cb = &run->sink.cs[s->slot_b];
	const char *fail = s->fail;
	cb->wakeups += atomic_load(&s->shm->b_wakeups);
	cb->cpu_time_ns += atomic_load(&s->shm->b_cpu_time_ns);
	if (s->cfg.mode == MODE_PROCESS && run->rt.mlockall && !atomic_load(&s->shm->b_mlock) && !run->start_failed)
		sink_warning(&run->sink, "side B process could not lock its memory (mlockall)");
	if (!fail && s->a_err[0])
		fail = s->a_err;
	if (!fail && atomic_load(&s->shm->b_state) == -1)
		fail = s->shm->b_err;

	return run_finish(run, s->stalled ? "watchdog: no round trip for 10 s" : NULL, fail);
}

/* Pipes, futexes and semaphores are everywhere; message queues need
 * CONFIG_POSIX_MQUEUE, checked when --ipc mq is used. */
const struct probe probe_switch = {
	.name = "switch",
	.summary = "context-switch latency of a two-thread or two-process ping-pong (pipe, futex, sem, mq)",
	.opts = switch_opts, .nopts = SWITCH_NOPTS, .label_keys = PROBE_LIST("mode", "ipc"),
	.state_bytes = sizeof(struct sw), .exclusive = PROBE_LIST("duration", "loops"), .params = switch_params,
	.validate = switch_validate, .privileges = switch_privileges, .prepare = switch_prepare,
	.start = switch_start, .tick = switch_tick, .kick = sw_kick, .stop = switch_stop,
	.end = switch_end, .cleanup = switch_cleanup,
};
