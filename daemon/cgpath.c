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

/* One line of /proc/PID/cgroup, "ID:CONTROLLERS:PATH" (the path itself may hold ':'). */
struct line {
	int id;		  /* the hierarchy id; -1 when not a number */
	bool memory;	  /* CONTROLLERS lists the memory controller (a v1 hierarchy) */
	bool unified;	  /* "0::PATH" */
	const char *path; /* [path, end) */
	const char *end;
};

/* Parses the line at *@pos and moves *@pos past it. Returns false at the end of @text; a line
 * that is not of that form comes back with id -1, neither memory nor unified. */
static bool next_line(const char **pos, struct line *ret)
{
	const char *line = *pos;
	if (!*line)
		return false;
	const char *nl = strchr(line, '\n');
	const char *end = nl ? nl : line + strlen(line);
	*pos = nl ? nl + 1 : end;
	*ret = (struct line){.id = -1};
	const char *c1 = memchr(line, ':', (size_t)(end - line));
	const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
	if (!c2 || c1 == line || c1 - line > 6)
		return true;
	int id = 0;
	for (const char *d = line; d < c1; d++) {
		if (*d < '0' || *d > '9')
			return true;
		id = id * 10 + (*d - '0');
	}
	*ret = (struct line){.id = id, .path = c2 + 1, .end = end};
	ret->memory = id > 0 && lists_memory(c1 + 1, c2);
	ret->unified = id == 0 && c2 == c1 + 1;
	return true;
}

/* Copies the path of @l into @ret, without the " (deleted)" the kernel appends to a unified
 * path whose cgroup was removed since (the process was accounted there all the same). */
static void copy_path(const struct line *l, char *ret, size_t size)
{
	size_t len = (size_t)(l->end - l->path), tail = sizeof(DELETED) - 1;
	if (l->unified && len > tail && !memcmp(l->end - tail, DELETED, tail))
		len -= tail;
	snprintf(ret, size, "%.*s", (int)len, l->path);
}

int mm_cgpath_hierarchy(const char *text)
{
	bool unified = false;
	struct line l;
	for (const char *pos = text; next_line(&pos, &l);) {
		if (l.memory)
			return l.id;
		unified |= l.unified;
	}
	return unified ? 0 : -ENODATA;
}

int mm_cgpath_parse(const char *text, bool exiting, char *ret, size_t size)
{
	struct line l, unified = {.unified = false};
	bool memory_v1 = false;
	for (const char *pos = text; !memory_v1 && next_line(&pos, &l);) {
		memory_v1 = l.memory;
		if (l.unified)
			unified = l;
	}
	/* Memory on a v1 hierarchy: its path is the answer (hidden while exiting), or nothing. */
	const struct line *from = memory_v1	    ? (exiting ? NULL : &l)
				  : unified.unified ? &unified
						    : NULL;
	if (!from) {
		if (size)
			ret[0] = '\0';
		return -ENODATA;
	}
	copy_path(from, ret, size);
	return 0;
}
