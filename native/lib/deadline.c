/* SCHED_DEADLINE (rtqual/deadline.h): sched_setattr from the calling thread, the kernel's checks
 * in words, and a real admission trial. */
#include "rtqual/deadline.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rtqual/timens.h"

#ifndef SCHED_DEADLINE
#define SCHED_DEADLINE 6
#endif

/* The kernel's struct sched_attr (the first version, 48 bytes). */
struct rtq_sched_attr {
	uint32_t size, sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime, sched_deadline, sched_period;
};

int dl_check(const struct dl_params *p, char *err, size_t errlen)
{
	char a[32], b[32];
	if (p->runtime_ns < DL_RUNTIME_MIN_NS)
		snprintf(err, errlen, "runtime %s below the kernel's minimum of %d ns",
			 duration_format(p->runtime_ns, a, sizeof(a)), DL_RUNTIME_MIN_NS);
	else if (p->runtime_ns > p->deadline_ns)
		snprintf(err, errlen, "runtime %s over deadline %s", duration_format(p->runtime_ns, a, sizeof(a)),
			 duration_format(p->deadline_ns, b, sizeof(b)));
	else if (p->deadline_ns > p->period_ns)
		snprintf(err, errlen, "deadline %s over period %s", duration_format(p->deadline_ns, a, sizeof(a)),
			 duration_format(p->period_ns, b, sizeof(b)));
	else
		return 0;
	return -1;
}

/* sched_setattr(SCHED_DEADLINE) of the calling thread: 0 or errno. */
static int dl_setattr(const struct dl_params *p)
{
	struct rtq_sched_attr at = {
		.size = sizeof(at),
		.sched_policy = SCHED_DEADLINE,
		.sched_runtime = (uint64_t)p->runtime_ns,
		.sched_deadline = (uint64_t)p->deadline_ns,
		.sched_period = (uint64_t)p->period_ns,
	};
	return syscall(SYS_sched_setattr, 0, &at, 0) == 0 ? 0 : errno;
}

int dl_enter(const struct dl_params *p, const int *wide_cpus, int n, bool *pinned)
{
	int e = dl_setattr(p);
	*pinned = e == 0;
	if (e != EPERM || n <= 0)
		return e;
	cpu_set_t set;
	CPU_ZERO(&set);
	for (int i = 0; i < n; i++)
		CPU_SET(wide_cpus[i], &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		return EPERM;
	return dl_setattr(p);
}

/* One integer from a /proc file, or `dflt`. */
static int64_t proc_i64(const char *path, int64_t dflt)
{
	FILE *f = fopen(path, "r");
	long long v;
	if (!f)
		return dflt;
	if (fscanf(f, "%lld", &v) != 1)
		v = dflt;
	fclose(f);
	return v;
}

void dl_refusal(int e, const struct dl_params *p, int nthreads, char *buf, size_t len)
{
	char r[32], d[32], pe[32];
	duration_format(p->runtime_ns, r, sizeof(r));
	duration_format(p->deadline_ns, d, sizeof(d));
	duration_format(p->period_ns, pe, sizeof(pe));
	int64_t rt_run = proc_i64("/proc/sys/kernel/sched_rt_runtime_us", -2);
	int64_t rt_per = proc_i64("/proc/sys/kernel/sched_rt_period_us", -2);
	if (e == EBUSY) {
		double share = 100.0 * (double)p->runtime_ns / (double)p->period_ns;
		double limit = rt_per > 0 && rt_run >= 0 ? 100.0 * (double)rt_run / (double)rt_per : -1;
		snprintf(buf, len,
			 "deadline bandwidth not available: %d thread(s) of runtime %s per period %s (%.1f %% of a CPU "
			 "each) do not fit in the limit kernel.sched_rt_runtime_us/sched_rt_period_us = %" PRId64
			 "/%" PRId64 " (%.0f %% per CPU, less what other deadline tasks hold)",
			 nthreads, r, pe, share, rt_run, rt_per, limit);
	} else if (e == EINVAL) {
		int64_t lo = proc_i64("/proc/sys/kernel/sched_deadline_period_min_us", 100);
		int64_t hi = proc_i64("/proc/sys/kernel/sched_deadline_period_max_us", 4194304);
		snprintf(buf, len,
			 "SCHED_DEADLINE parameters refused (EINVAL): runtime %s, deadline %s, period %s; the period must "
			 "lie in kernel.sched_deadline_period_min_us..max_us = %" PRId64 "..%" PRId64 " us",
			 r, d, pe, lo, hi);
	} else if (e == EPERM) {
		snprintf(buf, len,
			 "SCHED_DEADLINE not permitted (EPERM): needs root or CAP_SYS_NICE, a CPU affinity spanning its "
			 "root domain, and deadline bandwidth (kernel.sched_rt_runtime_us = %" PRId64 ")",
			 rt_run);
	} else {
		snprintf(buf, len, "SCHED_DEADLINE refused: %s", strerror(e));
	}
}

struct dl_trial {
	const struct dl_params *p;
	const int *wide;
	int nwide;
	_Atomic int arrived;
	_Atomic bool release;
};

struct dl_trial_arg {
	struct dl_trial *t;
	int cpu, err;
	bool pinned;
};

/* A trial thread: pin, enter the policy, hold it until every other has tried, end (its
 * bandwidth is freed). */
static void *dl_trial_thread(void *v)
{
	struct dl_trial_arg *a = v;
	struct dl_trial *t = a->t;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(a->cpu, &set);
	a->err = sched_setaffinity(0, sizeof(set), &set) == 0 ? dl_enter(t->p, t->wide, t->nwide, &a->pinned) : errno;
	atomic_fetch_add(&t->arrived, 1);
	while (!atomic_load(&t->release))
		sleep_until_ns(mono_now_ns() + NS_PER_MS);
	return NULL;
}

int dl_trial(const struct dl_params *p, const int *cpus, int n, const int *wide_cpus, int nwide, bool *pinned)
{
	struct dl_trial t = {.p = p, .wide = wide_cpus, .nwide = nwide};
	struct dl_trial_arg *a = calloc((size_t)n, sizeof(*a));
	pthread_t *tid = calloc((size_t)n, sizeof(*tid));
	int err = 0, made = 0;
	*pinned = true;
	if (!a || !tid) {
		free(a);
		free(tid);
		return ENOMEM;
	}
	for (; made < n; made++) {
		a[made] = (struct dl_trial_arg){.t = &t, .cpu = cpus[made]};
		if ((err = pthread_create(&tid[made], NULL, dl_trial_thread, &a[made])))
			break;
	}
	int64_t give_up = mono_now_ns() + 2 * NS_PER_S;
	while (atomic_load(&t.arrived) < made && mono_now_ns() < give_up)
		sleep_until_ns(mono_now_ns() + NS_PER_MS);
	atomic_store(&t.release, true);
	for (int i = 0; i < made; i++)
		pthread_join(tid[i], NULL);
	for (int i = 0; i < made && !err; i++) {
		err = a[i].err;
		*pinned &= a[i].pinned;
	}
	free(a);
	free(tid);
	return err;
}
