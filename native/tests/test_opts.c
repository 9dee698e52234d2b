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

	/* Each bad command line and its one error line. */
	struct {
		const char *want;
		char *argv[3]; /* NULL-terminated */
	} bad[] = {
		{"--interval: must be between 10us and 10s (got 0)", {"--interval", "0"}},
		{"--interval: '100' has no unit: say e.g. 100us (units: ns us ms s m h)", {"--interval", "100"}},
		{"--priority: must be between 1 and 99 (got 0)", {"--priority", "0"}},
		{"--priority: '9x' is not an integer", {"--priority", "9x"}},
		{"unknown option --bogus (see --help)", {"--bogus"}},
		{"--policy: must be one of fifo, rr, other (got 'deadline')", {"--policy", "deadline"}},
		{"--interval needs a value (DUR)", {"--interval"}},
		{"--flag takes no value", {"--flag=1"}},
		{"unexpected argument 'stray'", {"stray"}},
		{"--cpus: '3-1': range 3-1 is reversed", {"--cpus", "3-1"}},
		{"--interval: must be between 10us and 10s (got 11s)", {"--interval", "11s"}},
		{"--raw: empty path", {"--raw", ""}},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int argc = 0;
		while (bad[i].argv[argc])
			argc++;
		fails(bad[i].want, bad[i].argv, argc);
	}
	CHECK_DONE();
}
