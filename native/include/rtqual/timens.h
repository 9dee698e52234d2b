/* Time helpers: everything is int64 nanoseconds; durations carry units. */
#ifndef RTQUAL_TIMENS_H
#define RTQUAL_TIMENS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define NS_PER_US 1000LL
#define NS_PER_MS 1000000LL
#define NS_PER_S 1000000000LL

static inline int64_t ts_to_ns(struct timespec ts)
{
	return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static inline struct timespec ns_to_ts(int64_t ns)
{
	struct timespec ts = {.tv_sec = ns / NS_PER_S, .tv_nsec = ns % NS_PER_S};
	if (ts.tv_nsec < 0) {
		ts.tv_sec--;
		ts.tv_nsec += NS_PER_S;
	}
	return ts;
}

static inline int64_t clock_ns(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return ts_to_ns(ts);
}

static inline int64_t mono_now_ns(void) { return clock_ns(CLOCK_MONOTONIC); }
static inline int64_t real_now_ns(void) { return clock_ns(CLOCK_REALTIME); }

int duration_parse(const char *s, int64_t *out_ns, char *err, size_t errlen);
const char *duration_format(int64_t ns, char *buf, size_t len);
int sleep_until_ns(int64_t mono_deadline_ns);
int64_t measure_clock_read_ns(int iterations);

#endif
