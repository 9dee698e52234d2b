/* Lock-free single-producer single-consumer ring of fixed-size elements:
 * the measurement thread pushes, the main thread pops. */
#ifndef RTQUAL_RING_H
#define RTQUAL_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

struct spsc {
	_Alignas(64) _Atomic uint64_t head; /* written by the producer */
	_Alignas(64) _Atomic uint64_t tail; /* written by the consumer */
	_Alignas(64) uint64_t mask;
	uint32_t esz;
	unsigned char *buf;
};

int spsc_init(struct spsc *r, uint32_t capacity_pow2, uint32_t esz);
void spsc_free(struct spsc *r);

/* Producer: copy one element in; false when full (caller counts the loss). */
static inline bool spsc_push(struct spsc *r, const void *e)
{
	uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
	uint64_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
	if (h - t > r->mask)
		return false;
	memcpy(r->buf + (h & r->mask) * r->esz, e, r->esz);
	atomic_store_explicit(&r->head, h + 1, memory_order_release);
	return true;
}

/* Consumer: copy one element out; false when empty. */
static inline bool spsc_pop(struct spsc *r, void *e)
{
	uint64_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
	uint64_t h = atomic_load_explicit(&r->head, memory_order_acquire);
	if (t == h)
		return false;
	memcpy(e, r->buf + (t & r->mask) * r->esz, r->esz);
	atomic_store_explicit(&r->tail, t + 1, memory_order_release);
	return true;
}

#endif
