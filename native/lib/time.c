/* Duration parsing/formatting and clock self-measurement. */
#include "rtqual/timens.h"
#include "rtqual/u128.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UNITS_HELP "units: ns us ms s m h"

static const struct {
	const char *name;
	int64_t ns;
} units[] = {
	{"h", 3600 * NS_PER_S}, {"m", 60 * NS_PER_S}, {"s", NS_PER_S},
	{"ms", NS_PER_MS},      {"us", NS_PER_US},    {"ns", 1},
};

/* Parse "1.5ms", "10s", "24h" into ns. A unit is mandatory (a bare number is
 * ambiguous; only "0" is accepted without one); decimals must come out as a whole number of ns. */
int duration_parse(const char *s, int64_t *out_ns, char *err, size_t errlen)
{
	const char *p = s;
	uint64_t ip = 0, frac = 0, frac_scale = 1;
	int ndig = 0;

	if (!*s) {
		snprintf(err, errlen, "empty duration (%s)", UNITS_HELP);
		return -1;
	}
	for (; *p >= '0' && *p <= '9'; p++, ndig++) {
		if (ip > (UINT64_MAX - 9) / 10)
			goto too_large;
		ip = ip * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, ndig++) {
			if (frac_scale >= 1000000000000000000ULL) {
				snprintf(err, errlen, "'%s': too many decimals", s);
				return -1;
			}
			frac = frac * 10 + (uint64_t)(*p - '0');
			frac_scale *= 10;
		}
	}
	if (ndig == 0 || !(*s >= '0' && *s <= '9')) {
		snprintf(err, errlen, "'%s' is not a duration (%s)", s, UNITS_HELP);
		return -1;
	}
	if (*p == '\0' && strcmp(s, "0") == 0) {
		*out_ns = 0; /* zero needs no unit */
		return 0;
	}
	if (*p == '\0') {
		snprintf(err, errlen, "'%s' has no unit: say e.g. %sus (%s)", s, s, UNITS_HELP);
		return -1;
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(p, units[i].name) != 0)
			continue;
		uint64_t unit = (uint64_t)units[i].ns, rem;
		u128 fns = u128_divmod_u64(u128_mul_u64_u64(frac, unit), frac_scale, &rem);
		if (rem != 0) {
			snprintf(err, errlen, "'%s' is not a whole number of ns", s);
			return -1;
		}
		u128 whole = u128_add(u128_mul_u64_u64(ip, unit), fns);
		if (u128_cmp(whole, u128_of(INT64_MAX)) > 0)
			goto too_large;
		*out_ns = (int64_t)whole.lo;
		return 0;
	}
	snprintf(err, errlen, "'%s' is not a duration (%s)", s, UNITS_HELP);
	return -1;
too_large:
	snprintf(err, errlen, "'%s' is too large", s);
	return -1;
}

/* Format ns with the largest unit that represents it exactly ("10us", "8760h"). */
const char *duration_format(int64_t ns, char *buf, size_t len)
{
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (ns != 0 && ns % units[i].ns == 0) {
			snprintf(buf, len, "%lld%s", (long long)(ns / units[i].ns), units[i].name);
			return buf;
		}
	}
	snprintf(buf, len, "%lldns", (long long)ns);
	return buf;
}

/* Sleep until an absolute CLOCK_MONOTONIC time; returns 0, or the errno
 * (EINTR when a signal arrived) so the caller can look at its stop flags. */
int sleep_until_ns(int64_t mono_deadline_ns)
{
	struct timespec ts = ns_to_ts(mono_deadline_ns);
	return clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Median cost of one clock_gettime(CLOCK_MONOTONIC): the gap between two
 * back-to-back reads, over `iterations` pairs. Reported as self-overhead. */
int64_t measure_clock_read_ns(int iterations)
{
	int64_t *d = malloc((size_t)iterations * sizeof(*d));
	if (!d)
		return -1;
	for (int i = 0; i < iterations; i++) {
		int64_t a = mono_now_ns();
		int64_t b = mono_now_ns();
		d[i] = b - a;
	}
	qsort(d, (size_t)iterations, sizeof(*d), cmp_i64);
	int64_t med = d[iterations / 2];
	free(d);
	return med;
}
