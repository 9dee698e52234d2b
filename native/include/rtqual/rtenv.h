/* Real-time environment: scheduling, memory locking, CPU pinning,
 * /dev/cpu_dma_latency, RLIMIT_RTTIME, trace_marker, signals. */
#ifndef RTQUAL_RTENV_H
#define RTQUAL_RTENV_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum rt_policy { RT_FIFO, RT_RR, RT_OTHER };
extern const char *const rt_policy_names[]; /* "fifo", "rr", "other", NULL */

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

/* Signal bits reported by rt_signals_caught(). */
#define RT_SIG_STOP 1     /* SIGINT or SIGTERM */
#define RT_SIG_WATCHDOG 2 /* SIGALRM */

int rt_sched_policy(int policy);
int rt_try_sched(int policy, int priority);
int rt_lock_memory(void);
void rt_prefault_stack(void);
void rt_pretouch(void *p, size_t n);
int rt_thread_attr(pthread_attr_t *a, int policy, int priority, int cpu, size_t stack_bytes);
int rt_dma_latency_hold(int *fd_out);
int rt_set_rttime_limit(uint64_t soft_us, uint64_t hard_us);
int rt_tracemark_open(void);
void rt_signals_install(void);
int rt_signals_caught(void);
void rt_signals_block(sigset_t *old);
void rt_signals_restore(const sigset_t *old);

#endif
