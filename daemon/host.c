/*
 * The collector host (see host.h): dispatches decoded records to collectors, keeps the process
 * table, global counters, per-stream event/loss counts and collector states, and turns them into
 * snapshots. Pure code: the live sampler and replay both drive it.
 */
#include "host.h"

#include <errno.h>
#include <malloc.h>
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
#include "split.h"
#include "symbols.h"

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
	enum mm_burst_role burst; /* a bursted collector's own stream (split.h) */
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
	bool burst;	       /* runs in bursts on streams of its own (split.h) */
	size_t proc_off;       /* in bursts: its per-process bytes in mm_proc.data */
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
	unsigned windows_without_exits; /* consecutive windows that freed none */
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
	struct mm_cgtable *cgroups;	 /* the per-unit breakdown of /metrics */
	uint64_t started_ms, window_start_ms;
	int64_t mono_to_wall_ms;
	unsigned interval_s;
	uint64_t closing_end_ms;       /* the closing tick's window end, else 0 */
	bool reading_burst;	       /* counter_fn called for a burst's end */
	mm_host_counter_fn counter_fn; /* a source that counts in place of records */
	void *counter_ctx;
	uint64_t windows_stored, store_errors;
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

	/* The fault split (split.h): its duty, and in bursts their clock, the last slot whose
	 * burst ended in event time, and the burst time of the open window. */
	unsigned split_duty_pm;
	bool bursts;
	bool split_external; /* the bursts' classifier counts in the kernel (BPF), set at start */
	struct mm_split_clock split;
	uint64_t split_done_slot, split_observed_ms;
	enum mm_burst_role adding; /* in mm_host_wanted(): the role of streams being added */
	int g_outside_burst;	   /* global: burst-stream records stamped outside their phase */
	char latency_mode[16], latency_why[256]; /* mm_host_set_latency */
};

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
	h->split_duty_pm = mm_config_split_duty_pm(cfg);
	if (h->split_duty_pm < 1000) {
		for (unsigned i = 0; i < h->nslots; i++)
			if (h->slots[i].enabled && h->slots[i].p->duty == MM_DUTY_BURSTS)
				h->slots[i].burst = h->bursts = true;
	}
	size_t data = 0;
	for (unsigned i = 0; i < h->nslots; i++) {
		if (!h->slots[i].burst)
			continue;
		h->slots[i].proc_off = data;
		data += (h->slots[i].p->proc_size + 7) & ~(size_t)7;
	}
	mm_proctable_reserve(h->procs, data);
	if (h->bursts) {
		mm_split_clock_init(&h->split, cfg->interval_s, h->split_duty_pm, start_ms);
		h->split_done_slot = start_ms / h->split.slot_ms;
	}
	mm_host_set_latency(
		h, "off",
		cfg->fault_latency
			? "fault_latency = on, but it needs mmaplock or faults on the BPF "
			  "source"
			: "fault_latency = off (the default): the fault-completion software "
			  "events it needs cost every fault on the machine while open");
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
	mm_cgtable_free(h->cgroups);
	free(h->streams);
	free(h->globals);
	free(h);
}

/* Whether slot @i's tracepoints are opened in pass @burst of mm_host_wanted(). */
static bool wants(const struct mm_host *h, unsigned i, bool burst)
{
	const struct slot *sl = &h->slots[i];
	return sl->enabled && !sl->external && !sl->fed && sl->burst == burst;
}

/* One pass: the bursted collectors' streams are their own (switched on and off), the others'
 * are shared. */
static int wanted_pass(struct mm_host *h, bool burst, mm_host_wanted_fn fn, void *ctx)
{
	for (unsigned i = 0; i < h->nslots; i++) {
		if (!wants(h, i, burst))
			continue;
		for (const struct mm_tp_req *r = h->slots[i].p->tracepoints; r && r->system; r++) {
			/* Report each tracepoint once, at its first request, with callchain set if
			 * any collector asks for it, filtered only if all ask for one filter. */
			bool first = true, cc = false, filtered = r->filter != NULL;
			for (unsigned j = 0; j < h->nslots; j++) {
				if (!wants(h, j, burst))
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
			if (burst)
				h->adding = r == h->slots[i].p->tracepoints ? MM_BURST_OPENER
									    : MM_BURST_EVIDENCE;
			int ret =
				first ? fn(ctx, r->system, r->name, cc, filtered ? r->filter : NULL)
				      : 0;
			h->adding = MM_BURST_NONE;
			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

int mm_host_wanted(struct mm_host *h, mm_host_wanted_fn fn, void *ctx)
{
	int r = wanted_pass(h, false, fn, ctx);
	return r < 0 ? r : wanted_pass(h, true, fn, ctx);
}

/* Whether the slot's hooks are called: running, and not filled by an in-kernel source. */
static bool hooked(const struct slot *sl)
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
	s.burst = h->adding;
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

/* The stream of system:name that a collector in bursts (@burst) or not reads. */
static struct stream *find_stream(struct mm_host *h, const char *system, const char *name,
				  bool burst)
{
	for (unsigned i = 0; i < h->nstreams; i++)
		if (!h->streams[i].is_task && !strcmp(h->streams[i].system, system) &&
		    !strcmp(h->streams[i].name, name) &&
		    (h->streams[i].burst != MM_BURST_NONE) == burst)
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
		/* An in-kernel source in bursts (the faults collector on BPF) switches its
		 * programs itself (mm_bpfsrc_set_phase); its counts come at end_burst(). */
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
		if (strcmp(sl->p->name, name) || !sl->fed || !hooked(sl))
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
		h->split_external |=
			h->slots[i].burst && h->slots[i].enabled && h->slots[i].external;
	h->g_outside_burst =
		h->bursts ? mm_host_global(
				    h, "split_records", "outside_burst",
				    "Records of the fault split's streams stamped outside "
				    "their burst phase (the loop switched them late), dropped.")
			  : -1;
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
			struct stream *st = find_stream(h, r->system, r->name, sl->burst);
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
				struct stream *st = find_stream(h, r->system, r->name, sl->burst);
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

static uint64_t wall_ms(const struct mm_host *h, uint64_t mono_ns)
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
			mm_proctable_fork(h->procs, t->pid, wall_ms(h, t->time_ns));
	} else if (t->type == PERF_RECORD_EXIT) {
		for (unsigned i = 0; i < h->nslots; i++) {
			struct slot *sl = &h->slots[i];
			if (!hooked(sl) || !sl->p->thread_exit)
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
		if (!hooked(sl))
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

void mm_host_set_counter_source(struct mm_host *h, mm_host_counter_fn fn, void *ctx)
{
	h->counter_fn = fn;
	h->counter_ctx = ctx;
}

bool mm_host_window_closing(const struct mm_host *h)
{
	return h->closing_end_ms != 0;
}

bool mm_host_reading_burst(const struct mm_host *h)
{
	return h->reading_burst;
}

static void tick_collectors(struct mm_host *h)
{
	if (h->counter_fn)
		h->counter_fn(h->counter_ctx, h, h->closing_end_ms != 0);
	for (unsigned i = 0; i < h->nslots; i++) {
		struct slot *sl = &h->slots[i];
		if (!hooked(sl) || !sl->p->tick)
			continue;
		h->cur = (int)i;
		sl->p->tick(sl->state_ptr, h);
		h->cur = -1;
	}
}

void mm_host_tick(struct mm_host *h)
{
	tick_collectors(h);
	if (h->tap && h->tap->tick)
		h->tap->tick(h->tap_ctx, h->last_fed_ns);
}

void mm_host_finish(struct mm_host *h)
{
	for (unsigned i = 0; i < h->nslots; i++) {
		struct slot *sl = &h->slots[i];
		if (!hooked(sl) || !sl->p->finish)
			continue;
		h->cur = (int)i;
		sl->p->finish(sl->state_ptr, h);
		h->cur = -1;
	}
}

/* --- calls for collectors (plugin.h) --- */

const struct mm_tp *mm_host_tp(struct mm_host *h, const char *system, const char *name)
{
	struct stream *st = find_stream(h, system, name, h->cur >= 0 && h->slots[h->cur].burst);
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
	struct mm_proc_stats *s = p ? mm_proctable_counts(p, counts_end_ms(h)) : NULL;
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

struct mm_proc_stats *mm_host_proc_known(struct mm_host *h, uint32_t pid)
{
	struct mm_proc *p = mm_proctable_find(h->procs, pid);
	return p ? counts_of(h, p) : NULL;
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

/* --- snapshots --- */

static int cmp_activity(const void *a, const void *b)
{
	const struct mm_snap_proc *x = a, *y = b;
	uint64_t ax = mm_stats_activity(&x->total), ay = mm_stats_activity(&y->total);
	if (ax != ay)
		return ax > ay ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* What /api/v1/status says of the split: the mode, and why. */
static void split_status(const struct mm_host *h, struct mm_snapshot *s)
{
	const struct slot *sl = NULL;
	for (unsigned i = 0; i < h->nslots; i++)
		if (h->slots[i].p->duty == MM_DUTY_BURSTS)
			sl = &h->slots[i];
	s->split.duty_pm = h->split_duty_pm;
	snprintf(s->split.source, sizeof(s->split.source), "%s", sl ? sl->source : "");
	if (!sl || !sl->enabled || h->split_duty_pm == 0) {
		snprintf(s->split.mode, sizeof(s->split.mode), "off");
		snprintf(s->split.why, sizeof(s->split.why),
			 "split_duty 0: no fault outcomes, only the exact totals");
	} else if (sl->state != MM_COLLECTOR_RUNNING) {
		snprintf(s->split.mode, sizeof(s->split.mode), "off");
		snprintf(s->split.why, sizeof(s->split.why),
			 "the %s collector is not running: %.160s", sl->p->name, sl->reason);
	} else if (!h->bursts) {
		snprintf(s->split.mode, sizeof(s->split.mode), "continuous");
		snprintf(s->split.why, sizeof(s->split.why),
			 "split_duty 100%%: every fault classified, outcome counts exact");
	} else {
		snprintf(s->split.mode, sizeof(s->split.mode), "bursts");
		s->split.burst_ms = h->split.burst_ms;
		s->split.slot_ms = h->split.slot_ms;
		snprintf(s->split.why, sizeof(s->split.why),
			 "split_duty %u.%u%%: classifying every fault on the %s source costs "
			 "the workload more than the default may (README, \"The split in the "
			 "default\"), so it runs %llu ms of every %llu ms and the outcome "
			 "counts are estimates",
			 h->split_duty_pm / 10, h->split_duty_pm % 10, sl->source,
			 (unsigned long long)h->split.burst_ms,
			 (unsigned long long)h->split.slot_ms);
	}
}

/* The window hooks of the collectors in bursts (plugin.h) on the counts @ps of process @p, or of
 * the overflow record (@p NULL). */
static void duty_window(struct mm_host *h, struct mm_proc *p, struct mm_proc_stats *ps,
			bool closing)
{
	for (unsigned i = 0; i < h->nslots; i++) {
		const struct slot *sl = &h->slots[i];
		if (sl->burst && sl->p->window && (!p || p->data))
			sl->p->window(p ? (char *)p->data + sl->proc_off : NULL, ps,
				      h->split_observed_ms, closing);
	}
}

/* The processes with counts, in the window (estimated, unless @closing: a closing window was
 * estimated in place by mm_host_close_window) and in total, busiest first; @n entries at most. */
static void fill_procs(struct mm_host *h, struct mm_snapshot *s, size_t n, bool closing)
{
	size_t i = 0;
	s->all_window = h->overflow;
	for (struct mm_proc *p = mm_proctable_first(h->procs); p; p = p->next) {
		struct mm_proc_stats win = p->window;
		if (h->bursts && !closing)
			duty_window(h, p, &win, false);
		mm_stats_add(&s->all_window, &win);
		if (mm_stats_is_zero(&win) && mm_stats_is_zero(&p->closed))
			continue;
		if (i == n)
			break; /* cannot happen (see build()); never write past the array */
		struct mm_snap_proc *sp = &s->procs[i++];
		sp->pid = p->pid;
		sp->start_ms = p->start_ms;
		memcpy(sp->comm, p->comm, sizeof(sp->comm));
		memcpy(sp->cgroup, p->cgroup, sizeof(sp->cgroup));
		sp->exited = p->exited;
		sp->window = win;
		sp->total = p->closed;
		mm_stats_add(&sp->total, &win);
	}
	s->nprocs = i; /* fewer when estimating emptied a window (only counts it cannot scale) */
	qsort(s->procs, s->nprocs, sizeof(*s->procs), cmp_activity);
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
		/* A bursted collector's own stream of a shared tracepoint is named apart. */
		snprintf(se->name, sizeof(se->name), "%s:%s%s", st->system, st->name,
			 st->burst ? "/split" : "");
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
	}
}

static struct mm_snapshot *build(struct mm_host *h, uint64_t now_ms, bool closing)
{
	size_t n = 0;
	for (struct mm_proc *p = mm_proctable_first(h->procs); p; p = p->next)
		if (!mm_stats_is_zero(&p->window) || !mm_stats_is_zero(&p->closed))
			n++;
	/* Estimating never turns an empty window non-empty (mm_split_estimate), at most the
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
	fill_procs(h, s, n, closing);
	fill_counters(h, s);
	split_status(h, s);
	snprintf(s->latency.mode, sizeof(s->latency.mode), "%s", h->latency_mode);
	snprintf(s->latency.why, sizeof(s->latency.why), "%s", h->latency_why);
	s->windows_stored = h->windows_stored;
	s->store_errors = h->store_errors;
	s->procs_tracked = mm_proctable_count(h->procs);
	for (unsigned c = 0; c < h->nslots; c++) {
		struct slot *sl = &h->slots[c];
		if (!hooked(sl) || !sl->p->snapshot)
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
 * the exits stop (the second window without one: the first one's predecessor's snapshot, which
 * still has their rows, is gone by then), and every TRIM_CAP exits under endless churn. In the
 * loop's thread: a few ms, at most once per TRIM_MIN exits. */
#define TRIM_MIN 256
#define TRIM_CAP 65536

static void trim_after_churn(struct mm_host *h, unsigned freed)
{
	h->freed_since_trim += freed;
	h->windows_without_exits = freed ? 0 : h->windows_without_exits + 1;
	if (h->freed_since_trim < TRIM_MIN ||
	    (h->windows_without_exits != 2 && h->freed_since_trim < TRIM_CAP))
		return;
	h->freed_since_trim = 0;
	malloc_trim(0);
}

struct mm_snapshot *mm_host_close_window(struct mm_host *h, uint64_t end_ms)
{
	if (h->bursts) {
		for (struct mm_proc *p = mm_proctable_first(h->procs); p; p = p->next)
			duty_window(h, p, &p->window, true);
		duty_window(h, NULL, &h->overflow, true);
	}
	h->split_observed_ms = 0;
	struct mm_snapshot *s = build(h, end_ms, true);

	if (s && mm_cgtable_close(h->cgroups, s) < 0)
		log_warning("out of memory choosing the cgroups with their own series, ignoring");

	for (struct mm_proc *p = mm_proctable_first(h->procs); p; p = p->next)
		mm_stats_add(&h->all_closed, &p->window);
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
	if (h->bursts) {
		mm_split_clock_init(&h->split, interval_s, h->split_duty_pm, h->split.seed);
		h->split_done_slot = now_ms / h->split.slot_ms;
	}
}

enum mm_burst_role mm_host_stream_burst(const struct mm_host *h, unsigned stream)
{
	return stream < h->nstreams ? h->streams[stream].burst : MM_BURST_NONE;
}

enum mm_split_phase mm_host_burst_phase(const struct mm_host *h, uint64_t now_ns,
					uint64_t *ret_next_ns)
{
	*ret_next_ns = UINT64_MAX;
	if (!h->bursts)
		return MM_SPLIT_OFF;
	uint64_t next_ms;
	enum mm_split_phase ph = mm_split_phase_at(&h->split, wall_ms(h, now_ns), &next_ms);
	int64_t mono_ms = (int64_t)next_ms - h->mono_to_wall_ms;
	if (next_ms != UINT64_MAX && mono_ms > 0)
		*ret_next_ns = (uint64_t)mono_ms * 1000000ull;
	return ph;
}

/* A burst's grace ended in event time: no record of it is still to come. The bursted collectors
 * account what they hold (their finish hook), and each process's counts of the burst go to its
 * accumulator (the spread between bursts). */
static void end_burst(struct mm_host *h, const struct mm_split_burst *b)
{
	if (h->counter_fn && h->split_external) {
		h->reading_burst = true;
		h->counter_fn(h->counter_ctx, h, false); /* the burst's counts, from the kernel */
		h->reading_burst = false;
	}
	for (unsigned i = 0; i < h->nslots; i++) {
		struct slot *sl = &h->slots[i];
		if (!sl->burst || !hooked(sl) || !sl->p->finish)
			continue;
		h->cur = (int)i;
		sl->p->finish(sl->state_ptr, h);
		h->cur = -1;
	}
	for (unsigned i = 0; i < h->nslots; i++) {
		const struct slot *sl = &h->slots[i];
		if (!sl->burst || !sl->p->duty_end)
			continue;
		for (struct mm_proc *p = mm_proctable_first(h->procs); p; p = p->next)
			if (p->data)
				sl->p->duty_end((char *)p->data + sl->proc_off, &p->window);
	}
	h->split_observed_ms += b->off_ms - b->on_ms;
}

/* Ends the bursts whose grace is over by wall time @now_ms (a gap in time skips bursts); for a
 * classifier in the kernel, once its threads have flushed what they counted in it too. */
static void split_catch_up(struct mm_host *h, uint64_t now_ms)
{
	if (!h->bursts)
		return;
	uint64_t slot = now_ms / h->split.slot_ms;
	uint64_t wait_ms = MM_SPLIT_GRACE_MS + (h->split_external ? MM_SPLIT_FLUSH_MS : 0);
	if (slot > h->split_done_slot + 4)
		h->split_done_slot = slot - 4;
	while (h->split_done_slot <= slot) {
		struct mm_split_burst b = mm_split_burst_of(&h->split, h->split_done_slot);
		if (b.off_ms + wait_ms > now_ms)
			break;
		end_burst(h, &b);
		h->split_done_slot++;
	}
}

void mm_host_set_store_stats(struct mm_host *h, uint64_t windows_stored, uint64_t store_errors)
{
	h->windows_stored = windows_stored;
	h->store_errors = store_errors;
}

void mm_host_set_clock_offset(struct mm_host *h, int64_t mono_to_wall_ms)
{
	h->mono_to_wall_ms = mono_to_wall_ms;
	h->clock.mono_to_wall_ms = mono_to_wall_ms;
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

void mm_host_set_tap(struct mm_host *h, const struct mm_tap *tap, void *ctx)
{
	h->tap = tap;
	h->tap_ctx = ctx;
}

/* The closing tick, the window's snapshot, the sinks. */
static void close_window(struct mm_host *h, uint64_t end_ms)
{
	h->closing_end_ms = end_ms ? end_ms : 1;
	tick_collectors(h);
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

/* Closes what @mono_ns passed; returns the number of windows closed (at most two). */
static unsigned advance(struct mm_host *h, uint64_t mono_ns)
{
	unsigned n = 0;
	split_catch_up(h, wall_ms(h, mono_ns));
	for (uint64_t end; (end = mm_clock_next_close(&h->clock, mono_ns)); n++)
		close_window(h, end);
	return n;
}

/* Whether a record of a burst stream stamped @time_ns is inside its phase: the schedule in event
 * time decides what is classified, not when the loop got round to switching the stream. */
static bool in_burst(const struct mm_host *h, unsigned stream, uint64_t time_ns)
{
	enum mm_burst_role role = mm_host_stream_burst(h, stream);
	if (role == MM_BURST_NONE || !h->bursts || !time_ns)
		return true;
	uint64_t next;
	enum mm_split_phase ph = mm_split_phase_at(&h->split, wall_ms(h, time_ns), &next);
	return role == MM_BURST_OPENER ? ph == MM_SPLIT_ON : ph != MM_SPLIT_OFF;
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
	if (hdr->type == PERF_RECORD_SAMPLE && !in_burst(h, stream, time_ns)) {
		mm_host_global_add(h, h->g_outside_burst, 1);
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
}

void mm_host_feed_stats(const struct mm_host *h, uint64_t *ret_records, uint64_t *ret_late)
{
	*ret_records = h->fed;
	*ret_late = h->late;
}
