/*
 * JSON bodies of /api/v1/status, /api/v1/processes and /api/v1/locks (see api.h). Pure code.
 * The status carries every process's sums ("all", as /api/v1/processes has them) so that a client
 * polling for a header need not fetch a row per process.
 *
 * The per-process counters are written by walking mm_proc_fields[], so the keys under "window" and
 * "total" are exactly the column names of the process_stats view and a new counter shows up here
 * without touching this file. Times are unix seconds with millisecond decimals, printed from the
 * integer milliseconds (no rounding through double); strings go through mm_buf_json_str, which
 * escapes control characters and invalid UTF-8 (a comm is 16 arbitrary bytes), so the output is
 * always valid JSON. Text fields that may be empty (an event's error, a collector's reason) are
 * always strings, "" when there is nothing to say, so clients need not test for null. The counters
 * of a collector the snapshot lists as not running, and the fault latency quantiles while fault
 * latency is off, are left out: unknown is not 0.
 */
#include "api.h"

#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include "locktable.h"

/* One JSON object or array being written: member() writes the comma before every member but the
 * first, and the key in an object (NULL in an array), so no caller counts commas. */
struct json {
	struct mm_buf *out;
	bool more;
};

static struct json json_open(struct mm_buf *out, const char *bracket)
{
	mm_buf_puts(out, bracket);
	return (struct json){.out = out};
}

static struct mm_buf *member(struct json *j, const char *key)
{
	if (j->more)
		mm_buf_puts(j->out, ",");
	j->more = true;
	if (key)
		mm_buf_json_key(j->out, key);
	return j->out;
}

/* Unix milliseconds as seconds with three decimals. */
static void put_ms(struct json *j, const char *key, uint64_t ms)
{
	mm_buf_printf(member(j, key), "%" PRIu64 ".%03" PRIu64, ms / 1000, ms % 1000);
}

static void put_u64(struct json *j, const char *key, uint64_t v)
{
	mm_buf_printf(member(j, key), "%" PRIu64, v);
}

static void put_i32(struct json *j, const char *key, int32_t v)
{
	mm_buf_printf(member(j, key), "%" PRId32, v);
}

static void put_str(struct json *j, const char *key, const char *s)
{
	mm_buf_json_str(member(j, key), s);
}

static void put_bool(struct json *j, const char *key, bool v)
{
	mm_buf_puts(member(j, key), v ? "true" : "false");
}

/* The p50 and p99 rows of histogram @member, keys NAME_p50 and NAME_p99. */
#define LATENCY(name, member)                                                                      \
	{name "_p50", offsetof(struct mm_proc_hists, member), 0.50},                               \
	{                                                                                          \
		name "_p99", offsetof(struct mm_proc_hists, member), 0.99                          \
	}

/* Whether the snapshot lists collector @name as not running (disabled or failed): its fields are
 * then unknown, not 0, and left out. A collector the snapshot does not list keeps its fields. */
static bool collector_off(const struct mm_snapshot *s, const char *name)
{
	for (size_t i = 0; i < s->ncollectors; i++)
		if (!strcmp(s->collectors[i].name, name))
			return s->collectors[i].state != MM_COLLECTOR_RUNNING;
	return false;
}

/* The outcome counts of the fault split: where it runs in bursts (the default) they are estimates
 * of the windows a burst caught (split_estimated); of a process (or window) no burst caught they
 * are not known, and are null rather than 0. */
static bool not_sampled_outcome(const struct mm_snapshot *s, const struct mm_proc_counts *st,
				const struct mm_field *f)
{
	return !strcmp(s->split.mode, "bursts") && !st->split_estimated && mm_field_is_outcome(f);
}

/* "key":{"faults":N,...}: the fields of mm_proc_fields[] whose collector runs, in table order
 * (outcomes no burst sampled as null), then the fault latency quantiles unless fault latency is
 * off. */
static void put_stats(struct json *parent, const char *key, const struct mm_snapshot *s,
		      const struct mm_proc_counts *st, const struct mm_proc_hists *hists)
{
	struct json j = json_open(member(parent, key), "{");

	for (size_t i = 0; i < mm_proc_nfields; i++) {
		const char *name = mm_proc_fields[i].name;
		if (collector_off(s, mm_proc_fields[i].collector))
			continue;
		if (not_sampled_outcome(s, st, &mm_proc_fields[i]))
			mm_buf_puts(member(&j, name), "null");
		else
			put_u64(&j, name, mm_field_get(st, &mm_proc_fields[i]));
	}
	if (!strcmp(s->latency.mode, "off")) {
		mm_buf_puts(j.out, "}");
		return;
	}
	/* Fault latency quantiles (BPF source; 0 without it): the upper bound of the log2 bucket.
	 */
	static const struct {
		const char *name;
		size_t offset;
		double q;
	} lat[] = {
		LATENCY("fault_ns_vma", fault_ns_vma_hist),
		LATENCY("fault_ns_mmap", fault_ns_mmap_hist),
		/* and by outcome (fault latency on the BPF source) */
		LATENCY("fault_ns_outcome_vma", fault_ns_outcome_hist[0]),
		LATENCY("fault_ns_outcome_vma_retry", fault_ns_outcome_hist[1]),
		LATENCY("fault_ns_outcome_mmap_retry", fault_ns_outcome_hist[2]),
		LATENCY("fault_ns_outcome_mmap_abort", fault_ns_outcome_hist[3]),
		LATENCY("fault_ns_outcome_mmap_unknown", fault_ns_outcome_hist[4]),
	};
	for (size_t i = 0; i < sizeof(lat) / sizeof(lat[0]); i++) {
		const struct mm_hist *hh = (const void *)((const char *)hists + lat[i].offset);
		put_u64(&j, lat[i].name, mm_hist_quantile_ns(hh, lat[i].q));
	}
	mm_buf_puts(j.out, "}");
}

static void put_window_total(struct json *j, const struct mm_snapshot *s,
			     const struct mm_proc_counts *window,
			     const struct mm_proc_hists *window_h,
			     const struct mm_proc_counts *total,
			     const struct mm_proc_hists *total_h)
{
	put_stats(j, "window", s, window, window_h);
	put_stats(j, "total", s, total, total_h);
}

/* An array of objects at @out, one per element of @base (@n of @size bytes): @put writes the
 * members of one. */
static void put_objects(struct mm_buf *out, const void *base, size_t n, size_t size,
			void (*put)(struct json *o, const void *elem))
{
	struct json a = json_open(out, "[");

	for (size_t i = 0; i < n; i++) {
		struct json o = json_open(member(&a, NULL), "{");

		put(&o, (const char *)base + i * size);
		mm_buf_puts(out, "}");
	}
	mm_buf_puts(out, "]");
}

static void put_collector(struct json *o, const void *elem)
{
	const struct mm_snap_collector *c = elem;

	put_str(o, "name", c->name);
	put_str(o, "state", mm_collector_state_name(c->state));
	put_str(o, "reason", c->reason);
	put_str(o, "source", c->source);
	put_str(o, "source_note", c->source_note);
}

static void put_event(struct json *o, const void *elem)
{
	const struct mm_snap_event *e = elem;

	put_str(o, "name", e->name);
	put_bool(o, "open", e->open);
	put_str(o, "error", e->error);
	put_u64(o, "samples", e->samples);
	put_u64(o, "lost", e->lost);
	put_u64(o, "window_samples", e->window_samples);
	put_u64(o, "window_lost", e->window_lost);
}

static void put_global(struct json *o, const void *elem)
{
	const struct mm_snap_global *g = elem;

	put_str(o, "family", g->family);
	put_str(o, "name", g->name);
	put_u64(o, "window", g->window);
	put_u64(o, "total", g->total);
}

void mm_api_status(const struct mm_snapshot *s, struct mm_buf *out)
{
	struct json o = json_open(out, "{");

	put_str(&o, "version", s->version);
	put_str(&o, "kernel", s->kernel);
	put_ms(&o, "started", s->started_ms);
	put_ms(&o, "taken", s->taken_ms);
	put_ms(&o, "uptime_seconds", s->taken_ms > s->started_ms ? s->taken_ms - s->started_ms : 0);
	put_u64(&o, "interval_seconds", s->interval_s);
	put_ms(&o, "window_start", s->window_start_ms);
	put_objects(member(&o, "collectors"), s->collectors, s->ncollectors, sizeof(*s->collectors),
		    put_collector);
	struct json split = json_open(member(&o, "split"), "{");
	put_str(&split, "mode", s->split.mode);
	put_u64(&split, "duty_permille", s->split.duty_pm);
	put_u64(&split, "burst_ms", s->split.burst_ms);
	put_u64(&split, "burst_period_ms", s->split.slot_ms);
	put_str(&split, "source", s->split.source);
	put_str(&split, "why", s->split.why);
	mm_buf_puts(out, "}");
	struct json lat = json_open(member(&o, "fault_latency"), "{");
	put_str(&lat, "mode", s->latency.mode);
	put_str(&lat, "why", s->latency.why);
	mm_buf_puts(out, "}");
	put_objects(member(&o, "events"), s->events, s->nevents, sizeof(*s->events), put_event);
	put_objects(member(&o, "globals"), s->globals, s->nglobals, sizeof(*s->globals),
		    put_global);
	put_u64(&o, "windows_stored", s->windows_stored);
	put_u64(&o, "store_errors", s->store_errors);
	put_u64(&o, "windows_lost", s->windows_lost);
	put_u64(&o, "processes_tracked", s->procs_tracked);
	/* Every process's sums, the open window's and since start: what a poll of the page's
	 * header shows, without /api/v1/processes's row per process (100 KB-1.75 MB). */
	struct json all = json_open(member(&o, "all"), "{");
	put_window_total(&all, s, mm_stats_counts_c(&s->all_window),
			 mm_stats_hists_c(&s->all_window), mm_stats_counts_c(&s->all_total),
			 mm_stats_hists_c(&s->all_total));
	mm_buf_puts(out, "}}");
}

static void put_proc(struct json *o, const struct mm_snapshot *s, const struct mm_snap_proc *p)
{

	put_i32(o, "pid", p->pid);
	put_str(o, "comm", p->comm);
	put_ms(o, "start_time", p->start_ms);
	put_str(o, "cgroup", p->cgroup);
	put_bool(o, "exited", p->exited);
	static const struct mm_proc_hists none;
	struct mm_proc_hists window, total;
	put_window_total(o, s, p->window,
			 p->hists[0] ? mm_snap_proc_hists(p, false, &window) : &none, p->total,
			 p->hists[1] ? mm_snap_proc_hists(p, true, &total) : &none);
}

void mm_api_processes(const struct mm_snapshot *s, struct mm_buf *out)
{
	mm_api_processes_of(s, -1, 0, out);
}

void mm_api_processes_of(const struct mm_snapshot *s, int32_t pid, uint64_t start_ms,
			 struct mm_buf *out)
{
	struct json o = json_open(out, "{");

	put_ms(&o, "window_start", s->window_start_ms);
	put_ms(&o, "taken", s->taken_ms);
	/* Not put_objects(): a process's counters depend on the snapshot's collectors. */
	struct json a = json_open(member(&o, "processes"), "[");
	for (size_t i = 0; i < s->nprocs; i++) {
		if (pid >= 0 &&
		    (s->procs[i].pid != pid || (start_ms && s->procs[i].start_ms != start_ms)))
			continue;
		struct json p = json_open(member(&a, NULL), "{");
		put_proc(&p, s, &s->procs[i]);
		mm_buf_puts(out, "}");
	}
	mm_buf_puts(out, "]");
	struct json all = json_open(member(&o, "all"), "{");
	put_window_total(&all, s, mm_stats_counts_c(&s->all_window),
			 mm_stats_hists_c(&s->all_window), mm_stats_counts_c(&s->all_total),
			 mm_stats_hists_c(&s->all_total));
	mm_buf_puts(out, "}}");
}

static void put_pid_or_null(struct json *o, const char *key, int32_t pid)
{
	if (pid >= 0)
		put_i32(o, key, pid);
	else
		mm_buf_puts(member(o, key), "null");
}

static void put_lock(struct json *o, const void *elem)
{
	const struct mm_snap_lock *l = elem;

	put_i32(o, "pid", l->pid);
	put_ms(o, "start_time", l->start_ms);
	put_str(o, "comm", l->comm);
	put_str(o, "type", l->type);
	put_str(o, "caller", l->caller);
	put_str(o, "lock", l->lock);
	put_pid_or_null(o, "lock_pid", l->lock_pid); /* the mm's owner; none for other locks */
	put_u64(o, "contended", l->contended);
	put_u64(o, "total_wait_ns", l->wait_ns);
	put_u64(o, "max_wait_ns", l->max_ns);
	put_u64(o, "min_wait_ns", l->min_ns);
	put_u64(o, "avg_wait_ns", l->contended ? l->wait_ns / l->contended : 0);
	put_u64(o, "p50_wait_ns", mm_lock_row_quantile(l, 0.50));
	put_u64(o, "p90_wait_ns", mm_lock_row_quantile(l, 0.90));
	put_u64(o, "p99_wait_ns", mm_lock_row_quantile(l, 0.99));
	put_str(o, "holder_mode", l->holder_mode); /* "" for other locks */
	put_pid_or_null(o, "holder_pid", l->holder_pid);
	put_pid_or_null(o, "holder_tid", l->holder_tid);
	put_str(o, "holder_comm", l->holder_comm);
	put_str(o, "holder_op", l->holder_op);
}

void mm_api_locks(const struct mm_snap_lock *rows, size_t n, struct mm_buf *out)
{
	put_objects(out, rows, n, sizeof(*rows), put_lock);
}
