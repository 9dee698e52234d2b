/* The probe registry: each probe is one C file defining one struct probe (its options, what
 * --list tells Python, and its lifecycle hooks), registered by one line in probes/probes.def
 * (rtqual-probe; rtqual-ca and rtqual-pva have their own one-line lists). lib/driver.c is the
 * only driver, lib/lifecycle.c the only lifecycle. */
#ifndef RTQUAL_PROBE_H
#define RTQUAL_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rtqual/emit.h"
#include "rtqual/opts.h"

struct run;

/* Arguments of a probe run. argv/argc: the whole command line (for the
 * header); opt_argv/opt_argc: the probe's options without --check. */
struct probe_args {
	int argc;
	char **argv;
	int opt_argc;
	char **opt_argv;
	bool check; /* validate options and privileges only; no stdout */
};

/* The service a case of the probe needs around it (--list "service"): `fixed` are pairs
 * option, value (NULL-terminated) the service fills with its macros; giving the option
 * `external` means the user's own service: none is started. */
struct probe_service {
	const char *name, *run_as;
	const char *const *fixed;
	const char *external;
};

struct probe {
	const char *name;
	const char *summary;
	const struct opt_def *opts;
	int nopts;
	/* true if the probe can work on this host; else why_not says why.
	 * NULL: it works on any Linux host (checks per run, if any, are the run's) */
	bool (*supported)(char *why_not, size_t len);

	/* What --list tells Python (NULL-terminated lists; NULL: empty / null) */
	const char *const *label_keys; /* options (Python names) whose values label a case, in order */
	const struct probe_service *service;
	const char *const *sections; /* report sections beyond the statistics: "stages", "baseline" */

	/* The lifecycle (rtqual/lifecycle.h): hooks get the state (state_bytes, zeroed, starting
	 * with struct run); the options parse into it (opt_def offsets from the state's start).
	 * Every hook but validate, prepare and params is optional. */
	size_t state_bytes;
	const void *family;        /* a family's own table (struct stimresp_ops), for shared hooks */
	bool no_rt;                /* SCHED_OTHER, no RT set-up, no self-overhead measured (the fake probe) */
	const char *const *exclusive; /* pairs of options that exclude each other, checked before validate */
	int (*validate)(struct run *r);   /* options beyond range checks; log_error's rc */
	int (*privileges)(struct run *r); /* RT scheduling and memory locking; exit code */
	int (*prepare)(struct run *r);    /* after --check: sink_init, resources; logs, rc */
	void (*params)(struct jw *w, const void *state); /* the header's params */
	int (*start)(struct run *r);      /* threads, children; -1 with r->err */
	void (*measure)(struct run *r);   /* replaces the pacing loop below */
	bool (*tick)(struct run *r, int64_t now_ns); /* pacing loop, each round: true ends it */
	void (*kick)(struct run *r);      /* wake blocked threads so they see sink.stop */
	void (*stop)(struct run *r);      /* join threads, reap children */
	int (*end)(struct run *r);        /* final records; NULL: run_end */
	void (*cleanup)(struct run *r);   /* always, last: release what validate or prepare took */
};

/* A NULL-terminated list of strings for label_keys and sections: PROBE_LIST("mode", "ipc"). */
#define PROBE_LIST(...) ((const char *const[]){__VA_ARGS__, NULL})

/* A binary's table (NULL-terminated), made from its list of PROBE(name) lines by PROBE_TABLE. */
extern const struct probe *const probe_table[];
#define PROBE_DECLARE(name) extern const struct probe probe_##name;
#define PROBE_ENTRY(name) &probe_##name,

/* supported's helper: true (and `fd` closed) if the fd a probe needs could be made; else
 * why_not = "WHAT not available: why". */
bool probe_fd_supported(int fd, const char *what, char *why_not, size_t len);
/* supported of a probe with an RT busy loop: never on the only online CPU (it would freeze the
 * machine); true with at least 2 online CPUs. */
bool probe_spare_cpu_supported(char *why_not, size_t len);

/* The shared multi-call driver (lib/driver.c): --version, --list, PROBE --help,
 * PROBE [--check] [options] over `table` (NULL-terminated); returns the exit code. */
int driver_main(const char *prog, const struct probe *const *table, int argc, char **argv);

#endif
