/* Human-readable messages on stderr (never parsed). */
#ifndef RTQUAL_LOG_H
#define RTQUAL_LOG_H

#define LOG_PROG "rtqual-probe"
extern const char *log_prog; /* prefix of every line; LOG_PROG unless a driver sets it */

void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int log_skip(const char *grant, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Warnings found before the header, kept to be emitted right after it (the
 * header must come first). At most WARNINGS_MAX; later ones are dropped. */
#define WARNINGS_MAX 4
struct warnings {
	char msg[WARNINGS_MAX][256];
	int n;
};

void warnings_add(struct warnings *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
