/* HDR-layout latency histogram (protocol.md "Histogram layout"): 1 ns to 60 s,
 * 3 significant digits, exact count/min/max/sum/sumsq kept beside the buckets. */
#ifndef RTQUAL_HIST_H
#define RTQUAL_HIST_H

#include <stdbool.h>
#include <stdint.h>

#include "rtqual/u128.h"

#define HIST_LOWEST_NS 1
#define HIST_HIGHEST_NS 60000000000LL
#define HIST_SIG_DIGITS 3
#define HIST_SUB_HALF 1024 /* half of sub_bucket_count 2048 */
#define HIST_BUCKETS 26
#define HIST_LEN ((HIST_BUCKETS + 1) * HIST_SUB_HALF) /* 27648 */

struct hist {
	uint64_t count;        /* bucketed samples */
	uint64_t out_of_range; /* samples < 0 or > HIST_HIGHEST_NS, not bucketed */
	int64_t min_ns, max_ns;
	u128 sum_ns, sumsq_ns2;
	uint64_t counts[HIST_LEN];
};

struct hist_stats {
	uint64_t count, out_of_range;
	int64_t min_ns, p50_ns, mean_ns, p99_ns, p999_ns, p9999_ns, max_ns, stddev_ns;
};

/* Bucket index of a value in [0, HIST_HIGHEST_NS]. */
static inline int hist_index(int64_t v)
{
	uint64_t u = (uint64_t)v;
	int bucket = 53 - __builtin_clzll(u | 2047);
	return ((bucket + 1) << 10) + (int)((u >> bucket) - HIST_SUB_HALF);
}

/* Record one sample; false if it was out of range (counted, not bucketed).
 * Hot path: no branches beyond the range check and min/max. */
static inline bool hist_record(struct hist *h, int64_t v)
{
	if (v < 0 || v > HIST_HIGHEST_NS) {
		h->out_of_range++;
		return false;
	}
	h->counts[hist_index(v)]++;
	if (h->count == 0 || v < h->min_ns)
		h->min_ns = v;
	if (h->count == 0 || v > h->max_ns)
		h->max_ns = v;
	h->count++;
	h->sum_ns = u128_add_u64(h->sum_ns, (uint64_t)v);
	h->sumsq_ns2 = u128_add(h->sumsq_ns2, u128_mul_u64_u64((uint64_t)v, (uint64_t)v));
	return true;
}

void hist_reset(struct hist *h);
int64_t hist_lowest_equivalent(int index);
int64_t hist_highest_equivalent(int index);
void hist_merge(struct hist *into, const struct hist *from);
int64_t hist_percentile_ppm(const struct hist *h, uint32_t ppm);
void hist_get_stats(const struct hist *h, struct hist_stats *st);

#endif
