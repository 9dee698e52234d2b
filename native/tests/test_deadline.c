/* SCHED_DEADLINE parameter checks (rtqual/deadline.h): the kernel's rules, each refusal in words. */
#include <errno.h>

#include "check.h"
#include "rtqual/deadline.h"
#include "rtqual/timens.h"

static void check_dl(int64_t r, int64_t d, int64_t p, const char *want)
{
	struct dl_params dl = {r, d, p};
	char err[256] = "";
	int rc = dl_check(&dl, err, sizeof(err));
	if (!want) {
		CHECK(rc == 0);
	} else {
		CHECK(rc == -1);
		CHECK_STR(err, want);
	}
}

int main(void)
{
	check_dl(100 * NS_PER_US, NS_PER_MS, NS_PER_MS, NULL);
	check_dl(NS_PER_MS, NS_PER_MS, NS_PER_MS, NULL); /* runtime = deadline = period: allowed */
	check_dl(DL_RUNTIME_MIN_NS, 10 * NS_PER_US, 10 * NS_PER_US, NULL);
	check_dl(900 * NS_PER_US, 500 * NS_PER_US, NS_PER_MS, "runtime 900us over deadline 500us");
	check_dl(100 * NS_PER_US, 2 * NS_PER_MS, NS_PER_MS, "deadline 2ms over period 1ms");
	check_dl(1000, 10 * NS_PER_US, 10 * NS_PER_US, "runtime 1us below the kernel's minimum of 1024 ns");
	/* refusals name their reason */
	struct dl_params dl = {990 * NS_PER_US, NS_PER_MS, NS_PER_MS};
	char buf[512];
	dl_refusal(EBUSY, &dl, 2, buf, sizeof(buf));
	CHECK(strstr(buf, "deadline bandwidth not available: 2 thread(s) of runtime 990us per period 1ms") == buf);
	CHECK(strstr(buf, "kernel.sched_rt_runtime_us") != NULL);
	dl_refusal(EINVAL, &dl, 1, buf, sizeof(buf));
	CHECK(strstr(buf, "sched_deadline_period_min_us") != NULL);
	dl_refusal(EPERM, &dl, 1, buf, sizeof(buf));
	CHECK(strstr(buf, "SCHED_DEADLINE not permitted (EPERM)") == buf);
	CHECK_DONE();
}
