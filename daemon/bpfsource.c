/*
 * The BPF source (see bpfsource.h). Loading: the skeleton generated at build time from
 * plugins/bpf/counters.bpf.c is opened, told in .rodata which collectors to count, where the
 * functions its stack checks look for lie (lock_mm_and_find_vma() for fallbacks; for faults also
 * __vmf_anon_prepare(), [__]handle_mm_fault() and __folio_lock_or_retry(), all from
 * /proc/kallsyms: a collector whose functions are missing stays on the perf rings) and how the
 * vDSO's special mappings lie (from /proc/self/maps), loaded (the verifier's last message is
 * kept for the log) and attached; programs only faults needs are loaded only for it. Any failure
 * leaves every collector on the perf rings with one log line saying why; with `source = bpf` it
 * is fatal instead.
 *
 * Reading: at each tick the process map is walked (threads flush their counts into it as they
 * leave the CPU, exit, or every 20 ms while running: counters.bpf.c); the growth of each entry
 * since the previous reading (kept here per pid) is added to the process's open window
 * through mm_host_proc(), field by field into the same struct mm_proc_stats members the perf
 * collectors fill. Exits come from the ring buffer (one record per process, when its last thread
 * exits): the final growth is added to the entry the host still holds for the process
 * (mm_host_proc_known, waiting up to SETTLE_TICKS ticks for a process whose FORK record is not
 * delivered yet) and the map entry is deleted, so short-lived processes are counted and the map
 * holds live processes only. A process whose notification was lost (ring full, counted in the
 * kernel) is found gone at the next closing tick (kill(pid, 0): ESRCH) and settled the same way.
 * The host's window closes ~0.1-0.2 s after its wall-clock end (the perf path's horizon), so a
 * window's BPF counts end when it is closed, not at its nominal end; totals are unaffected.
 *
 * The contention collector's rows (lock_waits, one per pid, flags, lock, stack and window
 * generation) are read at every tick too, their growth handed to the collector, and at the
 * closing tick the generation flips and the old one's rows are deleted (collect_locks()).
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
#include "plugin.h"
#include "stats.h"

#ifdef MM_HAVE_BPF

#include <bpf/bpf.h>
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
#define NCOUNTERS    (sizeof(struct mm_bpf_counts) / sizeof(__u64))
#define LOG_SIZE     (1u << 20)
#define MAX_CPUS     1024

_Static_assert(MM_BPF_HIST_BUCKETS == MM_HIST_BUCKETS, "histograms must have the same buckets");
_Static_assert(MM_BPF_NOUTCOMES == MM_FAULT_OUTCOMES, "one latency histogram per outcome");

_Static_assert(sizeof(struct mm_bpf_lock_key) % 8 == 0, "an htab key: a multiple of 8, no padding");

/* What was already delivered of a lock row (the contention collector). */
struct lock_track {
	struct mm_bpf_lock_key key;
	__u64 contended, wait_ns;
	__u32 hist[MM_BPF_HIST_BUCKETS];
};

/* What was already delivered for the process a pid belongs to. */
struct track {
	__u64 start_boottime_ns;
	bool exited;	  /* its exit notification came: settle and forget */
	unsigned pending; /* ticks it waited, exited, for the host to know it */
	__u64 last[NCOUNTERS];
};

struct mm_bpfsrc {
	struct mm_counters *skel;
	struct ring_buffer *ring;
	struct mm_tidmap *tracks; /* pid -> struct track */
	int ncpus;
	__u64 *values; /* a buffer for one map value: a process's counters, or a per-CPU stat */
	size_t dest[NCOUNTERS]; /* offset in struct mm_proc_stats of each counter */
	__u64 stats_last[MM_BPF_NSTATS];
	int g_stats[MM_BPF_NSTATS], g_settled, g_swept, g_map_errors;
	struct bpf_link *links[2 * MAX_CPUS]; /* the fault-completion perf events */
	int link_fds[2 * MAX_CPUS];	      /* and their perf events */
	unsigned nlinks;
	/* The fault split in bursts (mm_bpfsrc_set_phase): the programs only the faults collector
	 * needs are attached for a burst only (an attached program costs every event). */
	bool bursts, opener_bursts; /* opener_bursts: on_fault too (mmaplock not counted) */
	bool keep_attached;	    /* MMLOCKD_BPF_KEEP_ATTACHED: no detaching between bursts */
	bool attach_failed;
	enum mm_split_phase phase;
	struct mm_bpf_key *settle; /* map entries to delete after the walk */
	size_t nsettle, settle_cap;
	/* The contention collector's rows: delivered so far, by key (struct lock_track). */
	bool locks;
	struct mm_htab lock_tracks;
	struct mm_host *h; /* during collect */
};

/* The collectors this source can count (want[] follows this order). */
static const struct {
	const char *name;
} covered[] = {
	{"mmaplock"},
	{"fallbacks"},
	{"faults"},
	{"contention"},
};
enum { W_MMAPLOCK, W_FALLBACKS, W_FAULTS, W_CONTENTION, W_N };
_Static_assert(W_N == sizeof(covered) / sizeof(covered[0]), "want[] follows covered[]");

/* The functions of enum mm_bpf_site, by index. */
static const char *const site_names[MM_BPF_NSITES] = {
	[MM_BPF_SITE_FALLBACK] = "lock_mm_and_find_vma",
	[MM_BPF_SITE_ANON] = "__vmf_anon_prepare",
	[MM_BPF_SITE_HMF] = "__handle_mm_fault",
	[MM_BPF_SITE_HMF_OUTER] = "handle_mm_fault",
	[MM_BPF_SITE_LOCK_RETRY] = "__folio_lock_or_retry",
};

static const char *const trace_text_names[MM_BPF_NTRACE_TEXT] = {
	[MM_BPF_TRACE_HELPER] = "__mmap_lock_do_trace_start_locking",
	[MM_BPF_TRACE_ITER] = "__traceiter_mmap_lock_start_locking",
	[MM_BPF_TRACE_CAREFULLY] = "get_mmap_lock_carefully",
};

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

/* The vDSO's special mappings around its text, as this process has them ([vvar], [vvar_vclock]
 * right below [vdso] on 6.18; [vvar] on 6.12): every process gets the same layout from the
 * kernel. Sets *below (bytes from the first of them to [vdso]) and *above ([vdso]'s size);
 * false when /proc/self/maps has no [vdso]. */
static bool vdso_layout(__u64 *below, __u64 *above)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	uint64_t lo = 0, hi = 0, special_lo = 0, prev_hi = 0;
	bool found = false;
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long long a, e;
		if (sscanf(line, "%llx-%llx", &a, &e) != 2)
			continue;
		const char *name = strrchr(line, ' ');
		name = name ? name + 1 : "";
		if (!strncmp(name, "[vdso]", 6)) {
			lo = a;
			hi = e;
			if (!special_lo || prev_hi != a)
				special_lo = a;
			found = true;
		} else if (!strncmp(name, "[vvar", 5)) {
			if (!special_lo || prev_hi != a)
				special_lo = a;
		} else {
			special_lo = 0;
		}
		prev_hi = e;
	}
	fclose(f);
	if (!found)
		return false;
	*below = lo - special_lo;
	*above = hi - lo;
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
	} else if (!t &&
		   bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.procs), &e->key, b->values) == 0) {
		/* Counted, exited, never read yet: settled from zero by the walk below. */
		t = mm_tidmap_get(b->tracks, e->key.pid, true);
		if (t) {
			t->start_boottime_ns = e->key.start_boottime_ns;
			t->exited = true;
		}
	}
	return 0;
}

/* Reads one process's counters into @sum. Returns false when the entry is gone. */
static bool read_counts(struct mm_bpfsrc *b, const struct mm_bpf_key *key, __u64 *sum)
{
	return bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.procs), key, sum) == 0;
}

/* Adds @sum's growth over t->last to the process. Returns false when an exited process is
 * not known to the host yet (try again at the next tick, SETTLE_TICKS times: not even at a
 * closing tick, since an entry made now, without its FORK record, would be a nameless one that
 * the FORK record then retires). */
static bool deliver(struct mm_bpfsrc *b, struct mm_host *h, uint32_t pid, struct track *t,
		    const __u64 *sum, bool force)
{
	struct mm_proc_stats *ps = NULL;
	bool any = false;
	for (size_t i = 0; i < NCOUNTERS; i++)
		any |= sum[i] != t->last[i];
	if (!any)
		return true;
	/* At a closing tick a live process the host does not know yet started after the records
	 * delivered so far, i.e. after the window's end (its FORK record is not in yet): its
	 * counts go to the next window, not to one that ended before it began. */
	if (!t->exited && !force && mm_host_window_closing(h) && !mm_host_proc_known(h, pid))
		return false;
	if (t->exited) {
		ps = mm_host_proc_known(h, pid);
		if (!ps && !force && t->pending++ < SETTLE_TICKS)
			return false;
	}
	if (!ps)
		ps = mm_host_proc(h, pid);
	for (size_t i = 0; i < NCOUNTERS; i++) {
		if (sum[i] <= t->last[i] || b->dest[i] == SIZE_MAX)
			continue;
		*(uint64_t *)((char *)ps + b->dest[i]) += sum[i] - t->last[i];
		t->last[i] = sum[i];
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
	if (forget)
		mm_tidmap_remove(b->tracks, key->pid);
	mm_host_global_add(b->h, b->g_settled, 1);
}

static void collect_stats(struct mm_bpfsrc *b, struct mm_host *h)
{
	int fd = bpf_map__fd(b->skel->maps.stats);
	for (__u32 k = 0; k < MM_BPF_NSTATS; k++) {
		if (bpf_map_lookup_elem(fd, &k, b->values) < 0)
			continue;
		__u64 sum = 0;
		for (int c = 0; c < b->ncpus; c++)
			sum += b->values[c];
		if (sum > b->stats_last[k])
			mm_host_global_add(h, b->g_stats[k], sum - b->stats_last[k]);
		b->stats_last[k] = sum;
	}
}

static bool queued(const struct mm_bpfsrc *b, const struct mm_bpf_key *key)
{
	for (size_t i = 0; i < b->nsettle; i++)
		if (b->settle[i].pid == key->pid &&
		    b->settle[i].start_boottime_ns == key->start_boottime_ns)
			return true;
	return false;
}

/* Delivers @sum's growth over @t (what was delivered of the row) to the contention collector. */
static void deliver_lock_row(struct mm_host *h, const struct mm_bpf_lock_key *key,
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
	mm_host_waits(h, "contention", &w);
	t->contended = sum->contended;
	t->wait_ns = sum->wait_ns;
	memcpy(t->hist, sum->hist, sizeof(t->hist));
}

/* The contention collector's rows: each row's growth since its last delivery goes to the
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
		deliver_lock_row(h, &key, &sum, t ? t : &none); /* out of memory: from zero */
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

void mm_bpfsrc_collect(void *ctx, struct mm_host *h, bool closing)
{
	struct mm_bpfsrc *b = ctx;
	if (!b)
		return;
	b->h = h;
	ring_buffer__consume(b->ring);
	int fd = bpf_map__fd(b->skel->maps.procs);
	struct mm_bpf_key key, next, *prev = NULL;
	__u64 sum[NCOUNTERS];
	b->nsettle = 0;
	for (; bpf_map_get_next_key(fd, prev, &next) == 0; prev = &key) {
		key = next;
		if (!read_counts(b, &key, sum))
			continue;
		struct track *t = mm_tidmap_get(b->tracks, key.pid, true);
		if (!t) {
			mm_host_global_add(h, b->g_map_errors, 1);
			continue;
		}
		if (t->start_boottime_ns && key.start_boottime_ns < t->start_boottime_ns) {
			if (queued(b, &key))
				continue; /* settled in this walk already */
			/* Late events of an earlier process with this pid (its entry was deleted,
			 * an exiting thread counted again): settle them on their own. */
			struct track late = {.start_boottime_ns = key.start_boottime_ns,
					     .exited = true};
			deliver(b, h, key.pid, &late, sum, true);
			settle(b, &key, false);
			continue;
		}
		if (t->start_boottime_ns != key.start_boottime_ns) {
			if (t->start_boottime_ns) {
				/* The pid was reused: the tracked process is over. */
				struct mm_bpf_key old = {.pid = key.pid,
							 .start_boottime_ns = t->start_boottime_ns};
				__u64 old_sum[NCOUNTERS];
				t->exited = true;
				if (read_counts(b, &old, old_sum))
					deliver(b, h, key.pid, t, old_sum, true);
				settle(b, &old, true);
				t = mm_tidmap_get(b->tracks, key.pid, true);
				if (!t)
					continue;
			}
			memset(t, 0, sizeof(*t));
			t->start_boottime_ns = key.start_boottime_ns;
		}
		if (closing && !t->exited && kill((pid_t)key.pid, 0) < 0 && errno == ESRCH) {
			t->exited = true;
			mm_host_global_add(h, b->g_swept, 1);
		}
		if (deliver(b, h, key.pid, t, sum, false) && t->exited)
			settle(b, &key, true);
	}
	for (size_t i = 0; i < b->nsettle; i++)
		bpf_map_delete_elem(fd, &b->settle[i]);
	if (b->locks)
		collect_locks(b, h, closing);
	collect_stats(b, h);
	/* The burst's counts are in: its tail ends (counters.bpf.c split_tail), unless the next
	 * burst has begun meanwhile. */
	if (b->bursts && b->phase == MM_SPLIT_OFF && mm_host_reading_burst(h))
		b->skel->bss->split_tail = 0;
	b->h = NULL;
}

static void note_all(struct mm_host *h, const bool *want, const char *source, const char *why)
{
	for (size_t i = 0; i < sizeof(covered) / sizeof(covered[0]); i++)
		if (want[i])
			mm_host_set_source(h, covered[i].name, source, why);
}

static void register_globals(struct mm_bpfsrc *b, struct mm_host *h)
{
	static const char *const names[MM_BPF_NSTATS] = {
		[MM_BPF_PROCS_DROPPED] = "procs_dropped",
		[MM_BPF_EXITS_LOST] = "exits_lost",
		[MM_BPF_NO_THREAD_STORAGE] = "threads_without_storage",
		[MM_BPF_ACQUIRE_WITHOUT_START] = "acquire_without_start",
		[MM_BPF_RELEASE_WITHOUT_ACQUIRE] = "write_release_without_acquire",
		[MM_BPF_HOLDS_TOO_NESTED] = "write_holds_too_nested",
		[MM_BPF_WIN_COMPLETED] = "fault_windows_completed",
		[MM_BPF_WIN_NEXT_FAULT] = "fault_windows_closed_by_next_fault",
		[MM_BPF_WIN_KERNEL_FAULT] = "fault_windows_closed_by_kernel_fault",
		[MM_BPF_WIN_SYSCALL] = "fault_windows_closed_by_syscall",
		[MM_BPF_WIN_EXIT] = "fault_windows_closed_by_exit",
		[MM_BPF_WIN_LEFT] = "fault_windows_closed_outside_the_fault",
		[MM_BPF_FLUSHES] = "thread_flushes",
		[MM_BPF_WIN_LATE] = "fault_windows_closed_after_their_burst",
		[MM_BPF_SITE_THROUGH_HELPER] = "fallback_site_through_trace_helper",
		[MM_BPF_LOCK_BEGIN_NO_END] = "contention_begin_without_end",
		[MM_BPF_LOCK_END_NO_BEGIN] = "contention_end_without_begin",
		[MM_BPF_LOCK_ROWS_DROPPED] = "contention_waits_dropped",
		[MM_BPF_LOCK_STACK_CACHED] = "lock_stacks_from_cache",
		[MM_BPF_LOCK_STACK_WALKED] = "lock_stacks_walked",
		[MM_BPF_LOCK_STACK_WRONG] = "lock_stacks_cache_wrong",
	};
	for (unsigned i = 0; i < MM_BPF_NSTATS; i++)
		b->g_stats[i] = mm_host_global(
			h, "bpf_events", names[i],
			i ? NULL
			  : "BPF source: processes settled, events it could not count (full maps, "
			    "lost exit notifications, unpaired lock events)");
	b->g_settled = mm_host_global(h, "bpf_events", "processes_settled", NULL);
	b->g_swept = mm_host_global(h, "bpf_events", "exits_found_by_sweep", NULL);
	b->g_map_errors = mm_host_global(h, "bpf_events", "tracks_refused", NULL);
}

void mm_bpfsrc_free(struct mm_bpfsrc *b)
{
	if (!b)
		return;
	ring_buffer__free(b->ring);
	for (unsigned i = 0; i < b->nlinks; i++)
		bpf_link__destroy(b->links[i]);
	mm_counters__destroy(b->skel);
	mm_tidmap_free(b->tracks);
	mm_htab_free(&b->lock_tracks);
	free(b->values);
	free(b->settle);
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

/* Attaches (@on) or detaches a program only the fault split's bursts need; false on failure
 * (said once by the caller). */
static bool switch_link(struct bpf_program *prog, struct bpf_link **link, bool on)
{
	if (!on) {
		bpf_link__destroy(*link);
		*link = NULL;
		return true;
	}
	if (!*link)
		*link = bpf_program__attach(prog);
	return *link != NULL;
}

void mm_bpfsrc_set_phase(struct mm_bpfsrc *b, enum mm_split_phase phase)
{
	if (!b || !b->bursts || phase == b->phase)
		return;
	struct mm_counters *s = b->skel;
	struct bpf_program *progs[] = {s->progs.on_filemap_fault, s->progs.on_map_pages,
				       s->progs.on_added};
	struct bpf_link **links[] = {&s->links.on_filemap_fault, &s->links.on_map_pages,
				     &s->links.on_added};
	bool evidence = phase != MM_SPLIT_OFF, ok = true;
	/* MMLOCKD_BPF_KEEP_ATTACHED=1 (a benchmark's knob): the programs stay attached from the
	 * first burst on and find out between bursts that they have nothing to do
	 * (IDLE_BETWEEN_BURSTS in counters.bpf.c), to tell what attaching and detaching them costs
	 * (each first probe of a tracepoint patches kernel text) from what they cost attached. */
	bool keep = b->keep_attached;
	/* In: evidence, then a new burst, then the opener. Out: the opener first (split.h). */
	if (evidence != (b->phase != MM_SPLIT_OFF)) {
		for (size_t i = 0; evidence && i < sizeof(progs) / sizeof(progs[0]); i++)
			ok &= switch_link(progs[i], links[i], true);
		/* The completion events, with fault_latency on only (none are open
		 * otherwise): disabled, not closed, between bursts. An open software event
		 * keeps perf_sw_event()'s static key on, so every fault of every process still
		 * calls __perf_sw_event(), but the collection thread has dropped the capabilities
		 * perf_event_open() needs, so they cannot be opened per burst (tried on
		 * 2026-12-02: EPERM at the first burst). */
		for (unsigned i = 0; b->opener_bursts && i < b->nlinks; i++)
			ioctl(b->link_fds[i],
			      evidence ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
	}
	if (phase == MM_SPLIT_ON) {
		s->bss->split_gen++;
		s->bss->split_tail = 1; /* cleared in mm_bpfsrc_collect() after the burst's read */
		s->bss->split_off = 0;
	} else {
		s->bss->split_off = 1;
	}
	if (b->opener_bursts)
		ok &= switch_link(s->progs.on_fault, &s->links.on_fault,
				  phase == MM_SPLIT_ON || (keep && s->links.on_fault));
	for (size_t i = 0; !evidence && !keep && i < sizeof(progs) / sizeof(progs[0]); i++)
		switch_link(progs[i], links[i], false);
	if (!ok && !b->attach_failed) {
		b->attach_failed = true;
		log_warning("BPF source: attaching the fault split's programs for a burst failed "
			    "(%m): bursts go on with what is attached");
	}
	b->phase = phase;
}

/* Moves @name off BPF (its site is missing), or fails when nothing else would run on it. */
static int drop_collector(struct mm_bpfsrc *b, bool *want, int which, const char *reason, char *why,
			  size_t whylen)
{
	want[which] = false;
	bool any = false;
	for (int i = 0; i < W_N; i++)
		any |= want[i];
	if (!any) {
		snprintf(why, whylen, "%s", reason);
		return -ENOENT;
	}
	log_warning("BPF source: %s; %s runs on the perf rings", reason, covered[which].name);
	mm_host_set_source(b->h, covered[which].name, "perf", reason);
	return 0;
}

/* The .rodata the programs decide by: the collectors counted, where the sites of enum
 * mm_bpf_site lie, the vDSO's layout. A collector whose sites this kernel lacks runs on the perf
 * rings instead (said once); an error when none is left. */
static int configure(struct mm_bpfsrc *b, bool *want, const struct mm_symbols *syms, char *why,
		     size_t whylen)
{
	struct mm_counters *s = b->skel;
	char reason[160];
	bool have[MM_BPF_NSITES];
	for (int k = 0; k < MM_BPF_NSITES; k++)
		have[k] = function_text(syms, site_names[k], (__u64 *)&s->rodata->sites[k].lo,
					(__u64 *)&s->rodata->sites[k].hi);
	for (int k = 0; k < MM_BPF_NTRACE_TEXT; k++)
		function_text(syms, trace_text_names[k], (__u64 *)&s->rodata->trace_text[k].lo,
			      (__u64 *)&s->rodata->trace_text[k].hi);
	if (want[W_FALLBACKS] && !have[MM_BPF_SITE_FALLBACK]) {
		snprintf(reason, sizeof(reason),
			 "%s not found in the kernel symbols (/proc/kallsyms)",
			 site_names[MM_BPF_SITE_FALLBACK]);
		int r = drop_collector(b, want, W_FALLBACKS, reason, why, whylen);
		if (r < 0)
			return r;
	}
	for (int k = 0; want[W_FAULTS] && k < MM_BPF_NSITES; k++) {
		if (have[k])
			continue;
		snprintf(reason, sizeof(reason),
			 "%s not found in the kernel symbols (/proc/kallsyms): fault outcomes "
			 "need it",
			 site_names[k]);
		int r = drop_collector(b, want, W_FAULTS, reason, why, whylen);
		if (r < 0)
			return r;
	}
	if (want[W_FAULTS] &&
	    !vdso_layout((__u64 *)&s->rodata->vdso_below, (__u64 *)&s->rodata->vdso_above))
		log_info("BPF source: no [vdso] in /proc/self/maps; its faults' retries show as "
			 "mmap_unknown");
	s->rodata->count_mmaplock = want[W_MMAPLOCK];
	s->rodata->count_fallbacks = want[W_FALLBACKS];
	s->rodata->count_faults = want[W_FAULTS];
	s->rodata->count_contention = want[W_CONTENTION];
	return 0;
}

/* MMLOCKD_BPF_SKIP=NAME[,NAME...]: those programs are not loaded, whatever the collectors need
 * (a benchmark's knob: bench/run.py's mmlockd_fallbacks_bpf_no* configurations measure what
 * one program costs a workload; the counts they feed are wrong). Logged, so no one mistakes
 * such a run for a real one. */
static void skip_programs(struct bpf_object *obj)
{
	const char *env = getenv("MMLOCKD_BPF_SKIP");
	if (!env || !*env)
		return;
	char *list = strdup(env), *save = NULL;
	for (char *name = list ? strtok_r(list, ",", &save) : NULL; name;
	     name = strtok_r(NULL, ",", &save)) {
		struct bpf_program *p = bpf_object__find_program_by_name(obj, name);
		if (!p) {
			log_warning("BPF source: MMLOCKD_BPF_SKIP: no program %s", name);
			continue;
		}
		bpf_program__set_autoload(p, false);
		log_warning("BPF source: MMLOCKD_BPF_SKIP: %s not loaded (counts will be wrong)",
			    name);
	}
	free(list);
}

/* Opens, configures, loads and attaches; on failure *why says why. */
static int load(struct mm_bpfsrc *b, bool *want, const struct mm_symbols *syms, char *why,
		size_t whylen)
{
	const char *btf = getenv("MMLOCKD_BTF");
	if (access(btf ? btf : DEFAULT_BTF, R_OK) < 0) {
		snprintf(why, whylen,
			 "no kernel BTF at %s (%m; the kernel needs CONFIG_DEBUG_INFO_BTF)",
			 btf ? btf : DEFAULT_BTF);
		return -ENOENT;
	}
	/* Permission first, so an unprivileged daemon hears that rather than a later symptom
	 * (hidden kernel symbols). */
	int probe = bpf_map_create(BPF_MAP_TYPE_ARRAY, NULL, 4, 4, 1, NULL);
	if (probe < 0) {
		int r = -errno;
		why_failed(r, "creating a BPF map", why, whylen);
		return r;
	}
	close(probe);
	verifier_log = calloc(1, LOG_SIZE);
	libbpf_last[0] = failed_prog[0] = '\0';
	libbpf_set_print(on_libbpf_print);
	LIBBPF_OPTS(bpf_object_open_opts, opts, .btf_custom_path = btf,
		    .kernel_log_buf = verifier_log, .kernel_log_size = verifier_log ? LOG_SIZE : 0);
	b->skel = mm_counters__open_opts(&opts);
	int r = b->skel ? 0 : -errno;
	if (r < 0) {
		why_failed(r, "opening the BPF object", why, whylen);
		goto out;
	}
	struct mm_counters *s = b->skel;
	s->rodata->reject_for_test = getenv("MMLOCKD_BPF_REJECT_FOR_TEST") ? 1 : 0;
	r = configure(b, want, syms, why, whylen);
	if (r < 0)
		goto out;
	bpf_program__set_autoload(s->progs.on_fault,
				  want[W_MMAPLOCK] || want[W_FAULTS] || s->rodata->reject_for_test);
	bpf_program__set_autoload(s->progs.on_released, want[W_MMAPLOCK]);
	bpf_program__set_autoload(s->progs.on_contention, want[W_MMAPLOCK] || want[W_CONTENTION]);
	bpf_program__set_autoload(s->progs.on_contention_end, want[W_CONTENTION]);
	/* The per-process counters' programs: nothing of them runs for contention alone, but
	 * on_switch, where a thread's ended waits reach their rows (lock_rows()). */
	bool counters = want[W_MMAPLOCK] || want[W_FALLBACKS] || want[W_FAULTS];
	bpf_program__set_autoload(s->progs.on_start, counters);
	bpf_program__set_autoload(s->progs.on_acquired, counters);
	bpf_program__set_autoload(s->progs.on_switch, counters || want[W_CONTENTION]);
	/* The faults collector's evidence: nothing of it runs for the others. */
	bpf_program__set_autoload(s->progs.on_fault_kernel, want[W_FAULTS]);
	bpf_program__set_autoload(s->progs.on_filemap_fault, want[W_FAULTS]);
	bpf_program__set_autoload(s->progs.on_map_pages, want[W_FAULTS]);
	bpf_program__set_autoload(s->progs.on_added, want[W_FAULTS]);
	skip_programs(s->obj);
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

int mm_bpfsrc_open(struct mm_host *h, const struct mm_config *cfg, const struct mm_symbols *syms,
		   struct mm_bpfsrc **ret)
{
	bool want[W_N] = {false};
	bool any = false;
	char list[64] = "";
	*ret = NULL;
	for (size_t i = 0; i < sizeof(covered) / sizeof(covered[0]); i++) {
		want[i] = mm_config_collector_enabled(cfg, covered[i].name);
		any |= want[i];
		if (want[i])
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
				 list[0] ? ", " : "", covered[i].name);
	}
	/* The fault split in bursts (split_duty under 100%, the default) runs here too:
	 * mm_bpfsrc_set_phase attaches its programs for each burst. Chosen by measurement
	 * (bench/results/split-bpf-20261202.md: the default on BPF no costlier than on the perf
	 * rings, and its swap-in fallbacks classified where perf leaves 88% mmap_unknown). */
	bool bursts = want[W_FAULTS] && mm_config_split_duty_pm(cfg) < 1000;
	if (!any)
		return 0;
	if (!strcmp(cfg->source, "perf")) {
		note_all(h, want, "perf", "source = perf in the configuration");
		return 0;
	}
	/* fallbacks alone (--split-duty 0) stays on the perf rings under auto: the same run
	 * could not tell the two apart (0.945 / 0.973 / 0.922 perf, 0.938 / 0.895 / 0.977 BPF on
	 * swapin / filemap / mix). With mmaplock or faults on BPF it follows them (one source,
	 * shared programs). */
	if (!want[W_MMAPLOCK] && !want[W_FAULTS] && !want[W_CONTENTION] &&
	    strcmp(cfg->source, "bpf")) {
		note_all(h, want, "perf",
			 "source = auto keeps fallbacks alone on the perf rings; "
			 "source = bpf counts it in the kernel");
		return 0;
	}

	char why[320];
	struct mm_bpfsrc *b = calloc(1, sizeof(*b));
	int r = -ENOMEM;
	if (!b) {
		snprintf(why, sizeof(why), "out of memory");
		goto fail;
	}
	b->ncpus = libbpf_num_possible_cpus();
	b->tracks = mm_tidmap_new(sizeof(struct track), MAX_PROCS);
	size_t vsize = (size_t)(b->ncpus > 0 ? b->ncpus : 0) * sizeof(__u64);
	if (vsize && vsize < sizeof(struct mm_bpf_counts))
		vsize = sizeof(struct mm_bpf_counts);
	b->values = vsize ? calloc(1, vsize) : NULL;
	if (!b->tracks || !b->values ||
	    mm_htab_init(&b->lock_tracks, sizeof(struct lock_track),
			 sizeof(struct mm_bpf_lock_key)) < 0) {
		snprintf(why, sizeof(why), "out of memory");
		goto fail;
	}
	b->h = h;
	r = load(b, want, syms, why, sizeof(why));
	b->h = NULL;
	if (r < 0)
		goto fail;
	b->bursts = bursts && want[W_FAULTS];
	b->locks = want[W_CONTENTION];
	b->opener_bursts = b->bursts && !want[W_MMAPLOCK];
	/* The fault-completion events time the sampled faults (the latency histograms) and close
	 * their windows at the fault's end. Only with fault_latency on: an open software event
	 * keeps perf_sw_event()'s static key on, and every fault of every process then pays
	 * __perf_sw_event(), the event enabled or not (bench/swevent.c: ~1540 ns an anonymous
	 * fault without, +39 ns enabled, +12 ns disabled; bench/results/latency-cost-20261203.md).
	 * Without them a window closes at the thread's next event (outcome.h, "completed"). In
	 * bursts they are enabled for each burst only (mm_bpfsrc_set_phase). */
	if (cfg->fault_latency && (want[W_MMAPLOCK] || want[W_FAULTS])) {
		unsigned failed = attach_completions(b);
		char lwhy[256];
		snprintf(lwhy, sizeof(lwhy),
			 "fault_latency = on: 1 in %u completed faults timed%s (minor/major-faults "
			 "software events: %u of %u open)",
			 MM_BPF_COMPLETION_PERIOD * MM_BPF_TIMED_FAULTS,
			 b->opener_bursts ? ", in the split's bursts" : "", b->nlinks,
			 b->nlinks + failed);
		mm_host_set_latency(h, !b->nlinks ? "off" : failed ? "partial" : "sampled", lwhy);
	}
	const char *keep = getenv("MMLOCKD_BPF_KEEP_ATTACHED");
	b->keep_attached = b->bursts && keep && !strcmp(keep, "1");
	if (b->keep_attached)
		log_warning("BPF source: MMLOCKD_BPF_KEEP_ATTACHED: the split's programs stay "
			    "attached between bursts (a benchmark's knob)");
	b->phase = MM_SPLIT_ON; /* everything attached: the loop sets the first phase */

	for (size_t i = 0; i < NCOUNTERS; i++)
		b->dest[i] = SIZE_MAX;
#define TO2(from, to)                                                                              \
	b->dest[offsetof(struct mm_bpf_counts, from) / sizeof(__u64)] =                            \
		offsetof(struct mm_proc_stats, to)
#define TO(member) TO2(member, member)
	if (want[W_MMAPLOCK]) {
		TO(faults);
		TO(mmap_lock_read);
		TO(mmap_lock_write);
		TO(mmap_lock_trylock_fail);
		TO(mmap_lock_waits);
		TO(mmap_lock_wait_ns);
		TO(mmap_lock_write_hold_ns);
		TO(mmap_lock_contended);
		for (size_t i = 0; i < MM_BPF_HIST_BUCKETS; i++) {
			TO2(mmap_lock_wait_hist[i], mmap_lock_wait_hist.bucket[i]);
			TO2(fault_ns_vma_hist[i], fault_ns_vma_hist.bucket[i]);
			TO2(fault_ns_mmap_hist[i], fault_ns_mmap_hist.bucket[i]);
		}
	}
	if (want[W_FALLBACKS]) {
		TO(fallback_locks);
		TO(fallback_lock_waits);
	}
	if (want[W_FAULTS]) {
		TO(faults_vma);
		TO(faults_vma_retry);
		TO(faults_mmap_retry);
		TO(faults_mmap_abort);
		TO(faults_mmap_unknown);
		TO(faults_mmap_fallback);
		TO(faults_mmap_lock_retries);
		TO(faults_mmap_lock_wait_ns);
		TO(faults_pages_reread);
		for (size_t o = 0; o < MM_BPF_NOUTCOMES; o++)
			for (size_t i = 0; i < MM_BPF_HIST_BUCKETS; i++)
				TO2(fault_ns_outcome_hist[o][i],
				    fault_ns_outcome_hist[o].bucket[i]);
		TO(mmap_lock_by_fault);
		TO(mmap_lock_by_fault_other);
		TO(mmap_lock_by_fault_kernel);
	}
#undef TO
#undef TO2
	register_globals(b, h);
	note_all(h, want, "bpf", "");
	if (want[W_FAULTS])
		mm_host_set_source(h, "faults", "bpf",
				   "mmap_lock_by_* other than fault, fault_other and fault_kernel "
				   "need callchains: 0 on this source");
	list[0] = '\0';
	for (size_t i = 0; i < W_N; i++)
		if (want[i])
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
				 list[0] ? ", " : "", covered[i].name);
	log_info("BPF source: counting %s in the kernel", list);
	*ret = b;
	return 0;

fail:
	mm_bpfsrc_free(b);
	if (!strcmp(cfg->source, "bpf"))
		return log_error_errno(r, "BPF source (source = bpf): %s", why);
	log_warning("BPF source unavailable: %s; %s run on the perf rings", why, list);
	note_all(h, want, "perf", why);
	return 0;
}

#else /* !MM_HAVE_BPF */

int mm_bpfsrc_open(struct mm_host *h, const struct mm_config *cfg, const struct mm_symbols *syms,
		   struct mm_bpfsrc **ret)
{
	static const char why[] = "this mmlockd was built without the BPF source (meson -Dbpf)";
	*ret = NULL;
	if (!mm_config_collector_enabled(cfg, "mmaplock") &&
	    !mm_config_collector_enabled(cfg, "fallbacks") &&
	    !mm_config_collector_enabled(cfg, "faults") &&
	    !mm_config_collector_enabled(cfg, "contention"))
		return 0;
	if (!strcmp(cfg->source, "bpf"))
		return log_error_errno(EOPNOTSUPP, "source = bpf: %s", why);
	if (strcmp(cfg->source, "perf"))
		log_info("BPF source unavailable: %s; collectors run on the perf rings", why);
	mm_host_set_source(h, "mmaplock", "perf", why);
	mm_host_set_source(h, "fallbacks", "perf", why);
	mm_host_set_source(h, "faults", "perf", why);
	mm_host_set_source(h, "contention", "perf", why);
	return 0;
}

void mm_bpfsrc_collect(void *ctx, struct mm_host *h, bool closing)
{
}

void mm_bpfsrc_set_phase(struct mm_bpfsrc *b, enum mm_split_phase phase)
{
}

void mm_bpfsrc_free(struct mm_bpfsrc *b)
{
}

#endif
