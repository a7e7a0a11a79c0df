/*
 * The window (see host.h, "the pipeline"): the second half of the collector host. It keeps the
 * window clock (clock.h) and the duty cycle of a cycled collector (duty.h), takes records
 * in time order (mm_host_feed, mm_host_advance), closes windows (the closing tick, the duty
 * collectors' window hooks, the snapshot, the process table's roll, malloc_trim after churn),
 * builds snapshots for HTTP and for each closed window, and hands closed windows to the sinks
 * and records to the tap. The host half (host.c) owns streams, slots, dispatch and counters.
 */
#include "host.h"
#include "hostpriv.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgtable.h"
#include "log.h"
#include "duty.h"

/* --- snapshots --- */

/* What /api/v1/status says of the cycled collector's duty (s->split): the mode, and why, in its
 * own words (plugin.h struct mm_plugin_cycle). */
static void duty_status(const struct mm_host *h, struct mm_snapshot *s)
{
	const struct slot *sl = NULL;
	for (unsigned i = 0; i < h->nslots; i++)
		if (h->slots[i].p->cycle)
			sl = &h->slots[i];
	if (!sl)
		return;
	const struct mm_plugin_cycle *cy = sl->p->cycle;
	s->split.duty_pm = h->duty_pm;
	snprintf(s->split.source, sizeof(s->split.source), "%s", sl->source);
	if (!sl->enabled || h->duty_pm == 0) {
		snprintf(s->split.mode, sizeof(s->split.mode), "off");
		snprintf(s->split.why, sizeof(s->split.why), "%s 0: %s", cy->key, cy->why_off);
	} else if (sl->state != MM_COLLECTOR_RUNNING) {
		snprintf(s->split.mode, sizeof(s->split.mode), "off");
		snprintf(s->split.why, sizeof(s->split.why),
			 "the %s collector is not running: %.160s", sl->p->name, sl->reason);
	} else if (!h->cycled) {
		snprintf(s->split.mode, sizeof(s->split.mode), "continuous");
		snprintf(s->split.why, sizeof(s->split.why), "%s 100%%: %s", cy->key,
			 cy->why_continuous);
	} else {
		snprintf(s->split.mode, sizeof(s->split.mode), "%ss", cy->period);
		s->split.burst_ms = h->duty.on_ms;
		s->split.slot_ms = h->duty.slot_ms;
		snprintf(s->split.why, sizeof(s->split.why),
			 "%s %u.%u%%: on the %s source %s, so it runs %llu ms of every %llu ms and "
			 "the counts are estimates",
			 cy->key, h->duty_pm / 10, h->duty_pm % 10, sl->source, cy->why_cycled,
			 (unsigned long long)h->duty.on_ms, (unsigned long long)h->duty.slot_ms);
	}
}

/* The window hooks of the cycled collectors (plugin.h) on the counts @ps of process @p, or of
 * the overflow record (@p NULL). */
static void duty_window(struct mm_host *h, struct mm_proc *p, struct mm_proc_stats *ps,
			bool closing)
{
	for (unsigned i = 0; i < h->nslots; i++) {
		const struct slot *sl = &h->slots[i];
		if (sl->cycled && sl->p->window && (!p || p->data))
			sl->p->window(p ? (char *)p->data + sl->proc_off : NULL, ps, h->duty_on_ms,
				      closing);
	}
}

/* Row @sp of @s for process @p, with @win its window (estimated or not; NULL: none): the counters
 * of the window (in @s's next free window slot, *@nwin, unless all zero) and of the total (the
 * process's closed sum itself when the window is empty, else a sum of its own); histograms only
 * those with a sample. Returns -ENOMEM when those or the cgroup's copy find no memory (the row
 * has its counters; its cgroup is then ""). */
static int fill_row(struct mm_snapshot *s, struct mm_snap_proc *sp, const struct mm_proc *p,
		    const struct mm_proc_stats *win, size_t *nwin)
{
	sp->pid = p->pid;
	sp->start_ms = p->start_ms;
	memcpy(sp->comm, p->comm, sizeof(sp->comm));
	const char *cg = mm_snapshot_name(s, p->cgroup);
	sp->cgroup = cg ? cg : "";
	sp->exited = p->exited;
	if (!win || mm_counts_is_zero(mm_stats_counts_c(win))) {
		/* Idle in the window: its total is its closed sum, shared, not copied. */
		sp->window = &mm_snap_no_window;
		sp->held = mm_shared_counts_ref(p->closed);
		sp->total = p->closed ? &p->closed->counts[0] : &mm_snap_no_window;
	} else {
		struct mm_proc_counts *sum = &s->sums->counts[*nwin];
		s->windows[*nwin] = *mm_stats_counts_c(win);
		sp->window = &s->windows[(*nwin)++];
		if (p->closed)
			*sum = p->closed->counts[0];
		mm_counts_add(sum, sp->window);
		sp->held = mm_shared_counts_ref(s->sums);
		sp->total = sum;
	}
	/* Histograms: the window's with a sample, the closed sum's plus those. */
	const struct mm_proc_hists *wh = win ? mm_stats_hists_c(win) : NULL;
	if (mm_hist_set_add(&sp->hists[0], wh) < 0 ||
	    mm_hist_set_dup(&sp->hists[1], p->closed_hists) < 0 ||
	    mm_hist_set_add(&sp->hists[1], wh) < 0)
		return -ENOMEM;
	return cg ? 0 : -ENOMEM;
}

/* A walk over the process table: every entry, or (@active_only) those with an open window only,
 * so that what runs every tick costs the active processes, not the idle ones. */
struct walk {
	struct mm_proc *const *active;
	size_t n, k;
	struct mm_proc *p;
	bool active_only;
};

static struct walk walk_start(const struct mm_host *h, bool active_only)
{
	struct walk w = {.active_only = active_only};
	if (active_only)
		w.active = mm_proctable_active(h->procs, &w.n);
	else
		w.p = mm_proctable_first(h->procs);
	return w;
}

static struct mm_proc *walk_next(struct walk *w)
{
	if (w->active_only)
		return w->k < w->n ? w->active[w->k++] : NULL;
	struct mm_proc *p = w->p;
	if (p)
		w->p = p->next;
	return p;
}

/* The processes with counts, in the window (estimated, unless @closing: a closing window was
 * estimated in place by mm_host_close_window) and in total, busiest first; @n entries at most.
 * With @active_only (a partial snapshot, snapshot.h) only those with counts in the window. A
 * process idle in the window costs its row's counters, nothing more. */
static void fill_procs(struct mm_host *h, struct mm_snapshot *s, size_t n, bool closing,
		       bool active_only)
{
	size_t i = 0, nwin = 0;
	unsigned no_hists = 0;
	struct mm_proc_stats win;
	s->all_window = h->overflow;
	struct walk wk = walk_start(h, active_only);
	for (struct mm_proc *p; (p = walk_next(&wk));) {
		/* Most processes counted nothing in the window: no window to look into (not even
		 * to see that it is empty: 3 KiB of zeros read per process at each close). */
		const struct mm_proc_stats *w = p->window;
		if (!w && (active_only || !mm_proc_has_closed(p)))
			continue;
		if (w && h->cycled && !closing) {
			win = *p->window;
			duty_window(h, p, &win, false);
			w = &win;
		}
		if (w)
			mm_stats_add(&s->all_window, w);
		if (w && mm_stats_is_zero(w) && (active_only || !mm_proc_has_closed(p)))
			continue;
		if (i == n)
			break; /* cannot happen (see build()); never write past the array */
		no_hists += fill_row(s, &s->procs[i++], p, w, &nwin) < 0;
	}
	if (no_hists)
		log_warning("out of memory for the histograms or cgroups of %u processes in a "
			    "snapshot, showing them empty",
			    no_hists);
	s->nprocs = i; /* fewer when estimating emptied a window (only counts it cannot scale) */
	if (mm_snapshot_sort_rows(s->procs, s->nprocs) < 0)
		log_warning("out of memory sorting a snapshot's processes, leaving them unsorted");
	if (mm_cgtable_fill(h->cgroups, s) < 0)
		log_warning("out of memory for the per-cgroup breakdown of a snapshot, ignoring");
	s->all_total = h->all_closed;
	mm_stats_add(&s->all_total, &s->all_window);
}

/* Global counters, streams and collectors as they stand. */
static void fill_counters(const struct mm_host *h, struct mm_snapshot *s)
{
	for (unsigned g = 0; g < h->nglobals; g++) {
		struct mm_snap_global *sg = &s->globals[g];
		memcpy(sg->family, h->globals[g].family, sizeof(sg->family));
		memcpy(sg->name, h->globals[g].name, sizeof(sg->name));
		memcpy(sg->help, h->globals[g].help, sizeof(sg->help));
		if (h->globals[g].slot >= 0)
			snprintf(sg->collector, sizeof(sg->collector), "%s",
				 h->slots[h->globals[g].slot].p->name);
		sg->window = h->globals[g].window;
		sg->total = h->globals[g].total + h->globals[g].window;
	}
	for (unsigned e = 0; e < h->nstreams; e++) {
		const struct stream *st = &h->streams[e];
		struct mm_snap_event *se = &s->events[e];
		/* A cycled collector's own stream of a shared tracepoint is named apart. */
		snprintf(se->name, sizeof(se->name), "%s:%s%s%s", st->system, st->name,
			 st->role && h->cycle ? "/" : "",
			 st->role && h->cycle ? h->cycle->name : "");
		se->open = st->open;
		memcpy(se->error, st->error, sizeof(se->error));
		se->samples = st->samples;
		se->lost = st->lost;
		se->window_samples = st->window_samples;
		se->window_lost = st->window_lost;
	}
	for (unsigned c = 0; c < h->nslots; c++) {
		struct mm_snap_collector *sc = &s->collectors[c];
		snprintf(sc->name, sizeof(sc->name), "%s", h->slots[c].p->name);
		sc->state = h->slots[c].state;
		memcpy(sc->reason, h->slots[c].reason, sizeof(sc->reason));
		memcpy(sc->source, h->slots[c].source, sizeof(sc->source));
		memcpy(sc->source_note, h->slots[c].source_note, sizeof(sc->source_note));
		if (h->slots[c].external)
			mm_plugin_silent_fields(h->slots[c].p, sc->silent);
		else
			memset(sc->silent, 0, sizeof(sc->silent));
	}
}

static struct mm_snapshot *build(struct mm_host *h, uint64_t now_ms, bool closing)
{
	/* An open window's snapshot leaves the processes idle in it to the last closed one's. */
	bool partial = !closing && h->last_closed;
	size_t n = 0;
	struct walk wk = walk_start(h, partial);
	for (struct mm_proc *p; (p = walk_next(&wk));)
		n += partial ? !mm_stats_is_zero(p->window) : mm_proc_has_counts(p);
	/* A cycled collector's estimate never turns an empty window non-empty, at most the
	 * reverse. */
	struct mm_snapshot *s = mm_snapshot_new(n, h->nglobals, h->nstreams, h->nslots);
	if (!s)
		return NULL;

	snprintf(s->version, sizeof(s->version), "%s", MM_VERSION);
	snprintf(s->kernel, sizeof(s->kernel), "%s", h->kernel);
	s->taken_ms = now_ms;
	s->started_ms = h->started_ms;
	s->window_start_ms = h->window_start_ms;
	s->window_end_ms = closing ? now_ms : 0;
	s->interval_s = h->interval_s;
	s->base = partial ? mm_snapshot_ref(h->last_closed) : NULL;
	fill_procs(h, s, n, closing, partial);
	fill_counters(h, s);
	duty_status(h, s);
	snprintf(s->latency.mode, sizeof(s->latency.mode), "%s", h->latency_mode);
	snprintf(s->latency.why, sizeof(s->latency.why), "%s", h->latency_why);
	s->windows_stored = h->windows_stored;
	s->store_errors = h->store_errors;
	s->windows_lost = h->windows_lost;
	s->procs_tracked = mm_proctable_count(h->procs);
	for (unsigned c = 0; c < h->nslots; c++) {
		struct slot *sl = &h->slots[c];
		if (!mm_host_hooked(sl) || !sl->p->snapshot)
			continue;
		h->cur = (int)c;
		sl->p->snapshot(sl->state_ptr, h, s, closing);
		h->cur = -1;
	}
	return s;
}

struct mm_snapshot *mm_host_snapshot(struct mm_host *h, uint64_t now_ms)
{
	return build(h, now_ms, false);
}

/* Gives freed heap back to the kernel after churn: every process a window saw holds a few KiB of
 * counts (each struct mm_proc_stats carries its histograms) in its entry, the window's snapshot
 * and the writer's rows, and glibc keeps what they freed (bench churn, 1-second windows: RSS
 * 15 -> 70 MiB after 10000 short-lived processes, 29 MiB after a malloc_trim()). Trimmed once
 * the churn stops (the second window with fewer than TRIM_QUIET exits: the first one's
 * predecessor's snapshot, which still has their rows, is gone by then), and every TRIM_CAP exits
 * under endless churn. Not "without an exit": a host's shells and timers end processes in most
 * windows, and a trim that waited for two windows without one came late or never (a churn wave's
 * 13 MiB of freed heap kept after it, --collectors all). In the loop's thread: a few ms, at most
 * once per TRIM_MIN exits. */
#define TRIM_MIN   256
#define TRIM_QUIET 64
#define TRIM_CAP   65536

static void trim_after_churn(struct mm_host *h, unsigned freed)
{
	h->freed_since_trim += freed;
	h->quiet_windows = freed < TRIM_QUIET ? h->quiet_windows + 1 : 0;
	if (h->freed_since_trim < TRIM_MIN ||
	    (h->quiet_windows != 2 && h->freed_since_trim < TRIM_CAP))
		return;
	h->freed_since_trim = 0;
	malloc_trim(0);
}

struct mm_snapshot *mm_host_close_window(struct mm_host *h, uint64_t end_ms)
{
	if (h->cycled) {
		/* An empty window stays empty, its hooks have nothing to do. */
		struct walk wk = walk_start(h, true);
		for (struct mm_proc *p; (p = walk_next(&wk));)
			duty_window(h, p, p->window, true);
		duty_window(h, NULL, &h->overflow, true);
	}
	h->duty_on_ms = 0;
	struct mm_snapshot *s = build(h, end_ms, true);
	/* The rows of the processes idle in the next window, until it closes (NULL when this one
	 * could not be built: its snapshots are then built whole). */
	mm_snapshot_unref(h->last_closed);
	h->last_closed = mm_snapshot_ref(s);

	if (s && mm_cgtable_close(h->cgroups, s) < 0)
		log_warning("out of memory choosing the cgroups with their own series, ignoring");

	struct walk wk = walk_start(h, true);
	for (struct mm_proc *p; (p = walk_next(&wk));)
		mm_stats_add(&h->all_closed, p->window);
	mm_stats_add(&h->all_closed, &h->overflow);
	memset(&h->overflow, 0, sizeof(h->overflow));
	unsigned freed =
		mm_proctable_roll(h->procs, h->clock.end_ms > end_ms ? h->clock.end_ms : 0);
	trim_after_churn(h, freed);
	for (unsigned g = 0; g < h->nglobals; g++) {
		h->globals[g].total += h->globals[g].window;
		h->globals[g].window = 0;
	}
	for (unsigned e = 0; e < h->nstreams; e++)
		h->streams[e].window_samples = h->streams[e].window_lost = 0;
	h->window_start_ms = end_ms;
	return s;
}

void mm_host_set_cgroup_top(struct mm_host *h, unsigned cgroup_top)
{
	if (mm_cgtable_set_slots(h->cgroups, cgroup_top) < 0)
		log_warning("out of memory for %u cgroup series, keeping the previous number",
			    cgroup_top);
}

void mm_host_set_interval(struct mm_host *h, unsigned interval_s, uint64_t now_ms)
{
	h->interval_s = interval_s;
	mm_clock_set_interval(&h->clock, interval_s, now_ms);
	if (h->cycled) {
		mm_duty_clock_init(&h->duty, interval_s, h->duty_pm, h->duty.seed);
		h->duty_done_slot = now_ms / h->duty.slot_ms;
	}
}

enum mm_phase mm_host_phase(const struct mm_host *h, uint64_t now_ns, uint64_t *ret_next_ns)
{
	*ret_next_ns = UINT64_MAX;
	if (!h->cycled)
		return MM_PHASE_OFF;
	uint64_t next_ms;
	/* The loop's time: a step it saw is in force, whether the records reached it or not. */
	enum mm_phase ph =
		mm_duty_phase_at(&h->duty, mm_clock_wall_ms(&h->clock, now_ns), &next_ms);
	int64_t mono_ms = (int64_t)next_ms - mm_clock_latest_offset(&h->clock);
	if (next_ms != UINT64_MAX && mono_ms > 0)
		*ret_next_ns = (uint64_t)mono_ms * 1000000ull;
	return ph;
}

/* An on-period's grace ended in event time: no record of it is still to come. The cycled
 * collectors account what they hold (their finish hook), and see each process's counts at the
 * period's end (their duty_end hook: the fault split keeps the spread between its bursts). */
static void end_period(struct mm_host *h, const struct mm_duty_period *b)
{
	if (h->counter_fn && h->cycled_in_kernel) {
		h->reading_period_end = true;
		h->counter_fn(h->counter_ctx, h, false); /* the period's counts, from the kernel */
		h->reading_period_end = false;
	}
	for (unsigned i = 0; i < h->nslots; i++) {
		struct slot *sl = &h->slots[i];
		if (!sl->cycled || !mm_host_hooked(sl) || !sl->p->finish)
			continue;
		h->cur = (int)i;
		sl->p->finish(sl->state_ptr, h);
		h->cur = -1;
	}
	for (unsigned i = 0; i < h->nslots; i++) {
		const struct slot *sl = &h->slots[i];
		if (!sl->cycled || !sl->p->duty_end)
			continue;
		struct walk wk = walk_start(h, true); /* nothing counted: the period saw nothing */
		for (struct mm_proc *p; (p = walk_next(&wk));)
			if (p->data)
				sl->p->duty_end((char *)p->data + sl->proc_off, p->window);
	}
	h->duty_on_ms += b->off_ms - b->on_ms;
}

/* Ends the on-periods whose grace is over by wall time @now_ms (a gap in time skips periods); for
 * a collector counting in the kernel, once its threads have flushed what they counted too. */
static void duty_catch_up(struct mm_host *h, uint64_t now_ms)
{
	if (!h->cycled)
		return;
	uint64_t slot = now_ms / h->duty.slot_ms;
	uint64_t wait_ms = MM_DUTY_GRACE_MS + (h->cycled_in_kernel ? MM_DUTY_FLUSH_MS : 0);
	if (slot > h->duty_done_slot + 4)
		h->duty_done_slot = slot - 4;
	while (h->duty_done_slot <= slot) {
		struct mm_duty_period b = mm_duty_period_of(&h->duty, h->duty_done_slot);
		if (b.off_ms + wait_ms > now_ms)
			break;
		end_period(h, &b);
		h->duty_done_slot++;
	}
}

/* A clock step (clock.h) at wall time @at_ms of the old clock: the on-periods up to it end, the
 * one it cut with the time it ran (its records on the old clock stop there), and the schedule
 * goes on on the new clock from the slot of its wall time @new_ms. A period of that slot that
 * began before @new_ms counts whole: the on-time of one period at most, in one window's
 * estimate, at a step. */
static void duty_step(struct mm_host *h, uint64_t at_ms, uint64_t new_ms)
{
	if (!h->cycled)
		return;
	duty_catch_up(h, at_ms);
	for (uint64_t slot = at_ms / h->duty.slot_ms; h->duty_done_slot <= slot;
	     h->duty_done_slot++) {
		struct mm_duty_period b = mm_duty_period_of(&h->duty, h->duty_done_slot);
		if (b.on_ms >= at_ms)
			break;
		if (b.off_ms > at_ms)
			b.off_ms = at_ms;
		end_period(h, &b);
	}
	h->duty_done_slot = new_ms / h->duty.slot_ms;
}

int64_t mm_host_observe_clock(struct mm_host *h, int64_t mono_to_wall_ms, uint64_t now_ns)
{
	int64_t moved_ms = mm_clock_observe(&h->clock, mono_to_wall_ms, now_ns);
	uint64_t abs_ms = moved_ms < 0 ? (uint64_t)-moved_ms : (uint64_t)moved_ms;

	if (!moved_ms)
		return 0;
	/* Process starts follow a clock that was set, not a suspend (proctable.h). */
	int64_t starts_ms = mm_proctable_follow_clock(h->procs);
	log_notice("wall time moved %s by %llu.%03llu s against monotonic time (%s): the open "
		   "window closes there, the next ones follow the new time",
		   moved_ms > 0 ? "forward" : "back", (unsigned long long)(abs_ms / 1000),
		   (unsigned long long)(abs_ms % 1000),
		   starts_ms || moved_ms < 0 ? "the clock was set"
					     : "the machine slept, or the clock was set");
	if (h->tap && h->tap->clock_step)
		h->tap->clock_step(h->tap_ctx, now_ns, mono_to_wall_ms, starts_ms);
	return moved_ms;
}

void mm_host_clock_step(struct mm_host *h, int64_t mono_to_wall_ms, uint64_t at_ns,
			int64_t starts_moved_ms)
{
	mm_clock_observe(&h->clock, mono_to_wall_ms, at_ns);
	mm_proctable_shift_starts(h->procs, starts_moved_ms);
}

void mm_host_set_store_stats(struct mm_host *h, uint64_t windows_stored, uint64_t store_errors,
			     uint64_t windows_lost)
{
	h->windows_stored = windows_stored;
	h->store_errors = store_errors;
	h->windows_lost = windows_lost;
}

void mm_host_set_kernel(struct mm_host *h, const char *release)
{
	snprintf(h->kernel, sizeof(h->kernel), "%s", release);
}

/* --- the pipeline (see host.h) --- */

int mm_host_add_sink(struct mm_host *h, mm_sink_fn fn, void *ctx)
{
	if (h->nsinks == MM_HOST_MAX_SINKS)
		return -ENOSPC;
	h->sinks[h->nsinks].fn = fn;
	h->sinks[h->nsinks].ctx = ctx;
	h->nsinks++;
	return 0;
}

void mm_host_set_tap(struct mm_host *h, const struct mm_tap *tap, void *ctx)
{
	h->tap = tap;
	h->tap_ctx = ctx;
}

/* The closing tick, the window's snapshot, the sinks. */
static void close_window(struct mm_host *h, uint64_t end_ms)
{
	h->closing_end_ms = end_ms ? end_ms : 1;
	mm_host_tick_collectors(h);
	h->closing_end_ms = 0;
	struct mm_snapshot *w = mm_host_close_window(h, end_ms);
	if (!w) {
		log_error("out of memory closing a window; its counts stay in the totals only");
		return;
	}
	for (unsigned i = 0; i < h->nsinks; i++)
		h->sinks[i].fn(h->sinks[i].ctx, w);
	mm_snapshot_unref(w);
}

static unsigned close_until(struct mm_host *h, uint64_t mono_ns)
{
	unsigned n = 0;
	for (uint64_t end; (end = mm_clock_next_close(&h->clock, mono_ns, NULL)); n++)
		close_window(h, end);
	return n;
}

/* Closes what @mono_ns passed; returns the number of windows closed (at most two, five across
 * a clock step: two before it, the window it cut, two after). A step the stream reached is taken
 * between the windows of the old clock and those of the new one (clock.h): the records from it
 * on are converted with the new offset. */
static unsigned advance(struct mm_host *h, uint64_t mono_ns)
{
	uint64_t step_ns = h->clock.step_at_ns, start, end;
	bool due = step_ns && mono_ns >= step_ns;

	duty_catch_up(h, mm_host_wall_ms(h, due ? step_ns : mono_ns));
	unsigned n = close_until(h, mono_ns);
	if (!due)
		return n;
	uint64_t at_ms = mm_host_wall_ms(h, step_ns);
	mm_clock_take_step(&h->clock, mono_ns, &start, &end);
	duty_step(h, at_ms, h->clock.start_ms);
	if (end) {
		close_window(h, end);
		n++;
	}
	/* The start moves with the clock: the uptime stays the time the daemon ran. */
	int64_t started = (int64_t)h->started_ms + h->clock.mono_to_wall_ms - h->mono_to_wall_ms;
	h->started_ms = started > 0 ? (uint64_t)started : 0;
	h->mono_to_wall_ms = h->clock.mono_to_wall_ms;
	h->window_start_ms = h->clock.start_ms;
	duty_catch_up(h, mm_host_wall_ms(h, mono_ns));
	return n + close_until(h, mono_ns);
}

/* Whether a record of a cycled stream stamped @time_ns is inside its phase: the schedule in event
 * time decides what is classified, not when the loop got round to switching the stream. */
static bool in_phase(const struct mm_host *h, unsigned stream, uint64_t time_ns)
{
	enum mm_stream_role role = mm_host_stream_role(h, stream);
	if (role == MM_STREAM_ALWAYS || !h->cycled || !time_ns)
		return true;
	uint64_t next;
	enum mm_phase ph = mm_duty_phase_at(&h->duty, mm_host_wall_ms(h, time_ns), &next);
	return role == MM_STREAM_OPENER ? ph == MM_PHASE_ON : ph != MM_PHASE_OFF;
}

void mm_host_feed(struct mm_host *h, unsigned stream, uint64_t time_ns,
		  const struct perf_event_header *hdr)
{
	if (time_ns) {
		advance(h, time_ns);
		if (time_ns < h->last_fed_ns)
			h->late++;
		else
			h->last_fed_ns = time_ns;
	}
	if (hdr->type == PERF_RECORD_SAMPLE && !in_phase(h, stream, time_ns)) {
		mm_host_global_add(h, h->g_outside_phase, 1);
		return;
	}
	uint64_t type = mm_host_sample_type(h, stream);
	bool is_task = mm_host_stream_is_task(h, stream);
	if (h->tap && h->tap->wants && !h->tap->wants(h->tap_ctx, hdr, type, is_task))
		return;
	mm_host_record(h, stream, hdr);
	if (h->tap && h->tap->record)
		h->tap->record(h->tap_ctx, stream, time_ns, hdr, type);
	h->fed++;
}

void mm_host_advance(struct mm_host *h, uint64_t horizon_ns)
{
	if (advance(h, horizon_ns) && h->tap && h->tap->advance)
		h->tap->advance(h->tap_ctx, horizon_ns);
}

void mm_host_close_now(struct mm_host *h, uint64_t end_ms)
{
	close_window(h, end_ms);
	h->clock.start_ms = end_ms;
}

void mm_host_stop(struct mm_host *h, uint64_t now_ns)
{
	mm_host_finish(h);
	/* On the clock the open window started on: a step the records did not reach stays out of
	 * it (cutting it there would leave a last window of a few ms, or none). */
	mm_host_close_now(h, mm_host_wall_ms(h, now_ns));
}

void mm_host_feed_stats(const struct mm_host *h, uint64_t *ret_records, uint64_t *ret_late)
{
	*ret_records = h->fed;
	*ret_late = h->late;
}
