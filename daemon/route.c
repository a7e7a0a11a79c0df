/*
 * Strict parsing of the HTTP request target and of the history routes' parameters (see route.h).
 * Everything works on lengths, never on C strings of the input, so a NUL byte cannot cut a path or
 * a value short; the decoded strings go into the request's own buffer, so nothing allocates and
 * every input is bounded by MM_ROUTE_TARGET_MAX.
 */
#include "route.h"

#include "parse.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RANGE_DEFAULT_S 3600 /* since, when not given: an hour before until */
#define ECHO_MAX	64   /* longest piece of a request quoted in an error */

/* Copies at most ECHO_MAX bytes of @s into @out with anything but printable ASCII as '?', so an
 * error message never carries the request's control bytes or broken UTF-8. */
static void echo(char out[ECHO_MAX + 1], const char *s)
{
	size_t i;

	for (i = 0; i < ECHO_MAX && s[i]; i++)
		out[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	out[i] = '\0';
}

static int hex(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decodes @n bytes of @s into @out (NUL-terminated; @out has room for n + 1). In a query '+' is a
 * space. Returns 0, or 400 with @err set for a NUL byte, a bad escape or a byte that is not
 * visible ASCII (RFC 3986 allows nothing else in a request target). */
static unsigned decode(const char *s, size_t n, bool query, char *out, const char *what, char *err,
		       size_t errlen)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '%') {
			int hi = i + 2 < n ? hex((unsigned char)s[i + 1]) : -1;
			int lo = hi >= 0 ? hex((unsigned char)s[i + 2]) : -1;
			if (lo < 0) {
				snprintf(err, errlen, "bad percent escape in the %s", what);
				return 400;
			}
			c = (unsigned char)(hi << 4 | lo);
			i += 2;
			if (c == '\0') {
				snprintf(err, errlen, "NUL byte (%%00) in the %s", what);
				return 400;
			}
		} else if (c == '\0') {
			snprintf(err, errlen, "NUL byte in the %s", what);
			return 400;
		} else if (c <= 0x20 || c >= 0x7f) {
			snprintf(err, errlen,
				 "byte 0x%02x in the %s (only visible ASCII is allowed)", c, what);
			return 400;
		} else if (c == '+' && query) {
			c = ' ';
		}
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return 0;
}

unsigned mm_route_parse(const char *target, size_t len, struct mm_route_req *ret, char *err,
			size_t errlen)
{
	char *out = ret->buf;
	unsigned st;

	ret->path = NULL;
	ret->nparams = 0;
	if (len > MM_ROUTE_TARGET_MAX) {
		snprintf(err, errlen, "request target of %zu bytes (at most %u)", len,
			 (unsigned)MM_ROUTE_TARGET_MAX);
		return 414;
	}
	if (len == 0 || target[0] != '/') {
		snprintf(err, errlen, "request target must be a path starting with '/'");
		return 400;
	}
	const char *q = memchr(target, '?', len);
	size_t plen = q ? (size_t)(q - target) : len;
	st = decode(target, plen, false, out, "path", err, errlen);
	if (st)
		return st;
	ret->path = out;
	out += strlen(out) + 1;
	if (!q)
		return 0;

	const char *p = q + 1, *end = target + len;
	while (p < end) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *seg_end = amp ? amp : end;
		const char *eq = memchr(p, '=', (size_t)(seg_end - p));
		const char *name_end = eq ? eq : seg_end;
		if (name_end == p) {
			snprintf(err, errlen, "empty parameter name in the query");
			return 400;
		}
		if (ret->nparams == MM_ROUTE_PARAMS_MAX) {
			snprintf(err, errlen, "more than %u query parameters",
				 (unsigned)MM_ROUTE_PARAMS_MAX);
			return 400;
		}
		struct mm_route_param *prm = &ret->params[ret->nparams++];
		st = decode(p, (size_t)(name_end - p), true, out, "query", err, errlen);
		if (st)
			return st;
		prm->name = out;
		out += strlen(out) + 1;
		const char *v = eq ? eq + 1 : seg_end;
		st = decode(v, (size_t)(seg_end - v), true, out, "query", err, errlen);
		if (st)
			return st;
		prm->value = out;
		out += strlen(out) + 1;
		if (!amp)
			break;
		p = amp + 1;
		if (p == end) {
			snprintf(err, errlen, "empty parameter name in the query");
			return 400;
		}
	}
	return 0;
}

unsigned mm_route_range(const struct mm_route_req *req, const char *limit_key,
			unsigned long limit_def, unsigned long limit_max, double now,
			struct mm_route_range *ret, char *err, size_t errlen)
{
	const char *const keys[] = {"pid", "since", "until", limit_key};
	char name[ECHO_MAX + 1], value[ECHO_MAX + 1];
	unsigned seen = 0;
	unsigned long v;

	*ret = (struct mm_route_range){.pid = -1, .until = now, .limit = limit_def};
	for (unsigned i = 0; i < req->nparams; i++) {
		const char *key = req->params[i].name, *val = req->params[i].value;
		unsigned k;
		for (k = 0; k < 4 && strcmp(key, keys[k]); k++)
			;
		echo(name, key);
		echo(value, val);
		if (k == 4) {
			snprintf(err, errlen,
				 "unknown parameter '%s' (expected pid, since, until, %s)", name,
				 limit_key);
			return 400;
		}
		if (seen & (1u << k)) {
			snprintf(err, errlen, "parameter '%s' given twice", name);
			return 400;
		}
		seen |= 1u << k;
		switch (k) {
		case 0:
			if (mm_parse_ulong(val, 1, INT32_MAX, &v) < 0) {
				snprintf(err, errlen,
					 "pid: bad value '%s' (expected a positive integer)",
					 value);
				return 400;
			}
			ret->pid = (int)v;
			break;
		case 1:
		case 2:
			if (mm_parse_time(val, now, k == 1 ? &ret->since : &ret->until) < 0) {
				snprintf(err, errlen, "%s: bad value '%s' (expected %s)", name,
					 value, MM_TIME_SYNTAX);
				return 400;
			}
			break;
		case 3:
			if (mm_parse_ulong(val, 1, limit_max, &ret->limit) < 0) {
				snprintf(err, errlen,
					 "%s: bad value '%s' (expected an integer from 1 to %lu)",
					 name, value, limit_max);
				return 400;
			}
			break;
		}
	}
	if (!(seen & (1u << 1)))
		ret->since = ret->until > RANGE_DEFAULT_S ? ret->until - RANGE_DEFAULT_S : 0;
	if (ret->since > ret->until) {
		snprintf(err, errlen, "since (%.3f) is after until (%.3f)", ret->since, ret->until);
		return 400;
	}
	return 0;
}
