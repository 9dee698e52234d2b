/* rtqual-ca: Channel Access tools over libca. The probes of its own table
 * (probes.def: ca-rtt) go through the shared driver; put, monitor and repeater are load
 * commands with their own JSON lines (caload.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rtqual/log.h"
#include "rtqual/probe.h"

int ca_load_main(const char *role, int argc, char **argv);
int ca_repeater_main(int argc, char **argv);

#define PROBE PROBE_DECLARE
#include "probes.def"
#undef PROBE

static const struct probe *const ca_table[] = {
#define PROBE PROBE_ENTRY
#include "probes.def"
#undef PROBE
	NULL,
};

/* EPICS stays on loopback unless the user's environment says otherwise: no name search or
 * beacon leaves the host by default (the same defaults as rtqual.epics.env, never overriding). */
static void loopback_defaults(void)
{
	static const char *const defaults[][2] = {
		{"EPICS_CA_AUTO_ADDR_LIST", "NO"},
		{"EPICS_CA_ADDR_LIST", "127.0.0.1"},
		{"EPICS_CAS_INTF_ADDR_LIST", "127.0.0.1"},
	};
	for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
		setenv(defaults[i][0], defaults[i][1], 0);
}

int main(int argc, char **argv)
{
	loopback_defaults();
	if (argc >= 2 && (strcmp(argv[1], "put") == 0 || strcmp(argv[1], "monitor") == 0)) {
		log_prog = "rtqual-ca";
		return ca_load_main(argv[1], argc - 2, argv + 2);
	}
	if (argc >= 2 && strcmp(argv[1], "repeater") == 0) {
		log_prog = "rtqual-ca";
		return ca_repeater_main(argc - 2, argv + 2);
	}
	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))
		printf("usage: rtqual-ca put|monitor --prefix P [--records N] [options] | repeater\n");
	return driver_main("rtqual-ca", ca_table, argc, argv);
}
