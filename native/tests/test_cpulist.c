/* CPU list parsing, formatting and online/affinity checks. */
#include "check.h"
#include "rtqual/cpulist.h"

static struct cpulist l, online, allowed;

static void ok(const char *s, const char *want_fmt, int want_n)
{
	char err[256] = "", buf[256];
	if (cpulist_parse(s, &l, err, sizeof(err)) != 0) {
		fprintf(stderr, "'%s': %s\n", s, err);
		CHECK(!"cpulist_parse ok");
		return;
	}
	CHECK(l.n == want_n);
	CHECK_STR(cpulist_format(&l, buf, sizeof(buf)), want_fmt);
}

static void bad(const char *s, const char *want_err)
{
	char err[256] = "";
	if (cpulist_parse(s, &l, err, sizeof(err)) == 0) {
		fprintf(stderr, "'%s' accepted\n", s);
		CHECK(!"cpulist_parse must fail");
	} else if (want_err) {
		CHECK_STR(err, want_err);
	}
}

int main(void)
{
	char err[256];
	ok("0", "0", 1);
	ok("0-3,8", "0-3,8", 5);
	ok("0-7:2", "0,2,4,6", 4);
	ok("1-9:4", "1,5,9", 3);
	ok("3,1,1,2", "1-3", 3);
	ok("1023", "1023", 1);
	ok("0-3,2-5", "0-5", 6);
	CHECK(l.cpu[0] == 0 && l.cpu[5] == 5);
	bad("", "empty CPU list (e.g. 0-3,8 or 0-7:2)");
	bad("a", "'a' is not a CPU list (e.g. 0-3,8 or 0-7:2)");
	bad("1-", NULL);
	bad("-1", NULL);
	bad("1,,2", NULL);
	bad("1,", NULL);
	bad(" 1", NULL);
	bad("1 ", NULL);
	bad("0-3:", NULL);
	bad("3:2", NULL);
	bad("3-1", "'3-1': range 3-1 is reversed");
	bad("0-7:0", "'0-7:0': stride must be at least 1");
	bad("1024", "'1024': CPU 1024 is above the limit 1023");
	bad("0-99999999", NULL);

	cpulist_parse("0-3", &online, err, sizeof(err));
	cpulist_parse("0-1,3", &allowed, err, sizeof(err));
	cpulist_parse("0,3", &l, err, sizeof(err));
	CHECK(cpulist_check_against(&l, &online, &allowed, err, sizeof(err)) == 0);
	cpulist_parse("5", &l, err, sizeof(err));
	CHECK(cpulist_check_against(&l, &online, &allowed, err, sizeof(err)) != 0);
	CHECK_STR(err, "CPU 5 is not online (online: 0-3)");
	cpulist_parse("1-2", &l, err, sizeof(err));
	CHECK(cpulist_check_against(&l, &online, &allowed, err, sizeof(err)) != 0);
	CHECK_STR(err, "CPU 2 is not in this process's affinity mask (0-1,3)");

	/* the real host: CPU 0 is practically always online and allowed */
	CHECK(cpulist_online(&online, err, sizeof(err)) == 0 && online.n >= 1);
	CHECK(cpulist_usable(&l, err, sizeof(err)) == 0 && l.n >= 1);
	CHECK(cpulist_check(&l, err, sizeof(err)) == 0);
	cpulist_parse("1023", &l, err, sizeof(err));
	CHECK(cpulist_check(&l, err, sizeof(err)) != 0);
	CHECK_DONE();
}
