/* The rtqual-probe table, made from probes.def (one PROBE(name) line per probe). */
#include "rtqual/probe.h"

#define PROBE PROBE_DECLARE
#include "probes.def"
#undef PROBE

const struct probe *const probe_table[] = {
#define PROBE PROBE_ENTRY
#include "probes.def"
#undef PROBE
	NULL,
};
