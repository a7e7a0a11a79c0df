/*
 * What the host (host.c) and the window (window.c) share of the collector host's state: the
 * streams, the collector slots, the global counters and struct mm_host itself. Private to those
 * two files; collectors see plugin.h, drivers host.h.
 */
#ifndef MM_HOSTPRIV_H
#define MM_HOSTPRIV_H

#include "host.h"
#include "duty.h"

#define MAX_PLUGINS 16

struct mm_tp {
	struct tep_event *ev;
	unsigned stream;
};

struct stream {
	char system[32];
	char name[64];
	bool is_task;
	bool open;
	enum mm_stream_role role; /* a cycled collector's own stream (duty.h) */
	char error[160];
	uint64_t sample_type;
	struct mm_tp tp;
	uint64_t samples, lost, window_samples, window_lost;
	uint64_t bad; /* records that failed to decode */
	unsigned nsubs;
	struct {
		unsigned slot;
		mm_tp_handler handler;
	} subs[MAX_PLUGINS]; /* the collectors' handler table rows for it, resolved at start */
};

struct slot {
	const struct mm_plugin *p;
	bool enabled;
	enum mm_collector_state state;
	char reason[256];
	void *state_ptr;
	bool external;	       /* filled by an in-kernel source (mm_host_set_source) */
	bool fed;	       /* hooked, its waits from an in-kernel source (mm_host_waits) */
	char source[16];       /* "perf", "bpf", "procfs" */
	char source_note[192]; /* why not BPF */
	bool cycled;	       /* runs cycled on streams of its own (duty.h) */
	size_t proc_off;       /* cycled: its per-process bytes in mm_proc.data */
};

struct global {
	char family[32];
	char name[64];
	char help[160];
	int slot; /* the collector that registered it, -1 for none */
	uint64_t window, total;
};

struct mm_host {
	unsigned freed_since_trim; /* exited processes' entries freed since the last malloc_trim */
	unsigned quiet_windows;	   /* consecutive windows that freed fewer than TRIM_QUIET */
	struct stream *streams;
	unsigned nstreams;
	struct slot slots[MAX_PLUGINS];
	unsigned nslots;
	int cur; /* slot whose hook is running, -1 outside hooks */

	struct global *globals;
	unsigned nglobals;

	struct mm_proctable *procs;
	struct mm_proc_stats overflow; /* for samples whose process entry could not be allocated */
	uint64_t overflow_samples;

	struct mm_proc_stats all_closed; /* every closed window of every process */
	struct mm_snapshot
		*last_closed;	    /* the last closed window's snapshot (snapshot.h: partial) */
	struct mm_cgtable *cgroups; /* the per-unit breakdown of /metrics */
	uint64_t started_ms, window_start_ms;
	int64_t mono_to_wall_ms;
	unsigned interval_s;
	uint64_t closing_end_ms;	    /* the closing tick's window end, else 0 */
	bool reading_period_end;	    /* counter_fn called for an on-period's end */
	mm_host_counter_fn counter_fn;	    /* a source that counts in place of records */
	mm_host_task_reader_fn task_reader; /* mm_host_read_tasks(), NULL: none */
	void *task_reader_ctx;
	void *counter_ctx;
	uint64_t windows_stored, store_errors, windows_lost;
	char kernel[128];
	const struct mm_symbols *syms;

	struct mm_clock clock;
	struct {
		mm_sink_fn fn;
		void *ctx;
	} sinks[MM_HOST_MAX_SINKS];
	unsigned nsinks;
	const struct mm_tap *tap;
	void *tap_ctx;
	struct {
		int fd, slot;
		mm_host_watch_fn fn;
		void *ctx;
	} watches[MM_HOST_MAX_WATCHES];
	unsigned nwatches;
	uint64_t fed, late, last_fed_ns;

	/* The duty cycle (duty.h) of the cycled collector: its share, and when cycled, the
	 * collector's names for it, the clock, the last slot whose period ended in event time and
	 * the on-time of the open window. */
	unsigned duty_pm;
	bool cycled;
	const struct mm_plugin_cycle *cycle;
	bool cycled_in_kernel; /* it counts in the kernel (BPF), set at start */
	struct mm_duty_clock duty;
	uint64_t duty_done_slot, duty_on_ms;
	enum mm_stream_role adding; /* in mm_host_wanted(): the role of streams being added */
	int g_outside_phase;	    /* global: its records stamped outside their phase */
	int g_nameless;		    /* global: entries made "pid-N" (mm_proctable_nameless) */
	uint64_t nameless_seen;	    /* what g_nameless has counted of them */
	char latency_mode[16], latency_why[256]; /* mm_host_set_latency */
};

/* Whether slot @sl gets its hooks (running, not filled by an in-kernel source). */
bool mm_host_hooked(const struct slot *sl);

/* Wall-clock ms of monotonic time @mono_ns. */
uint64_t mm_host_wall_ms(const struct mm_host *h, uint64_t mono_ns);

/* Runs the counter source, then every hooked collector's tick hook. */
void mm_host_tick_collectors(struct mm_host *h);

#endif
