/* Option parsing driven by a probe's opt_def table. */
#include "rtqual/opts.h"
#include "rtqual/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rtqual/cpulist.h"
#include "rtqual/timens.h"

static const char *metavar(const struct opt_def *d)
{
	switch (d->type) {
	case OPT_DURATION: return "DUR";
	case OPT_INT: return "N";
	case OPT_CPULIST: return "LIST";
	case OPT_ENUM: return "CHOICE";
	case OPT_FLAG: return "";
	case OPT_STRING: return "TEXT";
	case OPT_PATH: return "FILE";
	}
	return "";
}

static const char *type_name(enum opt_type t)
{
	static const char *const names[] = {"duration", "int", "cpulist", "enum", "flag", "string", "path"};
	return names[t];
}

/* "10us".."10s" for durations, plain integers otherwise. */
static void fmt_bound(const struct opt_def *d, int64_t v, char *buf, size_t len)
{
	if (d->type == OPT_DURATION)
		duration_format(v, buf, len);
	else
		snprintf(buf, len, "%lld", (long long)v);
}

static bool has_range(const struct opt_def *d)
{
	return (d->type == OPT_DURATION || d->type == OPT_INT) && (d->min || d->max);
}

/* Strict decimal integer (optional leading '-'). */
static int parse_int(const char *s, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (!*s || *end || errno || (s[0] == '+') || (s[0] == ' '))
		return -1;
	*out = v;
	return 0;
}

/* Convert and store one value into cfg; err carries "--name: why". */
static int opt_set(const struct opt_def *d, void *cfg, const char *val, char *err, size_t errlen)
{
	char *field = (char *)cfg + d->offset;
	char why[256];
	int64_t v = 0;

	switch (d->type) {
	case OPT_DURATION:
		if (duration_parse(val, &v, why, sizeof(why))) {
			snprintf(err, errlen, "--%s: %s", d->name, why);
			return -1;
		}
		break;
	case OPT_INT:
		if (parse_int(val, &v)) {
			snprintf(err, errlen, "--%s: '%s' is not an integer", d->name, val);
			return -1;
		}
		break;
	case OPT_CPULIST:
		if (cpulist_parse(val, (struct cpulist *)field, why, sizeof(why))) {
			snprintf(err, errlen, "--%s: %s", d->name, why);
			return -1;
		}
		return 0;
	case OPT_ENUM:
		for (int i = 0; d->choices[i]; i++) {
			if (strcmp(d->choices[i], val) == 0) {
				*(int *)field = i;
				return 0;
			}
		}
		{
			size_t o = (size_t)snprintf(err, errlen, "--%s: must be one of", d->name);
			for (int i = 0; d->choices[i] && o < errlen; i++)
				o += (size_t)snprintf(err + o, errlen - o, "%s %s", i ? "," : "", d->choices[i]);
			if (o < errlen)
				snprintf(err + o, errlen - o, " (got '%s')", val);
		}
		return -1;
	case OPT_FLAG:
		*(bool *)field = true;
		return 0;
	case OPT_PATH:
		if (!*val) {
			snprintf(err, errlen, "--%s: empty path", d->name);
			return -1;
		}
		/* fall through */
	case OPT_STRING:
		*(const char **)field = val;
		return 0;
	}
	if (has_range(d) && (v < d->min || v > d->max)) {
		char lo[32], hi[32];
		fmt_bound(d, d->min, lo, sizeof(lo));
		fmt_bound(d, d->max, hi, sizeof(hi));
		snprintf(err, errlen, "--%s: must be between %s and %s (got %s)", d->name, lo, hi, val);
		return -1;
	}
	*(int64_t *)field = v;
	return 0;
}

/* Index of option `name` in the table, -1 if absent. */
int opts_index(const struct opt_def *defs, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(defs[i].name, name) == 0)
			return i;
	return -1;
}

/* True if the user gave option `name` on the command line. */
bool opts_given(const struct opt_def *defs, int n, uint64_t given, const char *name)
{
	int i = opts_index(defs, n, name);
	return i >= 0 && (given >> i & 1);
}

/* Apply defaults, then "--name value" / "--name=value" arguments (the last
 * occurrence wins). *given gets one bit per option the user set. */
int opts_parse(const struct opt_def *defs, int n, void *cfg, int argc, char **argv,
	       uint64_t *given, char *err, size_t errlen)
{
	*given = 0;
	for (int i = 0; i < n; i++)
		if (defs[i].def && opt_set(&defs[i], cfg, defs[i].def, err, errlen))
			return -1;
	for (int a = 0; a < argc; a++) {
		const char *arg = argv[a];
		if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {
			snprintf(err, errlen, "unexpected argument '%s'", arg);
			return -1;
		}
		char name[64];
		const char *eq = strchr(arg + 2, '=');
		size_t nl = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
		if (nl >= sizeof(name))
			nl = sizeof(name) - 1;
		memcpy(name, arg + 2, nl);
		name[nl] = '\0';
		int i = opts_index(defs, n, name);
		if (i < 0) {
			snprintf(err, errlen, "unknown option --%s (see --help)", name);
			return -1;
		}
		const char *val = eq ? eq + 1 : NULL;
		if (defs[i].type == OPT_FLAG) {
			if (val) {
				snprintf(err, errlen, "--%s takes no value", name);
				return -1;
			}
			val = "";
		} else if (!val) {
			if (a + 1 >= argc) {
				snprintf(err, errlen, "--%s needs a value (%s)", name, metavar(&defs[i]));
				return -1;
			}
			val = argv[++a];
		}
		if (opt_set(&defs[i], cfg, val, err, errlen))
			return -1;
		*given |= 1ULL << i;
	}
	return 0;
}

/* Usage text from the table: option, metavar, help, range, default. */
void opts_help(FILE *f, const char *probe, const char *summary, const struct opt_def *defs, int n)
{
	fprintf(f, "usage: %s %s [options]\n%s\n\noptions:\n", log_prog, probe, summary);
	for (int i = 0; i < n; i++) {
		const struct opt_def *d = &defs[i];
		char left[64], extra[160] = "";
		size_t o = 0;
		snprintf(left, sizeof(left), "--%s %s", d->name, metavar(d));
		if (d->type == OPT_ENUM) {
			o += (size_t)snprintf(extra + o, sizeof(extra) - o, " {");
			for (int c = 0; d->choices[c]; c++)
				o += (size_t)snprintf(extra + o, sizeof(extra) - o, "%s%s", c ? "," : "", d->choices[c]);
			o += (size_t)snprintf(extra + o, sizeof(extra) - o, "}");
		}
		if (has_range(d)) {
			char lo[32], hi[32];
			fmt_bound(d, d->min, lo, sizeof(lo));
			fmt_bound(d, d->max, hi, sizeof(hi));
			o += (size_t)snprintf(extra + o, sizeof(extra) - o, " [%s..%s]", lo, hi);
		}
		if (d->def && o < sizeof(extra))
			snprintf(extra + o, sizeof(extra) - o, " (default %s)", d->def);
		fprintf(f, "  %-24s %s%s\n", left, d->help, extra);
	}
	fprintf(f, "  %-24s %s\n", "--check", "validate options and privileges, print nothing, exit 0/1/3");
	fprintf(f, "  %-24s %s\n", "--help", "this text");
	fprintf(f, "\ndurations take a unit: ns us ms s m h (e.g. 500us, 1.5ms, 10s)\n");
}

/* The option table as a JSON array (for --list). */
void opts_json(struct jw *w, const char *key, const struct opt_def *defs, int n)
{
	jw_arr_begin(w, key);
	for (int i = 0; i < n; i++) {
		const struct opt_def *d = &defs[i];
		char name[72];
		snprintf(name, sizeof(name), "--%s", d->name);
		jw_obj_begin(w, NULL);
		jw_str(w, "name", name);
		jw_str(w, "type", type_name(d->type));
		if (d->type == OPT_DURATION)
			jw_str(w, "unit", "ns");
		if (has_range(d)) {
			jw_i64(w, "min", d->min);
			jw_i64(w, "max", d->max);
		}
		if (d->type == OPT_ENUM) {
			jw_arr_begin(w, "choices");
			for (int c = 0; d->choices[c]; c++)
				jw_str(w, NULL, d->choices[c]);
			jw_arr_end(w);
		}
		jw_str(w, "default", d->def);
		jw_str(w, "help", d->help);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}
