/* Human-readable messages on stderr (never parsed). */
#ifndef RTQUAL_LOG_H
#define RTQUAL_LOG_H

#define LOG_PROG "rtqual-probe"

void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int log_skip(const char *grant, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
