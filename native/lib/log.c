/* stderr logging: one line per message, prefixed with the program name. */
#include "rtqual/log.h"

#include <stdarg.h>
#include <stdio.h>

const char *log_prog = LOG_PROG;

/* Informational line: "rtqual-probe: <msg>". */
void log_info(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", log_prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* The one error line "rtqual-probe: error: <what>"; returns exit code 1. */
int log_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: error: ", log_prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return 1;
}

/* The one skip line "rtqual-probe: skip: <why>. Grant: <grant>"; returns 3. */
int log_skip(const char *grant, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: skip: ", log_prog);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, ". Grant: %s\n", grant);
	va_end(ap);
	return 3;
}

/* Remember a warning for after the header (dropped beyond WARNINGS_MAX). */
void warnings_add(struct warnings *w, const char *fmt, ...)
{
	va_list ap;
	if (w->n >= WARNINGS_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(w->msg[w->n++], sizeof(w->msg[0]), fmt, ap);
	va_end(ap);
}
