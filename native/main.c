/* rtqual-probe: the probes of probes/probes.def (table.c) through the shared driver. */
#include "rtqual/probe.h"

int main(int argc, char **argv)
{
	return driver_main("rtqual-probe", probe_table, argc, argv);
}
