/* The probe registry: each probe is one C file filling one struct probe,
 * listed once in probes/table.c. lib/driver.c is the only driver. */
#ifndef RTQUAL_PROBE_H
#define RTQUAL_PROBE_H

#include <stdbool.h>
#include <stddef.h>

#include "rtqual/opts.h"

/* Arguments of a probe run. argv/argc: the whole command line (for the
 * header); opt_argv/opt_argc: the probe's options without --check. */
struct probe_args {
	int argc;
	char **argv;
	int opt_argc;
	char **opt_argv;
	bool check; /* validate options and privileges only; no stdout */
};

struct probe {
	const char *name;
	const char *summary;
	const struct opt_def *opts;
	int nopts;
	/* true if the probe can work on this host; else why_not says why.
	 * NULL: it works on any Linux host (checks per run, if any, are the run's) */
	bool (*supported)(char *why_not, size_t len);
	/* returns the exit code (0 pass, 1 error, 3 skip, 4 inconclusive) */
	int (*run)(const struct probe_args *a);
};

extern const struct probe probe_timer;
extern const struct probe probe_fake;
extern const struct probe probe_event;
extern const struct probe probe_pio;
extern const struct probe probe_rtsafety;
extern const struct probe probe_msg;
extern const struct probe probe_switch;
extern const struct probe probe_rhealstone;
extern const struct probe probe_iocresp;
extern const struct probe *const probe_table[];

/* The shared multi-call driver (lib/driver.c): --version, --list, PROBE --help,
 * PROBE [--check] [options] over `table` (NULL-terminated); returns the exit code. */
int driver_main(const char *prog, const struct probe *const *table, int argc, char **argv);

#endif
