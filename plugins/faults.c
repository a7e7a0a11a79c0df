/*
 * faults: classifies every user page fault by how the kernel handled it, and attributes every
 * mmap_lock acquisition to who took it.
 *
 * Per thread, a fault *window* opens at exceptions:page_fault_user and closes at the thread's
 * next fault, at an mmap_lock acquisition whose kernel callchain is not a fault's, when the thread
 * exits, or when it has been open longer than WINDOW_LIMIT_NS of event time. Inside it:
 *   - an *attempt* under the VMA lock shows as filemap:mm_filemap_fault, or as an mmap_lock event
 *     from inside handle_mm_fault() (e.g. the anon_vma trylock of a first touch);
 *   - a *fallback* is a successful mmap_lock acquisition through lock_mm_and_find_vma() (or an
 *     arch fault handler taking the lock itself, such as arm64's do_page_fault).
 * At close the fault gets one outcome:
 *   vma          no fallback, at most one attempt on the faulting page
 *   vma_retry    no fallback, two or more attempts on the same page (the VMA-lock retry series);
 *                a retried attempt often maps the page by fault-around, so a
 *                filemap:mm_filemap_map_pages covering the attempted page after the attempt
 *                counts as the second attempt (the kernel lab found this: the second
 *                filemap_fault() call rarely happens)
 *   mmap_retry   an attempt, then a fallback (vanilla kernels retry this way)
 *   mmap_abort   a fallback with no attempt before it while another thread of the process held
 *                its mmap_lock for write when the fault began: lock_vma_under_rcu() fails on a
 *                VMA that a writer has marked
 *   mmap_unknown a fallback with no visible attempt otherwise: anonymous and swap faults that
 *                retried leave no event (on 6.12 a first touch of an anonymous VMA retries
 *                without any), so this is not guessed to be an abort or a retry. An earlier
 *                rule (a fallback within 20 us is an abort) was wrong: the kernel lab counted
 *                zero vma_lock_abort where it saw thousands (see docs/accuracy.md, "Classifying
 * faults") Extra fallback acquisitions in one window are retries under mmap_lock; the wait of
 * fallbacks (start_locking -> acquire_returned) is their cost; a page added to the page cache twice
 * in one window (filemap:mm_filemap_add_to_page_cache) is I/O that a retry repeated.
 *
 * Every successful acquisition is also counted by source (mmap_lock_by_*): its callchain is
 * walked innermost first and the first frame naming a known entry point decides. Callchains are
 * matched by symbol name, never by address.
 */
#include "faults.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>

#include "bpf/counters.h"
#include "log.h"
#include "plugin.h"
#include "split.h"
#include "tidmap.h"

#define WINDOW_LIMIT_NS 1000000000ull /* a fault open this long is closed as it stands */
#define MAX_THREADS	(1u << 20)
#define MAX_ADDED	32 /* pages remembered per window to spot re-reads */
#define MAX_FRAMES	32

struct page {
	uint64_t ino, index;
	uint32_t dev;
};

struct window {
	bool open;
	uint32_t pid;
	uint64_t start_ns;
	unsigned attempts_same_page; /* mm_filemap_fault on the first attempted page */
	bool have_page;
	struct page page;	/* the first attempted page */
	bool attempt;		/* any attempt so far (before the first fallback) */
	bool writer_active;	/* another thread held the mmap_lock for write at the start */
	unsigned fallbacks;	/* fault-path acquisitions */
	uint64_t wait_start_ns; /* start_locking seen in the window, 0 if none pending */
	unsigned nadded;
	struct page added[MAX_ADDED];
};

/* Fields: of acquire_returned (acq), of the filemap page events (ff, ad, mp). */
enum { F_SUCCESS, F_WRITE };
enum { F_INO, F_DEV, F_INDEX, F_LAST };

struct state {
	const struct mm_tp *added, *map_pages; /* NULL when absent or lacking a field */
	const struct tep_format_field *acq[2], *rel_write[1], *ff[3], *ad[3], *mp[4];
	struct mm_tidmap *threads;
	struct mm_tidmap
		*writers; /* tid -> struct writer: threads holding an mmap_lock for write */
	struct mm_tidmap *nwriters; /* pid -> unsigned: how many of its threads do */
	uint64_t last_ns;	    /* latest event time seen */
	int g_no_callchain, g_threads_dropped, g_timed_out;
};

/* --- callchain attribution --- */

struct source_frame {
	const char *name;
	enum mm_lock_source src;
};

/* Frames that name who took the lock, looked up innermost first. Fault handlers come first in
 * meaning: lock_mm_and_find_vma() is the fallback; an arch fault handler met before any
 * handle_mm_fault() frame took the lock itself (older or arch-specific paths). */
static const struct source_frame source_frames[] = {
	{"lock_mm_and_find_vma", MM_SRC_FAULT},
	{"handle_mm_fault", MM_SRC_FAULT_OTHER},
	{"__handle_mm_fault", MM_SRC_FAULT_OTHER},
	{"__vmf_anon_prepare", MM_SRC_FAULT_OTHER},
	{"do_user_addr_fault", MM_SRC_FAULT},
	{"exc_page_fault", MM_SRC_FAULT},
	{"do_page_fault", MM_SRC_FAULT},
	{"__do_page_fault", MM_SRC_FAULT},
	{"handle_page_fault", MM_SRC_FAULT},
	{"vm_mmap_pgoff", MM_SRC_MMAP},
	{"ksys_mmap_pgoff", MM_SRC_MMAP},
	{"__vm_munmap", MM_SRC_MUNMAP},
	{"vm_munmap", MM_SRC_MUNMAP},
	{"__do_sys_munmap", MM_SRC_MUNMAP},
	{"__do_sys_mremap", MM_SRC_MREMAP},
	{"do_mprotect_pkey", MM_SRC_MPROTECT},
	{"do_madvise", MM_SRC_MADVISE},
	{"madvise_lock", MM_SRC_MADVISE},
	{"vector_madvise", MM_SRC_MADVISE},
	{"__do_sys_brk", MM_SRC_BRK},
	{"do_mlock", MM_SRC_MLOCK},
	{"__do_sys_munlock", MM_SRC_MLOCK},
	{"__do_sys_mlockall", MM_SRC_MLOCK},
	{"__do_sys_munlockall", MM_SRC_MLOCK},
	{"__x64_sys_mincore", MM_SRC_MINCORE},
	{"__do_sys_mincore", MM_SRC_MINCORE},
	{"exit_mmap", MM_SRC_EXIT},
	{"exit_mm", MM_SRC_EXIT},
	{"do_exit", MM_SRC_EXIT},
	{"dup_mmap", MM_SRC_FORK},
	{"create_init_stack_vma", MM_SRC_EXEC},
	{"__bprm_mm_init", MM_SRC_EXEC},
	{"setup_arg_pages", MM_SRC_EXEC},
	{"begin_new_exec", MM_SRC_EXEC},
	{"exec_mmap", MM_SRC_EXEC},
	{"get_arg_page", MM_SRC_EXEC},
	{"__access_remote_vm", MM_SRC_REMOTE},
	{"access_remote_vm", MM_SRC_REMOTE},
	{"process_vm_rw_core", MM_SRC_REMOTE},
	{"proc_pid_cmdline_read", MM_SRC_REMOTE},
	{"m_start", MM_SRC_REMOTE},
	{"smap_gather_stats", MM_SRC_REMOTE},
	{"show_smaps_rollup", MM_SRC_REMOTE},
	{"pagemap_read", MM_SRC_REMOTE},
	{"get_user_pages_remote", MM_SRC_REMOTE},
	{"pin_user_pages_remote", MM_SRC_REMOTE},
	{"__get_user_pages_locked", MM_SRC_REMOTE},
	{"get_user_pages_unlocked", MM_SRC_REMOTE},
};

/* Compares a frame name with a table name, ignoring compiler suffixes (".isra.0", ".cold"). */
static bool frame_is(const char *frame, const char *name)
{
	size_t n = strlen(name);
	return !strncmp(frame, name, n) && (frame[n] == '\0' || frame[n] == '.');
}

/* Frames of the exception entry of a fault taken in user mode: above a fault-path frame, a user
 * fault's callchain holds nothing else (the user part is not recorded). */
static const char *const user_fault_entry[] = {
	"exc_page_fault",
	"asm_exc_page_fault",
	"do_user_addr_fault",
	"handle_page_fault",
	"do_page_fault",
	"__do_page_fault",
	"do_translation_fault",
	"do_mem_abort",
	"el0_da",
	"el0_ia",
	"el0t_64_sync_handler",
	"el0t_64_sync",
	"el0t_32_sync_handler",
	"el0t_32_sync",
};

/* Whether frames[from..n) are all user-fault entry frames (or unresolved). */
static bool only_user_fault_entry(const char *const *frames, unsigned from, unsigned n)
{
	for (unsigned i = from; i < n; i++) {
		if (!frames[i])
			continue;
		bool entry = false;
		for (size_t k = 0; k < sizeof(user_fault_entry) / sizeof(user_fault_entry[0]); k++)
			entry |= frame_is(frames[i], user_fault_entry[k]);
		if (!entry)
			return false;
	}
	return true;
}

enum mm_lock_source mm_lock_source_of(const char *const *frames, unsigned n)
{
	bool any = false;
	for (unsigned i = 0; i < n; i++) {
		if (!frames[i])
			continue;
		any = true;
		for (size_t k = 0; k < sizeof(source_frames) / sizeof(source_frames[0]); k++) {
			if (!frame_is(frames[i], source_frames[k].name))
				continue;
			/* A fault whose entry is called from kernel code (copy_from_user() in a
			 * system call) was taken in kernel mode: x86 sends those straight to
			 * lock_mm_and_find_vma() without any VMA-lock attempt, and they are not
			 * the thread's last user fault falling back. */
			if (source_frames[k].src == MM_SRC_FAULT &&
			    !only_user_fault_entry(frames, i + 1, n))
				return MM_SRC_FAULT_KERNEL;
			return source_frames[k].src;
		}
	}
	return any ? MM_SRC_OTHER : MM_SRC_UNKNOWN;
}

const char *mm_lock_source_name(enum mm_lock_source src)
{
	static const char *const names[MM_SRC_COUNT] = {
		"fault",    "fault_other", "fault_kernel", "mmap",  "munmap",  "mremap",
		"mprotect", "madvise",	   "brk",	   "mlock", "mincore", "exit",
		"fork",	    "exec",	   "remote",	   "other", "unknown"};
	return src < MM_SRC_COUNT ? names[src] : "unknown";
}

_Static_assert(offsetof(struct mm_proc_stats, mmap_lock_by_unknown) -
			       offsetof(struct mm_proc_stats, mmap_lock_by_fault) ==
		       MM_SRC_UNKNOWN * sizeof(uint64_t),
	       "mmap_lock_by_* members must follow enum mm_lock_source");

static uint64_t *source_counter(struct mm_proc_stats *ps, enum mm_lock_source src)
{
	uint64_t *first = &ps->mmap_lock_by_fault;
	return first + src; /* the mmap_lock_by_* members follow enum mm_lock_source's order */
}

enum mm_lock_source mm_lock_source_of_sample(struct mm_host *h, const struct mm_sample *s)
{
	const char *frames[MAX_FRAMES];
	unsigned n = 0;
	for (uint64_t i = 0; i < s->nr_ips && n < MAX_FRAMES; i++) {
		if (s->ips[i] >= PERF_CONTEXT_MAX)
			continue; /* PERF_CONTEXT_KERNEL and friends */
		frames[n++] = mm_host_symbol(h, s->ips[i], NULL);
	}
	return mm_lock_source_of(frames, n);
}

static enum mm_lock_source source_of_sample(struct state *st, struct mm_host *h,
					    const struct mm_sample *s)
{
	if (!s->nr_ips) {
		mm_host_global_add(h, st->g_no_callchain, 1);
		return MM_SRC_UNKNOWN;
	}
	return mm_lock_source_of_sample(h, s);
}

/* --- who holds an mmap_lock for write (evidence for mmap_abort) --- */

struct writer {
	uint32_t pid;
	unsigned holds; /* fork holds the parent's and the child's */
};

static void writer_add(struct state *st, uint32_t pid, uint32_t tid)
{
	struct writer *w = mm_tidmap_get(st->writers, tid, true);
	unsigned *n = mm_tidmap_get(st->nwriters, pid, true);
	if (!w || !n)
		return;
	if (!w->holds++)
		(*n)++;
	w->pid = pid;
}

static void writer_drop(struct state *st, uint32_t tid, bool all)
{
	struct writer *w = mm_tidmap_get(st->writers, tid, false);
	if (!w || (!all && --w->holds > 0))
		return;
	uint32_t pid = w->pid;
	mm_tidmap_remove(st->writers, tid);
	unsigned *n = mm_tidmap_get(st->nwriters, pid, false);
	if (n && !--*n)
		mm_tidmap_remove(st->nwriters, pid);
}

/* --- fault windows --- */

static void close_window(struct state *st, struct mm_host *h, struct window *w)
{
	if (!w->open)
		return;
	struct mm_proc_stats *ps = mm_host_proc(h, w->pid);
	if (!w->fallbacks) {
		if (w->attempts_same_page >= 2)
			ps->faults_vma_retry++;
		else
			ps->faults_vma++;
	} else {
		if (w->attempt)
			ps->faults_mmap_retry++;
		else if (w->writer_active)
			ps->faults_mmap_abort++;
		else
			ps->faults_mmap_unknown++;
		ps->faults_mmap_fallback++;
		ps->faults_mmap_lock_retries += w->fallbacks - 1;
	}
	w->open = false;
}

static struct window *thread(struct state *st, struct mm_host *h, uint32_t tid, bool create)
{
	struct window *w = mm_tidmap_get(st->threads, tid, create);
	if (!w && create)
		mm_host_global_add(h, st->g_threads_dropped, 1);
	return w;
}

static bool read_page(const struct tep_format_field *const *f, const struct mm_sample *s,
		      struct page *ret)
{
	uint64_t i, d, x;
	if (mm_field_read(f[F_INO], s, &i) || mm_field_read(f[F_DEV], s, &d) ||
	    mm_field_read(f[F_INDEX], s, &x))
		return false;
	*ret = (struct page){i, x, (uint32_t)d};
	return true;
}

/* Every sample moves event time on (the tick's time limit) before its handler runs. */
static struct state *seen(void *state, const struct mm_sample *s)
{
	struct state *st = state;
	if (s->time_ns > st->last_ns)
		st->last_ns = s->time_ns;
	return st;
}

static bool same_page(const struct page *a, const struct page *b)
{
	return a->ino == b->ino && a->index == b->index && a->dev == b->dev;
}

static void on_fault(void *state, struct mm_host *h, const struct mm_sample *s)
{
	struct state *st = seen(state, s);
	struct window *w = thread(st, h, s->tid, true);
	if (!w)
		return;
	close_window(st, h, w);
	memset(w, 0, sizeof(*w));
	w->open = true;
	w->pid = s->pid;
	w->start_ns = s->time_ns;
	w->writer_active = mm_tidmap_get(st->nwriters, s->pid, false) != NULL;
}

static void on_filemap_fault(void *state, struct mm_host *h, const struct mm_sample *s)
{
	struct state *st = seen(state, s);
	struct window *w = thread(st, h, s->tid, false);
	struct page p;
	if (!w || !w->open || !read_page(st->ff, s, &p))
		return;
	if (!w->fallbacks)
		w->attempt = true;
	if (!w->have_page) {
		w->have_page = true;
		w->page = p;
	}
	if (same_page(&w->page, &p))
		w->attempts_same_page++;
}

static void on_added(void *state, struct mm_host *h, const struct mm_sample *s)
{
	struct state *st = seen(state, s);
	struct window *w = thread(st, h, s->tid, false);
	struct page p;
	if (!st->added || !w || !w->open || !read_page(st->ad, s, &p))
		return;
	for (unsigned i = 0; i < w->nadded; i++) {
		if (same_page(&w->added[i], &p)) {
			mm_host_proc(h, w->pid)->faults_pages_reread++;
			return;
		}
	}
	if (w->nadded < MAX_ADDED)
		w->added[w->nadded++] = p;
}

/* Fault-around mapped a range of the file: after an attempt on a page in that range, this is the
 * retried attempt completing (under the VMA lock if no fallback came before). */
static void on_map_pages(void *state, struct mm_host *h, const struct mm_sample *s)
{
	struct state *st = seen(state, s);
	struct window *w = thread(st, h, s->tid, false);
	uint64_t ino, dev, first, last;
	if (!st->map_pages || !w || !w->open || !w->have_page || w->fallbacks)
		return;
	if (mm_field_read(st->mp[F_INO], s, &ino) || mm_field_read(st->mp[F_DEV], s, &dev) ||
	    mm_field_read(st->mp[F_INDEX], s, &first) || mm_field_read(st->mp[F_LAST], s, &last))
		return;
	if (ino == w->page.ino && (uint32_t)dev == w->page.dev && first <= w->page.index &&
	    w->page.index <= last)
		w->attempts_same_page++;
}

static void on_start(void *state, struct mm_host *h, const struct mm_sample *s)
{
	struct state *st = seen(state, s);
	struct window *w = thread(st, h, s->tid, false);
	if (w && w->open)
		w->wait_start_ns = s->time_ns;
}

static void on_acquired(void *state, struct mm_host *h, const struct mm_sample *s)
{
	struct state *st = seen(state, s);
	uint64_t success = 0, write = 0;
	mm_field_read(st->acq[F_SUCCESS], s, &success);
	mm_field_read(st->acq[F_WRITE], s, &write);
	enum mm_lock_source src = source_of_sample(st, h, s);
	if (success)
		(*source_counter(mm_host_proc(h, s->pid), src))++;
	if (success && write)
		writer_add(st, s->pid, s->tid);
	else if (success)
		writer_drop(st, s->tid, false); /* a downgrade, if this thread held it for write */

	struct window *w = thread(st, h, s->tid, false);
	if (!w || !w->open)
		return;
	if (src == MM_SRC_FAULT) {
		if (success) {
			w->fallbacks++;
			if (w->wait_start_ns && s->time_ns >= w->wait_start_ns)
				mm_host_proc(h, w->pid)->faults_mmap_lock_wait_ns +=
					s->time_ns - w->wait_start_ns;
		}
		w->wait_start_ns = 0;
	} else if (src == MM_SRC_FAULT_OTHER) {
		if (!w->fallbacks)
			w->attempt = true;
		w->wait_start_ns = 0;
	} else if (src != MM_SRC_UNKNOWN) {
		/* The thread has left the fault: a system call or kernel path took the lock. */
		close_window(st, h, w);
		mm_tidmap_remove(st->threads, s->tid);
	}
}

static void on_released(void *state, struct mm_host *h, const struct mm_sample *s)
{
	struct state *st = seen(state, s);
	uint64_t write = 0;
	if (mm_field_read(st->rel_write[0], s, &write) == 0 && write)
		writer_drop(st, s->tid, false);
}

static void thread_exit(void *state, struct mm_host *h, uint32_t pid, uint32_t tid)
{
	struct state *st = state;
	struct window *w = mm_tidmap_get(st->threads, tid, false);
	if (w)
		close_window(st, h, w);
	mm_tidmap_remove(st->threads, tid);
	writer_drop(st, tid, true);
}

struct expire_ctx {
	struct state *st;
	struct mm_host *h;
	uint32_t stale[256];
	unsigned n;
};

static void expire_one(void *vctx, uint32_t tid, void *value)
{
	struct expire_ctx *c = vctx;
	struct window *w = value;
	if (c->n < 256 && w->open && c->st->last_ns - w->start_ns > WINDOW_LIMIT_NS)
		c->stale[c->n++] = tid;
}

/* Closes windows of threads that faulted and then stayed quiet: their fault is long over. */
static void tick(void *state, struct mm_host *h)
{
	struct state *st = state;
	struct expire_ctx c = {.st = st, .h = h};
	do {
		c.n = 0;
		mm_tidmap_foreach(st->threads, expire_one, &c);
		for (unsigned i = 0; i < c.n; i++) {
			struct window *w = mm_tidmap_get(st->threads, c.stale[i], false);
			close_window(st, h, w);
			mm_tidmap_remove(st->threads, c.stale[i]);
			mm_host_global_add(h, st->g_timed_out, 1);
		}
	} while (c.n == 256);
}

static void close_all(void *vctx, uint32_t tid, void *value)
{
	struct expire_ctx *c = vctx;
	close_window(c->st, c->h, value);
}

static void forget_writer(void *vctx, uint32_t tid, void *value)
{
	struct expire_ctx *c = vctx;
	if (c->n < 256)
		c->stale[c->n++] = tid;
}

/* No more events (the end of a run, or of a burst of the split): every open fault is over, and
 * no release will come for a write hold seen so far (a stale writer would turn the next burst's
 * unexplained fallbacks into aborts). */
static void finish(void *state, struct mm_host *h)
{
	struct state *st = state;
	struct expire_ctx c = {.st = st, .h = h};
	mm_tidmap_foreach(st->threads, close_all, &c);
	do {
		c.n = 0;
		mm_tidmap_foreach(st->writers, forget_writer, &c);
		for (unsigned i = 0; i < c.n; i++)
			writer_drop(st, c.stale[i], true);
	} while (c.n == 256);
}

static int init(struct mm_host *h, void **ret_state)
{
	struct state *st = calloc(1, sizeof(*st));
	if (!st)
		return mm_host_fail(h, "out of memory");
	st->threads = mm_tidmap_new(sizeof(struct window), MAX_THREADS);
	st->writers = mm_tidmap_new(sizeof(struct writer), MAX_THREADS);
	st->nwriters = mm_tidmap_new(sizeof(unsigned), MAX_THREADS);
	static const char *const acq[] = {"success", "write", NULL}, *const write[] = {"write",
										       NULL};
	static const char *const page[] = {"i_ino", "s_dev", "index", NULL};
	static const char *const range[] = {"i_ino", "s_dev", "index", "last_index", NULL};
	mm_host_fields(h, "mmap_lock", "mmap_lock_released", write, st->rel_write);
	bool fields = mm_host_fields(h, "mmap_lock", "mmap_lock_acquire_returned", acq, st->acq) &&
		      mm_host_fields(h, "filemap", "mm_filemap_fault", page, st->ff);
	st->added = mm_host_fields(h, "filemap", "mm_filemap_add_to_page_cache", page, st->ad);
	st->map_pages = mm_host_fields(h, "filemap", "mm_filemap_map_pages", range, st->mp);
	if (!st->threads || !st->writers || !st->nwriters || !fields) {
		mm_tidmap_free(st->threads);
		mm_tidmap_free(st->writers);
		mm_tidmap_free(st->nwriters);
		free(st);
		return mm_host_fail(h, "tracepoint fields missing (mmap_lock success, filemap "
				       "i_ino/s_dev/index): unsupported kernel version");
	}
	st->g_no_callchain = mm_host_global(h, "faults_unmatched", "acquire_without_callchain",
					    "Events the faults collector could not use.");
	st->g_threads_dropped = mm_host_global(h, "faults_unmatched", "threads_dropped", NULL);
	st->g_timed_out = mm_host_global(h, "faults_unmatched", "windows_timed_out", NULL);
	*ret_state = st;
	return 0;
}

static void free_state(void *state)
{
	struct state *st = state;
	if (!st)
		return;
	mm_tidmap_free(st->threads);
	mm_tidmap_free(st->writers);
	mm_tidmap_free(st->nwriters);
	free(st);
}

static const struct mm_tp_req tracepoints[] = {
	{.system = "exceptions", .name = "page_fault_user", .handler = on_fault},
	{.system = "mmap_lock", .name = "mmap_lock_start_locking", .handler = on_start},
	{.system = "mmap_lock",
	 .name = "mmap_lock_acquire_returned",
	 .handler = on_acquired,
	 .callchain = true},
	{.system = "mmap_lock",
	 .name = "mmap_lock_released",
	 .handler = on_released,
	 .optional = true},
	{.system = "filemap", .name = "mm_filemap_fault", .handler = on_filemap_fault},
	{.system = "filemap",
	 .name = "mm_filemap_add_to_page_cache",
	 .handler = on_added,
	 .optional = true},
	{.system = "filemap",
	 .name = "mm_filemap_map_pages",
	 .handler = on_map_pages,
	 .optional = true},
	{0},
};

/* On the BPF source: the fault windows are kept per thread in the kernel (counters.bpf.c). In
 * bursts, the filemap evidence is attached for the burst and its ending only, and the opener
 * (page_fault_user) for the burst only unless mmaplock keeps it attached anyway. */
static const char *const bpf_programs[] = {"on_start", "on_acquired", "on_switch",
					   "on_fault_kernel", NULL};
static const char *const bpf_burst_programs[] = {"on_filemap_fault", "on_map_pages", "on_added",
						 NULL};
static const char *const bpf_opener_programs[] = {"on_fault", NULL};

#define NEEDED ": fault outcomes need it"
static const struct mm_bpf_text bpf_sites[] = {
	{.var = "sites",
	 .index = MM_BPF_SITE_FALLBACK,
	 .function = "lock_mm_and_find_vma",
	 .required = true,
	 .why = NEEDED},
	{.var = "sites",
	 .index = MM_BPF_SITE_ANON,
	 .function = "__vmf_anon_prepare",
	 .required = true,
	 .why = NEEDED},
	{.var = "sites",
	 .index = MM_BPF_SITE_HMF,
	 .function = "__handle_mm_fault",
	 .required = true,
	 .why = NEEDED},
	{.var = "sites",
	 .index = MM_BPF_SITE_HMF_OUTER,
	 .function = "handle_mm_fault",
	 .required = true,
	 .why = NEEDED},
	{.var = "sites",
	 .index = MM_BPF_SITE_LOCK_RETRY,
	 .function = "__folio_lock_or_retry",
	 .required = true,
	 .why = NEEDED},
	{0},
};
#undef NEEDED

static const struct mm_bpf_field bpf_fields[] = {
	MM_BPF_FIELD(faults_vma),
	MM_BPF_FIELD(faults_vma_retry),
	MM_BPF_FIELD(faults_mmap_retry),
	MM_BPF_FIELD(faults_mmap_abort),
	MM_BPF_FIELD(faults_mmap_unknown),
	MM_BPF_FIELD(faults_mmap_fallback),
	MM_BPF_FIELD(faults_mmap_lock_retries),
	MM_BPF_FIELD(faults_mmap_lock_wait_ns),
	MM_BPF_FIELD(faults_pages_reread),
	MM_BPF_FIELD(fault_ns_outcome_hist),
	MM_BPF_FIELD(mmap_lock_by_fault),
	MM_BPF_FIELD(mmap_lock_by_fault_other),
	MM_BPF_FIELD(mmap_lock_by_fault_kernel),
	{0},
};

/* The vDSO's special mappings around its text, as this process has them ([vvar], [vvar_vclock]
 * right below [vdso] on 6.18; [vvar] on 6.12): every process gets the same layout from the
 * kernel. Sets *below (bytes from the first of them to [vdso]) and *above ([vdso]'s size);
 * false when /proc/self/maps has no [vdso]. */
static bool vdso_layout(uint64_t *below, uint64_t *above)
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

/* The programs tell a vDSO fault's retry by the faulting address's place around [vdso]. */
static void bpf_configure(mm_bpf_set_fn set, void *ctx)
{
	uint64_t below, above;
	if (!vdso_layout(&below, &above)) {
		log_info("BPF source: no [vdso] in /proc/self/maps; its faults' retries show as "
			 "mmap_unknown");
		return;
	}
	set(ctx, "vdso_below", below);
	set(ctx, "vdso_above", above);
}

static const struct mm_plugin_bpf bpf = {
	.enable = "count_faults",
	.programs = bpf_programs,
	.duty_programs = bpf_burst_programs,
	.opener_programs = bpf_opener_programs,
	.sites = bpf_sites,
	.fields = bpf_fields,
	.configure = bpf_configure,
	.latency = true,
	.note = "mmap_lock_by_* other than fault, fault_other and fault_kernel need callchains: 0 "
		"on this source",
};

/* In bursts, per process: the window's bursts (the spread between them) and the raw outcome
 * counts of its earlier windows (the prior for a window without a classified fault). The
 * estimate itself is plugins/split.c's arithmetic. */
struct proc_split {
	struct mm_split_acc acc;
	uint64_t life[MM_SPLIT_NOUT];
};

/* The fault split's schedule, as the user sets it (docs/accuracy.md, "The split in the
 * default": at 2% of each window the cost on the benchmark workloads stays within 2%). On the
 * BPF source too, its programs attached for each burst: chosen by measurement
 * (bench/results/split-bpf-20261202.md: the split on BPF no costlier than on the perf rings, and
 * its swap-in fallbacks classified where perf leaves 88% mmap_unknown). */
static const struct mm_plugin_cycle cycle = {
	.key = "split_duty",
	.name = "split",
	.period = "burst",
	.default_pm = 20,
	.help = "share of each window the fault split (the faults\n"
		"collector) runs: 100% continuous, 0 off (default:\n"
		"100% when --collectors names faults, else 2% in\n"
		"bursts spread through each window; their outcome\n"
		"shares are applied to the exact totals and stored\n"
		"as estimates with coverage and error bound;\n"
		"/api/v1/status says which mode runs)",
	.why_off = "no fault outcomes, only the exact totals",
	.why_continuous = "every fault classified, outcome counts exact",
	.why_cycled = "classifying every fault costs the workload more than the default may "
		      "(docs/accuracy.md, \"The split in the default\")",
};

static void duty_end(void *proc, const struct mm_proc_stats *window)
{
	struct proc_split *d = proc;
	mm_split_burst_end(&d->acc, window);
}

/* The outcome shares seen in the bursts, applied to the exact totals (split.h). */
static void estimate(void *proc, struct mm_proc_stats *ps, uint64_t duty_ms, bool closing)
{
	struct proc_split *d = proc;
	if (!d) {
		mm_split_estimate(ps, NULL, duty_ms, NULL);
		return;
	}
	if (!closing) {
		mm_split_estimate(ps, &d->acc, duty_ms, d->life);
		return;
	}
	/* The window's own raw counts join the process's prior after it. */
	uint64_t life[MM_SPLIT_NOUT];
	memcpy(life, d->life, sizeof(life));
	mm_split_add_raw(d->life, ps);
	mm_split_estimate(ps, &d->acc, duty_ms, life);
	memset(&d->acc, 0, sizeof(d->acc));
}

const struct mm_plugin mm_plugin_faults = {
	.name = "faults",
	.description = "classifies user page faults (VMA lock, VMA-lock retry, mmap_lock fallback) "
		       "and attributes mmap_lock acquisitions",
	.by_default = false,
	.usage = "every user fault's outcome (vma,\n"
		 "vma_retry, mmap_retry, mmap_abort, ...);\n"
		 "on the defaults in bursts, see\n"
		 "--split-duty",
	.tracepoints = tracepoints,
	.init = init,
	.thread_exit = thread_exit,
	.tick = tick,
	.finish = finish,
	.free = free_state,
	.bpf = &bpf,
	.cycle = &cycle,
	.proc_size = sizeof(struct proc_split),
	.duty_end = duty_end,
	.window = estimate,
};
