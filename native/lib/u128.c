/* Unsigned 128-bit integers (rtqual/u128.h): division by a 64-bit number, decimal text, long double. */
#include "rtqual/u128.h"

#include <float.h>
#include <math.h>

/* n / d, and n % d in *rem unless rem is NULL; d > 0. The high word is divided by the hardware,
 * the low word bit by bit (64 steps at most): used for statistics and parsing, never per sample. */
u128 u128_divmod_u64(u128 n, uint64_t d, uint64_t *rem)
{
	u128 q = {n.hi / d, 0};
	uint64_t r = n.hi % d;
	if (r == 0) {
		q.lo = n.lo / d;
		r = n.lo % d;
	} else {
		for (int i = 63; i >= 0; i--) {
			uint64_t carry = r >> 63; /* r < d before the shift: 2r + 1 < 2d, maybe >= 2^64 */
			r = r << 1 | (n.lo >> i & 1);
			q.lo <<= 1;
			if (carry || r >= d) {
				r -= d;
				q.lo |= 1;
			}
		}
	}
	if (rem)
		*rem = r;
	return q;
}

/* Decimal text of v in buf (up to 39 digits); returns the first digit's address in buf. */
char *u128_to_dec(u128 v, char buf[40])
{
	char *p = buf + 39;
	*p = '\0';
	while (v.hi) { /* at most twice: 19 low digits at a time */
		uint64_t r;
		v = u128_divmod_u64(v, 10000000000000000000ULL, &r);
		for (int i = 0; i < 19; i++, r /= 10)
			*--p = (char)('0' + (int)(r % 10));
	}
	do {
		*--p = (char)('0' + (int)(v.lo % 10));
		v.lo /= 10;
	} while (v.lo);
	return p;
}

/* v rounded once to the nearest long double (ties to even), as a conversion of a native 128-bit
 * integer would be: the statistics stay identical to the __int128 code they replace. */
long double u128_to_ldouble(u128 v)
{
#if LDBL_MANT_DIG >= 64
	return (long double)v.hi * 0x1p64L + (long double)v.lo; /* both exact: one rounding, in the sum */
#else
	/* a long double narrower than a word (armhf: a double): the top 64 bits, with the bits below
	 * them folded into the lowest one (sticky), round like the whole value; then scale exactly */
	if (v.hi == 0)
		return (long double)v.lo;
	int shift = 64 - __builtin_clzll(v.hi); /* v >> shift has 64 significant bits */
	uint64_t top = shift == 64 ? v.hi : v.hi << (64 - shift) | v.lo >> shift;
	uint64_t below = shift == 64 ? v.lo : v.lo << (64 - shift);
	return ldexpl((long double)(top | (below != 0)), shift);
#endif
}
