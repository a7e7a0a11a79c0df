/*
 * libFuzzer target: the HTTP request target parser (daemon/route.c), which decides on the raw
 * target from the request line before any handler runs: path and parameters percent-decoded with
 * their lengths, NUL bytes, bad escapes, empty names, too many parameters or too long a target
 * refused. Then the history routes' parameters (mm_route_range) under both limit names. Input: a
 * raw request target, any bytes (seeds: the real requests of the integration suite and the hostile
 * list of http_abuse.py). Checks the contract as well as the memory: an accepted target gives a
 * path starting with '/', at most MM_ROUTE_PARAMS_MAX non-empty names, strings inside the request
 * buffer without NUL bytes before their end; a refusal is 400 or 414 with a printable ASCII
 * message; accepted ranges are finite with since <= until and limits within bounds (a date
 * before 1970, "1013-12-01", is negative unix seconds: harmless in a range, so not refused).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "route.h"

static void check_printable(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			abort();
}

static void check_inside(const struct mm_route_req *req, const char *s)
{
	if (s < req->buf || s + strlen(s) >= req->buf + sizeof(req->buf))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct mm_route_req req; /* 4 KiB: not on the stack for every input */
	struct mm_route_range range;
	char err[256];
	unsigned st;

	/* An exact-size copy: ASan sees a read past the target's length. */
	char *target = malloc(size ? size : 1);
	if (!target)
		return 0;
	memcpy(target, data, size);
	err[0] = '\0';
	st = mm_route_parse(target, size, &req, err, sizeof(err));
	free(target);
	if (st) {
		if ((st != 400 && st != 414) || !err[0])
			abort();
		check_printable(err);
		return 0;
	}
	if (req.path[0] != '/' || req.nparams > MM_ROUTE_PARAMS_MAX)
		abort();
	check_inside(&req, req.path);
	for (unsigned i = 0; i < req.nparams; i++) {
		if (!req.params[i].name[0])
			abort();
		check_inside(&req, req.params[i].name);
		check_inside(&req, req.params[i].value);
	}
	for (int k = 0; k < 2; k++) {
		unsigned long max = k ? 100000 : 1000;
		err[0] = '\0';
		st = mm_route_range(&req, k ? "top" : "limit", 50, max, 1.7e9, &range, err,
				    sizeof(err));
		if (st) {
			if (st != 400 || !err[0])
				abort();
			check_printable(err);
		} else if (!isfinite(range.since) || !isfinite(range.until) ||
			   range.since > range.until || range.pid == 0 || range.pid < -1 ||
			   range.limit < 1 || range.limit > max) {
			abort();
		}
	}
	return 0;
}
