/* rtqual-ca: Channel Access tools over libca. The probes of its own table
 * (ca-rtt) go through the shared driver; put, monitor and repeater are load
 * commands with their own JSON lines (caload.c). */
#include <stdio.h>
#include <string.h>

#include "rtqual/log.h"
#include "rtqual/probe.h"

extern const struct probe probe_cartt;
int ca_load_main(const char *role, int argc, char **argv);
int ca_repeater_main(int argc, char **argv);

static const struct probe *const ca_table[] = {
	&probe_cartt,
	NULL,
};

int main(int argc, char **argv)
{
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
