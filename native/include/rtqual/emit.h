/* Minimal JSON Lines writer: build one object in memory, write it as one line. */
#ifndef RTQUAL_EMIT_H
#define RTQUAL_EMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rtqual/u128.h"

#define JW_MAX_DEPTH 16

struct jw {
	char *buf;
	size_t len, cap;
	int depth;
	bool first[JW_MAX_DEPTH]; /* no member written yet at this depth */
	bool oom;                 /* an allocation failed: the line is dropped */
};

void jw_init(struct jw *w);
void jw_free(struct jw *w);
void jw_reset(struct jw *w);

/* `key` is the member name inside an object, NULL inside an array or at top level. */
void jw_obj_begin(struct jw *w, const char *key);
void jw_obj_end(struct jw *w);
void jw_arr_begin(struct jw *w, const char *key);
/* key: [cpu, ...], the n CPU numbers of a list */
void jw_cpus(struct jw *w, const char *key, const int *cpu, int n);
void jw_arr_end(struct jw *w);
void jw_str(struct jw *w, const char *key, const char *v); /* NULL -> null */
void jw_i64(struct jw *w, const char *key, int64_t v);
void jw_u64(struct jw *w, const char *key, uint64_t v);
void jw_u128(struct jw *w, const char *key, u128 v);
void jw_bool(struct jw *w, const char *key, bool v);
void jw_double(struct jw *w, const char *key, double v);
void jw_null(struct jw *w, const char *key);

const char *jw_line(struct jw *w); /* NUL-terminated text built so far */
int jw_write_line(struct jw *w, int fd);

int write_all(int fd, const void *buf, size_t len);

#endif
