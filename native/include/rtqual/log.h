/* Human-readable messages on stderr (never parsed). */
#ifndef RTQUAL_LOG_H
#define RTQUAL_LOG_H

#define LOG_PROG "rtqual-probe"
extern const char *log_prog; /* prefix of every line; LOG_PROG unless a driver sets it */

/* One line "<prog>: <kind><message>", then ". Grant: <grant>" if grant is not NULL; returns rc. */
int log_line(int rc, const char *kind, const char *grant, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Informational line: "rtqual-probe: <msg>". */
#define log_info(...) ((void)log_line(0, "", NULL, __VA_ARGS__))
/* The one error line "rtqual-probe: error: <what>"; returns exit code 1. */
#define log_error(...) log_line(1, "error: ", NULL, __VA_ARGS__)
/* The one skip line "rtqual-probe: skip: <why>. Grant: <grant>"; returns 3. */
#define log_skip(grant, ...) log_line(3, "skip: ", (grant), __VA_ARGS__)

/* Warnings found before the header, kept to be emitted right after it (the
 * header must come first). At most WARNINGS_MAX; later ones are dropped. */
#define WARNINGS_MAX 4
struct warnings {
	char msg[WARNINGS_MAX][256];
	int n;
};

void warnings_add(struct warnings *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
