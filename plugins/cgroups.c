/*
 * cgroups: keeps each process's unit where the kernel accounts it when the process moves.
 *
 * The host reads a process's cgroup from /proc when it first sees it and again at exec
 * (daemon/proctable.h), ~0.1 s after the fact. A process that joins another cgroup between fork
 * and exec (systemd, container runtimes and job launchers start processes so) and exits before
 * its exec record is read cannot be read any more, and one that is moved without exec is not read
 * again: both stayed in their first cgroup. The kernel says every move as it happens:
 * cgroup:cgroup_attach_task fires once per task moved, with the hierarchy (dst_root), the task
 * (pid: its thread id) and the cgroup's path (dst_path, from the hierarchy's root, as
 * /proc/PID/cgroup shows it in the root cgroup namespace). Its records come in time order with
 * the FORK and COMM records, so each move lands between the process's fork and its exec; the host
 * takes it when the task is a process it knows and the hierarchy the one whose cgroup it counts
 * processes in (mm_host_proc_moved; daemon/cgpath.h says which).
 *
 * Cost: moves are rare (a service start, a container start, a login); writing to cgroup.procs
 * takes the cgroup mutexes anyway. No per-process counters of its own; it runs on the perf
 * rings with every source (the BPF source reads the same task records), small ones (rare), and
 * needs no kernel symbols (no_symbols): on the defaults the daemon's resident memory after start
 * was 12.5-15.8 MiB without it and 13.5-15.5 MiB with it (3 alternating starts each, 2 CPUs);
 * before, with rings of the configured size (1 MiB per CPU) and the symbol table kept for it,
 * 5 MiB more.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugin.h"
#include "snapshot.h"

struct state {
	const struct tep_format_field *f[3]; /* dst_root, pid, dst_path */
	int g_bad_field;
};

static int init(struct mm_host *h, void **ret_state)
{
	struct state *st = calloc(1, sizeof(*st));
	if (!st)
		return mm_host_fail(h, "out of memory");
	static const char *const names[] = {"dst_root", "pid", "dst_path", NULL};
	if (!mm_host_fields(h, "cgroup", "cgroup_attach_task", names, st->f)) {
		free(st);
		return mm_host_fail(h, "cgroup:cgroup_attach_task lacks dst_root, pid or dst_path");
	}
	st->g_bad_field =
		mm_host_global(h, "cgroups_events", "bad_field",
			       "cgroups collector: moves whose record could not be decoded");
	*ret_state = st;
	return 0;
}

/* The string of the __data_loc field whose value is @loc (offset in the low 16 bits, length with
 * its NUL in the high 16) in @s's record, copied into @ret; false when it lies outside the record
 * or is empty. */
static bool data_loc_str(const struct mm_sample *s, uint64_t loc, char *ret, size_t size)
{
	uint32_t off = (uint32_t)loc & 0xffff, len = ((uint32_t)loc >> 16) & 0xffff;
	if (!len || off + len > s->raw_size)
		return false;
	const char *str = (const char *)s->raw + off;
	size_t n = strnlen(str, len);
	if (!n || n >= size)
		return false; /* a path longer than a unit's is not taken cut */
	memcpy(ret, str, n);
	ret[n] = '\0';
	return true;
}

static void on_attach(void *state, struct mm_host *h, const struct mm_sample *s)
{
	struct state *st = state;
	uint64_t root, pid, loc;
	char path[MM_CGROUP_LEN];
	if (!mm_field_read_counted(h, st->g_bad_field, st->f[0], s, &root) ||
	    !mm_field_read_counted(h, st->g_bad_field, st->f[1], s, &pid) ||
	    !mm_field_read_counted(h, st->g_bad_field, st->f[2], s, &loc))
		return;
	if (!data_loc_str(s, loc, path, sizeof(path))) {
		mm_host_global_add(h, st->g_bad_field, 1);
		return;
	}
	mm_host_proc_moved(h, (uint32_t)pid, (int)(int32_t)root, path);
}

static void free_state(void *state)
{
	free(state);
}

static const struct mm_tp_req tracepoints[] = {
	{.system = "cgroup", .name = "cgroup_attach_task", .handler = on_attach, .rare = true},
	{0},
};

const struct mm_plugin mm_plugin_cgroups = {
	.name = "cgroups",
	.description = "follows processes that move to another cgroup (cgroup:cgroup_attach_task), "
		       "so each is counted in the unit the kernel accounts it to",
	.by_default = true,
	.usage = "each process's unit follows its moves\n"
		 "(cgroup:cgroup_attach_task, rare)",
	.tracepoints = tracepoints,
	.no_symbols = true,
	.init = init,
	.free = free_state,
};
