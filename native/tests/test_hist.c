/* Histogram: layout, error bound, merge, out of range, percentile definition. */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "rtqual/hist.h"

static uint64_t rng = 0x9E3779B97F4A7C15ULL;
static uint64_t next_rand(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return rng;
}

/* Log-uniform value in [0, HIST_HIGHEST_NS]: exercises every bucket. */
static int64_t rand_value(void)
{
	int bits = (int)(next_rand() % 36);
	int64_t v = (int64_t)(next_rand() & ((1ULL << bits) - 1 + (1ULL << bits)));
	return v > HIST_HIGHEST_NS ? HIST_HIGHEST_NS : v;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static struct hist *new_hist(void)
{
	struct hist *h = malloc(sizeof(*h));
	hist_reset(h);
	return h;
}

static void test_layout(void)
{
	CHECK(HIST_LEN == 27648);
	CHECK(hist_index(0) == 0);
	CHECK(hist_index(1) == 1);
	CHECK(hist_index(1023) == 1023);
	CHECK(hist_index(2047) == 2047);
	CHECK(hist_index(2048) == 2048);
	CHECK(hist_index(2049) == 2048);
	CHECK(hist_index(4095) == 3071);
	CHECK(hist_index(4096) == 3072);
	CHECK(hist_index(1000000) == 11169);
	CHECK(hist_lowest_equivalent(11169) == 999936);
	CHECK(hist_highest_equivalent(11169) == 1000447);
	CHECK(hist_index(HIST_HIGHEST_NS) == 27388);
	CHECK(hist_lowest_equivalent(27388) <= HIST_HIGHEST_NS);
	CHECK(hist_highest_equivalent(27388) >= HIST_HIGHEST_NS);
	CHECK(hist_lowest_equivalent(2048) == 2048 && hist_highest_equivalent(2048) == 2049);
	CHECK(hist_lowest_equivalent(5) == 5 && hist_highest_equivalent(5) == 5);
	/* buckets tile the range without gaps or overlaps */
	for (int i = 0; i + 1 < HIST_LEN; i++)
		if (hist_highest_equivalent(i) + 1 != hist_lowest_equivalent(i + 1)) {
			CHECK(!"gap or overlap between buckets");
			break;
		}
}

static void test_error_bound(void)
{
	for (int i = 0; i < 1000000; i++) {
		int64_t v = rand_value();
		int idx = hist_index(v);
		int64_t lo = hist_lowest_equivalent(idx), hi = hist_highest_equivalent(idx);
		if (!(idx >= 0 && idx < HIST_LEN && lo <= v && v <= hi && (hi - v) * 1024 <= v)) {
			fprintf(stderr, "value %lld: index %d [%lld, %lld]\n", (long long)v, idx, (long long)lo,
				(long long)hi);
			CHECK(!"relative error bound");
			break;
		}
	}
}

static void test_record_merge_range(void)
{
	struct hist *a = new_hist(), *b = new_hist(), *both = new_hist();
	for (int i = 0; i < 10000; i++) {
		int64_t v = rand_value();
		hist_record(i % 3 ? a : b, v);
		hist_record(both, v);
	}
	hist_merge(a, b);
	CHECK(a->count == both->count && a->min_ns == both->min_ns && a->max_ns == both->max_ns);
	CHECK(u128_cmp(a->sum_ns, both->sum_ns) == 0 && u128_cmp(a->sumsq_ns2, both->sumsq_ns2) == 0);
	CHECK(memcmp(a->counts, both->counts, sizeof(a->counts)) == 0);

	/* merging an empty histogram keeps min/max */
	struct hist *e = new_hist();
	int64_t mn = a->min_ns, mx = a->max_ns;
	hist_merge(a, e);
	CHECK(a->min_ns == mn && a->max_ns == mx);
	hist_merge(e, a);
	CHECK(e->min_ns == mn && e->max_ns == mx && e->count == a->count);

	struct hist *h = new_hist();
	CHECK(!hist_record(h, -1));
	CHECK(!hist_record(h, HIST_HIGHEST_NS + 1));
	CHECK(hist_record(h, HIST_HIGHEST_NS));
	CHECK(h->out_of_range == 2 && h->count == 1 && h->max_ns == HIST_HIGHEST_NS && h->min_ns == HIST_HIGHEST_NS);
	CHECK(u128_cmp(h->sum_ns, u128_of(HIST_HIGHEST_NS)) == 0);
	uint64_t total = 0;
	for (int i = 0; i < HIST_LEN; i++)
		total += h->counts[i];
	CHECK(total == 1);
	/* sum of squares beyond 2^64 stays exact */
	for (int i = 1; i < 1000; i++)
		hist_record(h, HIST_HIGHEST_NS);
	CHECK(u128_cmp(h->sumsq_ns2, u128_mul_u64(u128_mul_u64_u64(HIST_HIGHEST_NS, HIST_HIGHEST_NS), 1000)) == 0);
	char dec[40];
	CHECK_STR(u128_to_dec(h->sumsq_ns2, dec), "3600000000000000000000000");
	free(a), free(b), free(both), free(e), free(h);
}

static void test_stats(void)
{
	struct hist *h = new_hist();
	struct hist_stats st;
	hist_get_stats(h, &st);
	CHECK(st.count == 0 && st.min_ns == 0 && st.max_ns == 0 && st.p99_ns == 0);
	hist_record(h, 10);
	hist_record(h, 20);
	hist_get_stats(h, &st);
	CHECK(st.mean_ns == 15 && st.stddev_ns == 5 && st.min_ns == 10 && st.max_ns == 20);
	CHECK(st.p50_ns == 10 && st.p99_ns == 20);
	hist_reset(h);
	for (int v = 1; v <= 4; v++)
		hist_record(h, v);
	hist_get_stats(h, &st);
	CHECK(st.mean_ns == 2 && st.stddev_ns == 1); /* 2.5 -> 2 (half to even), sqrt(1.25) -> 1 */
	hist_record(h, 4);
	hist_get_stats(h, &st);
	CHECK(st.mean_ns == 3); /* 14/5 = 2.8 */
	hist_reset(h);
	hist_record(h, 2);
	hist_record(h, 5);
	hist_get_stats(h, &st);
	CHECK(st.mean_ns == 4 && st.stddev_ns == 2); /* 3.5 -> 4, 1.5 -> 2 */
	hist_reset(h);
	hist_record(h, 1000000);
	hist_get_stats(h, &st);
	CHECK(st.p50_ns == 1000000 && st.p9999_ns == 1000000); /* capped at max */
	free(h);
}

/* Beyond 64 and 128 bits: a histogram merged into itself 40 times (2^40 copies of each sample)
 * keeps its mean, stddev and percentiles; N * sumsq no longer fits 128 bits there. */
static void test_stats_huge(void)
{
	struct hist *h = new_hist();
	struct hist_stats st, big;
	char dec[40];
	hist_record(h, 1);
	hist_record(h, 2);
	hist_record(h, HIST_HIGHEST_NS);
	hist_get_stats(h, &st);
	CHECK(st.mean_ns == 20000000001 && st.stddev_ns == 28284271247); /* sqrt(7.9999999996e20) = ...246.75 */
	for (int i = 0; i < 40; i++)
		hist_merge(h, h);
	hist_get_stats(h, &big);
	CHECK(big.count == 3ULL << 40);
	CHECK_STR(u128_to_dec(h->sum_ns, dec), "65970697669858534883328");
	CHECK_STR(u128_to_dec(h->sumsq_ns2, dec), "3958241859993600000005497558138880");
	CHECK(big.mean_ns == st.mean_ns && big.stddev_ns == st.stddev_ns);
	CHECK(big.min_ns == 1 && big.p50_ns == 2 && big.p99_ns == st.p99_ns && big.max_ns == HIST_HIGHEST_NS);
	free(h);
}

static void test_percentiles(void)
{
	static const int sizes[] = {1, 2, 3, 7, 100, 1000, 12345};
	static const uint32_t ppms[] = {0, 1, 250000, 500000, 900000, 990000, 999000, 999900, 1000000};
	struct hist *h = new_hist();
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		int n = sizes[si];
		for (int round = 0; round < 5; round++) {
			int64_t *v = malloc((size_t)n * sizeof(*v));
			hist_reset(h);
			for (int i = 0; i < n; i++) {
				v[i] = round == 4 ? 1000 + (int64_t)(next_rand() % 50) : rand_value();
				hist_record(h, v[i]);
			}
			qsort(v, (size_t)n, sizeof(*v), cmp_i64);
			for (size_t pi = 0; pi < sizeof(ppms) / sizeof(ppms[0]); pi++) {
				uint64_t rank = ((uint64_t)ppms[pi] * (uint64_t)n + 999999) / 1000000;
				if (rank < 1)
					rank = 1;
				int64_t exact = v[rank - 1];
				int64_t got = hist_percentile_ppm(h, ppms[pi]);
				if (!(got >= exact && (got - exact) * 1024 <= exact && got <= h->max_ns)) {
					fprintf(stderr, "n=%d ppm=%u exact=%lld got=%lld\n", n, ppms[pi],
						(long long)exact, (long long)got);
					CHECK(!"percentile within [exact, exact*(1+1/1024)] and <= max");
				}
			}
			CHECK(hist_percentile_ppm(h, 1000000) == v[n - 1]);
			free(v);
		}
	}
	free(h);
}

int main(void)
{
	test_layout();
	test_error_bound();
	test_record_merge_range();
	test_stats();
	test_stats_huge();
	test_percentiles();
	CHECK_DONE();
}
