/* JSON writer: structure, escaping, numbers, whole-line writes. */
#include <stdint.h>
#include <unistd.h>

#include "check.h"
#include "rtqual/emit.h"

/* Escape one string as a whole line {"s":...} and compare. */
static void esc(const char *in, const char *want)
{
	struct jw w;
	jw_init(&w);
	jw_obj_begin(&w, NULL);
	jw_str(&w, "s", in);
	jw_obj_end(&w);
	CHECK_STR(jw_line(&w), want);
	jw_free(&w);
}

int main(void)
{
	struct jw w;
	char b[40];
	jw_init(&w);

	jw_obj_begin(&w, NULL);
	jw_str(&w, "type", "hist");
	jw_i64(&w, "neg", -5);
	jw_u64(&w, "big", UINT64_MAX);
	jw_bool(&w, "t", true);
	jw_bool(&w, "f", false);
	jw_null(&w, "n");
	jw_str(&w, "nul", NULL);
	jw_arr_begin(&w, "counts");
	for (int i = 0; i < 2; i++) {
		jw_arr_begin(&w, NULL);
		jw_i64(&w, NULL, i);
		jw_u64(&w, NULL, 10 + i);
		jw_arr_end(&w);
	}
	jw_arr_end(&w);
	jw_arr_begin(&w, "empty");
	jw_arr_end(&w);
	jw_obj_begin(&w, "o");
	jw_obj_end(&w);
	jw_double(&w, "pct", 12.5);
	jw_double(&w, "pct0", 0);
	jw_double(&w, "nan", 0.0 / 0.0);
	jw_u128(&w, "sumsq", u128_mul_u64(u128_of(UINT64_MAX), 1000));
	jw_obj_end(&w);
	CHECK_STR(jw_line(&w), "{\"type\":\"hist\",\"neg\":-5,\"big\":18446744073709551615,\"t\":true,\"f\":false,"
			       "\"n\":null,\"nul\":null,\"counts\":[[0,10],[1,11]],\"empty\":[],\"o\":{},"
			       "\"pct\":12.5,\"pct0\":0.0,\"nan\":null,\"sumsq\":18446744073709551615000}");

	/* a reset writer starts a fresh line */
	jw_reset(&w);
	jw_arr_begin(&w, NULL);
	jw_str(&w, NULL, "a");
	jw_str(&w, NULL, "b");
	jw_arr_end(&w);
	CHECK_STR(jw_line(&w), "[\"a\",\"b\"]");

	/* one write() per line, newline-terminated */
	int p[2];
	char rd[64] = "";
	CHECK(pipe(p) == 0);
	CHECK(jw_write_line(&w, p[1]) == 0);
	CHECK(read(p[0], rd, sizeof(rd) - 1) == 10);
	CHECK_STR(rd, "[\"a\",\"b\"]\n");
	CHECK_STR(jw_line(&w), "");
	close(p[0]);
	close(p[1]);
	jw_free(&w);

	esc("plain", "{\"s\":\"plain\"}");
	esc("q\"b\\s/", "{\"s\":\"q\\\"b\\\\s/\"}");
	esc("nl\ntab\tcr\r", "{\"s\":\"nl\\u000atab\\u0009cr\\u000d\"}");
	esc("\x01\x1f\x7f", "{\"s\":\"\\u0001\\u001f\\u007f\"}");
	esc("µs ✓ 😀", "{\"s\":\"µs ✓ 😀\"}");
	esc("bad\xff\xc3(", "{\"s\":\"bad\\ufffd\\ufffd(\"}");
	esc("\xed\xa0\x80", "{\"s\":\"\\ufffd\\ufffd\\ufffd\"}"); /* UTF-16 surrogate */
	esc("\xc0\xaf", "{\"s\":\"\\ufffd\\ufffd\"}");             /* overlong */
	esc("", "{\"s\":\"\"}");
	esc("\"key\":", "{\"s\":\"\\\"key\\\":\"}");

	CHECK_STR(u128_to_dec(u128_of(0), b), "0");
	CHECK_STR(u128_to_dec((u128){1, 0}, b), "18446744073709551616");
	CHECK_STR(u128_to_dec(U128_MAX, b), "340282366920938463463374607431768211455");
	CHECK_DONE();
}
