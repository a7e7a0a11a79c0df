/*
 * tracefs discovery and tracepoint format parsing (see tracefs.h).
 */
#include "tracefs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <traceevent/event-parse.h>
#include <unistd.h>

#include "log.h"

#define TRACEFS_MAGIC 0x74726163

/* 1 when @path is a usable tracefs, 0 when it is not tracefs, -errno when it is tracefs but its
 * events cannot be reached (e.g. -EACCES for an unprivileged user). */
static int is_tracefs(const char *path)
{
	struct statfs sf;
	char events[512];
	if (statfs(path, &sf) < 0 || (unsigned long)sf.f_type != TRACEFS_MAGIC)
		return 0;
	snprintf(events, sizeof(events), "%s/events", path);
	return access(events, F_OK) == 0 ? 1 : -errno;
}

int mm_tracefs_find(char *ret_path, size_t size, char *err, size_t errlen)
{
	static const char *const candidates[] = {"/sys/kernel/tracing",
						 "/sys/kernel/debug/tracing"};
	for (size_t i = 0; i < 2; i++) {
		int r = is_tracefs(candidates[i]);
		if (r > 0) {
			snprintf(ret_path, size, "%s", candidates[i]);
			return 0;
		}
		if (r < 0) {
			mm_set_err(err, errlen,
				   "tracefs is mounted at %s but %s/events is not readable: %s",
				   candidates[i], candidates[i], strerror(-r));
			return r;
		}
	}
	if (access("/sys/kernel/tracing", F_OK) < 0) {
		mm_set_err(err, errlen,
			   "/sys/kernel/tracing does not exist (kernel without tracefs?)");
		return -ENOENT;
	}
	if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) < 0) {
		int e = errno;
		mm_set_err(err, errlen,
			   "tracefs is not mounted and mounting it at /sys/kernel/tracing "
			   "failed: %s",
			   strerror(e));
		return -e;
	}
	if (is_tracefs("/sys/kernel/tracing") <= 0) {
		mm_set_err(err, errlen,
			   "mounted tracefs at /sys/kernel/tracing but it has no events/");
		return -ENOENT;
	}
	snprintf(ret_path, size, "/sys/kernel/tracing");
	return 0;
}

static int read_all(const char *path, char **ret, size_t *ret_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t cap = 8192, len = 0;
	char *buf = malloc(cap);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		if (len + 1 >= cap) {
			char *n = realloc(buf, cap * 2);
			if (!n) {
				free(buf);
				close(fd);
				return -ENOMEM;
			}
			buf = n;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + len, cap - 1 - len);
		if (r < 0) {
			int e = errno;
			free(buf);
			close(fd);
			return -e;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	buf[len] = '\0';
	*ret = buf;
	*ret_len = len;
	return 0;
}

int mm_tracefs_event(const char *tracefs, struct tep_handle *tep, const char *system,
		     const char *name, struct tep_event **ret_ev, int *ret_id, char **ret_format,
		     char *err, size_t errlen)
{
	char path[512];
	char *text = NULL;
	size_t len = 0;

	snprintf(path, sizeof(path), "%s/events/%s/%s/format", tracefs, system, name);
	int r = read_all(path, &text, &len);
	if (r < 0) {
		if (r == -ENOENT)
			mm_set_err(err, errlen, "the kernel has no tracepoint %s:%s", system, name);
		else
			mm_set_err(err, errlen, "cannot read %s: %s", path, strerror(-r));
		return r;
	}
	struct tep_event *ev = NULL;
	if (tep_parse_format(tep, &ev, text, len, system) != TEP_ERRNO__SUCCESS || !ev) {
		mm_set_err(err, errlen, "cannot parse the format of %s:%s", system, name);
		free(text);
		return -EINVAL;
	}
	*ret_ev = ev;
	*ret_id = ev->id;
	if (ret_format)
		*ret_format = text;
	else
		free(text);
	return 0;
}
