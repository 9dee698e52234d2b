/* CPU list parsing and validation against online CPUs and our affinity. */
#include "rtqual/cpulist.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CPULIST_HELP "e.g. 0-3,8 or 0-7:2"

/* Read a non-negative decimal CPU number at *p; -1 if none or too large. */
static long read_num(const char **p)
{
	const char *s = *p;
	long v = 0;
	if (*s < '0' || *s > '9')
		return -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		v = v * 10 + (*s - '0');
		if (v > 1000000)
			return -1;
	}
	*p = s;
	return v;
}

/* Parse "0-3,8" / "0-7:2" into an ascending unique list. */
int cpulist_parse(const char *s, struct cpulist *out, char *err, size_t errlen)
{
	static bool mark[CPULIST_MAX];
	const char *p = s;

	memset(mark, 0, sizeof(mark));
	out->n = 0;
	if (!*s) {
		snprintf(err, errlen, "empty CPU list (%s)", CPULIST_HELP);
		return -1;
	}
	for (;;) {
		long a = read_num(&p), b, stride = 1;
		if (a < 0)
			goto bad;
		b = a;
		if (*p == '-') {
			p++;
			if ((b = read_num(&p)) < 0)
				goto bad;
			if (*p == ':') {
				p++;
				if ((stride = read_num(&p)) < 0)
					goto bad;
				if (stride == 0) {
					snprintf(err, errlen, "'%s': stride must be at least 1", s);
					return -1;
				}
			}
		}
		if (b < a) {
			snprintf(err, errlen, "'%s': range %ld-%ld is reversed", s, a, b);
			return -1;
		}
		if (b >= CPULIST_MAX) {
			snprintf(err, errlen, "'%s': CPU %ld is above the limit %d", s, b, CPULIST_MAX - 1);
			return -1;
		}
		for (long c = a; c <= b; c += stride)
			mark[c] = true;
		if (*p == '\0')
			break;
		if (*p != ',')
			goto bad;
		p++;
	}
	for (int c = 0; c < CPULIST_MAX; c++)
		if (mark[c])
			out->cpu[out->n++] = c;
	return 0;
bad:
	snprintf(err, errlen, "'%s' is not a CPU list (%s)", s, CPULIST_HELP);
	return -1;
}

/* True if cpu is in the list. */
bool cpulist_has(const struct cpulist *l, int cpu)
{
	for (int i = 0; i < l->n; i++)
		if (l->cpu[i] == cpu)
			return true;
	return false;
}

/* Compact text form ("0-3,8") for messages. */
const char *cpulist_format(const struct cpulist *l, char *buf, size_t len)
{
	size_t o = 0;
	buf[0] = '\0';
	for (int i = 0; i < l->n && o < len; i++) {
		int j = i;
		while (j + 1 < l->n && l->cpu[j + 1] == l->cpu[j] + 1)
			j++;
		if (j > i)
			o += (size_t)snprintf(buf + o, len - o, "%s%d-%d", i ? "," : "", l->cpu[i], l->cpu[j]);
		else
			o += (size_t)snprintf(buf + o, len - o, "%s%d", i ? "," : "", l->cpu[i]);
		i = j;
	}
	return buf;
}

/* Online CPUs from sysfs; falls back to 0..N-1 from sysconf. */
int cpulist_online(struct cpulist *out, char *err, size_t errlen)
{
	char line[4096];
	FILE *f = fopen("/sys/devices/system/cpu/online", "r");
	if (f) {
		bool ok = fgets(line, sizeof(line), f) != NULL;
		fclose(f);
		line[strcspn(line, "\n")] = '\0';
		if (ok && cpulist_parse(line, out, err, errlen) == 0)
			return 0;
	}
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 1) {
		snprintf(err, errlen, "cannot determine online CPUs");
		return -1;
	}
	out->n = 0;
	for (long c = 0; c < n && c < CPULIST_MAX; c++)
		out->cpu[out->n++] = (int)c;
	return 0;
}

/* CPUs in this process's affinity mask (sched_getaffinity). */
int cpulist_allowed(struct cpulist *out, char *err, size_t errlen)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof(set), &set) != 0) {
		snprintf(err, errlen, "sched_getaffinity: %s", strerror(errno));
		return -1;
	}
	out->n = 0;
	for (int c = 0; c < CPULIST_MAX; c++)
		if (CPU_ISSET(c, &set))
			out->cpu[out->n++] = c;
	return 0;
}

/* Default CPU set: online CPUs we are allowed to run on. */
int cpulist_usable(struct cpulist *out, char *err, size_t errlen)
{
	static struct cpulist online, allowed;
	if (cpulist_online(&online, err, errlen) || cpulist_allowed(&allowed, err, errlen))
		return -1;
	out->n = 0;
	for (int i = 0; i < online.n; i++)
		if (cpulist_has(&allowed, online.cpu[i]))
			out->cpu[out->n++] = online.cpu[i];
	if (out->n == 0) {
		snprintf(err, errlen, "no online CPU is in this process's affinity mask");
		return -1;
	}
	return 0;
}

/* Every CPU of l must be online and in our affinity mask; names the first
 * that is not. Pure function so tests can feed synthetic sets. */
int cpulist_check_against(const struct cpulist *l, const struct cpulist *online,
			  const struct cpulist *allowed, char *err, size_t errlen)
{
	char buf[256];
	for (int i = 0; i < l->n; i++) {
		int c = l->cpu[i];
		if (!cpulist_has(online, c)) {
			snprintf(err, errlen, "CPU %d is not online (online: %s)", c,
				 cpulist_format(online, buf, sizeof(buf)));
			return -1;
		}
		if (!cpulist_has(allowed, c)) {
			snprintf(err, errlen, "CPU %d is not in this process's affinity mask (%s)", c,
				 cpulist_format(allowed, buf, sizeof(buf)));
			return -1;
		}
	}
	return 0;
}

/* cpulist_check_against with the real online set and affinity mask. */
int cpulist_check(const struct cpulist *l, char *err, size_t errlen)
{
	static struct cpulist online, allowed;
	if (cpulist_online(&online, err, errlen) || cpulist_allowed(&allowed, err, errlen))
		return -1;
	return cpulist_check_against(l, &online, &allowed, err, errlen);
}
