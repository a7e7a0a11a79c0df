/*
 * JSON bodies of /api/v1/status, /api/v1/processes and /api/v1/locks (see api.h). Pure code.
 *
 * The per-process counters are written by walking mm_proc_fields[], so the keys under "window" and
 * "total" are exactly the column names of the process_stats view and a new counter shows up here
 * without touching this file. Times are unix seconds with millisecond decimals, printed from the
 * integer milliseconds (no rounding through double); strings go through mm_buf_json_str, which
 * escapes control characters and invalid UTF-8 (a comm is 16 arbitrary bytes), so the output is
 * always valid JSON. Text fields that may be empty (an event's error, a collector's reason) are
 * always strings, "" when there is nothing to say, so clients need not test for null.
 */
#include "api.h"

#include <inttypes.h>
#include <stddef.h>

#include "locktable.h"

/* Unix milliseconds as seconds with three decimals. */
static void put_ms(struct mm_buf *out, uint64_t ms)
{
	mm_buf_printf(out, "%" PRIu64 ".%03" PRIu64, ms / 1000, ms % 1000);
}

static void put_key_ms(struct mm_buf *out, const char *key, uint64_t ms)
{
	mm_buf_json_key(out, key);
	put_ms(out, ms);
}

static void put_key_u64(struct mm_buf *out, const char *key, uint64_t v)
{
	mm_buf_json_key(out, key);
	mm_buf_printf(out, "%" PRIu64, v);
}

static void put_key_str(struct mm_buf *out, const char *key, const char *s)
{
	mm_buf_json_key(out, key);
	mm_buf_json_str(out, s);
}

static void put_key_bool(struct mm_buf *out, const char *key, bool v)
{
	mm_buf_json_key(out, key);
	mm_buf_puts(out, v ? "true" : "false");
}

/* {"faults":N,...}: every field of mm_proc_fields[], in table order. */
static void put_stats(struct mm_buf *out, const struct mm_proc_stats *st)
{
	mm_buf_puts(out, "{");
	for (size_t i = 0; i < mm_proc_nfields; i++) {
		if (i)
			mm_buf_puts(out, ",");
		put_key_u64(out, mm_proc_fields[i].name, mm_field_get(st, &mm_proc_fields[i]));
	}
	/* Fault latency quantiles (BPF source; 0 without it): the upper bound of the log2 bucket.
	 */
	static const struct {
		const char *name;
		size_t offset;
		double q;
	} lat[] = {
		{"fault_ns_vma_p50", offsetof(struct mm_proc_stats, fault_ns_vma_hist), 0.50},
		{"fault_ns_vma_p99", offsetof(struct mm_proc_stats, fault_ns_vma_hist), 0.99},
		{"fault_ns_mmap_p50", offsetof(struct mm_proc_stats, fault_ns_mmap_hist), 0.50},
		{"fault_ns_mmap_p99", offsetof(struct mm_proc_stats, fault_ns_mmap_hist), 0.99},
	};
	for (size_t i = 0; i < sizeof(lat) / sizeof(lat[0]); i++) {
		const struct mm_hist *hh = (const void *)((const char *)st + lat[i].offset);
		mm_buf_puts(out, ",");
		put_key_u64(out, lat[i].name, mm_hist_quantile_ns(hh, lat[i].q));
	}
	mm_buf_puts(out, "}");
}

static void put_window_total(struct mm_buf *out, const struct mm_proc_stats *window,
			     const struct mm_proc_stats *total)
{
	mm_buf_json_key(out, "window");
	put_stats(out, window);
	mm_buf_puts(out, ",");
	mm_buf_json_key(out, "total");
	put_stats(out, total);
}

void mm_api_status(const struct mm_snapshot *s, struct mm_buf *out)
{
	mm_buf_puts(out, "{");
	put_key_str(out, "version", s->version);
	mm_buf_puts(out, ",");
	put_key_str(out, "kernel", s->kernel);
	mm_buf_puts(out, ",");
	put_key_ms(out, "started", s->started_ms);
	mm_buf_puts(out, ",");
	put_key_ms(out, "taken", s->taken_ms);
	mm_buf_puts(out, ",");
	put_key_ms(out, "uptime_seconds",
		   s->taken_ms > s->started_ms ? s->taken_ms - s->started_ms : 0);
	mm_buf_puts(out, ",");
	put_key_u64(out, "interval_seconds", s->interval_s);
	mm_buf_puts(out, ",");
	put_key_ms(out, "window_start", s->window_start_ms);

	mm_buf_puts(out, ",");
	mm_buf_json_key(out, "collectors");
	mm_buf_puts(out, "[");
	for (size_t i = 0; i < s->ncollectors; i++) {
		const struct mm_snap_collector *c = &s->collectors[i];
		mm_buf_puts(out, i ? ",{" : "{");
		put_key_str(out, "name", c->name);
		mm_buf_puts(out, ",");
		put_key_str(out, "state", mm_collector_state_name(c->state));
		mm_buf_puts(out, ",");
		put_key_str(out, "reason", c->reason);
		mm_buf_puts(out, ",");
		put_key_str(out, "source", c->source);
		mm_buf_puts(out, ",");
		put_key_str(out, "source_note", c->source_note);
		mm_buf_puts(out, "}");
	}
	mm_buf_puts(out, "],");

	mm_buf_json_key(out, "split");
	mm_buf_puts(out, "{");
	put_key_str(out, "mode", s->split.mode);
	mm_buf_puts(out, ",");
	put_key_u64(out, "duty_permille", s->split.duty_pm);
	mm_buf_puts(out, ",");
	put_key_u64(out, "burst_ms", s->split.burst_ms);
	mm_buf_puts(out, ",");
	put_key_u64(out, "burst_period_ms", s->split.slot_ms);
	mm_buf_puts(out, ",");
	put_key_str(out, "source", s->split.source);
	mm_buf_puts(out, ",");
	put_key_str(out, "why", s->split.why);
	mm_buf_puts(out, "},");

	mm_buf_json_key(out, "events");
	mm_buf_puts(out, "[");
	for (size_t i = 0; i < s->nevents; i++) {
		const struct mm_snap_event *e = &s->events[i];
		mm_buf_puts(out, i ? ",{" : "{");
		put_key_str(out, "name", e->name);
		mm_buf_puts(out, ",");
		put_key_bool(out, "open", e->open);
		mm_buf_puts(out, ",");
		put_key_str(out, "error", e->error);
		mm_buf_puts(out, ",");
		put_key_u64(out, "samples", e->samples);
		mm_buf_puts(out, ",");
		put_key_u64(out, "lost", e->lost);
		mm_buf_puts(out, ",");
		put_key_u64(out, "window_samples", e->window_samples);
		mm_buf_puts(out, ",");
		put_key_u64(out, "window_lost", e->window_lost);
		mm_buf_puts(out, "}");
	}
	mm_buf_puts(out, "],");

	mm_buf_json_key(out, "globals");
	mm_buf_puts(out, "[");
	for (size_t i = 0; i < s->nglobals; i++) {
		const struct mm_snap_global *g = &s->globals[i];
		mm_buf_puts(out, i ? ",{" : "{");
		put_key_str(out, "family", g->family);
		mm_buf_puts(out, ",");
		put_key_str(out, "name", g->name);
		mm_buf_puts(out, ",");
		put_key_u64(out, "window", g->window);
		mm_buf_puts(out, ",");
		put_key_u64(out, "total", g->total);
		mm_buf_puts(out, "}");
	}
	mm_buf_puts(out, "],");

	put_key_u64(out, "windows_stored", s->windows_stored);
	mm_buf_puts(out, ",");
	put_key_u64(out, "store_errors", s->store_errors);
	mm_buf_puts(out, ",");
	put_key_u64(out, "processes_tracked", s->procs_tracked);
	mm_buf_puts(out, "}");
}

void mm_api_processes(const struct mm_snapshot *s, struct mm_buf *out)
{
	mm_buf_puts(out, "{");
	put_key_ms(out, "window_start", s->window_start_ms);
	mm_buf_puts(out, ",");
	put_key_ms(out, "taken", s->taken_ms);
	mm_buf_puts(out, ",");
	mm_buf_json_key(out, "processes");
	mm_buf_puts(out, "[");
	for (size_t i = 0; i < s->nprocs; i++) {
		const struct mm_snap_proc *p = &s->procs[i];
		mm_buf_puts(out, i ? ",{" : "{");
		mm_buf_json_key(out, "pid");
		mm_buf_printf(out, "%" PRId32 ",", p->pid);
		put_key_str(out, "comm", p->comm);
		mm_buf_puts(out, ",");
		put_key_ms(out, "start_time", p->start_ms);
		mm_buf_puts(out, ",");
		put_key_str(out, "cgroup", p->cgroup);
		mm_buf_puts(out, ",");
		put_key_bool(out, "exited", p->exited);
		mm_buf_puts(out, ",");
		put_window_total(out, &p->window, &p->total);
		mm_buf_puts(out, "}");
	}
	mm_buf_puts(out, "],");
	mm_buf_json_key(out, "all");
	mm_buf_puts(out, "{");
	put_window_total(out, &s->all_window, &s->all_total);
	mm_buf_puts(out, "}}");
}

void mm_api_locks(const struct mm_snap_lock *rows, size_t n, struct mm_buf *out)
{
	mm_buf_puts(out, "[");
	for (size_t i = 0; i < n; i++) {
		const struct mm_snap_lock *l = &rows[i];
		mm_buf_puts(out, i ? ",{" : "{");
		mm_buf_json_key(out, "pid");
		mm_buf_printf(out, "%" PRId32 ",", l->pid);
		put_key_ms(out, "start_time", l->start_ms);
		mm_buf_puts(out, ",");
		put_key_str(out, "comm", l->comm);
		mm_buf_puts(out, ",");
		put_key_str(out, "type", l->type);
		mm_buf_puts(out, ",");
		put_key_str(out, "caller", l->caller);
		mm_buf_puts(out, ",");
		put_key_str(out, "lock", l->lock);
		mm_buf_puts(out, ",");
		mm_buf_json_key(out, "lock_pid");
		if (l->lock_pid >= 0)
			mm_buf_printf(out, "%" PRId32 ",", l->lock_pid);
		else
			mm_buf_puts(out, "null,");
		put_key_u64(out, "contended", l->contended);
		mm_buf_puts(out, ",");
		put_key_u64(out, "total_wait_ns", l->wait_ns);
		mm_buf_puts(out, ",");
		put_key_u64(out, "max_wait_ns", l->max_ns);
		mm_buf_puts(out, ",");
		put_key_u64(out, "min_wait_ns", l->min_ns);
		mm_buf_puts(out, ",");
		put_key_u64(out, "avg_wait_ns", l->contended ? l->wait_ns / l->contended : 0);
		mm_buf_puts(out, ",");
		put_key_u64(out, "p50_wait_ns", mm_lock_row_quantile(l, 0.50));
		mm_buf_puts(out, ",");
		put_key_u64(out, "p90_wait_ns", mm_lock_row_quantile(l, 0.90));
		mm_buf_puts(out, ",");
		put_key_u64(out, "p99_wait_ns", mm_lock_row_quantile(l, 0.99));
		mm_buf_puts(out, "}");
	}
	mm_buf_puts(out, "]");
}
