/*
 * The shared value parsers (parse.h): the number, time and listen-address grammars that the
 * configuration, `mmlockd report` and the HTTP API all go through.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "parse.h"

static void test_numbers_take_digits_and_one_suffix_only(void)
{
	static const struct mm_unit units[] = {{"s", 1}, {"m", 60}, {NULL, 0}};
	unsigned long long v = 7;

	CHECK(mm_parse_number("15", units, 1, 3600, &v) == 0);
	CHECK_U64(v, 15);
	CHECK(mm_parse_number("2m", units, 1, 3600, &v) == 0);
	CHECK_U64(v, 120);
	v = 7;
	CHECK(mm_parse_number("", units, 0, 10, &v) == -EINVAL);
	CHECK(mm_parse_number(" 1", units, 0, 10, &v) == -EINVAL);
	CHECK(mm_parse_number("-1", units, 0, 10, &v) == -EINVAL);
	CHECK(mm_parse_number("+1", units, 0, 10, &v) == -EINVAL);
	CHECK(mm_parse_number("0x10", units, 0, 100, &v) == -EINVAL);
	CHECK(mm_parse_number("1h", units, 0, 100000, &v) == -EINVAL);
	CHECK(mm_parse_number("1ms", units, 0, 100000, &v) == -EINVAL);
	CHECK(mm_parse_number("1", NULL, 2, 10, &v) == -ERANGE);
	CHECK(mm_parse_number("61m", units, 1, 3600, &v) == -ERANGE);
	CHECK(mm_parse_number("99999999999999999999", NULL, 0, ~0ull, &v) == -ERANGE);
	CHECK(mm_parse_number("999999999999999999m", units, 0, ~0ull, &v) == -ERANGE);
	CHECK_U64(v, 7); /* untouched by every failure */
}

static void test_ulong_bounds_are_inclusive(void)
{
	unsigned long v = 0;

	CHECK(mm_parse_ulong("65535", 0, 65535, &v) == 0);
	CHECK_U64(v, 65535);
	CHECK(mm_parse_ulong("0", 0, 65535, &v) == 0);
	CHECK_U64(v, 0);
	CHECK(mm_parse_ulong("65536", 0, 65535, &v) < 0);
	CHECK(mm_parse_ulong("0", 1, 10, &v) < 0);
}

static void test_time_grammar_is_the_same_for_every_caller(void)
{
	double now = 1700000000, t = -1;

	CHECK(mm_parse_time("now", now, &t) == 0 && t == now);
	CHECK(mm_parse_time("1600000000", now, &t) == 0 && t == 1600000000);
	CHECK(mm_parse_time("1600000000.5", now, &t) == 0 && t == 1600000000.5);
	CHECK(mm_parse_time("90s", now, &t) == 0 && t == now - 90);
	CHECK(mm_parse_time("15m", now, &t) == 0 && t == now - 900);
	CHECK(mm_parse_time("2h", now, &t) == 0 && t == now - 7200);
	CHECK(mm_parse_time("7d", now, &t) == 0 && t == now - 7 * 86400);
	CHECK(mm_parse_time("100000d", now, &t) == 0 && t == 0);
	t = -1;
	const char *bad[] = {
		"",   "garbage", "-5",	"5x", "1.5.5", "yesterday",  "1e9",
		" 5", "+5",	 "5ss", ".5", "5.",    "2024-13-45", "2024-01-01 25:00"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (mm_parse_time(bad[i], now, &t) != -EINVAL)
			fprintf(stderr, "accepted '%s'\n", bad[i]);
		CHECK(mm_parse_time(bad[i], now, &t) == -EINVAL);
	}
	CHECK(t == -1);
}

static void test_local_dates_are_local_midnight_and_time(void)
{
	struct tm tm = {.tm_year = 124, .tm_mon = 0, .tm_mday = 2, .tm_isdst = -1};
	double t = 0, day = (double)mktime(&tm);

	CHECK(mm_parse_time("2024-01-02", 0, &t) == 0 && t == day);
	CHECK(mm_parse_time("2024-01-02 01:02", 0, &t) == 0 && t == day + 3720);
	CHECK(mm_parse_time("2024-01-02 01:02:03", 0, &t) == 0 && t == day + 3723);
	CHECK(mm_parse_time("2024-01-02T01:02:03", 0, &t) == 0 && t == day + 3723);
}

static void test_listen_addresses_split_into_host_and_port(void)
{
	struct mm_listen_addr a;
	char why[160];

	CHECK(mm_parse_listen("127.0.0.1:9477", &a, why, sizeof(why)) == 0);
	CHECK_STR(a.host, "127.0.0.1");
	CHECK_U64(a.port, 9477);
	CHECK(!a.ipv6);
	CHECK(mm_parse_listen("localhost:0", &a, why, sizeof(why)) == 0);
	CHECK_STR(a.host, "localhost");
	CHECK_U64(a.port, 0);
	CHECK(mm_parse_listen("[::1]:80", &a, why, sizeof(why)) == 0);
	CHECK_STR(a.host, "::1");
	CHECK(a.ipv6);
	CHECK(mm_parse_listen("[fe80::1%eth0]:80", &a, why, sizeof(why)) == 0);
	CHECK_STR(a.host, "fe80::1%eth0");
}

static void test_bad_listen_addresses_say_why(void)
{
	static const struct {
		const char *in, *why;
	} cases[] = {
		{"", "must not be empty"},
		{"127.0.0.1", "expected ADDRESS:PORT"},
		{"::1:80", "needs brackets"},
		{":80", "missing address"},
		{"[::1:80", "missing ']'"},
		{"[::1]80", "expected [ADDRESS]:PORT"},
		{"[]:80", "expected an IPv6 address"},
		{"[fe80::1%]:80", "invalid zone"},
		{"[::g]:80", "is not an IPv6 address"},
		{"300.1.1.1:80", "is not an IPv4 address"},
		{"-bad-:80", "neither an IP address nor a host name"},
		{"127.0.0.1:65536", "port must be a number"},
		{"127.0.0.1:", "port must be a number"},
		{"127.0.0.1:-1", "port must be a number"},
	};
	struct mm_listen_addr a = {.port = 42};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char why[160] = "";
		CHECK(mm_parse_listen(cases[i].in, &a, why, sizeof(why)) == -EINVAL);
		CHECK_CONTAINS(why, cases[i].why);
	}
	CHECK_U64(a.port, 42);
}

static void test_lists_walk_items_trimmed_and_keep_empty_ones(void)
{
	const char *p = " a ,b,,c\t", *item;
	size_t len;
	const char *want[] = {"a", "b", "", "c"};
	for (size_t i = 0; i < 4; i++) {
		CHECK(mm_parse_list_next(&p, &item, &len));
		CHECK(len == strlen(want[i]) && !memcmp(item, want[i], len));
	}
	CHECK(!mm_parse_list_next(&p, &item, &len));
	p = "";
	CHECK(mm_parse_list_next(&p, &item, &len) && len == 0);
	CHECK(!mm_parse_list_next(&p, &item, &len));
}

int main(void)
{
	RUN(test_numbers_take_digits_and_one_suffix_only);
	RUN(test_ulong_bounds_are_inclusive);
	RUN(test_time_grammar_is_the_same_for_every_caller);
	RUN(test_local_dates_are_local_midnight_and_time);
	RUN(test_listen_addresses_split_into_host_and_port);
	RUN(test_bad_listen_addresses_say_why);
	RUN(test_lists_walk_items_trimmed_and_keep_empty_ones);
	return check_summary();
}
