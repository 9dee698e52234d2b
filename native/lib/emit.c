/* JSON Lines writer. Strings are escaped (quote, backslash, control chars as
 * \u00XX); valid UTF-8 passes through, invalid bytes become U+FFFD so every
 * line stays decodable. One write() per line so readers never see a mix. */
#include "rtqual/emit.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Make room for n more bytes plus a NUL. */
static bool reserve(struct jw *w, size_t n)
{
	if (w->oom)
		return false;
	if (w->len + n + 1 <= w->cap)
		return true;
	size_t cap = w->cap ? w->cap : 4096;
	while (cap < w->len + n + 1)
		cap *= 2;
	char *b = realloc(w->buf, cap);
	if (!b) {
		w->oom = true;
		return false;
	}
	w->buf = b;
	w->cap = cap;
	return true;
}

/* Append raw bytes (no escaping). */
static void put(struct jw *w, const char *s, size_t n)
{
	if (!reserve(w, n))
		return;
	memcpy(w->buf + w->len, s, n);
	w->len += n;
	w->buf[w->len] = '\0';
}

static void puts_(struct jw *w, const char *s) { put(w, s, strlen(s)); }

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if invalid. */
static int utf8_len(const unsigned char *s)
{
	unsigned c = s[0];
	int n;
	unsigned min;
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		n = 2, min = 0x80;
	else if (c >= 0xE0 && c <= 0xEF)
		n = 3, min = 0x800;
	else if (c >= 0xF0 && c <= 0xF4)
		n = 4, min = 0x10000;
	else
		return 0;
	unsigned cp = c & (0x3F >> (n - 1));
	for (int i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return n;
}

/* Append s as a quoted, escaped JSON string. */
static void put_string(struct jw *w, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	put(w, "\"", 1);
	while (*p) {
		char esc[8];
		if (*p == '"' || *p == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*p;
			put(w, esc, 2);
			p++;
		} else if (*p < 0x20 || *p == 0x7F) {
			snprintf(esc, sizeof(esc), "\\u%04x", *p);
			put(w, esc, 6);
			p++;
		} else {
			int n = utf8_len(p);
			if (n == 0) {
				put(w, "\\ufffd", 6);
				p++;
			} else {
				put(w, (const char *)p, (size_t)n);
				p += n;
			}
		}
	}
	put(w, "\"", 1);
}

/* Comma and "key": before a value. */
static void member(struct jw *w, const char *key)
{
	if (w->depth > 0) {
		if (!w->first[w->depth])
			put(w, ",", 1);
		w->first[w->depth] = false;
	}
	if (key) {
		put_string(w, key);
		put(w, ":", 1);
	}
}

void jw_init(struct jw *w) { memset(w, 0, sizeof(*w)); }

void jw_free(struct jw *w)
{
	free(w->buf);
	jw_init(w);
}

/* Start a new line; keeps the buffer. */
void jw_reset(struct jw *w)
{
	w->len = 0;
	w->depth = 0;
	w->oom = false;
	if (w->buf)
		w->buf[0] = '\0';
}

static void open_(struct jw *w, const char *key, const char *c)
{
	member(w, key);
	puts_(w, c);
	if (w->depth + 1 < JW_MAX_DEPTH)
		w->depth++;
	w->first[w->depth] = true;
}

static void close_(struct jw *w, const char *c)
{
	puts_(w, c);
	if (w->depth > 0)
		w->depth--;
}

void jw_obj_begin(struct jw *w, const char *key) { open_(w, key, "{"); }
void jw_obj_end(struct jw *w) { close_(w, "}"); }
void jw_arr_begin(struct jw *w, const char *key) { open_(w, key, "["); }
void jw_arr_end(struct jw *w) { close_(w, "]"); }

void jw_cpus(struct jw *w, const char *key, const int *cpu, int n)
{
	jw_arr_begin(w, key);
	for (int i = 0; i < n; i++)
		jw_i64(w, NULL, cpu[i]);
	jw_arr_end(w);
}

void jw_str(struct jw *w, const char *key, const char *v)
{
	member(w, key);
	if (v)
		put_string(w, v);
	else
		puts_(w, "null");
}

void jw_i64(struct jw *w, const char *key, int64_t v)
{
	char b[32];
	member(w, key);
	put(w, b, (size_t)snprintf(b, sizeof(b), "%lld", (long long)v));
}

void jw_u64(struct jw *w, const char *key, uint64_t v)
{
	char b[32];
	member(w, key);
	put(w, b, (size_t)snprintf(b, sizeof(b), "%llu", (unsigned long long)v));
}

void jw_u128(struct jw *w, const char *key, u128 v)
{
	char b[40];
	member(w, key);
	puts_(w, u128_to_dec(v, b));
}

void jw_bool(struct jw *w, const char *key, bool v)
{
	member(w, key);
	puts_(w, v ? "true" : "false");
}

/* Finite doubles with 6 significant digits, always with a '.' or exponent;
 * NaN/inf are not JSON -> null. */
void jw_double(struct jw *w, const char *key, double v)
{
	char b[40];
	member(w, key);
	if (!isfinite(v)) {
		puts_(w, "null");
		return;
	}
	int n = snprintf(b, sizeof(b), "%.6g", v);
	if (!strpbrk(b, ".en"))
		n += snprintf(b + n, sizeof(b) - (size_t)n, ".0"); /* stays a float for readers */
	put(w, b, (size_t)n);
}

void jw_null(struct jw *w, const char *key)
{
	member(w, key);
	puts_(w, "null");
}

const char *jw_line(struct jw *w) { return w->buf ? w->buf : ""; }

/* Terminate the line and write it with one write() (retried on EINTR and
 * partial writes); resets the writer. -1 with errno on failure. */
int jw_write_line(struct jw *w, int fd)
{
	put(w, "\n", 1);
	if (w->oom) {
		jw_reset(w);
		errno = ENOMEM;
		return -1;
	}
	int r = write_all(fd, w->buf, w->len);
	jw_reset(w);
	return r;
}

/* write() everything, retrying on EINTR and short writes. */
int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}
