/* Unsigned 128-bit integers in two 64-bit words, the same code on every platform (32-bit ARM gcc
 * has no __int128): exact sums of squared ns latencies and products of counts and periods.
 * Arithmetic is modulo 2^128, like unsigned C integers. */
#ifndef RTQUAL_U128_H
#define RTQUAL_U128_H

#include <stdint.h>

typedef struct u128 {
	uint64_t hi, lo;
} u128;

#define U128_MAX ((u128){UINT64_MAX, UINT64_MAX})

/* v as a u128. */
static inline u128 u128_of(uint64_t v)
{
	return (u128){0, v};
}

/* a + b. */
static inline u128 u128_add(u128 a, u128 b)
{
	u128 s = {a.hi + b.hi, a.lo + b.lo};
	s.hi += s.lo < a.lo; /* carry */
	return s;
}

/* a + b for a 64-bit b: the histogram's hot path (add, add-with-carry). */
static inline u128 u128_add_u64(u128 a, uint64_t b)
{
	return u128_add(a, u128_of(b));
}

/* a - b. */
static inline u128 u128_sub(u128 a, u128 b)
{
	u128 d = {a.hi - b.hi, a.lo - b.lo};
	d.hi -= a.lo < b.lo; /* borrow */
	return d;
}

/* -1, 0 or 1 as a <, == or > b. */
static inline int u128_cmp(u128 a, u128 b)
{
	if (a.hi != b.hi)
		return a.hi < b.hi ? -1 : 1;
	return (a.lo > b.lo) - (a.lo < b.lo);
}

/* The full product a * b. Factors below 2^32 (latencies under 4.29 s) take one 64-bit multiply;
 * others are multiplied in 32-bit halves. */
static inline u128 u128_mul_u64_u64(uint64_t a, uint64_t b)
{
	if (((a | b) >> 32) == 0)
		return u128_of(a * b);
	uint64_t a0 = (uint32_t)a, a1 = a >> 32, b0 = (uint32_t)b, b1 = b >> 32;
	uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
	uint64_t mid = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10; /* < 3 * 2^32: no overflow */
	return (u128){p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32), mid << 32 | (uint32_t)p00};
}

/* a * b modulo 2^128. */
static inline u128 u128_mul(u128 a, u128 b)
{
	u128 p = u128_mul_u64_u64(a.lo, b.lo);
	p.hi += a.hi * b.lo + a.lo * b.hi;
	return p;
}

/* a * b modulo 2^128 for a 64-bit b. */
static inline u128 u128_mul_u64(u128 a, uint64_t b)
{
	return u128_mul(a, u128_of(b));
}

u128 u128_divmod_u64(u128 n, uint64_t d, uint64_t *rem);
char *u128_to_dec(u128 v, char buf[40]);
long double u128_to_ldouble(u128 v);

#endif
