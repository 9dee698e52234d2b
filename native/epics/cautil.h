/* Channel Access helpers shared by rtqual-ca's commands: one preemptive-callback
 * context (with a CA repeater in-process when none runs), connecting channels
 * with a one-line error that names the PV and the CA address list. */
#ifndef RTQUAL_CAUTIL_H
#define RTQUAL_CAUTIL_H

#include <stdbool.h>
#include <stddef.h>

#include <cadef.h>

unsigned cau_repeater_port(void);
bool cau_port_busy(unsigned port);
int cau_repeater_start(void);
int cau_context(bool own_repeater, char *err, size_t len);
int cau_connect(chid *ch, int n, char *const *names, double timeout_s, char *err, size_t len);
const char *cau_addr_list(char *buf, size_t len);

#endif
