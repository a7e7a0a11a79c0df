/*
 * The HTTP request target, parsed strictly and without libmicrohttpd: pure code, so the unit tests
 * and the libFuzzer target (tests/fuzz) exercise exactly what the server runs.
 *
 * libmicrohttpd hands its access handler a path and arguments it has already unescaped into C
 * strings, so "/metrics%00x" arrives as "/metrics" and "pid=1%00" as "1", and a query of a
 * thousand arguments is stored before the handler can refuse it. http.c therefore keeps the raw
 * target from libmicrohttpd's URI log callback and decides on it here: the path and each
 * parameter are percent-decoded with their lengths, and a NUL byte (raw or %00), a bad escape, an
 * empty parameter name, more than MM_ROUTE_PARAMS_MAX parameters or a target longer than
 * MM_ROUTE_TARGET_MAX is refused with the HTTP status to answer and a message for the JSON body.
 *
 * mm_route_range() then reads the parameters of the history routes (pid, since, until and a row
 * limit under the route's own name), each at most once.
 */
#ifndef MM_ROUTE_H
#define MM_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

#define MM_ROUTE_TARGET_MAX 4096 /* longest request target (path and query), in bytes */
#define MM_ROUTE_PARAMS_MAX 16	 /* most query parameters in one request */

struct mm_route_param {
	const char *name;  /* decoded, NUL-terminated, non-empty; points into mm_route_req.buf */
	const char *value; /* decoded, NUL-terminated ("" for "name" or "name=") */
};

struct mm_route_req {
	const char *path; /* decoded, NUL-terminated, starts with '/' */
	unsigned nparams;
	struct mm_route_param params[MM_ROUTE_PARAMS_MAX];
	/* Decoded strings; decoding never lengthens, and each string gains one NUL. */
	char buf[MM_ROUTE_TARGET_MAX + 2 * MM_ROUTE_PARAMS_MAX + 2];
};

/* Parses the raw request target @target (@len bytes, not necessarily NUL-terminated, may contain
 * any byte) into *ret. Returns 0, or the HTTP status to answer (400 malformed, 414 too long) with
 * a one-line reason in @err (printable ASCII only: bytes of the request are not echoed). *ret is
 * only meaningful on 0. */
unsigned mm_route_parse(const char *target, size_t len, struct mm_route_req *ret, char *err,
			size_t errlen);

/* The parameters of a history route. */
struct mm_route_range {
	int pid;	     /* -1: every process */
	double since, until; /* unix seconds; since defaults to an hour before until */
	unsigned long limit; /* at most limit_max; default limit_def */
};

/* Reads pid, since, until and @limit_key (1..@limit_max, default @limit_def) from @req's
 * parameters; times are unix seconds, "now", or a duration before @now ("90s", "15m", "2h",
 * "7d"). Returns 0, or 400 with the reason in @err (unknown or repeated parameter, bad value,
 * since after until). */
unsigned mm_route_range(const struct mm_route_req *req, const char *limit_key,
			unsigned long limit_def, unsigned long limit_max, double now,
			struct mm_route_range *ret, char *err, size_t errlen);

#endif
