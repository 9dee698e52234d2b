/* Real-time environment: scheduling, memory locking, CPU pinning,
 * /dev/cpu_dma_latency, RLIMIT_RTTIME, trace_marker, signals. */
#ifndef RTQUAL_RTENV_H
#define RTQUAL_RTENV_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rtqual/log.h"

enum rt_policy { RT_FIFO, RT_RR, RT_OTHER, RT_DEADLINE };
extern const char *const rt_policy_names[]; /* "fifo", "rr", "other", NULL: the --policy of most probes */
extern const char *const rt_policy_names_all[]; /* the same and "deadline" (the timer's --policy) */

/* What the run really got (header "rt" object). */
struct rt_info {
	int policy; /* enum rt_policy */
	int priority;
	bool mlockall, dma_latency, tracemark, degraded;
};

#define RT_GRANT_SCHED_FMT \
	"run as root, or CAP_SYS_NICE, or an rtprio limit >= %d in /etc/security/limits.conf"
#define RT_GRANT_MLOCK \
	"run as root, or CAP_IPC_LOCK, or a memlock limit of unlimited in /etc/security/limits.conf"

/* How a probe words a refused RT policy where it says more than the common
 * line; NULL in rt_acquire_sched() takes the common wording. */
struct rt_words {
	const char *role;      /* skip line: "SCHED_FIFO for the <role> not permitted" */
	bool priority_in_skip; /* the skip line names the priority, the warning does not */
	const char *instead;   /* warning tail; NULL: "running SCHED_OTHER" */
};

/* Signal bits reported by rt_signals_caught(). */
#define RT_SIG_STOP 1     /* SIGINT or SIGTERM */
#define RT_SIG_WATCHDOG 2 /* SIGALRM */
/* Backstop after the first stop signal or watchdog: a process still running this long is
 * stuck outside the probe's loops and ends at once with RT_EXIT_STUCK (no end record). Every
 * loop of the probes looks at the stop flags far more often: they end well within a second. */
#define RT_STOP_GRACE_S 2
#define RT_STOP_GRACE_TEXT "2 s"
#define RT_EXIT_STUCK 4

const char *rt_errname(int e);
int rt_sched_policy(int policy);
int rt_try_sched(int policy, int priority);
int rt_lock_memory(void);
int rt_acquire_sched(int policy, int priority, bool allow_degraded, const struct rt_words *words,
		     struct rt_info *rt, struct warnings *w);
int rt_acquire_mlock(bool allow_degraded, struct rt_info *rt, struct warnings *w);
int rt_acquire(int policy, int priority, bool allow_degraded, struct rt_info *rt, struct warnings *w);
void rt_prefault_stack(void);
void rt_pretouch(void *p, size_t n);
int rt_thread_attr(pthread_attr_t *a, int policy, int priority, int cpu, size_t stack_bytes);
int rt_thread_create(pthread_t *tid, const pthread_attr_t *a, void *(*fn)(void *), void *arg);
int rt_thread_start(pthread_t *tid, int policy, int priority, int cpu, size_t stack_bytes, void *(*fn)(void *),
		    void *arg);
int rt_dma_latency_hold(int *fd_out);
void rt_acquire_dma_latency(int *fd_out, struct rt_info *rt, struct warnings *w);
int rt_set_rttime_limit(uint64_t soft_us, uint64_t hard_us);
void rt_acquire_rttime_limit(uint64_t soft_us, uint64_t hard_us, struct warnings *w);
int rt_tracemark_open(void);
/* Pin the calling thread (cpu >= 0) and set its policy; 0, or -1 with err (may be NULL). */
int rt_self_sched(int cpu, int policy, int priority, char *err, size_t errlen);
void rt_signals_install(void);
/* SIGXCPU (RLIMIT_RTTIME's soft limit) sets a flag instead of ending the process: a busy loop
 * that reads rt_xcpu_caught() ends itself (one of its bounds). */
void rt_xcpu_catch(void);
extern _Atomic bool rt_xcpu_flag;
static inline bool rt_xcpu_caught(void)
{
	return atomic_load_explicit(&rt_xcpu_flag, memory_order_relaxed);
}
int rt_signals_caught(void);
void rt_watchdog_arm(unsigned s);
void rt_signals_block(sigset_t *old);
void rt_signals_restore(const sigset_t *old);

#endif
