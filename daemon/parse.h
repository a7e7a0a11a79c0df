/*
 * The value parsers every command and the HTTP API share: numbers (with optional unit suffixes),
 * time expressions and listen addresses. One grammar for each, so `--since 15m` means the same
 * thing to `mmlockd report` as `?since=15m` to /api/v1/history, and a listen address that the
 * configuration accepts is one the HTTP server can bind. Strict on purpose: no sign, no
 * whitespace, no other base (strtoul alone takes " -1" and wraps it around). Pure code.
 */
#ifndef MM_PARSE_H
#define MM_PARSE_H

#include <stdbool.h>
#include <stddef.h>

/* A suffix a number may carry and what it multiplies by ({"m", 60}); lists end with NULL. */
struct mm_unit {
	const char *suffix;
	unsigned long long mult;
};

/* Parses decimal digits followed by nothing or exactly one suffix of @units (may be NULL) into
 * *ret, which must lie in [min, max]. Returns 0; -EINVAL for anything but that syntax; -ERANGE
 * when the value overflows or lies outside the range. *ret is untouched on failure. */
int mm_parse_number(const char *s, const struct mm_unit *units, unsigned long long min,
		    unsigned long long max, unsigned long long *ret);

/* mm_parse_number() without units, for unsigned long. */
int mm_parse_ulong(const char *s, unsigned long min, unsigned long max, unsigned long *ret);

/* The time grammar, in unix seconds: "1700000000" or "1700000000.5"; "now" (@now); a duration
 * before @now, "90s", "15m", "2h", "7d" (clamped at 0); or a local time "YYYY-MM-DD",
 * "YYYY-MM-DD HH:MM", "YYYY-MM-DD HH:MM:SS" or "YYYY-MM-DDTHH:MM:SS". Returns 0, or -EINVAL. */
int mm_parse_time(const char *s, double now, double *ret);

/* What the accepted time forms are, for error messages. */
#define MM_TIME_SYNTAX "unix seconds, 'now', or a duration before now like 90s, 15m, 2h, 7d"

/* A listen address split into its parts: "HOST:PORT", "[V6ADDR]:PORT" or "[V6ADDR%ZONE]:PORT". */
struct mm_listen_addr {
	char host[256]; /* without the brackets; an IPv6 zone stays on ("fe80::1%eth0") */
	unsigned port;	/* 0..65535; 0 asks the kernel for a free port */
	bool ipv6;	/* the address was bracketed */
};

/* Checks the syntax of @s (an IPv4 address, an RFC 1123 host name or a bracketed IPv6 address,
 * then a port) without resolving it, and fills *ret. Returns 0, or -EINVAL with the reason in
 * @why (e.g. "an IPv6 address needs brackets, e.g. [::1]:9477"). */
int mm_parse_listen(const char *s, struct mm_listen_addr *ret, char *why, size_t whylen);

/* The one walker of comma-separated lists (collectors, sort keys, BPF programs): with *cursor at
 * the list (or where the previous call left it), puts the next item, blanks around it trimmed,
 * in *ret_item (not NUL-terminated) and *ret_len, and returns true; false after the last item.
 * Empty items are returned (length 0): the caller says whether they are errors. "" is one empty
 * item. */
bool mm_parse_list_next(const char **cursor, const char **ret_item, size_t *ret_len);

#endif
