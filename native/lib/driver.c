/* The multi-call driver shared by rtqual-probe, rtqual-ca and rtqual-pva: handles --version,
 * --list, PROBE --help and PROBE [--check] [options], and runs the probe from its table through
 * the one lifecycle (run_probe, lib/lifecycle.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rtqual/emit.h"
#include "rtqual/lifecycle.h"
#include "rtqual/log.h"
#include "rtqual/probe.h"

#ifndef RTQUAL_VERSION
#define RTQUAL_VERSION "0.0.0"
#endif

bool probe_fd_supported(int fd, const char *what, char *why_not, size_t len)
{
	if (fd < 0) {
		snprintf(why_not, len, "%s not available: %s", what, strerror(errno));
		return false;
	}
	close(fd);
	return true;
}

bool probe_spare_cpu_supported(char *why_not, size_t len)
{
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		snprintf(why_not, len, "needs at least 2 online CPUs: an RT busy loop on the only CPU would freeze "
			 "the machine");
		return false;
	}
	return true;
}

/* Top-level usage and the probe names. */
static void usage(FILE *f, const char *prog, const struct probe *const *table)
{
	fprintf(f, "usage: %s --version | --list | PROBE --help | PROBE [--check] [options]\nprobes:", prog);
	for (int i = 0; table[i]; i++)
		fprintf(f, " %s", table[i]->name);
	fputc('\n', f);
}

/* A NULL-terminated list of strings as a JSON array (NULL: empty). */
static void list_strings(struct jw *w, const char *key, const char *const *v)
{
	jw_arr_begin(w, key);
	for (int i = 0; v && v[i]; i++)
		jw_str(w, NULL, v[i]);
	jw_arr_end(w);
}

/* "service": null or {name, run_as, fixed: {option: value}, external} (protocol.md). */
static void list_service(struct jw *w, const struct probe_service *s)
{
	if (!s) {
		jw_null(w, "service");
		return;
	}
	jw_obj_begin(w, "service");
	jw_str(w, "name", s->name);
	jw_str(w, "run_as", s->run_as);
	jw_obj_begin(w, "fixed");
	for (int i = 0; s->fixed && s->fixed[i]; i += 2)
		jw_str(w, s->fixed[i], s->fixed[i + 1]);
	jw_obj_end(w);
	jw_str(w, "external", s->external);
	jw_obj_end(w);
}

/* One JSON line per probe: name, summary, supported, why_not, options, binary, label_keys,
 * service, sections. */
static int list_probes(const char *prog, const struct probe *const *table)
{
	struct jw w;
	int rc = 0;
	jw_init(&w);
	for (int i = 0; table[i]; i++) {
		const struct probe *p = table[i];
		char why[256] = "";
		bool ok = !p->supported || p->supported(why, sizeof(why));
		jw_obj_begin(&w, NULL);
		jw_str(&w, "name", p->name);
		jw_str(&w, "summary", p->summary);
		jw_bool(&w, "supported", ok);
		jw_str(&w, "why_not", ok ? NULL : why);
		opts_json(&w, "options", p->opts, p->nopts);
		jw_str(&w, "binary", prog);
		list_strings(&w, "label_keys", p->label_keys);
		list_service(&w, p->service);
		list_strings(&w, "sections", p->sections);
		jw_obj_end(&w);
		if (jw_write_line(&w, 1) != 0)
			rc = log_error("writing --list output failed");
	}
	jw_free(&w);
	return rc;
}

/* Dispatch: global flags, then PROBE [--help] [--check] [options]. `prog`
 * names the executable in messages (log_prog is set to it). */
int driver_main(const char *prog, const struct probe *const *table, int argc, char **argv)
{
	log_prog = prog;
	if (argc < 2) {
		usage(stderr, prog, table);
		return 1;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("%s %s\n", prog, RTQUAL_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "--list") == 0)
		return list_probes(prog, table);
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout, prog, table);
		return 0;
	}
	const struct probe *p = NULL;
	for (int i = 0; table[i]; i++)
		if (strcmp(table[i]->name, argv[1]) == 0)
			p = table[i];
	if (!p)
		return log_error("unknown probe '%s' (%s --list shows them)", argv[1], prog);

	struct probe_args a = {.argc = argc, .argv = argv, .opt_argv = calloc((size_t)argc, sizeof(char *))};
	if (!a.opt_argv)
		return log_error("out of memory");
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			opts_help(stdout, p->name, p->summary, p->opts, p->nopts);
			free(a.opt_argv);
			return 0;
		}
		if (strcmp(argv[i], "--check") == 0)
			a.check = true;
		else
			a.opt_argv[a.opt_argc++] = argv[i];
	}
	char why[256] = "";
	int rc;
	if (p->supported && !p->supported(why, sizeof(why)))
		rc = log_skip("a host where it is supported", "%s: %s", p->name, why);
	else
		rc = run_probe(p, &a);
	free(a.opt_argv);
	return rc;
}
