/* HDR-layout histogram: index arithmetic, merge, percentiles, statistics. */
#include "rtqual/hist.h"

#include <math.h>
#include <string.h>

/* Empty the histogram. */
void hist_reset(struct hist *h)
{
	memset(h, 0, sizeof(*h));
}

/* Smallest value that maps to bucket index `index`. */
int64_t hist_lowest_equivalent(int index)
{
	if (index < 2 * HIST_SUB_HALF)
		return index; /* bucket 0: one value per index */
	int bucket = (index >> 10) - 1;
	int64_t sub = (index & (HIST_SUB_HALF - 1)) + HIST_SUB_HALF;
	return sub << bucket;
}

/* Largest value that maps to bucket index `index`. */
int64_t hist_highest_equivalent(int index)
{
	int bucket = index < 2 * HIST_SUB_HALF ? 0 : (index >> 10) - 1;
	return hist_lowest_equivalent(index) + ((int64_t)1 << bucket) - 1;
}

/* Add `from` into `into`, as if every sample of `from` had been recorded. */
void hist_merge(struct hist *into, const struct hist *from)
{
	if (from->count) {
		if (into->count == 0 || from->min_ns < into->min_ns)
			into->min_ns = from->min_ns;
		if (into->count == 0 || from->max_ns > into->max_ns)
			into->max_ns = from->max_ns;
	}
	into->count += from->count;
	into->out_of_range += from->out_of_range;
	into->sum_ns = u128_add(into->sum_ns, from->sum_ns);
	into->sumsq_ns2 = u128_add(into->sumsq_ns2, from->sumsq_ns2);
	for (int i = 0; i < HIST_LEN; i++)
		into->counts[i] += from->counts[i];
}

/* Percentile for p in parts per million (protocol.md): rank = max(1,
 * ceil(p*N/1e6)); the highest equivalent of the bucket reaching that rank,
 * capped at the exact max. Conservative: never below the exact value. */
int64_t hist_percentile_ppm(const struct hist *h, uint32_t ppm)
{
	if (h->count == 0)
		return 0;
	if (ppm > 1000000)
		ppm = 1000000;
	/* rank <= count: 64 bits hold it, and the running sum of the bucket counts */
	uint64_t rank = u128_divmod_u64(u128_add_u64(u128_mul_u64_u64(ppm, h->count), 999999), 1000000, NULL).lo;
	if (rank < 1)
		rank = 1;
	uint64_t cum = 0;
	for (int i = 0; i < HIST_LEN; i++) {
		cum += h->counts[i];
		if (cum >= rank) {
			int64_t v = hist_highest_equivalent(i);
			return v < h->max_ns ? v : h->max_ns;
		}
	}
	return h->max_ns;
}

/* Summary statistics; mean and population stddev rounded to integer ns
 * (half to even, like the Python side). */
void hist_get_stats(const struct hist *h, struct hist_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->count = h->count;
	st->out_of_range = h->out_of_range;
	if (h->count == 0)
		return;
	st->min_ns = h->min_ns;
	st->max_ns = h->max_ns;
	st->p50_ns = hist_percentile_ppm(h, 500000);
	st->p99_ns = hist_percentile_ppm(h, 990000);
	st->p999_ns = hist_percentile_ppm(h, 999000);
	st->p9999_ns = hist_percentile_ppm(h, 999900);
	/* round half to even, as Python's round(), so C and Python agree */
	uint64_t n = h->count, r;
	u128 q = u128_divmod_u64(h->sum_ns, n, &r);
	if (r > n - r || (r == n - r && (q.lo & 1))) /* 2r > n, 2r == n without overflow */
		q = u128_add_u64(q, 1);
	st->mean_ns = (int64_t)q.lo;
	/* population variance = (N*sumsq - sum^2) / N^2, exact numerator when it fits */
	long double var, sum = u128_to_ldouble(h->sum_ns), nl = (long double)n;
	if (u128_cmp(h->sumsq_ns2, u128_divmod_u64(U128_MAX, n, NULL)) <= 0)
		var = u128_to_ldouble(u128_sub(u128_mul_u64(h->sumsq_ns2, n), u128_mul(h->sum_ns, h->sum_ns))) /
		      (nl * nl);
	else
		var = (u128_to_ldouble(h->sumsq_ns2) - sum * sum / nl) / nl;
	st->stddev_ns = var > 0 ? (int64_t)rintl(sqrtl(var)) : 0; /* rint: half to even */
}
