/*
 * stderr logging with "<N>" syslog priority prefixes (see log.h) for journald and files; on a
 * terminal the prefix is left out (a person reads it, not journald). One fprintf per line so lines
 * from different threads do not interleave. Messages quote what others wrote (a configuration
 * line, a request path, a process name), so every line and every reason is escaped on its way
 * out: a control byte or a byte that is not part of valid UTF-8 becomes \xNN (\t, \n, \r by
 * name). A line is then always one line of text: a newline in a value cannot forge a second
 * log entry with its own priority, and journald never stores the message as a binary blob.
 */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* Set by the main thread (at start, on SIGHUP), read by every thread that logs: atomic. */
static int max_level = LOG_INFO;

void mm_log_set_level(int level)
{
	__atomic_store_n(&max_level, level, __ATOMIC_RELAXED);
}

static int level_now(void)
{
	return __atomic_load_n(&max_level, __ATOMIC_RELAXED);
}

int mm_log_parse_level(const char *s)
{
	static const char *const names[] = {"emerg",   "alert",	 "crit", "err",
					    "warning", "notice", "info", "debug"};
	if (s[0] >= '0' && s[0] <= '7' && s[1] == '\0')
		return s[0] - '0';
	for (int i = 0; i < 8; i++)
		if (strcasecmp(s, names[i]) == 0)
			return i;
	if (strcasecmp(s, "error") == 0)
		return LOG_ERR;
	if (strcasecmp(s, "warn") == 0)
		return LOG_WARNING;
	return -EINVAL;
}

/* Length of the valid UTF-8 sequence at @p (at most @n bytes), 0 if there is none: no overlong
 * forms, no surrogates, nothing above U+10FFFF. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
	size_t len;
	unsigned lo = 0x80, hi = 0xbf;

	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		len = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		len = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (len > n)
		return 0;
	if (p[0] == 0xe0)
		lo = 0xa0;
	else if (p[0] == 0xed)
		hi = 0x9f;
	else if (p[0] == 0xf0)
		lo = 0x90;
	else if (p[0] == 0xf4)
		hi = 0x8f;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return len;
}

size_t mm_escape(char *dst, size_t size, const char *src)
{
	const unsigned char *p = (const unsigned char *)src;
	size_t n = strlen(src), o = 0;

	if (size == 0)
		return 0;
	for (size_t i = 0; i < n;) {
		char esc[5];
		size_t len = 1;
		const char *out = (const char *)p + i;

		if (p[i] >= 0x80) {
			len = utf8_len(p + i, n - i);
			if (!len) {
				snprintf(esc, sizeof(esc), "\\x%02x", p[i]);
				out = esc;
				len = 1;
			}
		} else if (p[i] < 0x20 || p[i] == 0x7f) {
			if (p[i] == '\t' || p[i] == '\n' || p[i] == '\r')
				snprintf(esc, sizeof(esc), "\\%c",
					 p[i] == '\t'	? 't'
					 : p[i] == '\n' ? 'n'
							: 'r');
			else
				snprintf(esc, sizeof(esc), "\\x%02x", p[i]);
			out = esc;
		}
		size_t olen = out == esc ? strlen(esc) : len;
		if (o + olen >= size)
			break; /* never cut an escape or a character in two */
		memcpy(dst + o, out, olen);
		o += olen;
		i += len;
	}
	dst[o] = '\0';
	return o;
}

/* Whether stderr is a terminal, decided at the first line (it does not change after start-up). */
static bool on_terminal(void)
{
	static int tty = -1;
	if (tty < 0)
		tty = isatty(STDERR_FILENO);
	return tty;
}

static void vlog(int prio, const char *fmt, va_list ap)
{
	char line[1024], safe[1024];
	vsnprintf(line, sizeof(line), fmt, ap);
	mm_escape(safe, sizeof(safe), line);
	if (on_terminal())
		fprintf(stderr, "%s\n", safe);
	else
		fprintf(stderr, "<%d>%s\n", prio, safe);
}

int mm_log(int prio, const char *fmt, ...)
{
	if (prio > level_now())
		return 0;
	va_list ap;
	va_start(ap, fmt);
	vlog(prio, fmt, ap);
	va_end(ap);
	return 0;
}

int mm_log_errno(int prio, int err, const char *fmt, ...)
{
	err = abs(err);
	if (prio <= level_now()) {
		int saved = errno;
		errno = err;
		va_list ap;
		va_start(ap, fmt);
		vlog(prio, fmt, ap);
		va_end(ap);
		errno = saved;
	}
	return -err;
}

void mm_set_err(char *err, size_t errlen, const char *fmt, ...)
{
	char raw[1024];
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	mm_escape(err, errlen, raw);
}
