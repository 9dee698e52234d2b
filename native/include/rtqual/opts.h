/* Table-driven option parsing: one table per probe gives names, types,
 * ranges, units, defaults and help; parsing, --help and --list use it. */
#ifndef RTQUAL_OPTS_H
#define RTQUAL_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rtqual/emit.h"

enum opt_type {
	OPT_DURATION, /* int64_t ns, unit required */
	OPT_INT,      /* int64_t */
	OPT_CPULIST,  /* struct cpulist */
	OPT_ENUM,     /* int: index into choices */
	OPT_FLAG,     /* bool */
	OPT_STRING,   /* const char * */
	OPT_PATH,     /* const char *, non-empty */
};

struct opt_def {
	const char *name; /* without the leading "--" */
	enum opt_type type;
	size_t offset;    /* of the field in the probe's config struct */
	int64_t min, max; /* DURATION (ns) and INT; min == max == 0: unchecked */
	const char *def;  /* default as it would be typed; NULL: none */
	const char *const *choices; /* OPT_ENUM, NULL-terminated */
	const char *help;
};

#define OPTS_MAX 64

int opts_parse(const struct opt_def *defs, int n, void *cfg, int argc, char **argv,
	       uint64_t *given, char *err, size_t errlen);
int opts_index(const struct opt_def *defs, int n, const char *name);
bool opts_given(const struct opt_def *defs, int n, uint64_t given, const char *name);
void opts_help(FILE *f, const char *probe, const char *summary, const struct opt_def *defs, int n);
void opts_json(struct jw *w, const char *key, const struct opt_def *defs, int n);

#endif
