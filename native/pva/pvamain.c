/* rtqual-pva: the PV Access probe (pva-rtt) over the pvxs client, through
 * the shared driver. Loopback unless the environment says otherwise. */
#include <stdlib.h>

#include "rtqual/probe.h"

extern const struct probe probe_pvartt;

static const struct probe *const pva_table[] = {
	&probe_pvartt,
	NULL,
};

int main(int argc, char **argv)
{
	setenv("EPICS_PVA_AUTO_ADDR_LIST", "NO", 0);
	setenv("EPICS_PVA_ADDR_LIST", "127.0.0.1", 0);
	return driver_main("rtqual-pva", pva_table, argc, argv);
}
