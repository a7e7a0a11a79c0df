/*
 * The strict request-target parser of the HTTP server (route.h): NUL bytes, bad escapes, empty
 * names and too many parameters are refused with the status to answer; good targets decode.
 */
#include <stdlib.h>

#include "check.h"
#include "route.h"

static struct mm_route_req req;
static char err[256];

static unsigned parse(const char *s, size_t n)
{
	err[0] = '\0';
	return mm_route_parse(s, n, &req, err, sizeof(err));
}

#define PARSE(lit) parse(lit, sizeof(lit) - 1)

static void test_good_targets_decode_path_and_parameters(void)
{
	CHECK_U64(PARSE("/metrics"), 0);
	CHECK_STR(req.path, "/metrics");
	CHECK_U64(req.nparams, 0);
	CHECK_U64(PARSE("/api/v1/history?pid=42&since=15m&limit"), 0);
	CHECK_STR(req.path, "/api/v1/history");
	CHECK_U64(req.nparams, 3);
	CHECK_STR(req.params[0].name, "pid");
	CHECK_STR(req.params[0].value, "42");
	CHECK_STR(req.params[1].value, "15m");
	CHECK_STR(req.params[2].name, "limit");
	CHECK_STR(req.params[2].value, "");
	CHECK_U64(PARSE("/a%2Fb?x=a+b%3d"), 0);
	CHECK_STR(req.path, "/a/b");
	CHECK_STR(req.params[0].value, "a b=");
	CHECK_U64(PARSE("/x?"), 0); /* an empty query has no parameters */
	CHECK_U64(req.nparams, 0);
}

static void test_nul_bytes_raw_or_escaped_are_refused(void)
{
	CHECK_U64(PARSE("/metrics\0x"), 400);
	CHECK_CONTAINS(err, "NUL");
	CHECK_U64(PARSE("/metrics%00x"), 400);
	CHECK_CONTAINS(err, "NUL");
	CHECK_U64(PARSE("/api/v1/history?pid=1%00"), 400);
	CHECK_CONTAINS(err, "NUL");
	CHECK_U64(PARSE("/api/v1/history?pid=1\0"), 400);
}

static void test_empty_parameter_names_are_refused(void)
{
	CHECK_U64(PARSE("/api/v1/history?&&&"), 400);
	CHECK_CONTAINS(err, "empty parameter name");
	CHECK_U64(PARSE("/api/v1/history?=1"), 400);
	CHECK_U64(PARSE("/api/v1/history?pid=1&"), 400);
	CHECK_U64(PARSE("/api/v1/history?pid=1&&limit=2"), 400);
}

static void test_bad_escapes_controls_and_non_ascii_are_refused(void)
{
	CHECK_U64(PARSE("/metrics%"), 400);
	CHECK_U64(PARSE("/metrics%4"), 400);
	CHECK_U64(PARSE("/metrics%zz"), 400);
	CHECK_CONTAINS(err, "percent escape");
	CHECK_U64(PARSE("/met\x01rics"), 400);
	CHECK_CONTAINS(err, "0x01");
	CHECK_U64(PARSE("/caf\xc3\xa9"), 400);
	CHECK_U64(PARSE("/a b"), 400);
	CHECK_U64(PARSE("metrics"), 400);
	CHECK_U64(PARSE(""), 400);
}

static void test_too_many_parameters_and_long_targets_are_refused(void)
{
	char buf[MM_ROUTE_TARGET_MAX + 16];
	size_t n = (size_t)snprintf(buf, sizeof(buf), "/x?");
	for (unsigned i = 0; i < MM_ROUTE_PARAMS_MAX; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%sa", i ? "&" : "");
	CHECK_U64(parse(buf, n), 0);
	CHECK_U64(req.nparams, MM_ROUTE_PARAMS_MAX);
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "&b");
	CHECK_U64(parse(buf, n), 400);
	CHECK_CONTAINS(err, "more than");

	memset(buf, 'a', sizeof(buf));
	buf[0] = '/';
	CHECK_U64(parse(buf, MM_ROUTE_TARGET_MAX), 0);
	CHECK_U64(parse(buf, MM_ROUTE_TARGET_MAX + 1), 414);
}

static void test_worst_case_decoding_fits_the_buffer(void)
{
	/* Bare names grow the most: "a" becomes "a\0\0" (name and empty value). */
	char buf[MM_ROUTE_TARGET_MAX];
	size_t n = (size_t)snprintf(buf, sizeof(buf), "/");
	memset(buf + n, 'p', MM_ROUTE_TARGET_MAX - 40 - n);
	n = MM_ROUTE_TARGET_MAX - 40;
	buf[n++] = '?';
	for (unsigned i = 0; i < MM_ROUTE_PARAMS_MAX; i++) {
		buf[n++] = 'a';
		if (i + 1 < MM_ROUTE_PARAMS_MAX)
			buf[n++] = '&';
	}
	CHECK_U64(parse(buf, n), 0);
	CHECK_U64(req.nparams, MM_ROUTE_PARAMS_MAX);
	CHECK_STR(req.params[MM_ROUTE_PARAMS_MAX - 1].value, "");
}

static unsigned range(const char *target, struct mm_route_range *r)
{
	if (parse(target, strlen(target)))
		return 999;
	return mm_route_range(&req, "limit", 1000, 100000, 1700000000.0, r, err, sizeof(err));
}

static void test_range_parameters_are_read_once_each(void)
{
	struct mm_route_range r;
	CHECK_U64(range("/h", &r), 0);
	CHECK(r.pid == -1);
	CHECK(r.until == 1700000000.0 && r.since == 1700000000.0 - 3600);
	CHECK_U64(r.limit, 1000);
	CHECK_U64(range("/h?pid=7&since=2h&until=now&limit=5", &r), 0);
	CHECK(r.pid == 7 && r.limit == 5 && r.since == 1700000000.0 - 7200);
	CHECK_U64(range("/h?pid=1&pid=2", &r), 400);
	CHECK_CONTAINS(err, "given twice");
	CHECK_U64(range("/h?bogus=1", &r), 400);
	CHECK_CONTAINS(err, "unknown parameter 'bogus'");
	CHECK_U64(range("/h?pid=0", &r), 400);
	CHECK_U64(range("/h?pid=99999999999999999999999", &r), 400);
	CHECK_U64(range("/h?limit=100001", &r), 400);
	CHECK_U64(range("/h?since=10&until=5", &r), 400);
	CHECK_CONTAINS(err, "after");
	CHECK_U64(range("/h?since=1e9", &r), 400);
	CHECK_U64(range("/h?x%01y=1", &r), 400); /* echoed as printable ASCII only */
	CHECK_CONTAINS(err, "'x?y'");
}

int main(void)
{
	RUN(test_good_targets_decode_path_and_parameters);
	RUN(test_nul_bytes_raw_or_escaped_are_refused);
	RUN(test_empty_parameter_names_are_refused);
	RUN(test_bad_escapes_controls_and_non_ascii_are_refused);
	RUN(test_too_many_parameters_and_long_targets_are_refused);
	RUN(test_worst_case_decoding_fits_the_buffer);
	RUN(test_range_parameters_are_read_once_each);
	return check_summary();
}
