/* Duration parsing/formatting and timespec conversion. */
#include <stdint.h>

#include "check.h"
#include "rtqual/lifecycle.h"
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
	/* products beyond 64 bits, exact: the limit INT64_MAX ns with decimals and large units */
	ok("9223372036.854775807s", INT64_MAX);
	bad("9223372036.854775808s", "'9223372036.854775808s' is too large");
	ok("2562047h", 9223369200000000000LL);
	bad("18446744073709551615h", "'18446744073709551615h' is too large");
	bad("3.000000000000000001h", "'3.000000000000000001h' is not a whole number of ns");

	char buf[32];
	CHECK_STR(duration_format(10000, buf, sizeof(buf)), "10us");
	CHECK_STR(duration_format(10 * NS_PER_S, buf, sizeof(buf)), "10s");
	CHECK_STR(duration_format(1500000, buf, sizeof(buf)), "1500us");
	CHECK_STR(duration_format(365LL * 86400 * NS_PER_S, buf, sizeof(buf)), "8760h");
	CHECK_STR(duration_format(0, buf, sizeof(buf)), "0ns");
	CHECK_STR(duration_format(7, buf, sizeof(buf)), "7ns");

	/* the watchdog: whole seconds plus 1 and the margin, capped; 128-bit run lengths saturate at the cap */
	CHECK(run_watchdog_s(u128_of(0), 0, 1000) == 1 + RUN_WATCHDOG_MARGIN_S);
	CHECK(run_watchdog_s(u128_of(2500000000), 3, 1000) == 2 + 1 + RUN_WATCHDOG_MARGIN_S + 3);
	CHECK(run_watchdog_s(u128_of(INT64_MAX), 0, 0x7fffffff) == 0x7fffffff);
	CHECK(run_watchdog_s(u128_mul_u64_u64(UINT64_MAX, NS_PER_S), 0, 0xffffffffu) == 0xffffffffu);
	CHECK(run_watchdog_s(u128_of(0), UINT64_MAX, 0xffffffffu) == 0xffffffffu);
	CHECK(run_watchdog_s(u128_of((0x7ffffffeULL - 1 - RUN_WATCHDOG_MARGIN_S) * NS_PER_S), 0, 0x7fffffff) == 0x7ffffffe);

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
