/*
 * The shared value parsers (see parse.h). They used to exist once per caller: the listen address
 * in config.c and http.c, the time grammar in http.c and report.c, numbers in four places, each
 * accepting slightly different input. Pure code.
 */
#include "parse.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "log.h"

int mm_parse_number(const char *s, const struct mm_unit *units, unsigned long long min,
		    unsigned long long max, unsigned long long *ret)
{
	unsigned long long mult = 1, v;
	const char *p = s;

	while (*p >= '0' && *p <= '9')
		p++;
	if (p == s)
		return -EINVAL;
	if (*p) {
		const struct mm_unit *u = units;

		while (u && u->suffix && strcmp(p, u->suffix) != 0)
			u++;
		if (!u || !u->suffix)
			return -EINVAL;
		mult = u->mult;
	}
	errno = 0;
	v = strtoull(s, NULL, 10);
	if (errno == ERANGE || v > ULLONG_MAX / mult)
		return -ERANGE;
	v *= mult;
	if (v < min || v > max)
		return -ERANGE;
	*ret = v;
	return 0;
}

int mm_parse_ulong(const char *s, unsigned long min, unsigned long max, unsigned long *ret)
{
	unsigned long long v;
	int r = mm_parse_number(s, NULL, min, max, &v);

	if (r == 0)
		*ret = (unsigned long)v;
	return r;
}

/* Whether @s is digits, optionally followed by '.' and digits; sets *ret_end past them. */
static bool scan_decimal(const char *s, const char **ret_end)
{
	const char *p = s;

	while (*p >= '0' && *p <= '9')
		p++;
	if (p == s)
		return false;
	if (*p == '.') {
		const char *frac = ++p;

		while (*p >= '0' && *p <= '9')
			p++;
		if (p == frac)
			return false;
	}
	*ret_end = p;
	return true;
}

static int parse_local_time(const char *s, double *ret)
{
	static const char *const fmts[] = {"%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S",
					   "%Y-%m-%d %H:%M", "%Y-%m-%d"};

	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		struct tm tm = {0};
		const char *rest = strptime(s, fmts[i], &tm);

		if (!rest || *rest)
			continue;
		tm.tm_isdst = -1;
		time_t t = mktime(&tm);
		if (t == (time_t)-1)
			return -EINVAL;
		*ret = (double)t;
		return 0;
	}
	return -EINVAL;
}

int mm_parse_time(const char *s, double now, double *ret)
{
	static const struct {
		char suffix;
		double mult;
	} units[] = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}};
	const char *end;
	double v;

	if (!strcmp(s, "now")) {
		*ret = now;
		return 0;
	}
	if (strlen(s) > 32)
		return -EINVAL;
	if (!scan_decimal(s, &end))
		return parse_local_time(s, ret);
	v = strtod(s, NULL);
	if (*end == '\0') {
		*ret = v;
		return 0;
	}
	for (size_t i = 0; end[1] == '\0' && i < sizeof(units) / sizeof(units[0]); i++) {
		if (*end != units[i].suffix)
			continue;
		v *= units[i].mult;
		*ret = v < now ? now - v : 0;
		return 0;
	}
	return parse_local_time(s, ret);
}

static bool is_alnum(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
}

/* A host name: dot-separated labels of letters, digits and inner hyphens (RFC 1123). */
static bool valid_hostname(const char *s, size_t n)
{
	size_t label = 0;

	if (n == 0 || n > 253)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '.') {
			if (label == 0 || s[i - 1] == '-')
				return false;
			label = 0;
		} else if (is_alnum(s[i]) || (s[i] == '-' && label > 0)) {
			if (++label > 63)
				return false;
		} else {
			return false;
		}
	}
	return label > 0 && s[n - 1] != '-';
}

static bool all_digits_and_dots(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((s[i] < '0' || s[i] > '9') && s[i] != '.')
			return false;
	return true;
}

/* The bracketed form: "[V6ADDR]:PORT", a link-local address may carry a zone ("%eth0"). */
static int parse_v6(const char *s, struct mm_listen_addr *a, const char **ret_port, char *why,
		    size_t whylen)
{
	const char *close = strchr(s, ']');
	char addr[sizeof(a->host)];
	struct in6_addr in6;

	if (!close) {
		mm_set_err(why, whylen, "missing ']' after the IPv6 address");
		return -EINVAL;
	}
	if (close[1] != ':') {
		mm_set_err(why, whylen, "expected [ADDRESS]:PORT");
		return -EINVAL;
	}
	size_t n = (size_t)(close - (s + 1));
	if (n == 0 || n >= INET6_ADDRSTRLEN + 64) {
		mm_set_err(why, whylen, "expected an IPv6 address between '[' and ']'");
		return -EINVAL;
	}
	memcpy(a->host, s + 1, n);
	a->host[n] = '\0';
	memcpy(addr, a->host, n + 1);
	char *zone = strchr(addr, '%');
	if (zone) {
		size_t zn = strlen(zone + 1);

		*zone = '\0';
		if (zn == 0 || strspn(zone + 1, "abcdefghijklmnopqrstuvwxyz"
						"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != zn) {
			mm_set_err(why, whylen, "invalid zone after '%%' in the IPv6 address");
			return -EINVAL;
		}
	}
	if (inet_pton(AF_INET6, addr, &in6) != 1) {
		mm_set_err(why, whylen, "'%s' is not an IPv6 address", addr);
		return -EINVAL;
	}
	a->ipv6 = true;
	*ret_port = close + 2;
	return 0;
}

/* "HOST:PORT" with an IPv4 address or a host name. */
static int parse_v4(const char *s, struct mm_listen_addr *a, const char **ret_port, char *why,
		    size_t whylen)
{
	const char *colon = strrchr(s, ':');
	struct in_addr in4;

	if (!colon) {
		mm_set_err(why, whylen, "expected ADDRESS:PORT, e.g. %s", MM_DEFAULT_LISTEN);
		return -EINVAL;
	}
	size_t n = (size_t)(colon - s);
	if (memchr(s, ':', n)) {
		mm_set_err(why, whylen, "an IPv6 address needs brackets, e.g. [::1]:9477");
		return -EINVAL;
	}
	if (n == 0) {
		mm_set_err(why, whylen,
			   "missing address before ':' (0.0.0.0 means every IPv4 address)");
		return -EINVAL;
	}
	if (n >= sizeof(a->host)) {
		mm_set_err(why, whylen, "the address is longer than %zu bytes",
			   sizeof(a->host) - 1);
		return -EINVAL;
	}
	memcpy(a->host, s, n);
	a->host[n] = '\0';
	if (all_digits_and_dots(s, n)) {
		if (inet_pton(AF_INET, a->host, &in4) != 1) {
			mm_set_err(why, whylen, "'%s' is not an IPv4 address", a->host);
			return -EINVAL;
		}
	} else if (!valid_hostname(s, n)) {
		mm_set_err(why, whylen, "'%.*s' is neither an IP address nor a host name", (int)n,
			   s);
		return -EINVAL;
	}
	a->ipv6 = false;
	*ret_port = colon + 1;
	return 0;
}

int mm_parse_listen(const char *s, struct mm_listen_addr *ret, char *why, size_t whylen)
{
	struct mm_listen_addr a = {0};
	unsigned long port;
	const char *port_s;
	int r;

	if (!*s) {
		mm_set_err(why, whylen, "must not be empty");
		return -EINVAL;
	}
	r = s[0] == '[' ? parse_v6(s, &a, &port_s, why, whylen)
			: parse_v4(s, &a, &port_s, why, whylen);
	if (r < 0)
		return r;
	if (mm_parse_ulong(port_s, 0, 65535, &port) < 0) {
		mm_set_err(why, whylen, "port must be a number between 0 and 65535");
		return -EINVAL;
	}
	a.port = (unsigned)port;
	*ret = a;
	return 0;
}

bool mm_parse_list_next(const char **cursor, const char **ret_item, size_t *ret_len)
{
	const char *p = *cursor;
	if (!p)
		return false;
	const char *end = strchrnul(p, ',');
	const char *e = end;
	while (p < e && (*p == ' ' || *p == '\t'))
		p++;
	while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	*ret_item = p;
	*ret_len = (size_t)(e - p);
	*cursor = *end ? end + 1 : NULL;
	return true;
}
