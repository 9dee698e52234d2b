/* CPU lists ("0-3,8", "0-7:2"): parsing, formatting, online/affinity checks. */
#ifndef RTQUAL_CPULIST_H
#define RTQUAL_CPULIST_H

#include <stdbool.h>
#include <stddef.h>

#define CPULIST_MAX 1024 /* CPU numbers 0..1023 (CPU_SETSIZE) */

struct cpulist {
	int n;
	int cpu[CPULIST_MAX]; /* ascending, unique */
};

int cpulist_parse(const char *s, struct cpulist *out, char *err, size_t errlen);
bool cpulist_has(const struct cpulist *l, int cpu);
const char *cpulist_format(const struct cpulist *l, char *buf, size_t len);
int cpulist_online(struct cpulist *out, char *err, size_t errlen);
int cpulist_allowed(struct cpulist *out, char *err, size_t errlen);
int cpulist_usable(struct cpulist *out, char *err, size_t errlen);
int cpulist_check_against(const struct cpulist *l, const struct cpulist *online,
			  const struct cpulist *allowed, char *err, size_t errlen);
int cpulist_check(const struct cpulist *l, char *err, size_t errlen);

#endif
