/*
 * A growable text buffer, used to build HTTP bodies, JSON and Prometheus text. Allocation failure
 * is sticky: once an append fails, mm_buf_failed() is true and later appends do nothing, so callers
 * check once at the end instead of after every append.
 */
#ifndef MM_BUF_H
#define MM_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mm_buf {
	char *data; /* NUL-terminated while !failed; owned */
	size_t len;
	size_t cap;
	bool failed;
};

#define MM_BUF_INIT                                                                                \
	{                                                                                          \
		0                                                                                  \
	}

void mm_buf_free(struct mm_buf *b);  /* frees data, resets to MM_BUF_INIT; accepts NULL */
void mm_buf_reset(struct mm_buf *b); /* empties, keeps the allocation */
void mm_buf_append(struct mm_buf *b, const char *s, size_t n);
void mm_buf_puts(struct mm_buf *b, const char *s);
void mm_buf_printf(struct mm_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Makes room for @need elements of @elem bytes in the array *@p of capacity *@cap (in elements):
 * doubles it, from @first elements, until it holds @need. Returns 0, or -ENOMEM with *@p and
 * *@cap unchanged. The growth every table of the daemon uses. */
int mm_grow(void **p, size_t *cap, size_t need, size_t elem, size_t first);

static inline bool mm_buf_failed(const struct mm_buf *b)
{
	return b->failed;
}

/* JSON helpers. mm_buf_json_str appends @s as a quoted, escaped JSON string ("null" for NULL);
 * control characters and invalid UTF-8 bytes are escaped as \u00XX so output is always valid
 * JSON. */
void mm_buf_json_str(struct mm_buf *b, const char *s);
/* Appends "key": (with the quoted, escaped key) */
void mm_buf_json_key(struct mm_buf *b, const char *key);

/* Length (1..4) of the strictly valid UTF-8 sequence at NUL-terminated @s, or 0 when it is not
 * valid (overlong forms and surrogates are invalid). */
size_t mm_utf8_len(const unsigned char *s);

#endif
