/*
 * The BPF source (see bpfsource.h), a generic loader: it knows no collector by name. It walks
 * the collectors that have an in-kernel part (struct mm_plugin_bpf, plugin.h) and are enabled;
 * each says which programs of the one BPF object it needs, the .rodata flag that makes the
 * programs count for it, the kernel functions its stack checks compare against (from
 * /proc/kallsyms: a collector whose required ones are missing stays on the perf rings), what
 * else its .rodata needs (its configure hook), where its kernel counters land in struct
 * mm_proc_stats, and which programs its duty cycle attaches and detaches. Loading: the skeleton
 * generated at build time from plugins/bpf/counters.bpf.c is opened, its .rodata variables set
 * by name (found in the object's BTF), only the programs an enabled collector names loaded (the
 * verifier's last message is kept for the log) and attached. Any failure leaves every collector
 * on the perf rings with one log line saying why; with `source = bpf` it is fatal instead.
 *
 * Reading: at each tick the entries of the process map that changed are read (threads flush their
 * counts into it as they leave the CPU, exit, or every 20 ms while running, and mark the entry in
 * the changed map: counters.bpf.c); every entry only at the first tick and after the kernel lost
 * something (full_walk()). The growth of each entry
 * since the previous reading (kept here per pid) is added to the process's open window
 * through mm_host_proc(), counter by counter into the struct mm_proc_stats members the
 * collectors' field tables name (the same ones their perf handlers fill); the counts of a process
 * the host does not know yet wait for its FORK record (SETTLE_TICKS ticks at most: an entry made
 * from /proc after a fork storm's process is gone would be a nameless one). Exits come from the
 * ring buffer (one record per process, when its last thread exits, with its name): the final
 * growth is added to the entry the host still holds for the process (mm_host_proc_started_within,
 * by its start: waiting up to SETTLE_TICKS ticks for a process whose FORK record is not delivered
 * yet, then an exited entry of its own under that name) and the map entry is deleted, so
 * short-lived processes are counted and the map holds live processes only. A process whose
 * notification was lost (ring full, counted in the kernel) is found gone at the next closing tick,
 * which then walks every entry (kill(pid, 0): ESRCH), and settled the same way. The host's window
 * closes ~0.1-0.2 s after its wall-clock end (the perf path's horizon), so a window's BPF counts
 * end when it is closed, not at its nominal end; totals are unaffected.
 *
 * The lock-wait rows (lock_waits, one per pid, flags, lock, stack and window generation), for the
 * collector fed by waits (the one with a waits hook), are read at every tick too, their growth
 * handed to it, and at the closing tick the generation flips and the old one's rows are deleted
 * (collect_locks()).
 */
#include "bpfsource.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "parse.h"
#include "plugin.h"
#include "stats.h"

#ifdef MM_HAVE_BPF

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <linux/types.h>
#include <sys/ioctl.h>

#include "completion.h"
#include "counters.h"
#include "counters.skel.h"
#include "htab.h"
#include "symbols.h"
#include "tidmap.h"

#define DEFAULT_BTF  "/sys/kernel/btf/vmlinux"
#define MAX_PROCS    (1u << 20)
#define SETTLE_TICKS 3
#define NCOUNTERS    (offsetof(struct mm_bpf_counts, epoch) / sizeof(__u64)) /* all but epoch */
#define NVALUE	     (sizeof(struct mm_bpf_counts) / sizeof(__u64))
#define NSCALARS     (offsetof(struct mm_bpf_counts, mmap_lock_wait_hist) / sizeof(__u64))
#define LOG_SIZE     (1u << 20)
#define MAX_CPUS     1024
#define MAX_PLUGINS  16
#define MAX_SWITCHED 8

_Static_assert(MM_BPF_HIST_BUCKETS == MM_HIST_BUCKETS, "histograms must have the same buckets");
_Static_assert(MM_BPF_NOUTCOMES == MM_FAULT_OUTCOMES, "one latency histogram per outcome");

_Static_assert(sizeof(struct mm_bpf_lock_key) % 8 == 0, "an htab key: a multiple of 8, no padding");

/* What was already delivered of a lock row. */
struct lock_track {
	struct mm_bpf_lock_key key;
	__u64 contended, wait_ns;
	__u32 hist[MM_BPF_HIST_BUCKETS];
};

/* What was already delivered for the process a pid belongs to: the scalars, and the histograms
 * once one has a count (most processes never have one on the defaults: ~200 bytes a process
 * instead of 2.5 KiB). */
struct track {
	__u64 start_boottime_ns;
	bool exited;	  /* its exit notification came: settle and forget */
	char comm[16];	  /* the name the notification gave, "" without one */
	unsigned pending; /* ticks it waited, exited, for the host to know it */
	__u64 *hlast;	  /* NCOUNTERS - NSCALARS histogram buckets, NULL while all are 0 */
	/* The scalars a running collector takes (mm_bpfsrc.slot), nothing for the others: ~14
	 * on the defaults instead of all NSCALARS, ~90 bytes a process less. */
	__u64 last[];
};

struct mm_bpfsrc {
	struct mm_counters *skel;
	struct ring_buffer *ring;
	struct mm_tidmap *tracks; /* pid -> struct track */
	int ncpus;
	__u64 *values; /* a buffer for one map value: a process's counters, or a per-CPU stat */
	size_t dest[NCOUNTERS]; /* offset in struct mm_proc_stats of each counter */
	/* Each scalar's index in struct track's last[] (NO_SLOT: no collector takes it), and
	 * their count. */
	unsigned char slot[NSCALARS];
	unsigned nlast;
	__u64 stats_last[MM_BPF_NSTATS];
	int g_stats[MM_BPF_NSTATS], g_settled, g_swept, g_map_errors;
	struct bpf_link *links[2 * MAX_CPUS]; /* the fault-completion perf events */
	int link_fds[2 * MAX_CPUS];	      /* and their perf events */
	unsigned nlinks;
	/* A cycled collector (plugin.h; mm_bpfsrc_set_phase): the programs only it needs are
	 * attached for its on-periods only (an attached program costs every event): its duty
	 * programs for the period and its ending, its openers for the period only. */
	const struct mm_plugin_cycle *cycle; /* NULL: none runs cycled here */
	bool openers_cycled;		     /* some opener is switched too */
	const char *evidence[MAX_SWITCHED], *openers[MAX_SWITCHED];
	unsigned nevidence, nopeners;
	bool keep_attached; /* bpf_keep_attached (config.h): no detaching between periods */
	bool attach_failed;
	enum mm_phase phase;
	struct mm_bpf_key *settle; /* map entries to delete after the walk */
	size_t nsettle, settle_cap;
	/* Unless full_walk(), only the entries in the changed map are read (counters.bpf.c):
	 * its keys, taken out of it, and the ones the host could not take yet, for the next tick.
	 */
	struct mm_bpf_key *keys, *retry;
	size_t nkeys, keys_cap, nretry, retry_cap;
	bool walked;	    /* every entry was read once */
	__u64 lost_at_walk; /* exits_lost + changes_unmarked at the last full walk */
	/* The lock-wait rows of the collector fed by waits (NULL: none): delivered so far, by key
	 * (struct lock_track). */
	const struct mm_plugin *fed;
	struct mm_htab lock_tracks;
	struct mm_host *h; /* during collect */
};

/* The collectors with an in-kernel part, in registry order, and which of them count on BPF. */
struct wants {
	const struct mm_plugin *p[MAX_PLUGINS];
	bool on[MAX_PLUGINS];
	unsigned n;
};

static void wants_init(struct wants *w, const struct mm_config *cfg)
{
	w->n = 0;
	for (const struct mm_plugin *const *p = mm_plugins; *p && w->n < MAX_PLUGINS; p++) {
		if (!(*p)->bpf)
			continue;
		w->p[w->n] = *p;
		w->on[w->n++] = mm_config_collector_enabled(cfg, (*p)->name);
	}
}

/* The names of the collectors on BPF, comma-separated, into @buf. Returns false when none. */
static bool wants_list(const struct wants *w, char *buf, size_t len)
{
	buf[0] = '\0';
	for (unsigned i = 0; i < w->n; i++)
		if (w->on[i])
			snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? ", " : "",
				 w->p[i]->name);
	return buf[0] != '\0';
}

static void note_all(struct mm_host *h, const struct wants *w, const char *source, const char *why)
{
	for (unsigned i = 0; i < w->n; i++)
		if (w->on[i])
			mm_host_set_source(h, w->p[i]->name, source, why);
}

static bool listed(const char *const *names, const char *name)
{
	for (; names && *names; names++)
		if (!strcmp(*names, name))
			return true;
	return false;
}

static bool names_program(const struct mm_plugin_bpf *k, const char *name)
{
	return listed(k->programs, name) || listed(k->duty_programs, name) ||
	       listed(k->opener_programs, name);
}

/* Whether a collector on BPF needs program @name attached all the time: in its program list,
 * or in any list of one that does not run cycled (@cycled: the duty cycle is on). */
static bool continuous(const struct wants *w, const char *name, bool cycled)
{
	for (unsigned i = 0; i < w->n; i++) {
		const struct mm_plugin_bpf *k = w->p[i]->bpf;
		if (!w->on[i])
			continue;
		if (listed(k->programs, name))
			return true;
		if ((!cycled || w->p[i]->cycle == NULL) && names_program(k, name))
			return true;
	}
	return false;
}

static char *verifier_log;
static char libbpf_last[256];
static char failed_prog[64]; /* the program the verifier refused */

/* libbpf's messages: debug lines are dropped, the last warning is kept for the failure reason. */
static int on_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	char line[256];
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	const char *prog = strstr(line, "prog '");
	if (prog && strstr(line, "load failed") && !failed_prog[0])
		sscanf(prog, "prog '%63[^']'", failed_prog);
	if (line[0] && !strstr(line, "-- BEGIN") && !strstr(line, "-- END"))
		snprintf(libbpf_last, sizeof(libbpf_last), "%s", line);
	log_debug("%s", line);
	return 0;
}

/* The verifier's verdict: the last line before "processed N insns", else the last line. */
static void verifier_verdict(const char *log, char *out, size_t len)
{
	const char *best = NULL, *p = log;
	size_t best_len = 0;
	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		if (!strncmp(p, "processed ", 10) && best)
			break;
		if (n && p[0] != ';')
			best = p, best_len = n;
		p = nl ? nl + 1 : NULL;
	}
	if (best)
		snprintf(out, len, "%.*s", (int)(best_len < len ? best_len : len - 1), best);
	else
		out[0] = '\0';
}

static void why_failed(int err, const char *what, char *why, size_t len)
{
	char verdict[200] = "";
	if (verifier_log && verifier_log[0]) {
		verifier_verdict(verifier_log, verdict, sizeof(verdict));
		log_debug("BPF verifier log:\n%s", verifier_log);
	}
	if (err == -EPERM || err == -EACCES) {
		if (verdict[0] && err == -EACCES)
			snprintf(why, len, "the verifier rejected program %s: %s", failed_prog,
				 verdict);
		else
			snprintf(why, len,
				 "BPF not permitted (%s: needs root, or CAP_BPF with CAP_PERFMON)",
				 strerror(-err));
	} else if (verdict[0]) {
		snprintf(why, len, "the verifier rejected program %s: %s", failed_prog, verdict);
	} else {
		snprintf(why, len, "%s failed: %s%s%s", what, strerror(-err),
			 libbpf_last[0] ? "; " : "", libbpf_last);
	}
}

/* Function @name's text, [lo, hi), from the kernel symbols. */
static bool function_text(const struct mm_symbols *syms, const char *name, __u64 *lo, __u64 *hi)
{
	uint64_t start = syms ? mm_symbols_addr(syms, name) : 0;
	if (!start)
		return false;
	uint64_t end = UINT64_MAX;
	for (size_t i = 0, n = mm_symbols_count(syms); i < n; i++) {
		uint64_t a;
		char type;
		const char *sym;
		mm_symbols_get(syms, i, &a, &type, &sym);
		if (a > start && a < end)
			end = a;
	}
	if (end == UINT64_MAX || end - start > (1u << 16))
		return false;
	*lo = start;
	*hi = end;
	return true;
}

static bool read_counts(struct mm_bpfsrc *b, const struct mm_bpf_key *key, __u64 *sum);

static int on_exit_record(void *ctx, void *data, size_t size)
{
	struct mm_bpfsrc *b = ctx;
	const struct mm_bpf_exit *e = data;
	if (size < sizeof(*e))
		return 0;
	struct track *t = mm_tidmap_get(b->tracks, e->key.pid, false);
	if (t && t->start_boottime_ns == e->key.start_boottime_ns) {
		t->exited = true;
		memcpy(t->comm, e->comm, sizeof(t->comm));
		t->comm[sizeof(t->comm) - 1] = '\0';
	} else if (!t &&
		   bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.procs), &e->key, b->values) == 0) {
		/* Counted, exited, never read yet: settled from zero by the walk below. */
		t = mm_tidmap_get(b->tracks, e->key.pid, true);
		if (t) {
			t->start_boottime_ns = e->key.start_boottime_ns;
			t->exited = true;
			memcpy(t->comm, e->comm, sizeof(t->comm));
			t->comm[sizeof(t->comm) - 1] = '\0';
		}
	}
	return 0;
}

/* Reads one process's counters into @sum. Returns false when the entry is gone. */
static bool read_counts(struct mm_bpfsrc *b, const struct mm_bpf_key *key, __u64 *sum)
{
	return bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.procs), key, sum) == 0;
}

#define NO_SLOT 0xff
_Static_assert(NSCALARS < NO_SLOT, "a scalar's slot fits in a byte");

static size_t track_size(const struct mm_bpfsrc *b)
{
	return sizeof(struct track) + b->nlast * sizeof(__u64);
}

/* What @t delivered of counter @i (0 for one no collector takes). */
static __u64 last_of(const struct mm_bpfsrc *b, const struct track *t, size_t i)
{
	if (i < NSCALARS)
		return b->slot[i] == NO_SLOT ? 0 : t->last[b->slot[i]];
	return t->hlast ? t->hlast[i - NSCALARS] : 0;
}

/* Forgets @t's histogram buckets (before the track is dropped or reused). */
static void track_clear(const struct mm_bpfsrc *b, struct track *t)
{
	free(t->hlast);
	memset(t, 0, track_size(b));
}

/* Adds @sum's growth over what @t delivered to the process. Returns false when an exited process
 * is not known to the host yet (try again at the next tick, SETTLE_TICKS times: not even at a
 * closing tick, since an entry made now, without its FORK record, would be a nameless one that
 * the FORK record then retires). */
static bool deliver(struct mm_bpfsrc *b, struct mm_host *h, uint32_t pid, struct track *t,
		    const __u64 *sum, bool force)
{
	struct mm_proc_stats *ps = NULL;
	bool any = false, hists = false;
	/* Only what a collector takes: a counter the programs keep for no running collector
	 * (faults, on the defaults) would make every process that ever faulted look active. */
	for (size_t i = 0; i < NSCALARS; i++)
		any |= b->slot[i] != NO_SLOT && sum[i] != t->last[b->slot[i]];
	for (size_t i = NSCALARS; i < NCOUNTERS; i++)
		hists |= b->dest[i] != SIZE_MAX && sum[i] != last_of(b, t, i);
	if (!any && !hists)
		return true;
	/* A live process the host does not know yet: its FORK record is not in yet. Its counts
	 * wait for it (SETTLE_TICKS ticks at most): made now, its entry would be read from /proc,
	 * and a process of a fork storm is often gone from there by then, leaving a nameless
	 * "pid-N" entry with its counts beside the one the FORK record makes (5 churn waves of
	 * 10 000 processes: 132 of them, none once they waited). At a closing tick such a process
	 * started after the records delivered so far, i.e. after the window's end: its counts go
	 * to the next window, not to one that ended before it began. */
	if (!t->exited && !force && !mm_host_proc_known(h, pid) &&
	    (mm_host_window_closing(h) || t->pending++ < SETTLE_TICKS))
		return false;
	if (t->exited) {
		/* By its start: a fork storm reuses a pid within seconds, and the live entry may be
		 * a later process's already. */
		/* Its start is exact: an entry that started earlier is the pid's previous process,
		 * whose entry stays until the roll. Taken for it, the counts of a process whose
		 * FORK record was still behind the horizon (it lived a few ms) went to that one,
		 * and the entry its record made later stayed empty: not stored (6 of 10 000 in a
		 * wave). */
		uint64_t start_ms = mm_proc_boottime_ms(t->start_boottime_ns);
		ps = mm_host_proc_started_within(h, pid, start_ms, start_ms);
		if (!ps && !force && t->pending++ < SETTLE_TICKS)
			return false;
		/* No FORK record came (it started while the daemon was starting, or the record was
		 * lost): an entry of its own, named by its exit notification, not the pid's live
		 * entry (a later process) nor a nameless one. */
		if (!ps && t->comm[0])
			ps = mm_host_proc_exited(h, pid, start_ms, t->comm);
	}
	if (hists && !t->hlast && !(t->hlast = calloc(NCOUNTERS - NSCALARS, sizeof(__u64)))) {
		mm_host_global_add(h, b->g_map_errors, 1);
		hists = false; /* out of memory: the histograms wait for the next tick */
	}
	if (!ps)
		ps = mm_host_proc(h, pid);
	for (size_t i = 0; i < (hists ? NCOUNTERS : NSCALARS); i++) {
		__u64 last = last_of(b, t, i);
		if (sum[i] <= last || b->dest[i] == SIZE_MAX)
			continue;
		*(uint64_t *)((char *)ps + b->dest[i]) += sum[i] - last;
		if (i < NSCALARS)
			t->last[b->slot[i]] = sum[i];
		else
			t->hlast[i - NSCALARS] = sum[i];
	}
	return true;
}

/* Queues @key's map entry for deletion after the walk (deleting during bpf_map_get_next_key
 * would restart it) and forgets its track. */
static void settle(struct mm_bpfsrc *b, const struct mm_bpf_key *key, bool forget)
{
	if (b->nsettle == b->settle_cap) {
		size_t cap = b->settle_cap ? 2 * b->settle_cap : 64;
		struct mm_bpf_key *n = realloc(b->settle, cap * sizeof(*n));
		if (!n) {
			mm_host_global_add(b->h, b->g_map_errors, 1);
			return; /* stays in the map: settled again, from zero, next time */
		}
		b->settle = n;
		b->settle_cap = cap;
	}
	b->settle[b->nsettle++] = *key;
	if (forget) {
		struct track *t = mm_tidmap_get(b->tracks, key->pid, false);
		if (t)
			free(t->hlast);
		mm_tidmap_remove(b->tracks, key->pid);
	}
	mm_host_global_add(b->h, b->g_settled, 1);
}

/* The kernel's count of stat @k, summed over the CPUs (0 when unreadable). */
static __u64 stat_now(struct mm_bpfsrc *b, __u32 k)
{
	__u64 sum = 0;
	if (bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.stats), &k, b->values) == 0)
		for (int c = 0; c < b->ncpus; c++)
			sum += b->values[c];
	return sum;
}

static void collect_stats(struct mm_bpfsrc *b, struct mm_host *h)
{
	for (__u32 k = 0; k < MM_BPF_NSTATS; k++) {
		__u64 sum = stat_now(b, k);
		if (sum > b->stats_last[k])
			mm_host_global_add(h, b->g_stats[k], sum - b->stats_last[k]);
		b->stats_last[k] = sum;
	}
}

/* Whether this tick reads every process entry: the first, and a closing tick after the kernel
 * lost an exit notification (the sweep finds those processes gone) or a mark in the changed map
 * (the walk finds its counts). Otherwise the changed entries are all there is to read: with
 * 10 000 idle processes the full walk and its sweep were a quarter of the idle daemon's CPU
 * (docs/cost.md). */
static bool full_walk(struct mm_bpfsrc *b, bool closing)
{
	if (b->walked && !closing)
		return false;
	__u64 lost = stat_now(b, MM_BPF_EXITS_LOST) + stat_now(b, MM_BPF_CHANGES_UNMARKED);
	if (b->walked && lost == b->lost_at_walk)
		return false;
	b->lost_at_walk = lost;
	return true;
}

static bool queued(const struct mm_bpfsrc *b, const struct mm_bpf_key *key)
{
	for (size_t i = 0; i < b->nsettle; i++)
		if (b->settle[i].pid == key->pid &&
		    b->settle[i].start_boottime_ns == key->start_boottime_ns)
			return true;
	return false;
}

/* Delivers @sum's growth over @t (what was delivered of the row) to collector @name. */
static void deliver_lock_row(struct mm_host *h, const char *name, const struct mm_bpf_lock_key *key,
			     const struct mm_bpf_lock_value *sum, struct lock_track *t)
{
	if (sum->contended <= t->contended)
		return;
	uint64_t hist[MM_BPF_HIST_BUCKETS];
	for (unsigned i = 0; i < MM_BPF_HIST_BUCKETS; i++)
		hist[i] = sum->hist[i] >= t->hist[i] ? sum->hist[i] - t->hist[i] : 0;
	struct mm_lock_wait w = {
		.pid = key->pid,
		.flags = key->flags,
		.mmap = key->kind == MM_BPF_LOCK_MMAP,
		.lock = key->lock,
		.holder_pid = key->holder_pid,
		.holder_tid = key->holder_tid,
		.holder_mode = key->holder_mode,
		.holder_op = key->holder_op,
		.ips = (const uint64_t *)key->ips,
		.nr_ips = MM_BPF_LOCK_FRAMES,
		.contended = sum->contended - t->contended,
		.wait_ns = sum->wait_ns >= t->wait_ns ? sum->wait_ns - t->wait_ns : 0,
		.max_ns = sum->max_ns,
		.min_ns = sum->min_ns,
		.hist = hist,
	};
	while (w.nr_ips && !key->ips[w.nr_ips - 1])
		w.nr_ips--;
	mm_host_waits(h, name, &w);
	t->contended = sum->contended;
	t->wait_ns = sum->wait_ns;
	memcpy(t->hist, sum->hist, sizeof(t->hist));
}

/* The lock-wait rows: each row's growth since its last delivery goes to the
 * collector (mm_host_waits). At a closing tick the generation flips first, so the rows of the
 * window being closed stop growing; they are delivered a last time and deleted, and only the
 * new generation's (waits that ended since the flip) are tracked on. A wait whose program read
 * the generation just before the flip and adds to its row after the deletion makes the row
 * again: it is counted in the next window. */
static void collect_locks(struct mm_bpfsrc *b, struct mm_host *h, bool closing)
{
	int fd = bpf_map__fd(b->skel->maps.lock_waits);
	__u32 old_gen = b->skel->bss->lock_gen;
	struct mm_htab next;
	if (closing &&
	    mm_htab_init(&next, sizeof(struct lock_track), sizeof(struct mm_bpf_lock_key)) < 0)
		closing = false; /* out of memory: this window's rows go on into the next */
	if (closing)
		b->skel->bss->lock_gen = old_gen ^ 1;
	struct mm_bpf_lock_key key, nkey, *prev = NULL, *gone = NULL;
	struct mm_bpf_lock_value sum;
	size_t ngone = 0, gone_cap = 0;
	for (; bpf_map_get_next_key(fd, prev, &nkey) == 0; prev = &key) {
		key = nkey;
		if (bpf_map_lookup_elem(fd, &key, &sum) < 0)
			continue;
		struct lock_track none = {.key = key};
		/* A row deleted after this delivery needs no new track. */
		bool stays = !closing || key.gen != old_gen;
		struct lock_track *t = mm_htab_get(&b->lock_tracks, &key, stays, SIZE_MAX);
		/* out of memory: from zero */
		deliver_lock_row(h, b->fed->name, &key, &sum, t ? t : &none);
		if (!closing)
			continue;
		if (key.gen != old_gen) { /* the new generation's: tracked on */
			struct lock_track *n = mm_htab_get(&next, &key, true, SIZE_MAX);
			if (n)
				*n = t ? *t : none;
			continue;
		}
		if (ngone == gone_cap) {
			size_t cap = gone_cap ? 2 * gone_cap : 256;
			struct mm_bpf_lock_key *g = realloc(gone, cap * sizeof(*g));
			if (!g) {
				mm_host_global_add(h, b->g_map_errors, 1);
				continue; /* stays: delivered again from zero, in the next window */
			}
			gone = g;
			gone_cap = cap;
		}
		gone[ngone++] = key;
	}
	for (size_t i = 0; i < ngone; i++)
		bpf_map_delete_elem(fd, &gone[i]);
	free(gone);
	if (closing) {
		mm_htab_free(&b->lock_tracks);
		b->lock_tracks = next;
	}
}

/* Appends @key to @arr (growing it); false when out of memory (counted). */
static bool push_key(struct mm_bpfsrc *b, struct mm_bpf_key **arr, size_t *n, size_t *cap,
		     const struct mm_bpf_key *key)
{
	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 64;
		struct mm_bpf_key *a = realloc(*arr, c * sizeof(*a));
		if (!a) {
			mm_host_global_add(b->h, b->g_map_errors, 1);
			return false;
		}
		*arr = a;
		*cap = c;
	}
	(*arr)[(*n)++] = *key;
	return true;
}

/* Reads process entry @key and delivers its growth (settling it when its process is over).
 * Returns false when its counts wait for the host to know the process (read it again at the
 * next tick). */
static bool visit(struct mm_bpfsrc *b, struct mm_host *h, const struct mm_bpf_key *key,
		  bool closing)
{
	__u64 sum[NVALUE];
	if (!read_counts(b, key, sum))
		return true; /* gone: settled already */
	struct track *t = mm_tidmap_get(b->tracks, key->pid, true);
	if (!t) {
		mm_host_global_add(h, b->g_map_errors, 1);
		return true;
	}
	if (t->start_boottime_ns && key->start_boottime_ns < t->start_boottime_ns) {
		if (queued(b, key))
			return true; /* settled in this walk already */
		/* Late events of an earlier process with this pid (its entry was deleted, an
		 * exiting thread counted again): settle them on their own, with a one-off track
		 * that has room for every scalar. */
		__u64 buf[(sizeof(struct track) + NSCALARS * sizeof(__u64)) / sizeof(__u64)] = {0};
		struct track *late = (struct track *)buf;
		late->start_boottime_ns = key->start_boottime_ns;
		late->exited = true;
		deliver(b, h, key->pid, late, sum, true);
		free(late->hlast);
		settle(b, key, false);
		return true;
	}
	if (t->start_boottime_ns != key->start_boottime_ns) {
		if (t->start_boottime_ns) {
			/* The pid was reused: the tracked process is over. */
			struct mm_bpf_key old = {.pid = key->pid,
						 .start_boottime_ns = t->start_boottime_ns};
			__u64 old_sum[NVALUE];
			t->exited = true;
			if (read_counts(b, &old, old_sum))
				deliver(b, h, key->pid, t, old_sum, true);
			settle(b, &old, true);
			t = mm_tidmap_get(b->tracks, key->pid, true);
			if (!t)
				return true;
		}
		track_clear(b, t);
		t->start_boottime_ns = key->start_boottime_ns;
	}
	if (closing && !t->exited && kill((pid_t)key->pid, 0) < 0 && errno == ESRCH) {
		t->exited = true;
		mm_host_global_add(h, b->g_swept, 1);
	}
	if (!deliver(b, h, key->pid, t, sum, false))
		return false;
	if (t->exited)
		settle(b, key, true);
	return true;
}

/* Every process entry: at a window's closing tick (and the first tick), so the window gets all
 * its counts and exited processes are swept. */
static void walk_all(struct mm_bpfsrc *b, struct mm_host *h, bool closing)
{
	int fd = bpf_map__fd(b->skel->maps.procs);
	struct mm_bpf_key key, next, *prev = NULL;
	b->nretry = 0;
	for (; bpf_map_get_next_key(fd, prev, &next) == 0; prev = &key) {
		key = next;
		if (!visit(b, h, &key, closing))
			push_key(b, &b->retry, &b->nretry, &b->retry_cap, &key);
	}
}

/* The entries that changed since the last tick, and those the host could not take then. Each
 * changed key is taken out of the map before its entry is read: a flush after that puts it back
 * (counters.bpf.c mark_changed), so no change waits for the closing walk. */
static void walk_changed(struct mm_bpfsrc *b, struct mm_host *h)
{
	int cfd = bpf_map__fd(b->skel->maps.changed);
	struct mm_bpf_key key, next, *prev = NULL;
	b->nkeys = 0;
	for (; bpf_map_get_next_key(cfd, prev, &next) == 0; prev = &key) {
		key = next;
		if (!push_key(b, &b->keys, &b->nkeys, &b->keys_cap, &key))
			break; /* the rest at the next tick */
	}
	/* A retried key that changed again is in the list already: read twice in one tick, an
	 * exited process's entry (settled, its track forgotten, deleted only after the walk)
	 * would be delivered twice, the second time from zero. One still in the changed map but
	 * not in the list (marked after the walk above) is read at the next tick. */
	__u8 one;
	for (size_t i = 0; i < b->nretry; i++)
		if (bpf_map_lookup_elem(cfd, &b->retry[i], &one) < 0)
			push_key(b, &b->keys, &b->nkeys, &b->keys_cap, &b->retry[i]);
	b->nretry = 0;
	for (size_t i = 0; i < b->nkeys; i++) {
		bpf_map_delete_elem(cfd, &b->keys[i]);
		/* A new epoch between taking the key out and reading the entry: a change the read
		 * misses sees it and marks the entry again (counters.bpf.c mark_changed). Without
		 * it, an entry marked earlier in the tick's epoch stayed unmarked for the rest of
		 * it, and its later changes waited for a full walk: the file workload's fallbacks
		 * alone on BPF stored 459 of 1 421. Sequentially consistent, against the programs'
		 * locked adds before they read the epoch: one of the two sees the other. */
		__atomic_add_fetch(&b->skel->bss->tick_epoch, 1, __ATOMIC_SEQ_CST);
		if (!visit(b, h, &b->keys[i], false))
			push_key(b, &b->retry, &b->nretry, &b->retry_cap, &b->keys[i]);
	}
}

void mm_bpfsrc_collect(void *ctx, struct mm_host *h, bool closing)
{
	struct mm_bpfsrc *b = ctx;
	if (!b)
		return;
	b->h = h;
	ring_buffer__consume(b->ring);
	b->nsettle = 0;
	/* Changes from now on are marked anew (after the counts they add, so what this walk
	 * misses is marked for the next). */
	__atomic_add_fetch(&b->skel->bss->tick_epoch, 1, __ATOMIC_SEQ_CST);
	if (full_walk(b, closing)) {
		walk_all(b, h, closing);
		b->walked = true;
	} else {
		walk_changed(b, h);
	}
	int fd = bpf_map__fd(b->skel->maps.procs);
	for (size_t i = 0; i < b->nsettle; i++)
		bpf_map_delete_elem(fd, &b->settle[i]);
	if (b->fed)
		collect_locks(b, h, closing);
	collect_stats(b, h);
	/* The period's counts are in: its tail ends (counters.bpf.c duty_tail), unless the next
	 * period has begun meanwhile. */
	if (b->cycle && b->phase == MM_PHASE_OFF && mm_host_reading_period_end(h))
		b->skel->bss->duty_tail = 0;
	b->h = NULL;
}

static void register_globals(struct mm_bpfsrc *b, struct mm_host *h)
{
	for (unsigned i = 0; i < MM_BPF_NSTATS; i++)
		b->g_stats[i] = mm_host_global(
			h, "bpf_events", mm_bpf_stat_names[i],
			i ? NULL
			  : "BPF source: processes settled, events it could not count (full maps, "
			    "lost exit notifications, unpaired lock events)");
	b->g_settled = mm_host_global(h, "bpf_events", "processes_settled", NULL);
	b->g_swept = mm_host_global(h, "bpf_events", "exits_found_by_sweep", NULL);
	b->g_map_errors = mm_host_global(h, "bpf_events", "tracks_refused", NULL);
}

static void free_hlast(void *ctx, uint32_t pid, void *value)
{
	free(((struct track *)value)->hlast);
}

void mm_bpfsrc_free(struct mm_bpfsrc *b)
{
	if (!b)
		return;
	ring_buffer__free(b->ring);
	for (unsigned i = 0; i < b->nlinks; i++)
		bpf_link__destroy(b->links[i]);
	mm_counters__destroy(b->skel);
	if (b->tracks)
		mm_tidmap_foreach(b->tracks, free_hlast, NULL);
	mm_tidmap_free(b->tracks);
	mm_htab_free(&b->lock_tracks);
	free(b->values);
	free(b->settle);
	free(b->keys);
	free(b->retry);
	free(b);
}

/* The fault-completion program on the minor-faults and major-faults software events of every
 * CPU. Without them (not permitted, a CPU offline) the latency histograms stay empty or partial:
 * said once, not fatal. */
static unsigned attach_completions(struct mm_bpfsrc *b)
{
	long ncpus = sysconf(_SC_NPROCESSORS_CONF);
	int failed = 0, err = 0;
	for (long cpu = 0; cpu < ncpus && cpu < MAX_CPUS; cpu++) {
		for (int k = 0; k < 2; k++) {
			int fd = mm_bpf_open_completion((int)cpu, k, true);
			struct bpf_link *l = NULL;
			if (fd >= 0) {
				l = bpf_program__attach_perf_event(b->skel->progs.on_fault_done,
								   fd);
				if (!l)
					close(fd);
			}
			if (!l) {
				err = errno;
				failed++;
				continue;
			}
			b->link_fds[b->nlinks] = fd;
			b->links[b->nlinks++] = l;
		}
	}
	if (failed)
		log_warning("BPF source: fault completion events on %d of %ld CPUs could not be "
			    "attached (%s): fault latencies are incomplete",
			    failed, 2 * ncpus, strerror(err));
	return (unsigned)failed;
}

/* The link slot of program @name in the skeleton (its program in *ret_prog), or NULL. */
static struct bpf_link **link_of(const struct mm_bpfsrc *b, const char *name,
				 struct bpf_program **ret_prog)
{
	const struct bpf_object_skeleton *sk = b->skel->skeleton;
	for (int i = 0; i < sk->prog_cnt; i++) {
		const struct bpf_prog_skeleton *ps =
			(const void *)((const char *)sk->progs + (size_t)i * sk->prog_skel_sz);
		if (!strcmp(ps->name, name)) {
			*ret_prog = *ps->prog;
			return ps->link;
		}
	}
	return NULL;
}

/* Attaches (@on) or detaches program @name, one only a cycled collector needs; false on
 * failure (said once by the caller). With @keep_if_on, detaching leaves an attached one be. */
static bool switch_link(struct mm_bpfsrc *b, const char *name, bool on, bool keep_if_on)
{
	struct bpf_program *prog = NULL;
	struct bpf_link **link = link_of(b, name, &prog);
	if (!link)
		return false;
	if (keep_if_on && *link)
		return true;
	if (!on) {
		bpf_link__destroy(*link);
		*link = NULL;
		return true;
	}
	if (!*link)
		*link = bpf_program__attach(prog);
	return *link != NULL;
}

void mm_bpfsrc_set_phase(struct mm_bpfsrc *b, enum mm_phase phase)
{
	if (!b || !b->cycle || phase == b->phase)
		return;
	struct mm_counters *s = b->skel;
	bool evidence = phase != MM_PHASE_OFF, ok = true;
	/* bpf_keep_attached = on (a benchmark's knob): the programs stay attached from the
	 * first period on and find out between periods that they have nothing to do
	 * (IDLE_BETWEEN_PERIODS in counters.bpf.c), to tell what attaching and detaching them costs
	 * (each first probe of a tracepoint patches kernel text) from what they cost attached. */
	bool keep = b->keep_attached;
	/* In: evidence, then a new period, then the opener. Out: the opener first (duty.h). */
	if (evidence != (b->phase != MM_PHASE_OFF)) {
		for (unsigned i = 0; evidence && i < b->nevidence; i++)
			ok &= switch_link(b, b->evidence[i], true, false);
		/* The completion events, with fault_latency on only (none are open
		 * otherwise): disabled, not closed, between periods. An open software event
		 * keeps perf_sw_event()'s static key on, so every fault of every process still
		 * calls __perf_sw_event(), but the collection thread has dropped the capabilities
		 * perf_event_open() needs, so they cannot be opened per period (tried on
		 * 2026-12-02: EPERM at the first one). */
		for (unsigned i = 0; b->openers_cycled && i < b->nlinks; i++)
			ioctl(b->link_fds[i],
			      evidence ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
	}
	if (phase == MM_PHASE_ON) {
		s->bss->duty_gen++;
		s->bss->duty_tail = 1; /* cleared in mm_bpfsrc_collect() after the period's read */
		s->bss->duty_off = 0;
	} else {
		s->bss->duty_off = 1;
	}
	for (unsigned i = 0; i < b->nopeners; i++)
		ok &= switch_link(b, b->openers[i], phase == MM_PHASE_ON, keep);
	for (unsigned i = 0; !evidence && !keep && i < b->nevidence; i++)
		switch_link(b, b->evidence[i], false, false);
	if (!ok && !b->attach_failed) {
		b->attach_failed = true;
		log_warning("BPF source: attaching the %s's programs for a %s failed (%m): it "
			    "goes on with what is attached",
			    b->cycle->name, b->cycle->period);
	}
	b->phase = phase;
}

/* Moves collector @i off BPF (a site of its is missing), or fails when nothing else would run on
 * it. */
static int drop_collector(struct mm_bpfsrc *b, struct wants *w, unsigned i, const char *reason,
			  char *why, size_t whylen)
{
	char list[64];
	w->on[i] = false;
	if (!wants_list(w, list, sizeof(list))) {
		snprintf(why, whylen, "%s", reason);
		return -ENOENT;
	}
	log_warning("BPF source: %s; %s runs on the perf rings", reason, w->p[i]->name);
	mm_host_set_source(b->h, w->p[i]->name, "perf", reason);
	return 0;
}

/* The .rodata variable @name of the object (found in its BTF), with its size in *ret_size; NULL
 * when there is none. */
static void *rodata_var(const struct mm_bpfsrc *b, const char *name, size_t *ret_size)
{
	const struct btf *btf = bpf_object__btf(b->skel->obj);
	int id = btf ? btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC) : -1;
	if (id < 0)
		return NULL;
	const struct btf_type *sec = btf__type_by_id(btf, id);
	const struct btf_var_secinfo *v = btf_var_secinfos(sec);
	for (unsigned i = 0; i < btf_vlen(sec); i++, v++) {
		const struct btf_type *var = btf__type_by_id(btf, v->type);
		if (var && !strcmp(btf__name_by_offset(btf, var->name_off), name)) {
			*ret_size = v->size;
			return (char *)b->skel->rodata + v->offset;
		}
	}
	return NULL;
}

/* mm_bpf_set_fn for the collectors' configure hooks: an integer variable of 1, 4 or 8 bytes. */
static void set_rodata(void *ctx, const char *name, uint64_t value)
{
	size_t size = 0;
	char *at = rodata_var(ctx, name, &size);
	if (at && size == 1)
		*(uint8_t *)at = (uint8_t)value;
	else if (at && size == 4)
		*(uint32_t *)at = (uint32_t)value;
	else if (at && size == 8)
		*(uint64_t *)at = value;
	else
		log_warning("BPF source: no integer .rodata variable %s in the object, ignoring",
			    name);
}

/* Writes where site @t lies into its .rodata array; false when the kernel lacks it. */
static bool locate_site(struct mm_bpfsrc *b, const struct mm_bpf_text *t,
			const struct mm_symbols *syms)
{
	size_t size = 0;
	__u64 *at = rodata_var(b, t->var, &size);
	if (!at || (t->index + 1) * 2 * sizeof(__u64) > size)
		return false;
	return function_text(syms, t->function, &at[2 * t->index], &at[2 * t->index + 1]);
}

/* The .rodata the programs decide by: the collectors counted, where their sites lie, what their
 * configure hooks add. A collector whose required sites this kernel lacks runs on the perf
 * rings instead (said once); an error when none is left. */
static int configure(struct mm_bpfsrc *b, struct wants *w, const struct mm_symbols *syms, char *why,
		     size_t whylen)
{
	for (unsigned i = 0; i < w->n; i++) {
		const struct mm_bpf_text *t = w->p[i]->bpf->sites;
		bool missing = false;
		for (; t && t->function; t++) {
			if (locate_site(b, t, syms) || !t->required || !w->on[i] || missing)
				continue;
			char reason[160];
			snprintf(reason, sizeof(reason),
				 "%s not found in the kernel symbols (/proc/kallsyms)%s",
				 t->function, t->why ? t->why : "");
			missing = true;
			int r = drop_collector(b, w, i, reason, why, whylen);
			if (r < 0)
				return r;
		}
	}
	for (unsigned i = 0; i < w->n; i++) {
		const struct mm_plugin_bpf *k = w->p[i]->bpf;
		if (w->on[i] && k->configure)
			k->configure(set_rodata, b);
		set_rodata(b, k->enable, w->on[i]);
	}
	return 0;
}

/* Loads the programs an enabled collector names, and no other it names (programs no collector
 * names keep the object's choice). */
static void choose_programs(struct mm_bpfsrc *b, const struct wants *w)
{
	for (unsigned i = 0; i < w->n; i++) {
		const struct mm_plugin_bpf *k = w->p[i]->bpf;
		const char *const *lists[] = {k->programs, k->duty_programs, k->opener_programs};
		for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++) {
			for (const char *const *n = lists[l]; n && *n; n++) {
				struct bpf_program *p =
					bpf_object__find_program_by_name(b->skel->obj, *n);
				bool needed = false;
				for (unsigned j = 0; p && j < w->n; j++)
					needed |= w->on[j] && names_program(w->p[j]->bpf, *n);
				if (p)
					bpf_program__set_autoload(p, needed);
			}
		}
	}
}

/* The programs the duty cycle switches: a cycled collector's duty and opener programs that no
 * collector needs all the time. */
static void choose_switched(struct mm_bpfsrc *b, const struct wants *w)
{
	for (unsigned i = 0; b->cycle && i < w->n; i++) {
		const struct mm_plugin_bpf *k = w->p[i]->bpf;
		if (!w->on[i] || w->p[i]->cycle == NULL)
			continue;
		for (const char *const *n = k->duty_programs; n && *n; n++)
			if (!continuous(w, *n, true) && b->nevidence < MAX_SWITCHED)
				b->evidence[b->nevidence++] = *n;
		for (const char *const *n = k->opener_programs; n && *n; n++)
			if (!continuous(w, *n, true) && b->nopeners < MAX_SWITCHED)
				b->openers[b->nopeners++] = *n;
	}
	b->openers_cycled = b->nopeners > 0;
}

/* Adds the field tables of the collectors on BPF: dest[] gets, per kernel counter, its offset in
 * struct mm_proc_stats (SIZE_MAX: counted for no collector here). */
static void map_fields(struct mm_bpfsrc *b, const struct wants *w)
{
	for (size_t i = 0; i < NCOUNTERS; i++)
		b->dest[i] = SIZE_MAX;
	for (unsigned i = 0; i < w->n; i++) {
		const struct mm_bpf_field *f = w->p[i]->bpf->fields;
		for (; w->on[i] && f && f->n; f++)
			for (size_t j = 0; j < f->n; j++)
				if (f->kernel / sizeof(__u64) + j < NCOUNTERS)
					b->dest[f->kernel / sizeof(__u64) + j] =
						f->field + j * sizeof(uint64_t);
	}
	/* Tracks keep the taken scalars only. Before any process is tracked; on ENOMEM the
	 * tracks made by source_new (every scalar) stay. */
	unsigned n = 0;
	unsigned char slot[NSCALARS];
	for (size_t i = 0; i < NSCALARS; i++)
		slot[i] = b->dest[i] == SIZE_MAX ? NO_SLOT : n++;
	struct mm_tidmap *tracks =
		mm_tidmap_new(sizeof(struct track) + n * sizeof(__u64), MAX_PROCS);
	if (!tracks)
		return;
	mm_tidmap_free(b->tracks);
	b->tracks = tracks;
	b->nlast = n;
	memcpy(b->slot, slot, sizeof(slot));
}

/* bpf_skip = NAME[,NAME...] (config.h): those programs are not loaded, whatever the collectors
 * need (a benchmark's knob: bench/run.py's mmlockd_fallbacks_bpf_no* configurations measure what
 * one program costs a workload; the counts they feed are wrong). Logged, so no one mistakes such
 * a run for a real one. */
static void skip_programs(struct bpf_object *obj, const char *skip)
{
	if (!*skip)
		return;
	const char *cursor = skip, *item;
	size_t len;
	while (mm_parse_list_next(&cursor, &item, &len)) {
		char name[64];
		if (!len)
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)len, item);
		struct bpf_program *p = bpf_object__find_program_by_name(obj, name);
		if (!p) {
			log_warning("BPF source: bpf_skip: no program %s", name);
			continue;
		}
		bpf_program__set_autoload(p, false);
		log_warning("BPF source: bpf_skip: %s not loaded (counts will be wrong)", name);
	}
}

/* Whether BPF can run here at all: kernel BTF at @btf, and permission to make a map (asked
 * first, so an unprivileged daemon hears that rather than a later symptom such as hidden kernel
 * symbols). Returns 0, or -errno with *why set. */
static int probe(const char *btf, char *why, size_t whylen)
{
	if (access(btf, R_OK) < 0) {
		snprintf(why, whylen,
			 "no kernel BTF at %.200s (%m; the kernel needs CONFIG_DEBUG_INFO_BTF)",
			 btf);
		return -ENOENT;
	}
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, NULL, 4, 4, 1, NULL);
	if (fd < 0) {
		int r = -errno;
		why_failed(r, "creating a BPF map", why, whylen);
		return r;
	}
	close(fd);
	return 0;
}

/* Opens, configures, loads and attaches; on failure *why says why. */
static int load(struct mm_bpfsrc *b, struct wants *w, const struct mm_config *cfg,
		const struct mm_symbols *syms, char *why, size_t whylen)
{
	const char *btf = cfg->btf[0] ? cfg->btf : NULL;
	int r = probe(btf ? btf : DEFAULT_BTF, why, whylen);
	if (r < 0)
		return r;
	verifier_log = calloc(1, LOG_SIZE);
	libbpf_last[0] = failed_prog[0] = '\0';
	libbpf_set_print(on_libbpf_print);
	LIBBPF_OPTS(bpf_object_open_opts, opts, .btf_custom_path = btf,
		    .kernel_log_buf = verifier_log, .kernel_log_size = verifier_log ? LOG_SIZE : 0);
	b->skel = mm_counters__open_opts(&opts);
	r = b->skel ? 0 : -errno;
	if (r < 0) {
		why_failed(r, "opening the BPF object", why, whylen);
		goto out;
	}
	struct mm_counters *s = b->skel;
	s->rodata->reject_for_test = cfg->bpf_refuse;
	if (cfg->bpf_refuse)
		log_warning("BPF source: bpf_refuse = on: the verifier is to refuse a program "
			    "(a test's knob)");
	r = configure(b, w, syms, why, whylen);
	if (r < 0)
		goto out;
	choose_programs(b, w);
	skip_programs(s->obj, cfg->bpf_skip);
	r = mm_counters__load(s);
	if (r < 0) {
		why_failed(r, "loading the BPF programs", why, whylen);
		goto out;
	}
	r = mm_counters__attach(s);
	if (r < 0) {
		why_failed(r, "attaching the BPF programs", why, whylen);
		goto out;
	}
	b->ring = ring_buffer__new(bpf_map__fd(s->maps.exits), on_exit_record, b, NULL);
	if (!b->ring) {
		r = -errno;
		why_failed(r, "opening the exit ring buffer", why, whylen);
		goto out;
	}
out:
	free(verifier_log);
	verifier_log = NULL;
	return r;
}

/* A source with its buffers, not loaded yet; NULL on ENOMEM. */
static struct mm_bpfsrc *source_new(void)
{
	struct mm_bpfsrc *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->ncpus = libbpf_num_possible_cpus();
	/* Every scalar until map_fields() knows which are taken. */
	b->nlast = NSCALARS;
	for (size_t i = 0; i < NSCALARS; i++)
		b->slot[i] = (unsigned char)i;
	b->tracks = mm_tidmap_new(sizeof(struct track) + NSCALARS * sizeof(__u64), MAX_PROCS);
	size_t vsize = (size_t)(b->ncpus > 0 ? b->ncpus : 0) * sizeof(__u64);
	if (vsize && vsize < sizeof(struct mm_bpf_counts))
		vsize = sizeof(struct mm_bpf_counts);
	b->values = vsize ? calloc(1, vsize) : NULL;
	if (!b->tracks || !b->values ||
	    mm_htab_init(&b->lock_tracks, sizeof(struct lock_track),
			 sizeof(struct mm_bpf_lock_key)) < 0) {
		mm_bpfsrc_free(b);
		return NULL;
	}
	return b;
}

/* The fault-completion events time the sampled faults (the latency histograms) and close
 * their windows at the fault's end. Only with fault_latency on: an open software event
 * keeps perf_sw_event()'s static key on, and every fault of every process then pays
 * __perf_sw_event(), the event enabled or not (bench/swevent.c: ~1540 ns an anonymous
 * fault without, +39 ns enabled, +12 ns disabled; bench/results/latency-cost-20261203.md).
 * Without them a window closes at the thread's next event (outcome.h, "completed"). For a
 * cycled collector they are enabled for its on-periods only (mm_bpfsrc_set_phase). */
static void open_latency(struct mm_bpfsrc *b, struct mm_host *h, const struct wants *w)
{
	bool timed = false;
	for (unsigned i = 0; i < w->n; i++)
		timed |= w->on[i] && w->p[i]->bpf->latency;
	if (!timed)
		return;
	unsigned failed = attach_completions(b);
	char why[256], when[64] = "";
	if (b->openers_cycled)
		snprintf(when, sizeof(when), ", in the %s's %ss", b->cycle->name, b->cycle->period);
	snprintf(why, sizeof(why),
		 "fault_latency = on: 1 in %u completed faults timed%s (minor/major-faults "
		 "software events: %u of %u open)",
		 MM_BPF_COMPLETION_PERIOD * MM_BPF_TIMED_FAULTS, when, b->nlinks,
		 b->nlinks + failed);
	mm_host_set_latency(h, !b->nlinks ? "off" : failed ? "partial" : "sampled", why);
}

/* Whether the collectors on BPF may go there under source = auto: not when all of them only
 * follow others (said in their notes). */
static bool worth_it(struct mm_host *h, const struct wants *w, const struct mm_config *cfg)
{
	char list[64], why[160];
	for (unsigned i = 0; i < w->n; i++)
		if (w->on[i] && !w->p[i]->bpf->follows)
			return true;
	if (!strcmp(cfg->source, "bpf"))
		return true;
	wants_list(w, list, sizeof(list));
	snprintf(why, sizeof(why),
		 "source = auto keeps %s alone on the perf rings; source = bpf counts it in the "
		 "kernel",
		 list);
	note_all(h, w, "perf", why);
	return false;
}

/* What the loaded source runs: the duty cycle, switched programs, fed collector, field tables. */
static void arrange(struct mm_bpfsrc *b, struct mm_host *h, const struct wants *w,
		    const struct mm_config *cfg)
{
	/* A cycled collector (a share under 100%, the default) runs here too: mm_bpfsrc_set_phase
	 * attaches its programs for each on-period (why: its plugin's cycle). */
	for (unsigned i = 0; i < w->n; i++) {
		if (w->on[i] && w->p[i]->cycle && mm_config_duty_pm(cfg) < 1000)
			b->cycle = w->p[i]->cycle;
		if (w->on[i] && w->p[i]->waits && !b->fed)
			b->fed = w->p[i];
	}
	choose_switched(b, w);
	if (cfg->fault_latency)
		open_latency(b, h, w);
	b->keep_attached = b->cycle && cfg->bpf_keep_attached;
	if (b->keep_attached)
		log_warning("BPF source: bpf_keep_attached = on: the %s's programs stay attached "
			    "between %ss (a benchmark's knob)",
			    b->cycle->name, b->cycle->period);
	b->phase = MM_PHASE_ON; /* everything attached: the loop sets the first phase */
	map_fields(b, w);
	register_globals(b, h);
	for (unsigned i = 0; i < w->n; i++)
		if (w->on[i])
			mm_host_set_source(h, w->p[i]->name, "bpf",
					   w->p[i]->bpf->note ? w->p[i]->bpf->note : "");
}

int mm_bpfsrc_open(struct mm_host *h, const struct mm_config *cfg, const struct mm_symbols *syms,
		   struct mm_bpfsrc **ret)
{
	struct wants w;
	char list[64], why[320];
	*ret = NULL;
	wants_init(&w, cfg);
	if (!wants_list(&w, list, sizeof(list)))
		return 0;
	if (!strcmp(cfg->source, "perf")) {
		note_all(h, &w, "perf", "source = perf in the configuration");
		return 0;
	}
	if (!worth_it(h, &w, cfg))
		return 0;
	struct mm_bpfsrc *b = source_new();
	int r = -ENOMEM;
	if (!b) {
		snprintf(why, sizeof(why), "out of memory");
		goto fail;
	}
	b->h = h;
	r = load(b, &w, cfg, syms, why, sizeof(why));
	b->h = NULL;
	if (r < 0)
		goto fail;
	arrange(b, h, &w, cfg);
	wants_list(&w, list, sizeof(list));
	log_info("BPF source: counting %s in the kernel", list);
	*ret = b;
	return 0;

fail:
	mm_bpfsrc_free(b);
	if (!strcmp(cfg->source, "bpf"))
		return log_error_errno(r, "BPF source (source = bpf): %s", why);
	log_warning("BPF source unavailable: %s; %s run on the perf rings", why, list);
	note_all(h, &w, "perf", why);
	return 0;
}

#else /* !MM_HAVE_BPF */

int mm_bpfsrc_open(struct mm_host *h, const struct mm_config *cfg, const struct mm_symbols *syms,
		   struct mm_bpfsrc **ret)
{
	static const char why[] = "this mmlockd was built without the BPF source (meson -Dbpf)";
	bool any = false;
	*ret = NULL;
	for (const struct mm_plugin *const *p = mm_plugins; *p; p++)
		any |= (*p)->bpf && mm_config_collector_enabled(cfg, (*p)->name);
	if (!any)
		return 0;
	if (!strcmp(cfg->source, "bpf"))
		return log_error_errno(EOPNOTSUPP, "source = bpf: %s", why);
	if (strcmp(cfg->source, "perf"))
		log_info("BPF source unavailable: %s; collectors run on the perf rings", why);
	for (const struct mm_plugin *const *p = mm_plugins; *p; p++)
		if ((*p)->bpf)
			mm_host_set_source(h, (*p)->name, "perf", why);
	return 0;
}

void mm_bpfsrc_collect(void *ctx, struct mm_host *h, bool closing)
{
}

void mm_bpfsrc_set_phase(struct mm_bpfsrc *b, enum mm_phase phase)
{
}

void mm_bpfsrc_free(struct mm_bpfsrc *b)
{
}

#endif
