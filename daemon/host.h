/*
 * The collector host: everything between raw perf records and snapshots. It owns the tracepoint
 * list (one "stream" per perf event), the enabled collectors, the process table, global counters
 * and the open window. The live daemon feeds it records from the rings (in time order, see
 * order.h); a replay feeds it records from a file. Nothing here touches perf, SQLite or HTTP.
 *
 * Single-threaded: every call comes from the collection thread.
 */
#ifndef MM_HOST_H
#define MM_HOST_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "proctable.h"
#include "snapshot.h"

struct mm_host;
struct tep_event;

/* Creates a host running the collectors that @cfg enables (every collector of mm_plugins[] is
 * listed in snapshots; the others as disabled). @lookup/@ctx identify processes (NULL: /proc).
 * @start_ms is the wall time the first window starts. */
struct mm_host *mm_host_new(const struct mm_config *cfg, mm_proc_lookup_fn lookup, void *ctx,
			    uint64_t start_ms);
void mm_host_free(struct mm_host *h); /* accepts NULL; frees collector states */

/* Checks that every name in cfg->collectors is a collector of this build. Returns 0, or -EINVAL
 * with "unknown collector X (known: ...)" in @err. */
int mm_host_check_collectors(const struct mm_config *cfg, char *err, size_t errlen);

/* Calls @fn for every tracepoint the enabled collectors ask for (each once; callchain true when
 * any asks for it; @filter the kernel-side filter every asker agrees on, else NULL). */
void mm_host_wanted(struct mm_host *h,
		    void (*fn)(void *ctx, const char *system, const char *name, bool callchain,
			       const char *filter),
		    void *ctx);

/* Registers stream for tracepoint system:name. @ev is its parsed format (owned by the caller's
 * tep handle, must outlive the host), @sample_type its perf sample_type. With @error non-NULL
 * the tracepoint could not be opened; it is listed with that reason. Returns the stream index. */
int mm_host_add_tp(struct mm_host *h, const char *system, const char *name, struct tep_event *ev,
		   uint64_t sample_type, const char *error);

/* Registers the stream carrying COMM/FORK/EXIT records (a dummy event with attr.task/comm and
 * sample_id_all). Returns the stream index. */
int mm_host_add_task_stream(struct mm_host *h, uint64_t sample_type, const char *error);

/* Says which source feeds collector @name (e.g. "perf", "bpf"; shown in status and /metrics)
 * and, in @note, why not BPF ("" when it is). A collector set to "bpf" is filled by that
 * source through mm_host_proc(): the host opens no tracepoint for it and calls none of its
 * hooks. Call before mm_host_wanted(). Unknown names are ignored. */
void mm_host_set_source(struct mm_host *h, const char *name, const char *source, const char *note);

/* Initialises every enabled collector whose required tracepoints are open; the others are marked
 * failed with the reason. Call once after all streams are added. */
void mm_host_start(struct mm_host *h);

/* The sample_type of stream @stream (to time-stamp records before ordering). */
uint64_t mm_host_sample_type(const struct mm_host *h, unsigned stream);
unsigned mm_host_nstreams(const struct mm_host *h);
bool mm_host_stream_is_task(const struct mm_host *h, unsigned stream);

/* Handles one record of @stream: samples go to the collectors, COMM/FORK/EXIT to the process
 * table, LOST is counted against the stream. Malformed records are counted, never fatal. */
void mm_host_record(struct mm_host *h, unsigned stream, const struct perf_event_header *hdr);

/* Counts @n records the ring of @stream lost (for sources that learn losses otherwise). */
void mm_host_lost(struct mm_host *h, unsigned stream, uint64_t n);

/* Calls every collector's tick hook. */
void mm_host_tick(struct mm_host *h);

/* The same right before the open window closes (mm_host_window_closing() is true meanwhile):
 * collectors that read /proc once per window do it then. */
void mm_host_tick_closing(struct mm_host *h);

/* Tells every collector that no more records will come (calls their finish hooks). */
void mm_host_finish(struct mm_host *h);

/* A snapshot of the open window as of @now_ms (window_end_ms = 0). NULL on ENOMEM. */
struct mm_snapshot *mm_host_snapshot(struct mm_host *h, uint64_t now_ms);

/* Closes the open window at @end_ms: returns its snapshot (window_end_ms = end_ms) for the store,
 * then starts the next window and forgets exited processes. NULL on ENOMEM (the window is then
 * still closed; its counts stay in the totals). */
struct mm_snapshot *mm_host_close_window(struct mm_host *h, uint64_t end_ms);

/* The window length shown in snapshots (after a reload). */
void mm_host_set_interval(struct mm_host *h, unsigned interval_s);

/* Store progress shown in snapshots. */
void mm_host_set_store_stats(struct mm_host *h, uint64_t windows_stored, uint64_t store_errors);

/* Sets the wall-clock offset used for processes with unknown start: wall_ms = mono_ns/1e6 +
 * offset. */
void mm_host_set_clock_offset(struct mm_host *h, int64_t mono_to_wall_ms);

/* Kernel symbols for mm_host_symbol() (not owned; must outlive the host; NULL: none). */
struct mm_symbols;
void mm_host_set_symbols(struct mm_host *h, const struct mm_symbols *syms);

/* Identity shown in snapshots. */
void mm_host_set_kernel(struct mm_host *h, const char *release);

#endif
