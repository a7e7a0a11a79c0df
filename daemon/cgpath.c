/*
 * Picks the accounting cgroup out of /proc/PID/cgroup (see cgpath.h for which one and why). Pure
 * text work, so the unit tests give it v1, v2 and hybrid texts without such a host.
 */
#include "cgpath.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define DELETED " (deleted)"

/* Whether the controller list [@ctl, @end) ("cpu,cpuacct", "memory", "name=systemd") names the
 * memory controller. */
static bool lists_memory(const char *ctl, const char *end)
{
	while (ctl < end) {
		const char *comma = memchr(ctl, ',', (size_t)(end - ctl));
		const char *stop = comma ? comma : end;
		if (stop - ctl == 6 && !memcmp(ctl, "memory", 6))
			return true;
		ctl = stop + 1;
	}
	return false;
}

/* Copies the path [@path, @end) into @ret, without the " (deleted)" the kernel appends to a
 * unified path whose cgroup was removed since (the process was accounted there all the same). */
static void copy_path(const char *path, const char *end, bool unified, char *ret, size_t size)
{
	size_t len = (size_t)(end - path), tail = sizeof(DELETED) - 1;
	if (unified && len > tail && !memcmp(end - tail, DELETED, tail))
		len -= tail;
	snprintf(ret, size, "%.*s", (int)len, path);
}

int mm_cgpath_parse(const char *text, bool exiting, char *ret, size_t size)
{
	const char *unified = NULL, *unified_end = NULL;
	bool memory_v1 = false;
	for (const char *line = text; *line && !memory_v1;) {
		const char *nl = strchr(line, '\n');
		const char *end = nl ? nl : line + strlen(line);
		/* "ID:CONTROLLERS:PATH"; the path itself may hold ':'. */
		const char *c1 = memchr(line, ':', (size_t)(end - line));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
		if (c2 && lists_memory(c1 + 1, c2)) {
			/* Memory is on a v1 hierarchy: its path is the answer, or nothing is. */
			memory_v1 = true;
			if (!exiting) {
				copy_path(c2 + 1, end, false, ret, size);
				return 0;
			}
		} else if (c2 && c1 == line + 1 && line[0] == '0' && c2 == c1 + 1) {
			unified = c2 + 1;
			unified_end = end;
		}
		line = nl ? nl + 1 : end;
	}
	if (unified && !memory_v1) {
		copy_path(unified, unified_end, true, ret, size);
		return 0;
	}
	if (size)
		ret[0] = '\0';
	return -ENODATA;
}
