/* The noise probe's arithmetic (rtqual/noise.h): which clock-read gaps count, their tally, the
 * noise per second, and the steal field of /proc/stat. */
#include <stdint.h>

#include "check.h"
#include "rtqual/noise.h"

/* Gaps: only strictly longer than the minimum count; totals and the largest follow. */
static void test_gaps(void)
{
	struct noise_tally t = {0};
	CHECK(noise_gap(&t, 1000, 1050, 1000) == 0); /* the loop itself */
	CHECK(noise_gap(&t, 1000, 2000, 1000) == 0); /* exactly the minimum: not noise */
	CHECK(noise_gap(&t, 1000, 2001, 1000) == 1001);
	CHECK(noise_gap(&t, 5000, 9000, 1000) == 4000);
	CHECK(noise_gap(&t, 9000, 11000, 1000) == 2000);
	CHECK(t.gaps == 3);
	CHECK(t.noise_ns == 1001 + 4000 + 2000);
	CHECK(t.largest_ns == 4000);
}

/* Noise per second: exact, rounded half up, no overflow for long runs, 0 without a window. */
static void test_per_s(void)
{
	CHECK(noise_per_s(0, NS_PER_S) == 0);
	CHECK(noise_per_s(1000, NS_PER_S) == 1000);
	CHECK(noise_per_s(1000, 2 * NS_PER_S) == 500);
	CHECK(noise_per_s(1, 2 * NS_PER_S) == 1);     /* 0.5 rounds up */
	CHECK(noise_per_s(1, 3 * NS_PER_S) == 0);     /* 0.33 rounds down */
	CHECK(noise_per_s(123, 0) == 0);
	/* a year of measured time with 10 % noise: the product exceeds 2^64 */
	int64_t year = 365LL * 24 * 3600 * NS_PER_S;
	CHECK(noise_per_s((uint64_t)(year / 10), year) == 100000000);
	CHECK(noise_per_s((uint64_t)year, year) == (uint64_t)NS_PER_S);
}

/* Steal: the 8th field of the CPU's own line, not a prefix match of another CPU. */
static void test_steal(void)
{
	const char *stat = "cpu  10 0 20 300 4 0 1 77 0 0\n"
			   "cpu1 5 0 10 150 2 0 1 40 0 0\n"
			   "cpu11 5 0 10 150 2 0 1 99 0 0\n"
			   "cpu2 1 2 3\n"
			   "intr 12345\n";
	uint64_t v = 0;
	CHECK(noise_stat_steal(stat, 1, &v) && v == 40);
	CHECK(noise_stat_steal(stat, 11, &v) && v == 99);
	CHECK(!noise_stat_steal(stat, 2, &v)); /* too few fields */
	CHECK(!noise_stat_steal(stat, 3, &v)); /* no line */
}

int main(void)
{
	test_gaps();
	test_per_s();
	test_steal();
	CHECK_DONE();
}
