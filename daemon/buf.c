/*
 * Growable text buffer with sticky allocation failure and JSON string escaping. Pure code: no
 * dependency besides libc, so every formatter built on it is unit-testable.
 */
#include "buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void mm_buf_free(struct mm_buf *b)
{
	if (!b)
		return;
	free(b->data);
	*b = (struct mm_buf)MM_BUF_INIT;
}

void mm_buf_reset(struct mm_buf *b)
{
	b->len = 0;
	b->failed = false;
	if (b->data)
		b->data[0] = '\0';
}

int mm_grow(void **p, size_t *cap, size_t need, size_t elem, size_t first)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : first;
	while (n < need)
		n *= 2;
	if (n > SIZE_MAX / elem)
		return -ENOMEM;
	void *q = realloc(*p, n * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

static bool reserve(struct mm_buf *b, size_t extra)
{
	if (b->failed)
		return false;
	if (mm_grow((void **)&b->data, &b->cap, b->len + extra + 1, 1, 256) < 0) {
		b->failed = true;
		return false;
	}
	return true;
}

void mm_buf_append(struct mm_buf *b, const char *s, size_t n)
{
	if (!reserve(b, n))
		return;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void mm_buf_puts(struct mm_buf *b, const char *s)
{
	mm_buf_append(b, s, strlen(s));
}

void mm_buf_printf(struct mm_buf *b, const char *fmt, ...)
{
	va_list ap;
	char small[256];

	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->failed = true;
		return;
	}
	if ((size_t)n < sizeof(small)) {
		mm_buf_append(b, small, (size_t)n);
		return;
	}
	if (!reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

/* Strict UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF), as JSON parsers and
 * Prometheus require. */
size_t mm_utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		unsigned char lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
		if (s[1] < lo || s[1] > hi || (s[2] & 0xc0) != 0x80)
			return 0;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		unsigned char lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
		if (s[1] < lo || s[1] > hi || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80)
			return 0;
		return 4;
	}
	return 0;
}

void mm_buf_json_str(struct mm_buf *b, const char *s)
{
	if (!s) {
		mm_buf_puts(b, "null");
		return;
	}
	mm_buf_append(b, "\"", 1);
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		unsigned char c = *p;
		if (c == '"' || c == '\\') {
			char esc[2] = {'\\', (char)c};
			mm_buf_append(b, esc, 2);
			p++;
		} else if (c == '\n') {
			mm_buf_puts(b, "\\n");
			p++;
		} else if (c == '\t') {
			mm_buf_puts(b, "\\t");
			p++;
		} else if (c < 0x20 || c == 0x7f) {
			mm_buf_printf(b, "\\u%04x", c);
			p++;
		} else {
			size_t n = mm_utf8_len(p);
			if (n == 0) {
				mm_buf_printf(b, "\\u%04x", c);
				p++;
			} else {
				mm_buf_append(b, (const char *)p, n);
				p += n;
			}
		}
	}
	mm_buf_append(b, "\"", 1);
}

void mm_buf_json_key(struct mm_buf *b, const char *key)
{
	mm_buf_json_str(b, key);
	mm_buf_append(b, ":", 1);
}
