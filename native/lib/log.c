/* stderr logging: one line per message, prefixed with the program name. */
#include "rtqual/log.h"

#include <stdarg.h>
#include <stdio.h>

const char *log_prog = LOG_PROG;

int log_line(int rc, const char *kind, const char *grant, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: %s", log_prog, kind);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (grant)
		fprintf(stderr, ". Grant: %s", grant);
	fputc('\n', stderr);
	return rc;
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
