/*
 * The collector host (see host.h), its first half: the streams, the collector slots and their
 * hooks, dispatch of decoded records to the handler tables, the process table's updates from task
 * records, global counters and fd watches. The other half, the window (window.c), keeps the
 * clock, closes windows, builds snapshots and hands them to the sinks. Pure code: the live
 * sampler and replay both drive it.
 */
#include "host.h"
#include "hostpriv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <traceevent/event-parse.h>

#include "cgtable.h"
#include "log.h"
#include "plugin.h"
#include "sample.h"
#include "duty.h"
#include "symbols.h"

/* Fault latency off until the in-kernel source says otherwise; with fault_latency on (@asked),
 * naming the collectors that would time faults (their in-kernel part says so, plugin.h). */
static void latency_off(struct mm_host *h, bool asked)
{
	char why[256] = "fault_latency = on, but it needs ";
	const char *sep = "";
	if (!asked) {
		mm_host_set_latency(
			h, "off",
			"fault_latency = off (the default): the fault-completion "
			"software events it needs cost every fault on the machine while "
			"open");
		return;
	}
	for (const struct mm_plugin *const *p = mm_plugins; *p; p++) {
		if (!(*p)->bpf || !(*p)->bpf->latency)
			continue;
		snprintf(why + strlen(why), sizeof(why) - strlen(why), "%s%s", sep, (*p)->name);
		sep = " or ";
	}
	snprintf(why + strlen(why), sizeof(why) - strlen(why), " on the BPF source");
	mm_host_set_latency(h, "off", why);
}

struct mm_host *mm_host_new(const struct mm_config *cfg, mm_proc_lookup_fn lookup, void *ctx,
			    uint64_t start_ms)
{
	struct mm_host *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->procs = mm_proctable_new(lookup, ctx);
	if (!h->procs) {
		free(h);
		return NULL;
	}
	h->cgroups = mm_cgtable_new(cfg->cgroup_top);
	if (!h->cgroups) {
		mm_proctable_free(h->procs);
		free(h);
		return NULL;
	}
	h->cur = -1;
	h->started_ms = h->window_start_ms = start_ms;
	h->interval_s = cfg->interval_s;
	mm_clock_init(&h->clock, cfg->interval_s, 0, start_ms);
	for (unsigned i = 0; mm_plugins[i] && i < MAX_PLUGINS; i++) {
		struct slot *s = &h->slots[h->nslots++];
		s->p = mm_plugins[i];
		s->enabled = mm_config_collector_enabled(cfg, s->p->name);
		s->state = s->enabled ? MM_COLLECTOR_RUNNING : MM_COLLECTOR_DISABLED;
		if (!s->enabled)
			snprintf(s->reason, sizeof(s->reason), "not in the configured collectors");
		snprintf(s->source, sizeof(s->source), "%s",
			 s->p->tracepoints && s->p->tracepoints[0].system ? "perf" : "procfs");
	}
	h->duty_pm = mm_config_duty_pm(cfg);
	if (h->duty_pm < 1000) {
		for (unsigned i = 0; i < h->nslots; i++)
			if (h->slots[i].enabled && h->slots[i].p->cycle) {
				h->slots[i].cycled = h->cycled = true;
				h->cycle = h->slots[i].p->cycle;
			}
	}
	size_t data = 0;
	for (unsigned i = 0; i < h->nslots; i++) {
		if (!h->slots[i].cycled)
			continue;
		h->slots[i].proc_off = data;
		data += (h->slots[i].p->proc_size + 7) & ~(size_t)7;
	}
	mm_proctable_reserve(h->procs, data);
	if (h->cycled) {
		mm_duty_clock_init(&h->duty, cfg->interval_s, h->duty_pm, start_ms);
		h->duty_done_slot = start_ms / h->duty.slot_ms;
	}
	latency_off(h, cfg->fault_latency);
	h->g_nameless = mm_host_global(
		h, "host_events", "nameless_entries",
		"Processes stored as pid-N: counts for a pid with no FORK record, gone from /proc, "
		"and no name from the collector that asked");
	struct utsname u;
	if (uname(&u) == 0)
		snprintf(h->kernel, sizeof(h->kernel), "%s", u.release);
	return h;
}

void mm_host_free(struct mm_host *h)
{
	if (!h)
		return;
	for (unsigned i = 0; i < h->nslots; i++)
		if (h->slots[i].state_ptr && h->slots[i].p->free)
			h->slots[i].p->free(h->slots[i].state_ptr);
	mm_proctable_free(h->procs);
	mm_snapshot_unref(h->last_closed);
	mm_cgtable_free(h->cgroups);
	free(h->streams);
	free(h->globals);
	free(h);
}

/* Whether slot @i's tracepoints are opened in pass @cycled of mm_host_wanted(). */
static bool wants(const struct mm_host *h, unsigned i, bool cycled)
{
	const struct slot *sl = &h->slots[i];
	return sl->enabled && !sl->external && !sl->fed && sl->cycled == cycled;
}

/* One pass: the cycled collectors' streams are their own (switched on and off), the others'
 * are shared. */
static int wanted_pass(struct mm_host *h, bool cycled, mm_host_wanted_fn fn, void *ctx)
{
	for (unsigned i = 0; i < h->nslots; i++) {
		if (!wants(h, i, cycled))
			continue;
		for (const struct mm_tp_req *r = h->slots[i].p->tracepoints; r && r->system; r++) {
			/* Report each tracepoint once, at its first request, with callchain set if
			 * any collector asks for it, filtered only if all ask for one filter. */
			bool first = true, cc = false, filtered = r->filter != NULL;
			for (unsigned j = 0; j < h->nslots; j++) {
				if (!wants(h, j, cycled))
					continue;
				for (const struct mm_tp_req *q = h->slots[j].p->tracepoints;
				     q && q->system; q++) {
					if (strcmp(q->system, r->system) ||
					    strcmp(q->name, r->name))
						continue;
					cc |= q->callchain;
					if (!q->filter || !r->filter ||
					    strcmp(q->filter, r->filter))
						filtered = false;
					if (j < i || (j == i && q < r))
						first = false;
				}
			}
			if (cycled)
				h->adding = r == h->slots[i].p->tracepoints ? MM_STREAM_OPENER
									    : MM_STREAM_EVIDENCE;
			int ret =
				first ? fn(ctx, r->system, r->name, cc, filtered ? r->filter : NULL)
				      : 0;
			h->adding = MM_STREAM_ALWAYS;
			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

bool mm_host_tp_rare(const struct mm_host *h, const char *system, const char *name)
{
	bool asked = false;
	for (unsigned i = 0; i < h->nslots; i++) {
		if (!wants(h, i, false) && !wants(h, i, true))
			continue;
		for (const struct mm_tp_req *r = h->slots[i].p->tracepoints; r && r->system; r++) {
			if (strcmp(r->system, system) || strcmp(r->name, name))
				continue;
			if (!r->rare)
				return false;
			asked = true;
		}
	}
	return asked;
}

int mm_host_wanted(struct mm_host *h, mm_host_wanted_fn fn, void *ctx)
{
	int r = wanted_pass(h, false, fn, ctx);
	return r < 0 ? r : wanted_pass(h, true, fn, ctx);
}

/* Whether the slot's hooks are called: running, and not filled by an in-kernel source. */
bool mm_host_hooked(const struct slot *sl)
{
	return sl->state == MM_COLLECTOR_RUNNING && !sl->external;
}

static int add_stream(struct mm_host *h, struct stream *proto)
{
	struct stream *n = realloc(h->streams, (h->nstreams + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	h->streams = n;
	proto->tp.stream = h->nstreams;
	h->streams[h->nstreams] = *proto;
	return (int)h->nstreams++;
}

int mm_host_add_tp(struct mm_host *h, const char *system, const char *name, struct tep_event *ev,
		   uint64_t sample_type, const char *error)
{
	struct stream s = {0};
	snprintf(s.system, sizeof(s.system), "%s", system);
	snprintf(s.name, sizeof(s.name), "%s", name);
	s.open = !error;
	if (error)
		snprintf(s.error, sizeof(s.error), "%s", error);
	s.sample_type = sample_type;
	s.tp.ev = ev;
	s.role = h->adding;
	return add_stream(h, &s);
}

int mm_host_add_task_stream(struct mm_host *h, uint64_t sample_type, const char *error)
{
	struct stream s = {0};
	snprintf(s.system, sizeof(s.system), "perf");
	snprintf(s.name, sizeof(s.name), "task");
	s.is_task = true;
	s.open = !error;
	if (error)
		snprintf(s.error, sizeof(s.error), "%s", error);
	s.sample_type = sample_type;
	return add_stream(h, &s);
}

void mm_host_stream_opened(struct mm_host *h, unsigned stream, uint64_t sample_type,
			   const char *error)
{
	if (stream >= h->nstreams)
		return;
	struct stream *st = &h->streams[stream];
	st->sample_type = sample_type;
	st->open = !error;
	snprintf(st->error, sizeof(st->error), "%s", error ? error : "");
}

/* The stream of system:name that a cycled collector (@cycled) or another reads. */
static struct stream *find_stream(struct mm_host *h, const char *system, const char *name,
				  bool cycled)
{
	for (unsigned i = 0; i < h->nstreams; i++)
		if (!h->streams[i].is_task && !strcmp(h->streams[i].system, system) &&
		    !strcmp(h->streams[i].name, name) &&
		    (h->streams[i].role != MM_STREAM_ALWAYS) == cycled)
			return &h->streams[i];
	return NULL;
}

void mm_host_set_source(struct mm_host *h, const char *name, const char *source, const char *note)
{
	for (unsigned i = 0; i < h->nslots; i++) {
		struct slot *sl = &h->slots[i];
		if (strcmp(sl->p->name, name))
			continue;
		snprintf(sl->source, sizeof(sl->source), "%s", source);
		snprintf(sl->source_note, sizeof(sl->source_note), "%s", note ? note : "");
		/* An in-kernel source of a cycled collector switches its programs itself
		 * (mm_bpfsrc_set_phase); its counts come at each period's end (window.c). */
		bool in_kernel = sl->enabled && strcmp(source, "perf") != 0;
		sl->fed = in_kernel && sl->p->waits;
		sl->external = in_kernel && !sl->fed;
	}
}

void mm_host_set_latency(struct mm_host *h, const char *mode, const char *why)
{
	snprintf(h->latency_mode, sizeof(h->latency_mode), "%s", mode);
	snprintf(h->latency_why, sizeof(h->latency_why), "%s", why);
}

bool mm_host_latency_sampled(const struct mm_host *h, const char **why)
{
	if (why)
		*why = h->latency_why;
	return strcmp(h->latency_mode, "off") != 0;
}

void mm_host_waits(struct mm_host *h, const char *name, const struct mm_lock_wait *w)
{
	for (unsigned i = 0; i < h->nslots; i++) {
		struct slot *sl = &h->slots[i];
		if (strcmp(sl->p->name, name) || !sl->fed || !mm_host_hooked(sl))
			continue;
		h->cur = (int)i;
		sl->p->waits(sl->state_ptr, h, w);
		h->cur = -1;
	}
}

bool mm_host_fed(const struct mm_host *h)
{
	return h->cur >= 0 && h->slots[h->cur].fed;
}

void mm_host_start(struct mm_host *h)
{
	for (unsigned i = 0; i < h->nslots; i++)
		h->cycled_in_kernel |=
			h->slots[i].cycled && h->slots[i].enabled && h->slots[i].external;
	h->g_outside_phase = -1;
	if (h->cycle) {
		char family[32], name[64], help[160];
		snprintf(family, sizeof(family), "%s_records", h->cycle->name);
		snprintf(name, sizeof(name), "outside_%s", h->cycle->period);
		snprintf(help, sizeof(help),
			 "Records of a cycled collector's streams stamped outside their %s phase "
			 "(the loop switched them late), dropped.",
			 h->cycle->period);
		h->g_outside_phase = mm_host_global(h, family, name, help);
	}
	for (unsigned i = 0; i < h->nslots; i++) {
		struct slot *sl = &h->slots[i];
		if (!sl->enabled)
			continue;
		if (sl->external) {
			log_info("collector %s: running on the %s source", sl->p->name, sl->source);
			continue;
		}
		h->cur = (int)i;
		bool ok = true;
		for (const struct mm_tp_req *r = sl->p->tracepoints; !sl->fed && r && r->system;
		     r++) {
			struct stream *st = find_stream(h, r->system, r->name, sl->cycled);
			if (st && st->open)
				continue;
			const char *why = st ? st->error : "not opened";
			if (r->optional) {
				mm_host_note(h, "optional tracepoint %s:%s unavailable (%s)",
					     r->system, r->name, why);
				continue;
			}
			mm_host_fail(h, "tracepoint %s:%s unavailable: %s", r->system, r->name,
				     why);
			ok = false;
			break;
		}
		if (ok && sl->p->init(h, &sl->state_ptr) < 0 && sl->state != MM_COLLECTOR_FAILED)
			mm_host_fail(h, "initialisation failed");
		if (sl->state == MM_COLLECTOR_RUNNING) {
			for (const struct mm_tp_req *r = sl->p->tracepoints;
			     !sl->fed && r && r->system; r++) {
				struct stream *st = find_stream(h, r->system, r->name, sl->cycled);
				if (st && st->open && r->handler && st->nsubs < MAX_PLUGINS) {
					st->subs[st->nsubs].slot = i;
					st->subs[st->nsubs++].handler = r->handler;
				}
			}
			log_info("collector %s: running%s%s%s%s", sl->p->name,
				 sl->fed ? " on the source " : "", sl->fed ? sl->source : "",
				 sl->reason[0] ? "; " : "", sl->reason);
		} else {
			log_error("collector %s: %s", sl->p->name, sl->reason);
		}
		h->cur = -1;
	}
}

uint64_t mm_host_sample_type(const struct mm_host *h, unsigned stream)
{
	return stream < h->nstreams ? h->streams[stream].sample_type : 0;
}

bool mm_host_stream_is_task(const struct mm_host *h, unsigned stream)
{
	return stream < h->nstreams && h->streams[stream].is_task;
}

unsigned mm_host_nstreams(const struct mm_host *h)
{
	return h->nstreams;
}

uint64_t mm_host_wall_ms(const struct mm_host *h, uint64_t mono_ns)
{
	int64_t ms = (int64_t)(mono_ns / 1000000) + h->mono_to_wall_ms;
	return ms > 0 ? (uint64_t)ms : 0;
}

/* A decoded COMM, FORK or EXIT record: names, new processes, exits (the collectors' thread_exit
 * hooks, then the process table). */
_Static_assert(sizeof(((struct mm_task_record *)0)->comm) == MM_COMM_LEN, "names fit as they are");

static void task_record(struct mm_host *h, const struct mm_task_record *t)
{
	if (t->type == PERF_RECORD_COMM) {
		if (t->pid == t->tid)
			mm_proctable_comm(h->procs, t->pid, t->comm, t->exec);
	} else if (t->type == PERF_RECORD_FORK) {
		if (t->pid == t->tid)
			mm_proctable_fork(h->procs, t->pid, t->ppid,
					  mm_host_wall_ms(h, t->time_ns));
	} else if (t->type == PERF_RECORD_EXIT) {
		for (unsigned i = 0; i < h->nslots; i++) {
			struct slot *sl = &h->slots[i];
			if (!mm_host_hooked(sl) || !sl->p->thread_exit)
				continue;
			h->cur = (int)i;
			sl->p->thread_exit(sl->state_ptr, h, t->pid, t->tid);
			h->cur = -1;
		}
		if (t->pid == t->tid)
			mm_proctable_exit(h->procs, t->pid);
	}
}

void mm_host_record(struct mm_host *h, unsigned stream, const struct perf_event_header *hdr)
{
	if (stream >= h->nstreams)
		return;
	struct stream *st = &h->streams[stream];

	struct mm_task_record t;
	if (hdr->type == PERF_RECORD_LOST) {
		if (mm_task_record_parse(hdr, &t) == 0)
			mm_host_lost(h, stream, t.lost);
		else
			st->bad++;
		return;
	}
	if (st->is_task) {
		st->samples++;
		st->window_samples++;
		int r = mm_task_record_parse(hdr, &t);
		if (r == -EINVAL)
			st->bad++;
		else if (r == 0)
			task_record(h, &t);
		return;
	}
	if (hdr->type != PERF_RECORD_SAMPLE)
		return;

	struct mm_sample s;
	if (mm_sample_parse(hdr, st->sample_type, &s) < 0) {
		st->bad++;
		return;
	}
	s.tp = &st->tp;
	st->samples++;
	st->window_samples++;
	for (unsigned i = 0; i < st->nsubs; i++) {
		struct slot *sl = &h->slots[st->subs[i].slot];
		if (!mm_host_hooked(sl))
			continue;
		h->cur = (int)st->subs[i].slot;
		st->subs[i].handler(sl->state_ptr, h, &s);
		h->cur = -1;
	}
}

void mm_host_lost(struct mm_host *h, unsigned stream, uint64_t n)
{
	if (stream >= h->nstreams)
		return;
	h->streams[stream].lost += n;
	h->streams[stream].window_lost += n;
}

void mm_host_set_task_reader(struct mm_host *h, mm_host_task_reader_fn fn, void *rctx)
{
	h->task_reader = fn;
	h->task_reader_ctx = rctx;
}

int mm_host_read_tasks(struct mm_host *h, mm_task_fn fn, void *ctx)
{
	return h->task_reader ? h->task_reader(h->task_reader_ctx, fn, ctx) : -ENOTSUP;
}

void mm_host_set_counter_source(struct mm_host *h, mm_host_counter_fn fn, void *ctx)
{
	h->counter_fn = fn;
	h->counter_ctx = ctx;
}

bool mm_host_window_closing(const struct mm_host *h)
{
	return h->closing_end_ms != 0;
}

bool mm_host_reading_period_end(const struct mm_host *h)
{
	return h->reading_period_end;
}

void mm_host_tick_collectors(struct mm_host *h)
{
	if (h->counter_fn)
		h->counter_fn(h->counter_ctx, h, h->closing_end_ms != 0);
	for (unsigned i = 0; i < h->nslots; i++) {
		struct slot *sl = &h->slots[i];
		if (!mm_host_hooked(sl) || !sl->p->tick)
			continue;
		h->cur = (int)i;
		sl->p->tick(sl->state_ptr, h);
		h->cur = -1;
	}
	uint64_t nameless = mm_proctable_nameless(h->procs);
	mm_host_global_add(h, h->g_nameless, nameless - h->nameless_seen);
	h->nameless_seen = nameless;
}

void mm_host_tick(struct mm_host *h)
{
	mm_host_tick_collectors(h);
	if (h->tap && h->tap->tick)
		h->tap->tick(h->tap_ctx, h->last_fed_ns);
}

void mm_host_finish(struct mm_host *h)
{
	for (unsigned i = 0; i < h->nslots; i++) {
		struct slot *sl = &h->slots[i];
		if (!mm_host_hooked(sl) || !sl->p->finish)
			continue;
		h->cur = (int)i;
		sl->p->finish(sl->state_ptr, h);
		h->cur = -1;
	}
}

/* --- calls for collectors (plugin.h) --- */

const struct mm_tp *mm_host_tp(struct mm_host *h, const char *system, const char *name)
{
	struct stream *st = find_stream(h, system, name, h->cur >= 0 && h->slots[h->cur].cycled);
	return st && st->open ? &st->tp : NULL;
}

const struct mm_tp *mm_host_fields(struct mm_host *h, const char *system, const char *name,
				   const char *const *names, const struct tep_format_field **ret)
{
	const struct mm_tp *tp = mm_host_tp(h, system, name);
	bool all = true;

	for (unsigned i = 0; names[i]; i++) {
		ret[i] = mm_tp_field(tp, names[i]);
		all &= ret[i] != NULL;
	}
	return all ? tp : NULL;
}

const struct tep_format_field *mm_tp_field(const struct mm_tp *tp, const char *name)
{
	if (!tp || !tp->ev)
		return NULL;
	return tep_find_field(tp->ev, name);
}

int mm_field_read(const struct tep_format_field *f, const struct mm_sample *s, uint64_t *ret)
{
	if (!f || (uint64_t)f->offset + f->size > s->raw_size)
		return -EINVAL;
	unsigned long long v;
	if (tep_read_number_field((struct tep_format_field *)f, s->raw, &v) < 0)
		return -EINVAL;
	*ret = v;
	return 0;
}

const char *mm_host_symbol(struct mm_host *h, uint64_t addr, uint64_t *ret_start)
{
	return mm_symbols_find(h->syms, addr, ret_start);
}

bool mm_field_read_counted(struct mm_host *h, int bad_id, const struct tep_format_field *f,
			   const struct mm_sample *s, uint64_t *ret)
{
	if (mm_field_read(f, s, ret) == 0)
		return true;
	mm_host_global_add(h, bad_id, 1);
	return false;
}

void mm_host_set_symbols(struct mm_host *h, const struct mm_symbols *syms)
{
	h->syms = syms;
}

bool mm_host_needs_symbols(const struct mm_host *h)
{
	for (unsigned i = 0; i < h->nslots; i++)
		if (mm_host_hooked(&h->slots[i]) && strcmp(h->slots[i].source, "procfs") &&
		    !h->slots[i].p->no_symbols)
			return true;
	return false;
}

/* The end of the window counts added now belong to: the closing one during its closing tick,
 * else the open one (mm_proctable_counts). */
static uint64_t counts_end_ms(const struct mm_host *h)
{
	return h->closing_end_ms ? h->closing_end_ms : h->clock.end_ms;
}

/* @p's counts for now (mm_proctable_counts), or the overflow record (counted) when there is no
 * entry or no room for its carry. */
static struct mm_proc_stats *counts_of(struct mm_host *h, struct mm_proc *p)
{
	struct mm_proc_stats *s = p ? mm_proctable_counts(h->procs, p, counts_end_ms(h)) : NULL;
	if (!s) {
		h->overflow_samples++;
		return &h->overflow;
	}
	return s;
}

struct mm_proc_stats *mm_host_proc(struct mm_host *h, uint32_t pid)
{
	return counts_of(h, mm_proctable_get(h->procs, pid, h->window_start_ms));
}

struct mm_proc_stats *mm_host_proc_seen(struct mm_host *h, uint32_t pid, uint64_t start_ms,
					const char *comm)
{
	struct mm_proc_ident seen = {.start_ms = start_ms};
	snprintf(seen.comm, sizeof(seen.comm), "%s", comm ? comm : "");
	return counts_of(h, mm_proctable_get_seen(h->procs, pid, &seen));
}

struct mm_proc_stats *mm_host_proc_known(struct mm_host *h, uint32_t pid)
{
	struct mm_proc *p = mm_proctable_find(h->procs, pid);
	return p ? counts_of(h, p) : NULL;
}

struct mm_proc_stats *mm_host_proc_started(struct mm_host *h, uint32_t pid, uint64_t start_ms)
{
	struct mm_proc *p = mm_proctable_find_started(h->procs, pid, start_ms);
	return p ? counts_of(h, p) : NULL;
}

void mm_host_set_cgroup_hierarchy(struct mm_host *h, int hierarchy)
{
	mm_proctable_set_hierarchy(h->procs, hierarchy);
}

void mm_host_proc_moved(struct mm_host *h, uint32_t pid, int hierarchy, const char *path)
{
	mm_proctable_moved(h->procs, pid, hierarchy, path);
}

struct mm_proc_stats *mm_host_proc_exited(struct mm_host *h, uint32_t pid, uint64_t start_ms,
					  const char *comm)
{
	return counts_of(h, mm_proctable_add_exited(h->procs, pid, start_ms, comm));
}

struct mm_proc_stats *mm_host_proc_started_within(struct mm_host *h, uint32_t pid, uint64_t lo_ms,
						  uint64_t hi_ms)
{
	struct mm_proc *p = mm_proctable_find_started_within(h->procs, pid, lo_ms, hi_ms);
	return p ? counts_of(h, p) : NULL;
}

const char *mm_host_proc_name(struct mm_host *h, uint32_t pid)
{
	struct mm_proc *p = mm_proctable_find(h->procs, pid);
	return p ? p->comm : NULL;
}

int mm_host_global(struct mm_host *h, const char *family, const char *name, const char *help)
{
	for (unsigned i = 0; i < h->nglobals; i++)
		if (!strcmp(h->globals[i].family, family) && !strcmp(h->globals[i].name, name))
			return (int)i;
	struct global *g = realloc(h->globals, (h->nglobals + 1) * sizeof(*g));
	if (!g)
		return -ENOMEM;
	h->globals = g;
	g = &h->globals[h->nglobals];
	memset(g, 0, sizeof(*g));
	snprintf(g->family, sizeof(g->family), "%s", family);
	snprintf(g->name, sizeof(g->name), "%s", name);
	snprintf(g->help, sizeof(g->help), "%s", help ? help : "");
	g->slot = h->cur;
	return (int)h->nglobals++;
}

void mm_host_global_add(struct mm_host *h, int id, uint64_t delta)
{
	if (id >= 0 && (unsigned)id < h->nglobals)
		h->globals[id].window += delta;
}

int mm_host_fail(struct mm_host *h, const char *fmt, ...)
{
	if (h->cur < 0)
		return -EIO;
	struct slot *sl = &h->slots[h->cur];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sl->reason, sizeof(sl->reason), fmt, ap);
	va_end(ap);
	if (sl->state == MM_COLLECTOR_RUNNING && sl->state_ptr)
		log_error("collector %s failed: %s", sl->p->name, sl->reason);
	sl->state = MM_COLLECTOR_FAILED;
	return -EIO;
}

void mm_host_note(struct mm_host *h, const char *fmt, ...)
{
	if (h->cur < 0)
		return;
	struct slot *sl = &h->slots[h->cur];
	size_t len = strlen(sl->reason);
	if (len && len + 2 < sizeof(sl->reason)) {
		memcpy(sl->reason + len, "; ", 3);
		len += 2;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sl->reason + len, sizeof(sl->reason) - len, fmt, ap);
	va_end(ap);
}

enum mm_stream_role mm_host_stream_role(const struct mm_host *h, unsigned stream)
{
	return stream < h->nstreams ? h->streams[stream].role : MM_STREAM_ALWAYS;
}

void mm_host_set_clock_offset(struct mm_host *h, int64_t mono_to_wall_ms)
{
	h->mono_to_wall_ms = mono_to_wall_ms;
	h->clock.mono_to_wall_ms = mono_to_wall_ms;
}

int mm_host_watch(struct mm_host *h, int fd, mm_host_watch_fn fn, void *ctx)
{
	if (h->nwatches == MM_HOST_MAX_WATCHES)
		return -ENOSPC;
	h->watches[h->nwatches].fd = fd;
	h->watches[h->nwatches].slot = h->cur;
	h->watches[h->nwatches].fn = fn;
	h->watches[h->nwatches].ctx = ctx;
	h->nwatches++;
	return 0;
}

int mm_host_watched_fd(const struct mm_host *h, unsigned i)
{
	return i < h->nwatches ? h->watches[i].fd : -1;
}

void mm_host_watch_ready(struct mm_host *h, unsigned i)
{
	if (i >= h->nwatches)
		return;
	int slot = h->watches[i].slot;
	if (slot >= 0 && h->slots[slot].state != MM_COLLECTOR_RUNNING)
		return;
	h->cur = slot;
	h->watches[i].fn(h->watches[i].ctx, h);
	h->cur = -1;
}
