/*
 * Process table (see proctable.h): a chained hash on pid for live entries plus a singly linked
 * list of every entry. Lookups in /proc happen once per process, when it is first seen.
 *
 * The open windows' counts (struct mm_proc_stats, 3 KiB with the histograms) come from an arena
 * of their own, emptied at each roll, not from malloc: a window lives exactly one window, and
 * allocated with malloc among the entries (which live as long as their process) the freed windows
 * left holes glibc kept resident: 10 000 processes started at once left ~8 MiB of free heap
 * behind them for good. The arena is mapped in 1 MiB chunks; the first stays (cleared) from
 * window to window, the others are unmapped at the roll, so a fork storm's windows are given back
 * as soon as their window is folded into the totals.
 */
#include "proctable.h"

#include "cgpath.h"
#include "clock.h"
#include "log.h"
#include "names.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NBUCKETS 4096

/* A chunk of windows (see the top of this file). */
#define CHUNK_BYTES (1u << 20)
struct chunk {
	struct chunk *next;
	size_t used; /* bytes handed out, after the header */
};
#define CHUNK_HEAD ((sizeof(struct chunk) + 63) & ~(size_t)63)

struct arena {
	struct chunk *chunks; /* newest first; the oldest is kept by arena_reset() */
};

struct mm_proctable {
	struct arena windows, next; /* the open windows, and the carries of the next one */
	/* The entries with an open window, in the order they got it: what is walked every tick
	 * (a partial snapshot, the duty cycle's period ends), so idle processes cost no walk. */
	struct mm_proc **active;
	size_t nactive, active_cap;
	struct mm_proc *buckets[NBUCKETS];
	struct mm_names cgroups; /* the entries' cgroup paths, one copy each */
	struct mm_proc *all;
	uint64_t count;
	uint64_t nameless; /* entries stored as "pid-N" (count_nameless()) */
	mm_proc_lookup_fn lookup;
	void *ctx;
	size_t data_size;
	int hierarchy; /* whose moves change the accounting cgroup (cgpath.h); -1: unknown */
};

static int read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, size - 1);
	int err = errno;
	close(fd);
	if (n < 0)
		return -err;
	buf[n] = '\0';
	return (int)n;
}

/* Boot time in unix ms (the clocks' difference), read once: a process's start is its identity,
 * and it must come out the same at every read. Moved only by mm_proctable_follow_clock(). */
static uint64_t boot_ms_cached;

static uint64_t read_boot_unix_ms(void)
{
	struct timespec rt, bt;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_BOOTTIME, &bt);
	int64_t ms = ((int64_t)rt.tv_sec - bt.tv_sec) * 1000 + (rt.tv_nsec - bt.tv_nsec) / 1000000;
	return ms > 0 ? (uint64_t)ms : 1;
}

static uint64_t boot_unix_ms(void)
{
	if (!boot_ms_cached)
		boot_ms_cached = read_boot_unix_ms();
	return boot_ms_cached;
}

uint64_t mm_proc_start_ms(uint64_t start_ticks)
{
	static long hz;
	if (!hz) {
		hz = sysconf(_SC_CLK_TCK);
		if (hz <= 0)
			hz = 100;
	}
	return boot_unix_ms() + start_ticks * 1000ull / (uint64_t)hz;
}

uint64_t mm_proc_boottime_ms(uint64_t boottime_ns)
{
	return boot_unix_ms() + boottime_ns / 1000000;
}

#define PF_EXITING 0x00000004u
#define PF_KTHREAD 0x00200000u

int mm_proc_parse_stat(const char *text, struct mm_pid_stat *ret)
{
	/* "pid (comm) state ppid ...": comm may hold spaces and parentheses. */
	const char *open_paren = strchr(text, '('), *p = strrchr(text, ')');
	if (!open_paren || !p || p < open_paren)
		return -EINVAL;
	struct mm_pid_stat st = {0};
	size_t len = (size_t)(p - open_paren - 1);
	if (len >= sizeof(st.comm))
		len = sizeof(st.comm) - 1;
	memcpy(st.comm, open_paren + 1, len);
	p++;
	unsigned long long flags = 0;
	char state = 0;
	for (unsigned field = 3; field <= 22; field++) {
		while (*p == ' ')
			p++;
		if (!*p)
			return -EINVAL;
		char *end;
		unsigned long long v = 0;
		if (field == 3) { /* state: one letter */
			state = *p;
			st.exited = *p == 'Z' || *p == 'X';
			end = (char *)p + 1;
		} else {
			errno = 0;
			v = strtoull(p, &end, 10);
			if (end == p || errno)
				return -EINVAL;
		}
		switch (field) {
		case 9:
			flags = v;
			break;
		case 10:
			st.minflt = v;
			break;
		case 12:
			st.majflt = v;
			break;
		case 22:
			st.start_ticks = v;
			break;
		default:
			break;
		}
		p = end;
	}
	st.kthread = (flags & PF_KTHREAD) != 0;
	st.exiting = (flags & PF_EXITING) || state == 'Z' || state == 'X';
	*ret = st;
	return 0;
}

int mm_proc_lookup_procfs(void *ctx, uint32_t pid, struct mm_proc_ident *ret)
{
	char path[64], buf[1024], cg[4096];
	struct mm_proc_ident id = {0};

	/* The cgroup before the stat: whether the task was exiting while its cgroup was read
	 * (which hides a v1 path, cgpath.h) is known from a stat read after it. */
	snprintf(path, sizeof(path), "/proc/%u/cgroup", pid);
	bool have_cg = read_file(path, cg, sizeof(cg)) > 0;
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	int n = read_file(path, buf, sizeof(buf));
	if (n < 0)
		return n;
	struct mm_pid_stat st;
	if (mm_proc_parse_stat(buf, &st) < 0)
		return -EINVAL;
	memcpy(id.comm, st.comm, sizeof(id.comm));
	id.start_ms = mm_proc_start_ms(st.start_ticks);
	if (have_cg)
		mm_cgpath_parse(cg, st.exiting, id.cgroup, sizeof(id.cgroup));
	*ret = id;
	return 0;
}

struct mm_proctable *mm_proctable_new(mm_proc_lookup_fn lookup, void *ctx)
{
	struct mm_proctable *t = calloc(1, sizeof(*t));
	if (!t || mm_names_init(&t->cgroups) < 0) {
		free(t);
		return NULL;
	}
	t->lookup = lookup ? lookup : mm_proc_lookup_procfs;
	t->ctx = ctx;
	t->hierarchy = -1;
	char cg[4096];
	if (!lookup && read_file("/proc/self/cgroup", cg, sizeof(cg)) > 0)
		t->hierarchy = mm_cgpath_hierarchy(cg);
	return t;
}

void mm_proctable_set_hierarchy(struct mm_proctable *t, int hierarchy)
{
	t->hierarchy = hierarchy;
}

/* Gives @p the cgroup @path (at most MM_CGROUP_LEN - 1 bytes are kept). An unknown one ("": the
 * lookup could not tell, see proctable.h) and ENOMEM leave the entry the one it had. */
static void set_cgroup(struct mm_proctable *t, struct mm_proc *p, const char *path)
{
	if (!path[0])
		return;
	const char *now = mm_names_ref(&t->cgroups, path);
	if (!now)
		return;
	mm_names_unref(&t->cgroups, p->cgroup);
	p->cgroup = now;
}

void mm_proctable_reserve(struct mm_proctable *t, size_t size)
{
	t->data_size = (size + 7) & ~(size_t)7;
}

/* A zeroed struct mm_proc_stats from @a; NULL when no chunk can be mapped. */
static struct mm_proc_stats *arena_get(struct arena *a)
{
	const size_t size = (sizeof(struct mm_proc_stats) + 63) & ~(size_t)63;
	_Static_assert(CHUNK_HEAD + sizeof(struct mm_proc_stats) <= CHUNK_BYTES, "a window fits");
	struct chunk *c = a->chunks;
	if (!c || CHUNK_HEAD + c->used + size > CHUNK_BYTES) {
		void *m = mmap(NULL, CHUNK_BYTES, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return NULL;
		c = m;
		c->next = a->chunks;
		c->used = 0;
		a->chunks = c;
	}
	struct mm_proc_stats *s = (void *)((char *)c + CHUNK_HEAD + c->used);
	c->used += size;
	return s; /* zero: a new mapping, or cleared by arena_reset() */
}

/* Drops every window of @a: the oldest chunk is cleared for reuse, the others unmapped (all of
 * them with @all). */
static void arena_reset(struct arena *a, bool all)
{
	while (a->chunks && (all || a->chunks->next)) {
		struct chunk *c = a->chunks;
		a->chunks = c->next;
		munmap(c, CHUNK_BYTES);
	}
	struct chunk *c = a->chunks;
	if (!c)
		return;
	/* A few windows are cleared in place; after a storm the pages go back to the kernel
	 * (zero again when next touched) rather than staying resident for the next one. */
	size_t page = (size_t)sysconf(_SC_PAGESIZE), from = (CHUNK_HEAD + page - 1) & ~(page - 1);
	if (c->used > 16 * page &&
	    madvise((char *)c + from, CHUNK_BYTES - from, MADV_DONTNEED) == 0)
		memset((char *)c + CHUNK_HEAD, 0, from - CHUNK_HEAD);
	else
		memset((char *)c + CHUNK_HEAD, 0, c->used);
	c->used = 0;
}

static void free_proc(struct mm_proctable *t, struct mm_proc *p)
{
	mm_names_unref(&t->cgroups, p->cgroup);
	mm_shared_counts_unref(p->closed);
	free(p->closed_hists);
	free(p); /* its window and carry are the arenas' */
}

void mm_proctable_free(struct mm_proctable *t)
{
	if (!t)
		return;
	struct mm_proc *p = t->all;
	while (p) {
		struct mm_proc *next = p->next;
		free_proc(t, p);
		p = next;
	}
	arena_reset(&t->windows, true);
	arena_reset(&t->next, true);
	free(t->active);
	mm_names_free(&t->cgroups);
	free(t);
}

static struct mm_proc **bucket(struct mm_proctable *t, uint32_t pid)
{
	return &t->buckets[(pid * 2654435761u) % NBUCKETS];
}

/* Exited entries stay in the index until they are freed, so late events of a process (its
 * last thread's exit_mmap can follow the leader's EXIT record) still find it. */
static struct mm_proc *find(struct mm_proctable *t, uint32_t pid, bool exited)
{
	for (struct mm_proc *p = *bucket(t, pid); p; p = p->hnext)
		if ((uint32_t)p->pid == pid && p->exited == exited)
			return p;
	return NULL;
}

static struct mm_proc *find_live(struct mm_proctable *t, uint32_t pid)
{
	return find(t, pid, false);
}

static void unindex(struct mm_proctable *t, struct mm_proc *victim)
{
	for (struct mm_proc **pp = bucket(t, (uint32_t)victim->pid); *pp; pp = &(*pp)->hnext) {
		if (*pp == victim) {
			*pp = victim->hnext;
			victim->hnext = NULL;
			return;
		}
	}
}

/* What a child of @ppid was called, and where it ran, when it was forked: the kernel copies the
 * parent's name and cgroup into the child. From the parent's entry, else (or for a cgroup the
 * entry does not know) from /proc; ret->cgroup is "" when neither tells. */
static bool parent_ident(struct mm_proctable *t, uint32_t ppid, struct mm_proc_ident *ret)
{
	const struct mm_proc *pp = find_live(t, ppid);
	if (!pp)
		return t->lookup(t->ctx, ppid, ret) == 0;
	memcpy(ret->comm, pp->comm, sizeof(ret->comm));
	snprintf(ret->cgroup, sizeof(ret->cgroup), "%s", pp->cgroup);
	struct mm_proc_ident now;
	if (!ret->cgroup[0] && t->lookup(t->ctx, ppid, &now) == 0 && now.start_ms == pp->start_ms)
		memcpy(ret->cgroup, now.cgroup, sizeof(ret->cgroup));
	return true;
}

/* The name of a process whose own is unknown. */
static void nameless(char comm[MM_COMM_LEN], uint32_t pid)
{
	snprintf(comm, MM_COMM_LEN, "pid-%u", pid);
}

/* A zeroed entry for @pid, in the index and the list; NULL when out of memory. */
static struct mm_proc *new_entry(struct mm_proctable *t, uint32_t pid)
{
	_Static_assert(sizeof(struct mm_proc) % 8 == 0, "->data follows the entry, aligned");
	struct mm_proc *p = calloc(1, sizeof(*p) + t->data_size);
	if (!p)
		return NULL;
	p->data = t->data_size ? p + 1 : NULL;
	p->pid = (int32_t)pid;
	p->cgroup = "";
	struct mm_proc **b = bucket(t, pid);
	p->hnext = *b;
	*b = p;
	p->next = t->all;
	t->all = p;
	t->count++;
	return p;
}

/* @revive: an event arrived for a pid with no live entry; when the pid's exited entry is still
 * here and /proc shows no different process under that pid, the event is a late one of that
 * exited process (not a new process) and goes to it. @ppid: the parent (0: unknown), whose name
 * and cgroup a process gone from /proc takes (parent_ident()); else its name is @seen's, or
 * "pid-N". @fallback_ms: the start time when the lookup cannot tell. */
static struct mm_proc *create(struct mm_proctable *t, uint32_t pid, uint64_t fallback_ms,
			      bool revive, uint32_t ppid, const struct mm_proc_ident *seen)
{
	struct mm_proc_ident id;
	int r = t->lookup(t->ctx, pid, &id);
	if (revive) {
		struct mm_proc *ghost = find(t, pid, true);
		if (ghost && (r < 0 || id.start_ms == ghost->start_ms))
			return ghost;
	}
	struct mm_proc *p = new_entry(t, pid);
	if (!p)
		return NULL;
	if (r == 0) {
		p->start_ms = id.start_ms ? id.start_ms : fallback_ms;
		memcpy(p->comm, id.comm, sizeof(p->comm));
		set_cgroup(t, p, id.cgroup);
		/* Read while exiting on a v1 host: where the kernel put it at fork. */
		if (!id.cgroup[0] && ppid && parent_ident(t, ppid, &id))
			set_cgroup(t, p, id.cgroup);
	} else if (ppid && parent_ident(t, ppid, &id)) {
		p->start_ms = fallback_ms;
		memcpy(p->comm, id.comm, sizeof(p->comm));
		set_cgroup(t, p, id.cgroup);
	} else {
		p->guessed = true;
		p->start_ms = fallback_ms;
		if (seen && seen->comm[0])
			memcpy(p->comm, seen->comm, sizeof(p->comm));
		else
			nameless(p->comm, pid);
	}
	return p;
}

struct mm_proc *mm_proctable_get(struct mm_proctable *t, uint32_t pid, uint64_t fallback_ms)
{
	struct mm_proc *p = find_live(t, pid);
	return p ? p : create(t, pid, fallback_ms, true, 0, NULL);
}

struct mm_proc *mm_proctable_get_seen(struct mm_proctable *t, uint32_t pid,
				      const struct mm_proc_ident *seen)
{
	struct mm_proc *p = find_live(t, pid);
	return p ? p : create(t, pid, seen->start_ms, true, 0, seen);
}

/* A FORK record's process may already have an entry: a collector that reads /proc can
 * see a new process before its FORK record arrives (records are delivered ~0.1 s late). The same
 * process when /proc says so, or, once it is gone, when the entry's start is the fork's time
 * within a few clock ticks. */
#define SAME_START_MS 250

static bool same_process(struct mm_proctable *t, const struct mm_proc *old, uint32_t pid,
			 uint64_t fork_ms)
{
	struct mm_proc_ident id;
	if (t->lookup(t->ctx, pid, &id) == 0)
		return id.start_ms == old->start_ms;
	uint64_t d = old->start_ms > fork_ms ? old->start_ms - fork_ms : fork_ms - old->start_ms;
	return fork_ms && d <= SAME_START_MS;
}

void mm_proctable_fork(struct mm_proctable *t, uint32_t pid, uint32_t ppid, uint64_t fallback_ms)
{
	struct mm_proc *old = find_live(t, pid);
	if (old) {
		if (same_process(t, old, pid, fallback_ms)) {
			struct mm_proc_ident id;
			char unknown[MM_COMM_LEN];
			/* A guess, or a cgroup not told: the parent's, as at fork. */
			if ((old->guessed || !old->cgroup[0]) && parent_ident(t, ppid, &id)) {
				nameless(unknown, pid);
				if (old->guessed && !strcmp(old->comm, unknown))
					memcpy(old->comm, id.comm, sizeof(old->comm));
				set_cgroup(t, old, id.cgroup);
				old->guessed = false;
			}
			return;
		}
		old->exited = true; /* its EXIT record was lost */
	}
	create(t, pid, fallback_ms, false, ppid, NULL);
}

struct mm_proc *mm_proctable_find(struct mm_proctable *t, uint32_t pid)
{
	struct mm_proc *p = find_live(t, pid);
	return p ? p : find(t, pid, true);
}

struct mm_proc *mm_proctable_find_started(struct mm_proctable *t, uint32_t pid, uint64_t start_ms)
{
	struct mm_proc *best = NULL;
	for (struct mm_proc *p = *bucket(t, pid); p; p = p->hnext)
		if ((uint32_t)p->pid == pid && p->start_ms <= start_ms + SAME_START_MS &&
		    (!best || p->start_ms > best->start_ms))
			best = p;
	return best;
}

struct mm_proc *mm_proctable_add_exited(struct mm_proctable *t, uint32_t pid, uint64_t start_ms,
					const char *comm)
{
	struct mm_proc *p = new_entry(t, pid);
	if (!p)
		return NULL;
	p->start_ms = start_ms;
	p->exited = true;
	snprintf(p->comm, sizeof(p->comm), "%s", comm);
	return p;
}

struct mm_proc *mm_proctable_find_started_within(struct mm_proctable *t, uint32_t pid,
						 uint64_t lo_ms, uint64_t hi_ms)
{
	struct mm_proc *p = mm_proctable_find_started(t, pid, hi_ms);
	return p && p->start_ms + SAME_START_MS >= lo_ms ? p : NULL;
}

void mm_proctable_exit(struct mm_proctable *t, uint32_t pid)
{
	struct mm_proc *p = find_live(t, pid);
	if (p)
		p->exited = true;
}

void mm_proctable_comm(struct mm_proctable *t, uint32_t pid, const char *comm, bool exec)
{
	struct mm_proc *p = find_live(t, pid);
	if (!p)
		return;
	snprintf(p->comm, sizeof(p->comm), "%s", comm);
	struct mm_proc_ident id;
	if (exec && t->lookup(t->ctx, pid, &id) == 0 && id.start_ms == p->start_ms)
		set_cgroup(t, p, id.cgroup);
}

void mm_proctable_moved(struct mm_proctable *t, uint32_t pid, int hierarchy, const char *path)
{
	struct mm_proc *p = hierarchy >= 0 && hierarchy == t->hierarchy ? find_live(t, pid) : NULL;
	if (p && path[0])
		set_cgroup(t, p, path);
}

/* @p got its open window: on the active list. NULL (out of memory) when the list has no room:
 * the window is then not handed out (its counts go to the host's overflow record, counted). */
static struct mm_proc_stats *activate(struct mm_proctable *t, struct mm_proc *p,
				      struct mm_proc_stats *w)
{
	if (!w)
		return NULL;
	if (t->nactive == t->active_cap) {
		size_t cap = t->active_cap ? 2 * t->active_cap : 256;
		struct mm_proc **a = realloc(t->active, cap * sizeof(*a));
		if (!a)
			return NULL; /* the arena's slot stays unused until the roll */
		t->active = a;
		t->active_cap = cap;
	}
	t->active[t->nactive++] = p;
	return p->window = w;
}

struct mm_proc_stats *mm_proctable_counts(struct mm_proctable *t, struct mm_proc *p,
					  uint64_t end_ms)
{
	if (!end_ms || p->start_ms <= end_ms)
		return p->window ? p->window : activate(t, p, arena_get(&t->windows));
	if (!p->carry)
		p->carry = arena_get(&t->next);
	return p->carry;
}

struct mm_proc *const *mm_proctable_active(const struct mm_proctable *t, size_t *ret_n)
{
	*ret_n = t->nactive;
	return t->active;
}

static const struct mm_proc_stats no_counts;

const struct mm_proc_stats *mm_proc_window(const struct mm_proc *p)
{
	return p->window ? p->window : &no_counts;
}

bool mm_proc_has_closed(const struct mm_proc *p)
{
	return p->closed || p->closed_hists; /* each NULL until something was counted */
}

bool mm_proc_has_counts(const struct mm_proc *p)
{
	return (p->window && !mm_stats_is_zero(p->window)) || mm_proc_has_closed(p);
}

/* @s copied into arena @a; NULL when out of memory. */
static struct mm_proc_stats *move_to(struct arena *a, const struct mm_proc_stats *s)
{
	struct mm_proc_stats *n = arena_get(a);
	if (n)
		*n = *s;
	return n;
}

/* Adds @p's window to its closed sum: in place when nothing else holds the sum, else into a
 * copy (a snapshot's row shows the old one). */
static void fold(struct mm_proc *p)
{
	const struct mm_proc_counts *w = mm_stats_counts_c(p->window);
	if (!mm_counts_is_zero(w)) {
		struct mm_shared_counts *c = p->closed;
		if (!c || !mm_shared_counts_alone(c)) {
			c = mm_shared_counts_new(1);
			if (c && p->closed)
				c->counts[0] = p->closed->counts[0];
		}
		if (c) {
			mm_counts_add(&c->counts[0], w);
			if (c != p->closed)
				mm_shared_counts_unref(p->closed);
			p->closed = c;
		} else {
			log_warning(
				"out of memory: the counts of pid %d in a closed window dropped",
				p->pid);
		}
	}
	if (mm_hist_set_add(&p->closed_hists, mm_stats_hists_c(p->window)) < 0)
		log_warning("out of memory: histogram samples of pid %d dropped", p->pid);
}

/* @p's window, with counts, was just stored: under "pid-N" still, it is counted once. */
static void count_nameless(struct mm_proctable *t, struct mm_proc *p)
{
	char unknown[MM_COMM_LEN];
	if (p->nameless_counted || !p->window || mm_stats_is_zero(p->window))
		return;
	nameless(unknown, (uint32_t)p->pid);
	if (strcmp(p->comm, unknown))
		return;
	p->nameless_counted = true;
	t->nameless++;
}

unsigned mm_proctable_roll(struct mm_proctable *t, uint64_t next_end_ms)
{
	unsigned freed = 0;
	struct mm_proc **pp = &t->all;
	while (*pp) {
		struct mm_proc *p = *pp;
		count_nameless(t, p);
		if (p->exited && !p->carry) {
			unindex(t, p);
			*pp = p->next;
			t->count--;
			free_proc(t, p);
			freed++;
			continue;
		}
		if (p->window) {
			fold(p);
			p->window = NULL;
		}
		pp = &p->next;
	}
	/* Every window is folded: the arena is emptied at once. The carries (processes born
	 * during a closing tick: few) are copied into it as windows, or, born later still, into
	 * the next carries' arena anew. */
	arena_reset(&t->windows, false);
	t->nactive = 0;
	struct arena later = {0};
	for (struct mm_proc *p = t->all; p; p = p->next) {
		if (!p->carry)
			continue;
		bool waits = next_end_ms && p->start_ms > next_end_ms;
		struct mm_proc_stats *moved = move_to(waits ? &later : &t->windows, p->carry);
		if (moved && !waits)
			moved = activate(t, p, moved);
		if (!moved)
			log_warning(
				"out of memory: the counts of pid %d for the next window dropped",
				p->pid);
		p->carry = waits ? moved : NULL;
	}
	arena_reset(&t->next, true);
	t->next = later;
	return freed;
}

struct mm_proc *mm_proctable_first(struct mm_proctable *t)
{
	return t->all;
}

uint64_t mm_proctable_count(const struct mm_proctable *t)
{
	return t->count;
}

uint64_t mm_proctable_nameless(const struct mm_proctable *t)
{
	return t->nameless;
}

static uint64_t shifted(uint64_t ms, int64_t delta_ms)
{
	int64_t r = (int64_t)ms + delta_ms;
	return r > 0 ? (uint64_t)r : 1;
}

void mm_proctable_shift_starts(struct mm_proctable *t, int64_t delta_ms)
{
	for (struct mm_proc *p = t->all; delta_ms && p; p = p->next)
		if (p->start_ms)
			p->start_ms = shifted(p->start_ms, delta_ms);
}

int64_t mm_proctable_boot_moved(struct mm_proctable *t, uint64_t boot_ms)
{
	if (!boot_ms_cached)
		return 0; /* no start computed yet: the first one reads the clocks as they are */
	int64_t moved = (int64_t)boot_ms - (int64_t)boot_ms_cached;
	if (moved > -MM_CLOCK_STEP_TOLERANCE_MS && moved < MM_CLOCK_STEP_TOLERANCE_MS)
		return 0;
	boot_ms_cached = boot_ms;
	mm_proctable_shift_starts(t, moved);
	return moved;
}

int64_t mm_proctable_follow_clock(struct mm_proctable *t)
{
	return mm_proctable_boot_moved(t, read_boot_unix_ms());
}
