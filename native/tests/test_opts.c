/* Table-driven option parsing: types, defaults, ranges, error lines. */
#include <stddef.h>
#include <stdint.h>

#include "check.h"
#include "rtqual/cpulist.h"
#include "rtqual/opts.h"
#include "rtqual/timens.h"

struct cfg {
	int64_t interval_ns, priority;
	int policy;
	bool flag;
	struct cpulist cpus;
	const char *raw;
};

static const char *const pols[] = {"fifo", "rr", "other", NULL};
#define F(x) offsetof(struct cfg, x)
static const struct opt_def defs[] = {
	{"interval", OPT_DURATION, F(interval_ns), 10 * NS_PER_US, 10 * NS_PER_S, "1ms", NULL, "period"},
	{"priority", OPT_INT, F(priority), 1, 99, "80", NULL, "prio"},
	{"policy", OPT_ENUM, F(policy), 0, 0, "fifo", pols, "policy"},
	{"flag", OPT_FLAG, F(flag), 0, 0, NULL, NULL, "flag"},
	{"cpus", OPT_CPULIST, F(cpus), 0, 0, NULL, NULL, "cpus"},
	{"raw", OPT_PATH, F(raw), 0, 0, NULL, NULL, "raw"},
};
#define N ((int)(sizeof(defs) / sizeof(defs[0])))

static int parse(struct cfg *c, uint64_t *given, char *err, int argc, char **argv)
{
	memset(c, 0, sizeof(*c));
	err[0] = '\0';
	return opts_parse(defs, N, c, argc, argv, given, err, 256);
}


static void fails(const char *want, char **argv, int argc)
{
	struct cfg c;
	uint64_t g;
	char err[256];
	CHECK(parse(&c, &g, err, argc, argv) != 0);
	CHECK_STR(err, want);
}

int main(void)
{
	struct cfg c;
	uint64_t g;
	char err[256];

	CHECK(parse(&c, &g, err, 0, NULL) == 0);
	CHECK(c.interval_ns == NS_PER_MS && c.priority == 80 && c.policy == 0 && !c.flag && g == 0);

	char *a1[] = {"--interval", "250us", "--priority=90", "--policy", "rr", "--flag", "--cpus", "0-1", "--raw", "/tmp/x"};
	CHECK(parse(&c, &g, err, 10, a1) == 0);
	CHECK(c.interval_ns == 250000 && c.priority == 90 && c.policy == 1 && c.flag && c.cpus.n == 2);
	CHECK_STR(c.raw, "/tmp/x");
	CHECK(opts_given(defs, N, g, "interval") && opts_given(defs, N, g, "cpus") && !opts_given(defs, N, g, "nope"));

	char *e1[] = {"--interval", "0"};
	fails("--interval: must be between 10us and 10s (got 0)", e1, 2);
	char *e2[] = {"--interval", "100"};
	fails("--interval: '100' has no unit: say e.g. 100us (units: ns us ms s m h)", e2, 2);
	char *e3[] = {"--priority", "0"};
	fails("--priority: must be between 1 and 99 (got 0)", e3, 2);
	char *e4[] = {"--priority", "9x"};
	fails("--priority: '9x' is not an integer", e4, 2);
	char *e5[] = {"--bogus"};
	fails("unknown option --bogus (see --help)", e5, 1);
	char *e6[] = {"--policy", "deadline"};
	fails("--policy: must be one of fifo, rr, other (got 'deadline')", e6, 2);
	char *e7[] = {"--interval"};
	fails("--interval needs a value (DUR)", e7, 1);
	char *e8[] = {"--flag=1"};
	fails("--flag takes no value", e8, 1);
	char *e9[] = {"stray"};
	fails("unexpected argument 'stray'", e9, 1);
	char *e10[] = {"--cpus", "3-1"};
	fails("--cpus: '3-1': range 3-1 is reversed", e10, 2);
	char *e11[] = {"--interval", "11s"};
	fails("--interval: must be between 10us and 10s (got 11s)", e11, 2);
	char *e12[] = {"--raw", ""};
	fails("--raw: empty path", e12, 2);
	CHECK_DONE();
}
