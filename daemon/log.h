/*
 * Logging on stderr with syslog priority prefixes ("<3>..."), which journald and systemd read as
 * the message's priority. Functions that decide a failure log it once and return -errno, in the
 * style of systemd: `return mm_log_errno(LOG_ERR, r, "Failed to open %s: %m", path);`.
 */
#ifndef MM_LOG_H
#define MM_LOG_H

#include <stddef.h>
#include <syslog.h>

/* Messages with a priority numerically above @level (e.g. LOG_DEBUG when level is LOG_INFO) are
 * dropped. Default LOG_INFO. */
void mm_log_set_level(int level); /* any thread */

/* Parses "err", "warning", "notice", "info", "debug" (or a digit 0..7). Returns the level or
 * -EINVAL. */
int mm_log_parse_level(const char *s);

/* Copies @src into @dst (@size bytes, NUL-terminated, @size > 0) with control bytes and bytes
 * outside valid UTF-8 written as \xNN (\t, \n, \r by name); valid UTF-8 is kept. Stops before an
 * escape or a character that would not fit. Returns the length written. The log functions below
 * escape every line this way. */
size_t mm_escape(char *dst, size_t size, const char *src);

/* Logs one line at @prio. Returns 0. */
int mm_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Logs one line at @prio with errno set to @err (positive or negative) so "%m" prints it.
 * Returns -abs(err), so callers can `return mm_log_errno(...)`. */
int mm_log_errno(int prio, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Formats a one-line reason into @err (@errlen bytes; nothing when @err is NULL or @errlen 0),
 * for functions that return -errno and leave the wording to their caller. Escaped as
 * mm_escape() does, so a reason quoting input is printable text on one line. */
void mm_set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define log_debug(...)		    mm_log(LOG_DEBUG, __VA_ARGS__)
#define log_info(...)		    mm_log(LOG_INFO, __VA_ARGS__)
#define log_notice(...)		    mm_log(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...)	    mm_log(LOG_WARNING, __VA_ARGS__)
#define log_error(...)		    mm_log(LOG_ERR, __VA_ARGS__)
#define log_error_errno(err, ...)   mm_log_errno(LOG_ERR, (err), __VA_ARGS__)
#define log_warning_errno(err, ...) mm_log_errno(LOG_WARNING, (err), __VA_ARGS__)

#endif
