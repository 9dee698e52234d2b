/* The noise probe's arithmetic (probes/noise.c), pure so tests/test_noise.c can check it:
 * gaps between consecutive clock reads of a busy loop, noise per second of measured time, and
 * the steal time of one CPU in /proc/stat text. */
#ifndef RTQUAL_NOISE_H
#define RTQUAL_NOISE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rtqual/timens.h"
#include "rtqual/u128.h"

/* One measured CPU's tally: gaps counted, their total, the largest, and the time measured. */
struct noise_tally {
	uint64_t gaps;
	uint64_t noise_ns;
	int64_t largest_ns;
	int64_t measured_ns;
};

/* The gap between two consecutive clock reads `prev_ns` and `now_ns` when it is longer than
 * `gap_min_ns` (a gap, added to the tally), else 0 (the loop itself, not noise). */
static inline int64_t noise_gap(struct noise_tally *t, int64_t prev_ns, int64_t now_ns, int64_t gap_min_ns)
{
	int64_t d = now_ns - prev_ns;
	if (d <= gap_min_ns)
		return 0;
	t->gaps++;
	t->noise_ns += (uint64_t)d;
	if (d > t->largest_ns)
		t->largest_ns = d;
	return d;
}

/* Noise per second of measured time, ns/s, rounded half up; 0 when nothing was measured. Exact
 * for any run length (128-bit product). */
static inline uint64_t noise_per_s(uint64_t noise_ns, int64_t measured_ns)
{
	if (measured_ns <= 0)
		return 0;
	u128 num = u128_add_u64(u128_mul_u64_u64(noise_ns, (uint64_t)NS_PER_S), (uint64_t)measured_ns / 2);
	u128 q = u128_divmod_u64(num, (uint64_t)measured_ns, NULL);
	return q.hi ? UINT64_MAX : q.lo;
}

/* The steal field (8th number) of line "cpuN ..." in /proc/stat text, in clock ticks; false if
 * the line or the field is missing (a kernel without steal accounting has fewer fields). */
static inline bool noise_stat_steal(const char *stat_text, int cpu, uint64_t *ticks)
{
	char key[24];
	int klen = snprintf(key, sizeof(key), "cpu%d ", cpu);
	for (const char *p = stat_text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, key, (size_t)klen) != 0)
			continue;
		unsigned long long f[8];
		if (sscanf(p + klen, "%llu %llu %llu %llu %llu %llu %llu %llu", &f[0], &f[1], &f[2], &f[3], &f[4],
			   &f[5], &f[6], &f[7]) != 8)
			return false;
		*ticks = f[7];
		return true;
	}
	return false;
}

#endif
