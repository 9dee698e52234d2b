/* A small C interface to a pvxs client for the pva-rtt probe (pvac.cpp):
 * puts of a sequence value to one PV, a monitor of another whose update
 * carrying that value is timestamped (CLOCK_MONOTONIC) in pvxs's callback and
 * signalled on an eventfd. */
#ifndef RTQUAL_PVAC_H
#define RTQUAL_PVAC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct pvac;

/* Connect to both PVs within timeout_ns (monitor first: its current value
 * gives *base, a start above it so every put changes the value). NULL with
 * err set on failure. */
struct pvac *pvac_open(const char *put, const char *monitor, int efd, int64_t timeout_ns, int64_t *base,
		       char *err, size_t len);
/* Start the put of `value`; *t_put: CLOCK_MONOTONIC just before. 0, or -1 with err. */
int pvac_put(struct pvac *c, int64_t value, int64_t *t_put, char *err, size_t len);
/* After the eventfd fired: 1 and *t_echo if the echo came, 0 if not yet,
 * -1 with err if the put failed. */
int pvac_take(struct pvac *c, int64_t *t_echo, char *err, size_t len);
uint64_t pvac_stray(const struct pvac *c); /* monitor updates that were not the awaited value */
void pvac_close(struct pvac *c);
const char *pvac_version(void);

#ifdef __cplusplus
}
#endif
#endif
