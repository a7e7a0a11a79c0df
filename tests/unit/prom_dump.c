/*
 * Prints the /metrics exposition of a realistic synthetic snapshot on stdout: several processes
 * (one exited, one sharing its pid with the exited one, one with quote, backslash, newline and
 * invalid UTF-8 in its name), every counter non-zero, a filled wait histogram, globals of two
 * families, events with losses and one that failed to open, a failed collector, and cgroups (one
 * with its own series, the others in "other").
 * promtool_check.sh pipes it to `promtool check metrics`, so the format is checked by Prometheus's
 * own parser and linter rather than by our reading of the specification.
 * Usage: prom_dump [bursts]: with "bursts", the defaults' fault split in bursts (estimated outcome
 * family) and fault latency sampled (its histogram family).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cgtable.h"
#include "plugin.h"
#include "prom.h"
#include "snaps.h"

static void fill(struct mm_proc_stats *st, uint64_t scale)
{
	for (size_t i = 0; i < mm_proc_nfields; i++) {
		uint64_t *v = (uint64_t *)((char *)st + mm_proc_fields[i].offset);
		*v = scale * (i + 1) * (mm_proc_fields[i].kind == MM_FIELD_NS ? 1234567 : 1);
	}
	for (uint64_t w = 1; w < (1ull << 36); w = w * 3 + 1)
		for (uint64_t k = 0; k < scale; k++)
			mm_hist_add(&st->mmap_lock_wait_hist, w);
}

static const char *const comms[] = {"postgres",	   "java",     "bad\"na\\me\n\xff",
				    "kworker/0:1", "postgres", "sh"};
#define NPROCS (sizeof(comms) / sizeof(comms[0]))

/* The processes: the second exited and its pid was reused by the fifth; the third's name has a
 * quote, a backslash, a newline and invalid UTF-8; the fourth's cgroup is unknown. */
static void fill_procs(struct mm_snapshot *s, bool bursts)
{
	for (size_t i = 0; i < NPROCS; i++) {
		struct mm_snap_proc *p = &s->procs[i];
		p->pid = (int32_t)(1000 + i);
		p->start_ms = 1699999000000 + i;
		snprintf(p->comm, sizeof(p->comm), "%s", comms[i]);
		p->cgroup = mm_snapshot_name(s, i == 3	? ""
						: i % 2 ? "/user.slice/user-0.slice/user@0.service"
							: "/system.slice/test.service");
		static struct mm_proc_stats win, tot;
		memset(&win, 0, sizeof(win));
		memset(&tot, 0, sizeof(tot));
		fill(&win, NPROCS - i);
		fill(&tot, 10 * (NPROCS - i));
		for (uint64_t ns = 700; bursts && ns < 50000000; ns = ns * 2 + 1) {
			mm_hist_add(&tot.fault_ns_vma_hist, ns);
			mm_hist_add(&tot.fault_ns_mmap_hist, 3 * ns);
		}
		snap_proc_set(p, &win, &tot);
		mm_stats_add(&s->all_window, &win);
		mm_stats_add(&s->all_total, &tot);
	}
	s->procs[1].exited = true;
	s->procs[4].pid = s->procs[1].pid; /* pid reused after the exit */
}

/* Globals of two families (one without help) and one whose family collides with a built-in one. */
static void fill_globals(struct mm_snapshot *s)
{
	static const char *const globals[][3] = {
		{"vmstat", "pgfault", "Deltas of /proc/vmstat counters."},
		{"vmstat", "vma_lock_abort", ""},
		{"unmatched_events", "mmap_lock_released", ""},
		{"events", "clash", "A family that collides with a built-in one."},
	};
	for (size_t i = 0; i < s->nglobals; i++) {
		snprintf(s->globals[i].family, sizeof(s->globals[i].family), "%s", globals[i][0]);
		snprintf(s->globals[i].name, sizeof(s->globals[i].name), "%s", globals[i][1]);
		snprintf(s->globals[i].help, sizeof(s->globals[i].help), "%s", globals[i][2]);
		s->globals[i].window = i;
		s->globals[i].total = 100 * i + 7;
	}
}

/* Events with samples, one with losses and one that failed to open. */
static void fill_events(struct mm_snapshot *s)
{
	static const char *const events[] = {
		"exceptions:page_fault_user", "mmap_lock:mmap_lock_start_locking",
		"mmap_lock:mmap_lock_acquire_returned", "lock:contention_begin"};
	for (size_t i = 0; i < s->nevents; i++) {
		struct mm_snap_event *e = &s->events[i];
		snprintf(e->name, sizeof(e->name), "%s", events[i]);
		e->open = i != 3;
		if (!e->open)
			strcpy(e->error, "Permission denied");
		e->samples = e->open ? 1000000 * (i + 1) : 0;
		e->lost = i == 1 ? 42 : 0;
	}
}

/* Every collector of the build runs but vmstat, which failed. */
static void fill_collectors(struct mm_snapshot *s)
{
	for (size_t i = 0; i < s->ncollectors; i++) {
		struct mm_snap_collector *c = &s->collectors[i];
		snprintf(c->name, sizeof(c->name), "%s", mm_plugins[i]->name);
		if (!strcmp(c->name, "vmstat")) {
			c->state = MM_COLLECTOR_FAILED;
			strcpy(c->reason, "/proc/vmstat: no vma_lock_* counters");
		}
	}
}

/* Per-unit series: the busiest cgroup gets a slot at the window's close, the rest (and the
 * process whose cgroup is unknown) are "other". */
static int fill_units(struct mm_snapshot *s)
{
	struct mm_cgtable *cg = mm_cgtable_new(1);
	s->window_end_ms = s->taken_ms;
	if (!cg || mm_cgtable_close(cg, s) < 0 || mm_cgtable_fill(cg, s) < 0)
		return -1;
	mm_cgtable_free(cg);
	return 0;
}

int main(int argc, char **argv)
{
	bool bursts = argc > 1 && !strcmp(argv[1], "bursts");
	size_t ncollectors = 0;
	while (mm_plugins[ncollectors])
		ncollectors++;
	struct mm_snapshot *s = mm_snapshot_new(NPROCS, 4, 4, ncollectors);
	struct mm_buf out = MM_BUF_INIT;

	if (!s)
		return 1;
	snap_origin(s, "0.1.0", "6.12.0-test", 1700000000000, 1700000123456);
	s->window_start_ms = 1700000120000;
	if (bursts) {
		strcpy(s->split.mode, "bursts");
		strcpy(s->latency.mode, "sampled");
	}
	s->interval_s = 10;
	fill_procs(s, bursts);
	fill_globals(s);
	fill_events(s);
	fill_collectors(s);
	if (fill_units(s) < 0)
		return 1;

	s->windows_stored = 12;
	s->store_errors = 1;
	s->procs_tracked = NPROCS;

	mm_prom_format(s, 20, &out);
	mm_snapshot_unref(s);
	if (mm_buf_failed(&out)) {
		fprintf(stderr, "prom_dump: out of memory\n");
		return 1;
	}
	fwrite(out.data, 1, out.len, stdout);
	mm_buf_free(&out);
	return 0;
}
