/* Portable 128-bit unsigned integers: carries, borrows, products, division, decimal text, long
 * double; against the compiler's unsigned __int128 where it has one (not on 32-bit ARM). */
#include <float.h>
#include <stdbool.h>
#include <stdint.h>

#include "check.h"
#include "rtqual/u128.h"

#define M64 UINT64_MAX
#define E19 10000000000000000000ULL

static char dec_buf[40];

/* Decimal text of v (one static buffer: one call per CHECK). */
static const char *dec(u128 v)
{
	return u128_to_dec(v, dec_buf);
}

static int same(u128 a, u128 b)
{
	return a.hi == b.hi && a.lo == b.lo;
}

static void test_add_sub_cmp(void)
{
	CHECK(same(u128_add_u64((u128){0, M64}, 1), (u128){1, 0}));           /* carry into hi */
	CHECK(same(u128_add((u128){5, M64}, (u128){7, M64}), (u128){13, M64 - 1})); /* carry plus hi sum */
	CHECK(same(u128_add_u64(U128_MAX, 1), u128_of(0)));                   /* modulo 2^128 */
	CHECK(same(u128_add((u128){1, 2}, (u128){3, 4}), (u128){4, 6}));
	CHECK(same(u128_sub((u128){1, 0}, u128_of(1)), (u128){0, M64})); /* borrow */
	CHECK(same(u128_sub(u128_of(0), u128_of(1)), U128_MAX));
	CHECK(same(u128_sub((u128){9, 3}, (u128){2, 5}), (u128){6, M64 - 1}));
	CHECK(u128_cmp((u128){1, 0}, (u128){0, M64}) > 0);
	CHECK(u128_cmp((u128){0, M64}, (u128){1, 0}) < 0);
	CHECK(u128_cmp((u128){2, 3}, (u128){2, 4}) < 0);
	CHECK(u128_cmp((u128){2, 4}, (u128){2, 4}) == 0);
	CHECK(u128_cmp(U128_MAX, u128_of(0)) > 0);
}

static void test_mul(void)
{
	CHECK(same(u128_mul_u64_u64(0xffffffffULL, 0xffffffffULL), u128_of(0xfffffffe00000001ULL))); /* 32-bit path */
	CHECK(same(u128_mul_u64_u64(1ULL << 32, 1ULL << 32), (u128){1, 0}));
	CHECK(same(u128_mul_u64_u64(M64, M64), (u128){M64 - 1, 1}));
	CHECK(same(u128_mul_u64_u64(M64, 1), u128_of(M64)));
	CHECK(same(u128_mul_u64_u64(0, M64), u128_of(0)));
	CHECK_STR(dec(u128_mul_u64_u64(60000000000ULL, 60000000000ULL)), "3600000000000000000000");
	CHECK(same(u128_mul((u128){1, 1}, (u128){1, 1}), (u128){2, 1})); /* (2^64+1)^2 mod 2^128 */
	CHECK(same(u128_mul(U128_MAX, U128_MAX), u128_of(1)));            /* (-1)^2 */
	CHECK(same(u128_mul_u64(U128_MAX, 2), (u128){M64, M64 - 1}));
	CHECK(same(u128_mul_u64((u128){3, M64}, 1ULL << 32), (u128){(3ULL << 32) | 0xffffffffULL, M64 << 32}));
}

static void test_divmod(void)
{
	uint64_t r = 99;
	CHECK(same(u128_divmod_u64((u128){1, 0}, 3, &r), u128_of(6148914691236517205ULL)) && r == 1);
	CHECK(same(u128_divmod_u64(U128_MAX, M64, &r), (u128){1, 1}) && r == 0);
	CHECK(same(u128_divmod_u64(u128_of(17), 5, &r), u128_of(3)) && r == 2);
	CHECK(same(u128_divmod_u64((u128){6, 7}, 3, &r), (u128){2, 2}) && r == 1); /* high word divides */
	/* a divisor above 2^63: the running remainder overflows 64 bits while shifting */
	uint64_t d = (1ULL << 63) + 1;
	CHECK(same(u128_divmod_u64(U128_MAX, d, &r), (u128){1, M64 - 3}) && r == 3);
	CHECK(same(u128_divmod_u64((u128){d - 1, M64}, d, &r), u128_of(M64)) && r == d - 1); /* largest quotient */
	u128 x = u128_add_u64((u128){3ULL << 62, 0}, 987654321987654321ULL);                /* 2^127 + 2^126 + ... */
	CHECK_STR(dec(x), "255211775190703847598518609895813812913");
	CHECK_STR(dec(u128_divmod_u64(x, 1000000007, &r)), "255211773404221433768968573513");
	CHECK(r == 33798322);
	CHECK(same(u128_divmod_u64(x, 1, &r), x) && r == 0);
	CHECK(same(u128_divmod_u64(x, 1000000007, NULL), u128_divmod_u64(x, 1000000007, &r)));
}

static void test_dec(void)
{
	char b[40];
	CHECK_STR(u128_to_dec(u128_of(0), b), "0");
	CHECK_STR(dec(u128_of(7)), "7");
	CHECK_STR(dec(u128_of(M64)), "18446744073709551615");
	CHECK_STR(dec((u128){1, 0}), "18446744073709551616");
	CHECK_STR(dec(u128_of(E19)), "10000000000000000000");
	u128 big = u128_add_u64((u128){1ULL << 63, 0}, 12345); /* 2^127 + x */
	CHECK_STR(dec(big), "170141183460469231731687303715884118073");
	CHECK_STR(dec(u128_add_u64(u128_mul_u64_u64(E19, E19), 1)), "100000000000000000000000000000000000001");
	CHECK_STR(dec(u128_mul_u64_u64(E19, 10)), "100000000000000000000");
	CHECK_STR(dec(U128_MAX), "340282366920938463463374607431768211455");
}

static void test_ldouble(void)
{
	CHECK(u128_to_ldouble(u128_of(0)) == 0);
	CHECK(u128_to_ldouble(u128_of(12345)) == 12345);
	CHECK(u128_to_ldouble((u128){1, 0}) == 0x1p64L);
	CHECK(u128_to_ldouble((u128){1ULL << 63, 0}) == 0x1p127L);
	CHECK(u128_to_ldouble((u128){3, 1ULL << 63}) == 0x3.8p64L);
	CHECK(u128_to_ldouble(U128_MAX) == 0x1p128L); /* rounds up: every long double is narrower */
#if LDBL_MANT_DIG <= 100
	/* 2^100 plus half a unit in the last place: a tie, to even (down); one more, up */
	u128 tie = {1ULL << 36, 1ULL << (100 - LDBL_MANT_DIG)};
	CHECK(u128_to_ldouble(tie) == 0x1p100L);
	CHECK(u128_to_ldouble(u128_add_u64(tie, 1)) == 0x1p100L + 2 * (long double)tie.lo);
	CHECK(u128_to_ldouble(u128_sub(tie, u128_of(1))) == 0x1p100L);
#endif
}

#ifdef __SIZEOF_INT128__
typedef unsigned __int128 n128;

static uint64_t rng = 0x2545F4914F6CDD1DULL;

/* Random 64-bit value with a random number of significant bits (all sizes, edges included). */
static uint64_t rand64(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	int bits = (int)(rng % 65);
	uint64_t v = rng * 0x9E3779B97F4A7C15ULL;
	return bits == 64 ? v : bits == 0 ? 0 : v >> (64 - bits);
}

static n128 nat(u128 v)
{
	return (n128)v.hi << 64 | v.lo;
}

static u128 rand128(void)
{
	uint64_t hi = rand64();
	return (u128){hi, rand64()};
}

/* Every operation against the compiler's own 128-bit arithmetic. */
static void test_against_int128(void)
{
	char want[40];
	for (int i = 0; i < 200000; i++) {
		u128 a = rand128(), b = rand128();
		uint64_t x = rand64(), y = rand64(), d = rand64(), r;
		d += d == 0;
		n128 q = nat(a) / d;
		bool ok = nat(u128_add(a, b)) == nat(a) + nat(b) && nat(u128_sub(a, b)) == nat(a) - nat(b) &&
			  nat(u128_mul(a, b)) == nat(a) * nat(b) && nat(u128_mul_u64_u64(x, y)) == (n128)x * y &&
			  nat(u128_divmod_u64(a, d, &r)) == q && r == nat(a) % d &&
			  u128_cmp(a, b) == ((nat(a) > nat(b)) - (nat(a) < nat(b))) &&
			  u128_to_ldouble(a) == (long double)nat(a);
		char *p = want + 39;
		*p = '\0';
		n128 v = nat(a);
		do
			*--p = (char)('0' + (int)(v % 10));
		while (v /= 10);
		if (!ok || strcmp(dec(a), p) != 0) {
			fprintf(stderr, "a=%016llx%016llx b=%016llx%016llx x=%llx y=%llx d=%llx\n",
				(unsigned long long)a.hi, (unsigned long long)a.lo, (unsigned long long)b.hi,
				(unsigned long long)b.lo, (unsigned long long)x, (unsigned long long)y,
				(unsigned long long)d);
			CHECK(!"u128 agrees with unsigned __int128");
			break;
		}
	}
}
#endif

int main(void)
{
	test_add_sub_cmp();
	test_mul();
	test_divmod();
	test_dec();
	test_ldouble();
#ifdef __SIZEOF_INT128__
	test_against_int128();
#endif
	CHECK_DONE();
}
