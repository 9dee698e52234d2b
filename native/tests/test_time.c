/* Duration parsing/formatting and timespec conversion. */
#include <stdint.h>

#include "check.h"
#include "rtqual/timens.h"

static void ok(const char *s, int64_t want)
{
	char err[256] = "";
	int64_t v = -1;
	int r = duration_parse(s, &v, err, sizeof(err));
	if (r != 0 || v != want) {
		fprintf(stderr, "'%s': r=%d v=%lld err=%s (want %lld)\n", s, r, (long long)v, err, (long long)want);
		CHECK(!"duration_parse ok");
	}
}

static void bad(const char *s, const char *want_err)
{
	char err[256] = "";
	int64_t v = 0;
	if (duration_parse(s, &v, err, sizeof(err)) == 0) {
		fprintf(stderr, "'%s' accepted as %lld\n", s, (long long)v);
		CHECK(!"duration_parse must fail");
	} else if (want_err) {
		CHECK_STR(err, want_err);
	}
}

int main(void)
{
	ok("1ns", 1);
	ok("500us", 500000);
	ok("1ms", 1000000);
	ok("1.5ms", 1500000);
	ok("1.5s", 1500000000);
	ok("10s", 10000000000LL);
	ok("5m", 300000000000LL);
	ok("24h", 86400000000000LL);
	ok("0.25us", 250);
	ok("2.000ns", 2);
	ok("0ms", 0);
	ok("0", 0);
	ok("8760h", 31536000000000000LL);
	bad("100", "'100' has no unit: say e.g. 100us (units: ns us ms s m h)");
	bad("1.5", NULL);
	bad("", "empty duration (units: ns us ms s m h)");
	bad("ms", "'ms' is not a duration (units: ns us ms s m h)");
	bad("1x", "'1x' is not a duration (units: ns us ms s m h)");
	bad("-1ms", NULL);
	bad("+1ms", NULL);
	bad(" 1ms", NULL);
	bad("1ms ", NULL);
	bad("1 ms", NULL);
	bad(".5ms", NULL);
	bad("1.5ns", "'1.5ns' is not a whole number of ns");
	bad("1e3us", NULL);
	bad("1MS", NULL);
	bad("1d", NULL);
	bad("3000000h", "'3000000h' is too large");
	bad("99999999999999999999999ns", NULL);

	char buf[32];
	CHECK_STR(duration_format(10000, buf, sizeof(buf)), "10us");
	CHECK_STR(duration_format(10 * NS_PER_S, buf, sizeof(buf)), "10s");
	CHECK_STR(duration_format(1500000, buf, sizeof(buf)), "1500us");
	CHECK_STR(duration_format(365LL * 86400 * NS_PER_S, buf, sizeof(buf)), "8760h");
	CHECK_STR(duration_format(0, buf, sizeof(buf)), "0ns");
	CHECK_STR(duration_format(7, buf, sizeof(buf)), "7ns");

	struct timespec ts = ns_to_ts(1500000001);
	CHECK(ts.tv_sec == 1 && ts.tv_nsec == 500000001);
	CHECK(ts_to_ns(ts) == 1500000001);
	ts = ns_to_ts(-1);
	CHECK(ts.tv_sec == -1 && ts.tv_nsec == 999999999 && ts_to_ns(ts) == -1);
	CHECK(mono_now_ns() > 0);
	int64_t c = measure_clock_read_ns(1000);
	CHECK(c >= 0 && c < 100000);
	CHECK_DONE();
}
