/*
 * The collector host: it owns the pipeline between the sources and the sinks. It numbers the
 * streams (one per perf event; sources tag their records with that index), runs the enabled
 * collectors through their handler tables, keeps the process table, global counters and the
 * open window, and closes windows on the window clock (clock.h), handing each closed window to
 * the sinks. The live loop (live.h) feeds it records from the rings in time order (order.h) and
 * its drain horizon; a replay feeds it a recording's records and horizons; the recorder of
 * `mmlockd record` is a tap on the feed. Nothing here touches perf, SQLite or HTTP. Two files
 * implement it: host.c (streams, collector slots, dispatch, global counters, watches) and
 * window.c (the clock, the duty schedule, the close, snapshots, sinks and the tap).
 *
 * Single-threaded: every call comes from the collection thread.
 */
#ifndef MM_HOST_H
#define MM_HOST_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>

#include "clock.h"
#include "config.h"
#include "plugin.h"
#include "proctable.h"
#include "snapshot.h"
#include "duty.h"

struct mm_host;
struct tep_event;

/* Creates a host running the collectors that @cfg enables (every collector of mm_plugins[] is
 * listed in snapshots; the others as disabled). @lookup/@ctx identify processes (NULL: /proc).
 * @start_ms is the wall time the first window starts. */
struct mm_host *mm_host_new(const struct mm_config *cfg, mm_proc_lookup_fn lookup, void *ctx,
			    uint64_t start_ms);
void mm_host_free(struct mm_host *h); /* accepts NULL; frees collector states */

/* At a share under 100%, a collector with a duty cycle (plugin.h struct mm_plugin_cycle) runs
 * cycled on streams of its own (duty.h): mm_host_wanted() reports its tracepoints after the
 * others', again where another collector shares them, and the streams added for them are marked.
 * The first row of its handler table is the opener. */
enum mm_stream_role {
	MM_STREAM_ALWAYS,   /* a stream that stays on */
	MM_STREAM_OPENER,   /* on during an on-period's ON phase only */
	MM_STREAM_EVIDENCE, /* on during ON and ENDING */
};

/* The role of stream @stream. */
enum mm_stream_role mm_host_stream_role(const struct mm_host *h, unsigned stream);

/* The duty cycle's phase at monotonic time @now_ns, and in *ret_next_ns when it changes next
 * (UINT64_MAX: never; always OFF without a cycled collector). The loop switches the streams by
 * it; the host follows the same schedule in event time (records of an on-period are taken, its
 * end is accounted when the feed passes its grace). */
enum mm_phase mm_host_phase(const struct mm_host *h, uint64_t now_ns, uint64_t *ret_next_ns);

/* Calls @fn for every tracepoint the enabled collectors ask for (each once; callchain true when
 * any asks for it; @filter the kernel-side filter every asker agrees on, else NULL), until @fn
 * returns a negative value, which is returned; else 0. */
typedef int (*mm_host_wanted_fn)(void *ctx, const char *system, const char *name, bool callchain,
				 const char *filter);
int mm_host_wanted(struct mm_host *h, mm_host_wanted_fn fn, void *ctx);

/* Whether every enabled collector asking for system:name marks it rare (mm_tp_req.rare): its
 * stream then gets small rings. False when none asks. */
bool mm_host_tp_rare(const struct mm_host *h, const char *system, const char *name);

/* Streams: the host is the one place that numbers them. Sources (the sampler, a recording) tag
 * their records with the index these return. */

/* Registers the stream for tracepoint system:name. @ev is its parsed format (owned by the
 * caller's tep handle, must outlive the host; NULL: unknown), @sample_type its perf sample_type.
 * With @error non-NULL the tracepoint is not open; it is listed with that reason. Returns the
 * stream index, or -ENOMEM. */
int mm_host_add_tp(struct mm_host *h, const char *system, const char *name, struct tep_event *ev,
		   uint64_t sample_type, const char *error);

/* Registers the stream carrying COMM/FORK/EXIT records (a dummy event with attr.task/comm and
 * sample_id_all). Returns the stream index, or -ENOMEM. */
int mm_host_add_task_stream(struct mm_host *h, uint64_t sample_type, const char *error);

/* After the source tried to open stream @stream: its sample_type, or the reason it failed
 * (@error non-NULL). For registering a stream before opening it. */
void mm_host_stream_opened(struct mm_host *h, unsigned stream, uint64_t sample_type,
			   const char *error);

/* Says which source feeds collector @name (e.g. "perf", "bpf"; shown in status and /metrics)
 * and, in @note, why not BPF ("" when it is). A collector set to "bpf" is filled by that
 * source through mm_host_proc(): the host opens no tracepoint for it and calls none of its
 * hooks; one with a waits hook (plugin.h) is initialised and hooked but gets its waits from the
 * source (mm_host_waits) instead of streams. Call before mm_host_wanted(). Unknown names are
 * ignored. */
void mm_host_set_source(struct mm_host *h, const char *name, const char *source, const char *note);

/* What /api/v1/status says of fault latency: @mode "sampled", "partial" or "off", and why. Set
 * from the configuration by mm_host_new(), then by the BPF source that samples it. */
void mm_host_set_latency(struct mm_host *h, const char *mode, const char *why);

/* Whether fault latency is sampled (mode "sampled" or "partial"); @why (if not NULL) says why
 * or why not. */
bool mm_host_latency_sampled(const struct mm_host *h, const char **why);

/* For an in-kernel source feeding collector @name (one with a waits hook, set to that source with
 * mm_host_set_source): hands it @w, into the open window (the closing one during its closing
 * tick). Ignored when the collector is not running or not fed. */
void mm_host_waits(struct mm_host *h, const char *name, const struct mm_lock_wait *w);

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

/* Calls every collector's tick hook (about once a second), then the tap's. The closing tick
 * (mm_host_window_closing() true) is the clock's, right before a window closes: collectors that
 * read /proc once per window do it then. */
void mm_host_tick(struct mm_host *h);

/* --- the pipeline: sources feed records in time order, the window clock (clock.h) closes
 * windows, sinks receive them ---
 *
 * A record source (the perf rings, a recording) calls mm_host_feed() for each record in time
 * order; the live loop also calls mm_host_advance() with its horizon, so a window closes even
 * when no record crosses its end. Closing a window runs the closing tick, builds the window's
 * snapshot and hands it to every sink in the order they were added.
 *
 * A source that counts in place of records (an in-kernel BPF program keeping per-process counts
 * in maps) adds them in a collector's tick hook while mm_host_window_closing() is true, through
 * mm_host_proc() / mm_host_proc_known() (plugin.h), so they land in the window being closed; a
 * process-exit push (a ring or netlink message saying a process ended, with its final counts) is
 * read when its fd is readable: the collector registers the fd with mm_host_watch() from its
 * init hook, the live loop polls it with its own fds and calls the handler on the collection
 * thread, and the handler adds the counts the same way (mm_host_proc_known() finds a process
 * that exited and is not stored yet). Such a source registers no stream (its counts are not
 * records), so `record` and `replay` see only what the perf streams carry. A collector that
 * reads /proc at the closing tick and exit messages through a watched fd is such a source. */

/* Collectors watch their fds with mm_host_watch() (plugin.h); the loop asks for them here: the
 * fd of watch @i, or -1 past the last one. */
int mm_host_watched_fd(const struct mm_host *h, unsigned i);

/* For the loop: watch @i's fd is readable. */
void mm_host_watch_ready(struct mm_host *h, unsigned i);

/* Such a source (bpfsource.h): @fn runs at every tick, plain and closing (@closing), before
 * the collectors' tick hooks, and, when it counts for a cycled collector, once more at each
 * on-period's end (@closing false, mm_host_reading_period_end() true), and adds its counts through
 * mm_host_proc() / mm_host_proc_known(). One at most; NULL removes it. */
typedef void (*mm_host_counter_fn)(void *ctx, struct mm_host *h, bool closing);
void mm_host_set_counter_source(struct mm_host *h, mm_host_counter_fn fn, void *ctx);

/* The reader behind mm_host_read_tasks() (taskiter.h); NULL removes it. */
typedef int (*mm_host_task_reader_fn)(void *rctx, mm_task_fn fn, void *ctx);
void mm_host_set_task_reader(struct mm_host *h, mm_host_task_reader_fn fn, void *rctx);
/* True while the counter source reads an on-period's counts (its end: MM_DUTY_GRACE_MS +
 * MM_DUTY_FLUSH_MS after the opener stopped). */
bool mm_host_reading_period_end(const struct mm_host *h);

/* Receives every closed window @w (the host's reference: take one with mm_snapshot_ref() to keep
 * it). */
typedef void (*mm_sink_fn)(void *ctx, struct mm_snapshot *w);

/* Adds a sink. Returns 0, or -ENOSPC beyond MM_HOST_MAX_SINKS. */
#define MM_HOST_MAX_SINKS 4
int mm_host_add_sink(struct mm_host *h, mm_sink_fn fn, void *ctx);

/* A tap on the record stream (the recorder of `mmlockd record`). Every hook is optional. */
struct mm_tap {
	/* Before the collectors: false drops the record from the run (a process filter). */
	bool (*wants)(void *ctx, const struct perf_event_header *hdr, uint64_t sample_type,
		      bool is_task);
	/* After the collectors saw it (the process lookups it caused come first). */
	void (*record)(void *ctx, unsigned stream, uint64_t time_ns,
		       const struct perf_event_header *hdr, uint64_t sample_type);
	/* The plain tick ran after the records fed so far (@time_ns: the last one's time). */
	void (*tick)(void *ctx, uint64_t time_ns);
	/* mm_host_advance(@horizon_ns) closed a window no record had closed. */
	void (*advance)(void *ctx, uint64_t horizon_ns);
	/* mm_host_observe_clock() saw a step at @at_ns: the new offset, and how far the process
	 * starts moved with it (mm_host_clock_step() replays it). */
	void (*clock_step)(void *ctx, uint64_t at_ns, int64_t mono_to_wall_ms,
			   int64_t starts_moved_ms);
};

/* Sets the tap (NULL: none); @tap must outlive the host. */
void mm_host_set_tap(struct mm_host *h, const struct mm_tap *tap, void *ctx);

/* Feeds one record of @stream stamped @time_ns (CLOCK_MONOTONIC; 0 when it has none, which
 * does not move the clock): closes the windows that time passed, then runs the tap's filter,
 * mm_host_record() and the tap. */
void mm_host_feed(struct mm_host *h, unsigned stream, uint64_t time_ns,
		  const struct perf_event_header *hdr);

/* Closes the windows whose end @horizon_ns passed: no record older than it will come. */
void mm_host_advance(struct mm_host *h, uint64_t horizon_ns);

/* Closes the open window at @end_ms whatever the clock says (at shutdown, at the end of a
 * replay), after mm_host_finish(). */
void mm_host_close_now(struct mm_host *h, uint64_t end_ms);

/* At shutdown, after the last records went in: calls mm_host_finish() and closes the open
 * window at the wall time of @now_ns (CLOCK_MONOTONIC) on the clock that window started on, so
 * it never spans a step (one seen by mm_host_observe_clock() but not reached by the records
 * included). */
void mm_host_stop(struct mm_host *h, uint64_t now_ns);

/* The wall clock read at monotonic time @now_ns gave the offset @mono_to_wall_ms: a move of
 * MM_CLOCK_STEP_TOLERANCE_MS or more is a step, logged once (notice) and taken where the
 * records reach @now_ns (clock.h mm_clock_observe). Returns the step in ms, 0 when none. */
int64_t mm_host_observe_clock(struct mm_host *h, int64_t mono_to_wall_ms, uint64_t now_ns);

/* Replays a step a live run saw (the tap's clock_step): the window clock takes it where the
 * records reach @at_ns, the process starts move by @starts_moved_ms at once, as they did live. */
void mm_host_clock_step(struct mm_host *h, int64_t mono_to_wall_ms, uint64_t at_ns,
			int64_t starts_moved_ms);

/* Records fed, and those fed with a time older than an earlier one's. */
void mm_host_feed_stats(const struct mm_host *h, uint64_t *ret_records, uint64_t *ret_late);

/* Tells every collector that no more records will come (calls their finish hooks). */
void mm_host_finish(struct mm_host *h);

/* A snapshot of the open window as of @now_ms (window_end_ms = 0). NULL on ENOMEM. */
struct mm_snapshot *mm_host_snapshot(struct mm_host *h, uint64_t now_ms);

/* Closes the open window at @end_ms without the clock, tick or sinks (for tests): returns its
 * snapshot (window_end_ms = end_ms) for the store, then starts the next window and forgets exited
 * processes. NULL on ENOMEM (the window is then still closed; its counts stay in the totals). */
struct mm_snapshot *mm_host_close_window(struct mm_host *h, uint64_t end_ms);

/* A new window length (after a reload): the open window now ends at the first multiple of it
 * after @now_ms. */
void mm_host_set_interval(struct mm_host *h, unsigned interval_s, uint64_t now_ms);
/* The cgroup hierarchy whose moves (mm_host_proc_moved) change a process's cgroup, for a host
 * whose lookup is not /proc's (which reads it itself): see mm_proctable_set_hierarchy. */
void mm_host_set_cgroup_hierarchy(struct mm_host *h, int hierarchy);

/* How many cgroups get their own /metrics series (config cgroup_top; see cgtable.h). */
void mm_host_set_cgroup_top(struct mm_host *h, unsigned cgroup_top);

/* Store progress shown in snapshots: windows stored, failed attempts, windows never stored. */
void mm_host_set_store_stats(struct mm_host *h, uint64_t windows_stored, uint64_t store_errors,
			     uint64_t windows_lost);

/* Sets the wall-clock offset of the window clock and of processes with unknown start:
 * wall_ms = mono_ns/1e6 + offset. */
void mm_host_set_clock_offset(struct mm_host *h, int64_t mono_to_wall_ms);

/* Kernel symbols for mm_host_symbol() (not owned; must outlive the host; NULL: none). */
struct mm_symbols;
void mm_host_set_symbols(struct mm_host *h, const struct mm_symbols *syms);

/* Whether a running collector may still ask mm_host_symbol(): one whose records or waits reach
 * its handlers (on the perf rings, or fed by the BPF source). Collectors counted in the kernel
 * and those reading /proc never do; the kernel's symbols (~5 MiB) can then go once the BPF
 * source has placed its programs' call sites. */
bool mm_host_needs_symbols(const struct mm_host *h);

/* Identity shown in snapshots. */
void mm_host_set_kernel(struct mm_host *h, const char *release);

#endif
