/* Real-time environment setup. Every function returns 0 or an errno value so
 * the caller decides between error, skip and degraded operation. */
#include "rtqual/rtenv.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "rtqual/log.h"

const char *const rt_policy_names[] = {"fifo", "rr", "other", NULL};
const char *const rt_policy_names_all[] = {"fifo", "rr", "other", "deadline", NULL};

#define PREFAULT_STACK_BYTES (64 * 1024)

/* glibc >= 2.32 gives a new thread its signal mask through its attributes: the creating thread
 * then never blocks the stop signals itself, so a SIGTERM arriving while it is inside
 * pthread_create (which may be slow, or hang in a broken libc) is still handled. */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
#define RT_ATTR_SIGMASK 1
#else
#define RT_ATTR_SIGMASK 0
#endif

/* The only process-wide state: which stop signals arrived (set by handler). */
static atomic_int caught_signals;

/* The stop signals (and the watchdog's SIGALRM) in one set. */
static void stop_signal_set(sigset_t *s)
{
	sigemptyset(s);
	sigaddset(s, SIGINT);
	sigaddset(s, SIGTERM);
	sigaddset(s, SIGALRM);
}

/* Symbolic errno for skip messages ("EPERM"), portable beyond glibc. */
const char *rt_errname(int e)
{
	switch (e) {
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case ENOMEM: return "ENOMEM";
	case EAGAIN: return "EAGAIN";
	case ENOENT: return "ENOENT";
	default: return strerror(e);
	}
}

/* enum rt_policy -> SCHED_* constant. */
int rt_sched_policy(int policy)
{
	return policy == RT_FIFO ? SCHED_FIFO : policy == RT_RR ? SCHED_RR : SCHED_OTHER;
}

static void *noop_thread(void *arg)
{
	return arg;
}

/* Try the policy for real: start a short-lived thread with explicit sched
 * attributes. Returns 0 or the errno (EPERM when not permitted). */
int rt_try_sched(int policy, int priority)
{
	pthread_attr_t a;
	pthread_t t;
	int r = rt_thread_attr(&a, policy, priority, -1, 64 * 1024);
	if (r)
		return r;
	r = pthread_create(&t, &a, noop_thread, NULL);
	pthread_attr_destroy(&a);
	if (r == 0)
		pthread_join(t, NULL);
	return r;
}

/* mlockall(current and future): no page faults in the measurement loop. */
int rt_lock_memory(void)
{
	return mlockall(MCL_CURRENT | MCL_FUTURE) == 0 ? 0 : errno;
}

/* Try an RT policy (not RT_OTHER) for real at `priority`. Not permitted ->
 * skip (returns 3), or with allow_degraded: rt becomes SCHED_OTHER, degraded,
 * and a warning is kept. Returns 0 or the exit code (other failures: 1). */
int rt_acquire_sched(int policy, int priority, bool allow_degraded, const struct rt_words *words,
		     struct rt_info *rt, struct warnings *w)
{
	const char *pn = policy == RT_FIFO ? "FIFO" : "RR";
	int e = rt_try_sched(policy, priority);
	if (e != EPERM && e != EACCES)
		return e ? log_error("cannot create a SCHED_%s thread: %s", pn, strerror(e)) : 0;

	char grant[160], prio[32], role[64] = "";
	bool in_skip = words && words->priority_in_skip;
	snprintf(grant, sizeof(grant), RT_GRANT_SCHED_FMT, priority);
	snprintf(prio, sizeof(prio), " priority %d", priority);
	if (words && words->role)
		snprintf(role, sizeof(role), " for the %s", words->role);
	if (!allow_degraded)
		return log_skip(grant, "SCHED_%s%s%s not permitted (%s)", pn, in_skip ? prio : "", role,
				rt_errname(e));
	warnings_add(w, "degraded: SCHED_%s%s not permitted (%s); %s", pn, in_skip ? "" : prio, rt_errname(e),
		     words && words->instead ? words->instead : "running SCHED_OTHER");
	rt->policy = RT_OTHER;
	rt->priority = 0;
	rt->degraded = true;
	return 0;
}

/* mlockall, or with allow_degraded and not permitted: memory not locked,
 * degraded, a warning kept. Returns 0 or the exit code (skip 3, error 1). */
int rt_acquire_mlock(bool allow_degraded, struct rt_info *rt, struct warnings *w)
{
	int e = rt_lock_memory();
	if (e == 0) {
		rt->mlockall = true;
	} else if (e == EPERM || e == ENOMEM || e == EAGAIN) {
		if (!allow_degraded)
			return log_skip(RT_GRANT_MLOCK, "mlockall not permitted (%s)", rt_errname(e));
		warnings_add(w, "degraded: mlockall not permitted (%s); memory not locked", rt_errname(e));
		rt->degraded = true;
	} else {
		return log_error("mlockall: %s", strerror(e));
	}
	return 0;
}

/* Scheduling and memory locking, tried for real, filling rt. Not permitted ->
 * skip (exit 3) or, with allow_degraded, SCHED_OTHER / no mlock. Returns 0
 * or the exit code. */
int rt_acquire(int policy, int priority, bool allow_degraded, struct rt_info *rt, struct warnings *w)
{
	int rc;
	rt->policy = policy;
	rt->priority = policy == RT_OTHER ? 0 : priority;
	if (policy != RT_OTHER && (rc = rt_acquire_sched(policy, priority, allow_degraded, NULL, rt, w)))
		return rc;
	return rt_acquire_mlock(allow_degraded, rt, w);
}

/* Touch PREFAULT_STACK_BYTES of stack so the hot loop never faults on it. */
void rt_prefault_stack(void)
{
	volatile unsigned char buf[PREFAULT_STACK_BYTES];
	for (size_t i = 0; i < sizeof(buf); i += 256)
		buf[i] = 0;
}

/* Write every page of a buffer so it is backed by RAM before measuring
 * (calloc'd memory may still map the shared zero page). */
void rt_pretouch(void *p, size_t n)
{
	volatile unsigned char *c = p;
	long pg = sysconf(_SC_PAGESIZE);
	size_t step = pg > 0 ? (size_t)pg : 4096;
	for (size_t i = 0; i < n; i += step)
		c[i] = c[i];
	if (n)
		c[n - 1] = c[n - 1];
}

/* Thread attributes: explicit policy/priority, optional pin to `cpu` (-1:
 * none), stack size, and (where libc allows) the stop signals blocked in the new thread. */
int rt_thread_attr(pthread_attr_t *a, int policy, int priority, int cpu, size_t stack_bytes)
{
	struct sched_param sp = {.sched_priority = policy == RT_OTHER ? 0 : priority};
	/* never below the C library's minimum: 16 KiB on x86_64 but 128 KiB on aarch64 (64 KiB pages
	 * exist there), where a smaller size makes pthread_attr_setstacksize fail with EINVAL */
	long min_stack = sysconf(_SC_THREAD_STACK_MIN);
	if (stack_bytes && min_stack > 0 && stack_bytes < (size_t)min_stack)
		stack_bytes = (size_t)min_stack;
	int r = pthread_attr_init(a);
	if (r)
		return r;
	if ((r = pthread_attr_setinheritsched(a, PTHREAD_EXPLICIT_SCHED)) ||
	    (r = pthread_attr_setschedpolicy(a, rt_sched_policy(policy))) ||
	    (r = pthread_attr_setschedparam(a, &sp)) ||
	    (stack_bytes && (r = pthread_attr_setstacksize(a, stack_bytes))))
		goto fail;
	if (cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if ((r = pthread_attr_setaffinity_np(a, sizeof(set), &set)))
			goto fail;
	}
#if RT_ATTR_SIGMASK
	sigset_t stop;
	stop_signal_set(&stop);
	if ((r = pthread_attr_setsigmask_np(a, &stop)))
		goto fail;
#endif
	return 0;
fail:
	pthread_attr_destroy(a);
	return r;
}

/* pthread_create with rt_thread_attr() attributes: the new thread starts with the stop signals
 * blocked (only the main thread takes them). Where the attributes cannot carry the mask, the
 * caller blocks them around the create (inherited). 0 or errno. */
int rt_thread_create(pthread_t *tid, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
#if RT_ATTR_SIGMASK
	return pthread_create(tid, a, fn, arg);
#else
	sigset_t old;
	rt_signals_block(&old);
	int e = pthread_create(tid, a, fn, arg);
	rt_signals_restore(&old);
	return e;
#endif
}

/* Start fn(arg) in a thread with rt_thread_attr() attributes (rt_thread_create). 0 or errno. */
int rt_thread_start(pthread_t *tid, int policy, int priority, int cpu, size_t stack_bytes, void *(*fn)(void *),
		    void *arg)
{
	pthread_attr_t a;
	int e = rt_thread_attr(&a, policy, priority, cpu, stack_bytes);
	if (!e) {
		e = rt_thread_create(tid, &a, fn, arg);
		pthread_attr_destroy(&a);
	}
	return e;
}

/* Ask PM QoS for zero exit latency from idle states: write int32 0 to
 * /dev/cpu_dma_latency and keep the fd open (closing it drops the request). */
int rt_dma_latency_hold(int *fd_out)
{
	int32_t zero = 0;
	int fd = open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (write(fd, &zero, sizeof(zero)) != (ssize_t)sizeof(zero)) {
		int e = errno ? errno : EIO;
		close(fd);
		return e;
	}
	*fd_out = fd;
	return 0;
}

/* Hold /dev/cpu_dma_latency at 0 (fd kept in *fd_out), recorded in rt;
 * not possible -> a warning kept, the run goes on. */
void rt_acquire_dma_latency(int *fd_out, struct rt_info *rt, struct warnings *w)
{
	int e = rt_dma_latency_hold(fd_out);
	if (e)
		warnings_add(w, "/dev/cpu_dma_latency not held at 0: %s", strerror(e));
	rt->dma_latency = e == 0;
}

/* Safety net: SIGXCPU (soft) then SIGKILL (hard) if an RT thread runs this
 * long without blocking. Soft is capped at an unraisable hard limit. */
int rt_set_rttime_limit(uint64_t soft_us, uint64_t hard_us)
{
	struct rlimit cur, rl = {.rlim_cur = soft_us, .rlim_max = hard_us};
	if (getrlimit(RLIMIT_RTTIME, &cur) == 0 && cur.rlim_max != RLIM_INFINITY &&
	    cur.rlim_max < hard_us) {
		rl.rlim_max = cur.rlim_max;
		if (rl.rlim_cur > rl.rlim_max)
			rl.rlim_cur = rl.rlim_max;
	}
	return setrlimit(RLIMIT_RTTIME, &rl) == 0 ? 0 : errno;
}

/* The RLIMIT_RTTIME safety net of an RT run whose threads block on every
 * round; not settable -> a warning kept, the run goes on. */
void rt_acquire_rttime_limit(uint64_t soft_us, uint64_t hard_us, struct warnings *w)
{
	int e = rt_set_rttime_limit(soft_us, hard_us);
	if (e)
		warnings_add(w, "RLIMIT_RTTIME safety net not set: %s", strerror(e));
}

/* Open tracefs trace_marker for writing (never mounts anything); -1 if absent
 * or not permitted. */
int rt_tracemark_open(void)
{
	static const char *const paths[] = {"/sys/kernel/tracing/trace_marker",
					    "/sys/kernel/debug/tracing/trace_marker"};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		int fd = open(paths[i], O_WRONLY | O_CLOEXEC);
		if (fd >= 0)
			return fd;
	}
	return -1;
}

/* Async-signal-safe: records which kind of stop was asked for; the probe's loops see it and end.
 * The first stop (signal or watchdog) also arms a backstop: SIGALRM in RT_STOP_GRACE_S. The
 * lifecycle cancels it (alarm(0)) once the probe's threads are stopped, so it fires only when
 * the process is stuck where no loop looks (e.g. inside libc): then it ends at once, exit 4. */
static void on_signal(int sig)
{
	static const char stuck[] = "rtqual: still running " RT_STOP_GRACE_TEXT " after the stop signal or "
				    "watchdog: ending without the end record\n";
	int before = atomic_fetch_or(&caught_signals, sig == SIGALRM ? RT_SIG_WATCHDOG : RT_SIG_STOP);
	if (!before) {
		alarm(RT_STOP_GRACE_S);
	} else if (sig == SIGALRM) {
		ssize_t w = write(STDERR_FILENO, stuck, sizeof(stuck) - 1);
		(void)w;
		_exit(RT_EXIT_STUCK);
	}
}

/* Arm the watchdog: SIGALRM in `s` seconds (0: none). A stop already recorded keeps its backstop
 * (RT_STOP_GRACE_S) instead: a later, longer watchdog must not push it back. */
void rt_watchdog_arm(unsigned s)
{
	alarm(s);
	if (rt_signals_caught())
		alarm(RT_STOP_GRACE_S);
}

/* SIGINT/SIGTERM/SIGALRM only record themselves (no SA_RESTART, so sleeps
 * return EINTR); SIGPIPE is ignored so a dead reader shows up as EPIPE. */
void rt_signals_install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

_Atomic bool rt_xcpu_flag;

static void on_xcpu(int sig)
{
	(void)sig;
	atomic_store(&rt_xcpu_flag, true);
}

void rt_xcpu_catch(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_xcpu;
	sigaction(SIGXCPU, &sa, NULL);
}

/* RT_SIG_* bits of the signals received so far. */
int rt_signals_caught(void)
{
	return atomic_load(&caught_signals);
}

/* Block the stop signals (before creating measurement threads, which
 * inherit the mask: only the main thread handles them). */
void rt_signals_block(sigset_t *old)
{
	sigset_t s;
	stop_signal_set(&s);
	pthread_sigmask(SIG_BLOCK, &s, old);
}

void rt_signals_restore(const sigset_t *old)
{
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* Pin the calling thread (cpu >= 0) and set its policy: for a forked process or a thread that
 * cannot use pthread attributes. 0, or -1 with `err` (may be NULL) saying why. */
int rt_self_sched(int cpu, int policy, int priority, char *err, size_t errlen)
{
	if (cpu >= 0) {
		cpu_set_t s;
		CPU_ZERO(&s);
		CPU_SET(cpu, &s);
		if (sched_setaffinity(0, sizeof(s), &s) != 0) {
			if (err)
				snprintf(err, errlen, "cannot pin to CPU %d: %s", cpu, strerror(errno));
			return -1;
		}
	}
	struct sched_param sp = {.sched_priority = policy == RT_OTHER ? 0 : priority};
	if (sched_setscheduler(0, rt_sched_policy(policy), &sp) != 0) {
		if (err)
			snprintf(err, errlen, "cannot set SCHED_%s priority %d: %s",
				 policy == RT_FIFO ? "FIFO" : policy == RT_RR ? "RR" : "OTHER", sp.sched_priority,
				 strerror(errno));
		return -1;
	}
	return 0;
}
