/* SPSC ring allocation; storage is pre-touched so pushes never page-fault. */
#include "rtqual/ring.h"

#include <stdlib.h>

#include "rtqual/rtenv.h"

/* Allocate capacity_pow2 elements of esz bytes (capacity must be a power of 2). */
int spsc_init(struct spsc *r, uint32_t capacity_pow2, uint32_t esz)
{
	atomic_init(&r->head, 0);
	atomic_init(&r->tail, 0);
	r->mask = capacity_pow2 - 1;
	r->esz = esz;
	r->buf = malloc((size_t)capacity_pow2 * esz);
	if (!r->buf)
		return -1;
	rt_pretouch(r->buf, (size_t)capacity_pow2 * esz);
	return 0;
}

void spsc_free(struct spsc *r)
{
	free(r->buf);
	r->buf = NULL;
}
