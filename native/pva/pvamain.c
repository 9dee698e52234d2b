/* rtqual-pva: the PV Access probes (probes.def: pva-rtt) over the pvxs client, through
 * the shared driver. Loopback unless the environment says otherwise. */
#include <stdlib.h>

#include "rtqual/probe.h"

#define PROBE PROBE_DECLARE
#include "probes.def"
#undef PROBE

static const struct probe *const pva_table[] = {
#define PROBE PROBE_ENTRY
#include "probes.def"
#undef PROBE
	NULL,
};

int main(int argc, char **argv)
{
	setenv("EPICS_PVA_AUTO_ADDR_LIST", "NO", 0);
	setenv("EPICS_PVA_ADDR_LIST", "127.0.0.1", 0);
	return driver_main("rtqual-pva", pva_table, argc, argv);
}
