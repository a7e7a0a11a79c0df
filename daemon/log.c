/*
 * stderr logging with "<N>" syslog priority prefixes (see log.h). One fprintf per line so lines
 * from different threads do not interleave.
 */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int max_level = LOG_INFO;

void mm_log_set_level(int level)
{
	max_level = level;
}

int mm_log_get_level(void)
{
	return max_level;
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

static void vlog(int prio, const char *fmt, va_list ap)
{
	char line[1024];
	vsnprintf(line, sizeof(line), fmt, ap);
	fprintf(stderr, "<%d>%s\n", prio, line);
}

int mm_log(int prio, const char *fmt, ...)
{
	if (prio > max_level)
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
	if (prio <= max_level) {
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
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}
