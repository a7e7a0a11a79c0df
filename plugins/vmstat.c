/*
 * vmstat: system-wide deltas of /proc/vmstat counters that give exact fault totals for free:
 * pgfault, pgmajfault and, on kernels built with CONFIG_PER_VMA_LOCK_STATS, the vma_lock_*
 * counters (success, abort, retry, miss) that the per-process fault split is checked against.
 * Read once per tick; no tracepoints. Exported as mmlockd_vmstat_total{name="..."}.
 */
#include "vmstat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin.h"

#define MAX_COUNTERS 16

struct counter {
	char name[48];
	int global;
	uint64_t last;
};

struct state {
	struct counter c[MAX_COUNTERS];
	unsigned n;
	const char *path;
};

int mm_vmstat_wanted(const char *name)
{
	return !strcmp(name, "pgfault") || !strcmp(name, "pgmajfault") ||
	       !strncmp(name, "vma_lock_", 9);
}

int mm_vmstat_parse(const char *text, void (*fn)(void *ctx, const char *name, uint64_t value),
		    void *ctx)
{
	int n = 0;
	const char *p = text;
	while (*p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		char line[128], name[64];
		unsigned long long v;
		char extra;
		if (len < sizeof(line)) {
			memcpy(line, p, len);
			line[len] = '\0';
			if (sscanf(line, "%63s %llu %c", name, &v, &extra) == 2) {
				fn(ctx, name, v);
				n++;
			}
		}
		p += len + (eol ? 1 : 0);
	}
	return n;
}

static int read_vmstat(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t off = 0;
	for (;;) {
		ssize_t r = read(fd, buf + off, size - 1 - off);
		if (r < 0) {
			int e = errno;
			close(fd);
			return -e;
		}
		if (r == 0)
			break;
		off += (size_t)r;
		if (off >= size - 1)
			break;
	}
	close(fd);
	buf[off] = '\0';
	return 0;
}

struct ctx {
	struct state *st;
	struct mm_host *h;
	bool first;
};

static void on_counter(void *vctx, const char *name, uint64_t value)
{
	struct ctx *c = vctx;
	struct state *st = c->st;
	if (!mm_vmstat_wanted(name))
		return;
	for (unsigned i = 0; i < st->n; i++) {
		if (strcmp(st->c[i].name, name))
			continue;
		if (value >= st->c[i].last)
			mm_host_global_add(c->h, st->c[i].global, value - st->c[i].last);
		st->c[i].last = value;
		return;
	}
	if (!c->first || st->n >= MAX_COUNTERS)
		return;
	struct counter *k = &st->c[st->n];
	snprintf(k->name, sizeof(k->name), "%s", name);
	k->global = mm_host_global(c->h, "vmstat", name,
				   "Deltas of /proc/vmstat counters while mmlockd runs.");
	if (k->global < 0)
		return;
	k->last = value;
	st->n++;
}

static int sample_file(struct state *st, struct mm_host *h, bool first)
{
	char buf[16384];
	int r = read_vmstat(st->path, buf, sizeof(buf));
	if (r < 0)
		return r;
	struct ctx c = {st, h, first};
	mm_vmstat_parse(buf, on_counter, &c);
	return 0;
}

static int init(struct mm_host *h, void **ret_state)
{
	struct state *st = calloc(1, sizeof(*st));
	if (!st)
		return mm_host_fail(h, "out of memory");
	st->path = "/proc/vmstat";
	int r = sample_file(st, h, true);
	if (r < 0) {
		free(st);
		errno = -r;
		return mm_host_fail(h, "cannot read /proc/vmstat: %m");
	}
	bool vma = false;
	for (unsigned i = 0; i < st->n; i++)
		vma |= !strncmp(st->c[i].name, "vma_lock_", 9);
	if (!vma)
		mm_host_note(h,
			     "no vma_lock_* counters (kernel without CONFIG_PER_VMA_LOCK_STATS)");
	*ret_state = st;
	return 0;
}

static void tick(void *state, struct mm_host *h)
{
	struct state *st = state;
	int r = sample_file(st, h, false);
	if (r < 0) {
		errno = -r;
		mm_host_fail(h, "cannot read %s: %m", st->path);
	}
}

static void free_state(void *state)
{
	free(state);
}

const struct mm_plugin mm_plugin_vmstat = {
	.name = "vmstat",
	.description = "system-wide /proc/vmstat fault counters (pgfault, pgmajfault, vma_lock_*)",
	.by_default = true,
	.usage = "system-wide /proc/vmstat fault counters",
	.tracepoints = NULL,
	.init = init,
	.tick = tick,
	.free = free_state,
};
