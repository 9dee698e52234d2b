/* The one probe registry: adding a probe = one C file + one line here. */
#include "rtqual/probe.h"

const struct probe *const probe_table[] = {
	&probe_timer,
	&probe_fake,
	&probe_event,
	&probe_pio,
	&probe_rtsafety,
	&probe_msg,
	&probe_switch,
	&probe_rhealstone,
	&probe_iocresp,
	NULL,
};
