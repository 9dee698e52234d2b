/* SCHED_DEADLINE for the timer probe (--policy deadline, the cyclicdeadline way): the parameter
 * check the kernel would make, entering the policy from a thread, and admission-control
 * refusals in one line that names the reason. */
#ifndef RTQUAL_DEADLINE_H
#define RTQUAL_DEADLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DL_RUNTIME_MIN_NS 1024 /* the kernel's smallest runtime (1 << DL_SCALE) */

struct dl_params {
	int64_t runtime_ns, deadline_ns, period_ns;
};

/* runtime >= DL_RUNTIME_MIN_NS, runtime <= deadline <= period: 0, or -1 with err naming the
 * broken rule ("runtime 900us over deadline 500us"). */
int dl_check(const struct dl_params *p, char *err, size_t errlen);
/* Make the calling thread SCHED_DEADLINE. When the kernel refuses it to a thread pinned
 * narrower than its root domain (EPERM with admission control on), widen the affinity to
 * `wide_cpus` (n of them) and try again; *pinned says whether the pin held. 0 or the errno. */
int dl_enter(const struct dl_params *p, const int *wide_cpus, int n, bool *pinned);
/* The one-line reason for a refusal `e` of `nthreads` threads with `p` (EBUSY: the bandwidth;
 * EINVAL: the kernel's period bounds; EPERM: privilege or affinity). */
void dl_refusal(int e, const struct dl_params *p, int nthreads, char *buf, size_t len);
/* Try the admission for real: `n` threads pinned to `cpus` enter SCHED_DEADLINE at once (held
 * together, then released). 0 or the first errno; *pinned as dl_enter's. */
int dl_trial(const struct dl_params *p, const int *cpus, int n, const int *wide_cpus, int nwide, bool *pinned);

#endif
