/*
 * The process table: identity from /proc for a live process, pid reuse, and that rolling a window
 * frees exited processes but keeps live ones with their totals.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "proctable.h"
#include "totals.h"

static void test_procfs_lookup_of_ourselves(void)
{
	struct mm_proc_ident id;
	CHECK(mm_proc_lookup_procfs(NULL, (uint32_t)getpid(), &id) == 0);
	CHECK_STR(id.comm, "test_proctable");
	/* started within the last hour, and not in the future */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000;
	CHECK(id.start_ms <= now + 1000);
	CHECK(id.start_ms + 3600 * 1000 > now);
	CHECK(mm_proc_lookup_procfs(NULL, 0x7ffffff0u, &id) == -ENOENT);
}

static void test_stat_of_an_exiting_task_or_a_zombie_says_it_is_exiting(void)
{
	/* Whether the cgroup read before it can be trusted on a v1 host (cgpath.h). */
	struct mm_pid_stat st;
	char line[160];
	snprintf(line, sizeof(line), "9 (w) R 1 1 1 0 -1 4194304 10 0 2 0 0 0 0 0 20 0 1 0 500");
	CHECK(mm_proc_parse_stat(line, &st) == 0 && !st.exiting);
	/* PF_EXITING (0x4) set in do_exit() while the task still runs. */
	snprintf(line, sizeof(line), "9 (w) R 1 1 1 0 -1 4194308 10 0 2 0 0 0 0 0 20 0 1 0 500");
	CHECK(mm_proc_parse_stat(line, &st) == 0 && st.exiting);
	snprintf(line, sizeof(line), "9 (w) Z 1 1 1 0 -1 4194304 10 0 2 0 0 0 0 0 20 0 1 0 500");
	CHECK(mm_proc_parse_stat(line, &st) == 0 && st.exiting);
}

static int fake_calls;
static int fake(void *ctx, uint32_t pid, struct mm_proc_ident *ret)
{
	fake_calls++;
	memset(ret, 0, sizeof(*ret));
	ret->start_ms = 100 * (uint64_t)fake_calls;
	snprintf(ret->comm, sizeof(ret->comm), "c%d", fake_calls);
	return 0;
}

/* A table whose lookups are fake()'s, counted from 0. */
static struct mm_proctable *fake_table(void)
{
	fake_calls = 0;
	return mm_proctable_new(fake, NULL);
}

/* The entry of @pid in @t, with @faults in its open window. */
static struct mm_proc *with_faults(struct mm_proctable *t, uint32_t pid, uint64_t faults)
{
	struct mm_proc *p = mm_proctable_get(t, pid, 0);

	mm_proctable_counts(t, p, 0)->faults = faults;
	return p;
}

static void test_lookup_happens_once_per_process(void)
{
	struct mm_proctable *t = fake_table();
	struct mm_proc *a = mm_proctable_get(t, 5, 0);
	struct mm_proc *b = mm_proctable_get(t, 5, 0);
	CHECK(a == b);
	CHECK_U64(fake_calls, 1);
	mm_proctable_comm(t, 5, "renamed", false); /* prctl(PR_SET_NAME): no lookup */
	CHECK_STR(a->comm, "renamed");
	CHECK_U64(fake_calls, 1);
	mm_proctable_free(t);
}

/* The lookup answers one start time and the cgroup the process is in now. */
static const char *now_in;
static int moving(void *ctx, uint32_t pid, struct mm_proc_ident *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->start_ms = ctx ? *(uint64_t *)ctx : 5000;
	snprintf(ret->comm, sizeof(ret->comm), "sh");
	snprintf(ret->cgroup, sizeof(ret->cgroup), "%s", now_in);
	return 0;
}

static void test_exec_reads_the_cgroup_again(void)
{
	/* Forked in the parent's cgroup, moved, then exec: as systemd starts a unit. */
	now_in = "/system.slice/parent.service";
	struct mm_proctable *t = mm_proctable_new(moving, NULL);
	struct mm_proc *p = mm_proctable_get(t, 5, 0);
	CHECK_STR(p->cgroup, "/system.slice/parent.service");
	now_in = "/system.slice/child.service";
	mm_proctable_comm(t, 5, "renamed", false);
	CHECK_STR(p->cgroup, "/system.slice/parent.service");
	mm_proctable_comm(t, 5, "child", true);
	CHECK_STR(p->comm, "child");
	CHECK_STR(p->cgroup, "/system.slice/child.service");
	mm_proctable_free(t);
	/* By the time the exec is seen the pid is another process's: its cgroup is not taken. */
	uint64_t start = 5000;
	now_in = "/a";
	t = mm_proctable_new(moving, &start);
	p = mm_proctable_get(t, 6, 0);
	start = 7000;
	now_in = "/b";
	mm_proctable_comm(t, 6, "x", true);
	CHECK_STR(p->cgroup, "/a");
	mm_proctable_free(t);
}

static void test_processes_of_one_cgroup_share_its_path(void)
{
	/* One copy per cgroup, however many processes; freed with its last process (the ASan
	 * build finds a leak or a double free). */
	now_in = "/system.slice/a.service";
	struct mm_proctable *t = mm_proctable_new(moving, NULL);
	struct mm_proc *p = mm_proctable_get(t, 5, 0), *q = mm_proctable_get(t, 6, 0);
	CHECK(p->cgroup == q->cgroup);
	now_in = "/system.slice/b.service";
	mm_proctable_comm(t, 6, "b", true);
	CHECK_STR(q->cgroup, "/system.slice/b.service");
	CHECK_STR(p->cgroup, "/system.slice/a.service");
	mm_proctable_exit(t, 5);
	mm_proctable_roll(t, 0); /* frees 5, the last in a.service */
	now_in = "/system.slice/a.service";
	mm_proctable_comm(t, 6, "a", true);
	CHECK_STR(q->cgroup, "/system.slice/a.service");
	/* An exec read while the process exits on a v1 host tells no cgroup: the known one stays.
	 */
	now_in = "";
	mm_proctable_comm(t, 6, "none", true);
	CHECK_STR(q->cgroup, "/system.slice/a.service");
	mm_proctable_free(t);
}

static void test_fork_of_a_reused_pid_retires_the_old_entry(void)
{
	struct mm_proctable *t = fake_table();
	struct mm_proc *old = with_faults(t, 5, 9);
	mm_proctable_fork(t, 5, 1, 0); /* its EXIT was lost */
	struct mm_proc *now = mm_proctable_get(t, 5, 0);
	CHECK(now != old);
	CHECK(old->exited);
	CHECK(!now->exited);
	CHECK(now->start_ms != old->start_ms);
	CHECK_U64(mm_proctable_count(t), 2);
	mm_proctable_roll(t, 0);
	CHECK_U64(mm_proctable_count(t), 1);
	CHECK(mm_proctable_first(t) == now);
	mm_proctable_free(t);
}

/* The lookup answers with a fixed identity, or "gone". */
static int gone;
static int fixed(void *ctx, uint32_t pid, struct mm_proc_ident *ret)
{
	if (gone)
		return -ENOENT;
	memset(ret, 0, sizeof(*ret));
	ret->start_ms = 5000;
	snprintf(ret->comm, sizeof(ret->comm), "early");
	return 0;
}

static void test_fork_of_a_process_seen_early_keeps_its_entry(void)
{
	/* Seen in /proc (by the totals collector) before its FORK record: one process, not two. */
	gone = 0;
	struct mm_proctable *t = mm_proctable_new(fixed, NULL);
	struct mm_proc *early = mm_proctable_get(t, 7, 0);
	mm_proctable_counts(t, early, 0)->minflt = 100;
	mm_proctable_fork(t, 7, 1, 5003);
	CHECK(mm_proctable_get(t, 7, 0) == early);
	CHECK(!early->exited);
	CHECK_U64(mm_proctable_count(t), 1);
	/* Gone by the time the FORK record arrives: the fork time matches its start. */
	struct mm_proc *p8 = mm_proctable_get(t, 8, 0);
	gone = 1;
	mm_proctable_fork(t, 8, 1, 5040);
	CHECK(mm_proctable_find(t, 8) == p8);
	CHECK(!p8->exited);
	/* A fork long after the entry's start is another process on a reused pid. */
	mm_proctable_fork(t, 8, 1, 9000);
	CHECK(p8->exited);
	CHECK(mm_proctable_find(t, 8) != p8);
	CHECK(mm_proctable_find(t, 9) == NULL);
	mm_proctable_free(t);
}

/* Answers for pid 1 only (the parent); every other pid is gone. */
static int only_parent(void *ctx, uint32_t pid, struct mm_proc_ident *ret)
{
	if (pid != 1)
		return -ENOENT;
	memset(ret, 0, sizeof(*ret));
	ret->start_ms = 10;
	snprintf(ret->comm, sizeof(ret->comm), "storm");
	snprintf(ret->cgroup, sizeof(ret->cgroup), "/build.slice");
	return 0;
}

static void test_child_gone_before_its_fork_record_is_named_after_its_parent(void)
{
	struct mm_proctable *t = mm_proctable_new(only_parent, NULL);
	/* The parent not in the table yet: its identity comes from /proc. */
	mm_proctable_fork(t, 20, 1, 7000);
	struct mm_proc *c = mm_proctable_find(t, 20);
	CHECK(c != NULL);
	CHECK_STR(c->comm, "storm");
	CHECK_STR(c->cgroup, "/build.slice");
	CHECK_U64(c->start_ms, 7000);
	/* The parent in the table, renamed since (prctl): its entry's name is the one copied. */
	mm_proctable_get(t, 1, 0);
	mm_proctable_comm(t, 1, "storm2", false);
	mm_proctable_fork(t, 21, 1, 7001);
	CHECK_STR(mm_proctable_find(t, 21)->comm, "storm2");
	/* Neither the child nor its parent known: nameless, as before. */
	mm_proctable_fork(t, 22, 99, 7002);
	CHECK_STR(mm_proctable_find(t, 22)->comm, "pid-22");
	mm_proctable_free(t);
}

/* Pid 1 (the parent) is in /build.slice, or tells no cgroup while parent_exiting; every other pid
 * is a process that was read while exiting on a v1 host: a name and start, no cgroup. */
static int parent_exiting;
static int child_exiting(void *ctx, uint32_t pid, struct mm_proc_ident *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->start_ms = pid == 1 ? 10 : 7000;
	snprintf(ret->comm, sizeof(ret->comm), pid == 1 ? "make" : "cc1");
	if (pid == 1 && !parent_exiting)
		snprintf(ret->cgroup, sizeof(ret->cgroup), "/build.slice");
	return 0;
}

static void test_child_read_while_exiting_takes_its_parents_cgroup_never_root(void)
{
	parent_exiting = 0;
	struct mm_proctable *t = mm_proctable_new(child_exiting, NULL);
	/* Its FORK record first (the perf path's order): the parent's cgroup, its own name. */
	mm_proctable_fork(t, 40, 1, 7000);
	struct mm_proc *c = mm_proctable_find(t, 40);
	CHECK_STR(c->comm, "cc1");
	CHECK_STR(c->cgroup, "/build.slice");
	/* Seen by a collector before its FORK record: unknown until the FORK, then the parent's. */
	struct mm_proc *d = mm_proctable_get(t, 41, 0);
	CHECK_STR(d->cgroup, "");
	mm_proctable_fork(t, 41, 1, 7000);
	CHECK(mm_proctable_find(t, 41) == d);
	CHECK_STR(d->cgroup, "/build.slice");
	CHECK_STR(d->comm, "cc1");
	mm_proctable_free(t);
	/* The parent's entry made while it told no cgroup: /proc is asked again at the child's
	 * FORK; while it still tells none the child stays unknown. */
	parent_exiting = 1;
	t = mm_proctable_new(child_exiting, NULL);
	struct mm_proc *parent = mm_proctable_get(t, 1, 0);
	CHECK_STR(parent->cgroup, "");
	mm_proctable_fork(t, 42, 1, 7000);
	CHECK_STR(mm_proctable_find(t, 42)->cgroup, "");
	parent_exiting = 0;
	mm_proctable_fork(t, 43, 1, 7000);
	CHECK_STR(mm_proctable_find(t, 43)->cgroup, "/build.slice");
	mm_proctable_free(t);
}

static void test_process_gone_between_a_collectors_read_and_the_lookup_is_one_process(void)
{
	/* The totals collector read /proc/30/stat (start 7000, "true"); the process exited before
	 * the table's own lookup; its FORK record (7004) arrives after. The entry takes the start
	 * read, not the window's (a guess the FORK would not recognize: two processes, the first
	 * with all the faults), and its cgroup from the parent at the FORK. */
	struct mm_proctable *t = mm_proctable_new(only_parent, NULL);
	struct mm_proc_ident seen = {.start_ms = 7000};
	snprintf(seen.comm, sizeof(seen.comm), "true");
	struct mm_proc *p = mm_proctable_get_seen(t, 30, &seen);
	CHECK_U64(p->start_ms, 7000);
	CHECK_STR(p->comm, "true");
	CHECK_STR(p->cgroup, "");
	mm_proctable_fork(t, 30, 1, 7004);
	CHECK(mm_proctable_find(t, 30) == p);
	CHECK_U64(mm_proctable_count(t), 1);
	CHECK_STR(p->comm, "true");
	CHECK_STR(p->cgroup, "/build.slice");
	/* Without a name read: "pid-N" until the FORK names it after its parent. */
	struct mm_proc_ident no_name = {.start_ms = 7100};
	struct mm_proc *q = mm_proctable_get_seen(t, 31, &no_name);
	CHECK_STR(q->comm, "pid-31");
	mm_proctable_fork(t, 31, 1, 7101);
	CHECK(mm_proctable_find(t, 31) == q);
	CHECK_STR(q->comm, "storm");
	/* A live entry is what it is: the identity read is not used. */
	struct mm_proc *parent = mm_proctable_get(t, 1, 0);
	CHECK(mm_proctable_get_seen(t, 1, &seen) == parent);
	CHECK_STR(parent->comm, "storm");
	mm_proctable_free(t);
}

static void test_start_ms_of_ticks_is_boot_relative(void)
{
	struct mm_proc_ident id;
	CHECK(mm_proc_lookup_procfs(NULL, (uint32_t)getpid(), &id) == 0);
	CHECK(mm_proc_start_ms(0) <= id.start_ms);
	CHECK(mm_proc_start_ms(100) > mm_proc_start_ms(0));
}

/* The clock set an hour forward: the entries' starts and the starts computed from then on move
 * by the hour, so a process read again is the same process; jitter moves nothing. */
static void test_a_clock_step_moves_every_start_with_it(void)
{
	gone = 0;
	struct mm_proctable *t = mm_proctable_new(fixed, NULL);
	struct mm_proc *p = mm_proctable_get(t, 7, 0);
	uint64_t boot = mm_proc_start_ms(0), tick = mm_proc_start_ms(100) - boot;

	CHECK_U64(p->start_ms, 5000);
	CHECK(mm_proctable_boot_moved(t, boot + 999) == 0);
	CHECK_U64(mm_proc_start_ms(0), boot);
	CHECK(mm_proctable_boot_moved(t, boot + 3600000) == 3600000);
	CHECK_U64(p->start_ms, 3605000);
	CHECK_U64(mm_proc_start_ms(0), boot + 3600000);
	CHECK_U64(mm_proc_start_ms(100), boot + 3600000 + tick);
	CHECK_U64(mm_proc_boottime_ms(0), boot + 3600000);
	CHECK(mm_proctable_boot_moved(t, boot) == -3600000);
	CHECK_U64(p->start_ms, 5000);
	CHECK_U64(mm_proc_start_ms(0), boot);
	mm_proctable_free(t);
}

static void test_roll_moves_window_into_closed(void)
{
	struct mm_proctable *t = fake_table();
	struct mm_proc *p = with_faults(t, 7, 4);
	mm_proctable_roll(t, 0);
	CHECK(p->window == NULL); /* freed: a process that does nothing holds no window */
	CHECK_U64(mm_proc_window(p)->faults, 0);
	CHECK(p->closed && p->closed->counts[0].faults == 4);
	CHECK(p->closed_hists == NULL); /* none had a sample */
	mm_proctable_counts(t, p, 0)->faults = 1;
	mm_proctable_exit(t, 7);
	CHECK(p->exited);
	mm_proctable_roll(t, 0);
	CHECK_U64(mm_proctable_count(t), 0);
	CHECK(mm_proctable_first(t) == NULL);
	mm_proctable_free(t);
}

static void test_counts_of_a_process_born_after_the_closing_window_go_to_the_next(void)
{
	/* The lookup says the process started at 5000 ms; the closing tick of the window that
	 * ended at 4000 runs late, after that. */
	gone = 0;
	struct mm_proctable *t = mm_proctable_new(fixed, NULL);
	struct mm_proc *p = mm_proctable_get(t, 7, 0);
	CHECK(p->window == NULL);				       /* nothing counted yet */
	CHECK(mm_proctable_counts(t, p, 0) == p->window && p->window); /* outside a closing tick */
	CHECK(mm_proctable_counts(t, p, 5000) == p->window);	       /* born before the end */
	struct mm_proc_stats *c = mm_proctable_counts(t, p, 4000);
	CHECK(c != NULL && c != p->window);
	c->minflt = 12;
	CHECK(mm_proctable_counts(t, p, 4000) == c);
	mm_proctable_exit(t, 7);
	mm_proctable_roll(t, 4500); /* the window ending at 4000 closes without it, */
	CHECK(p->window == NULL);   /* and so does the next one, ending before its start */
	CHECK(p->carry && p->carry->minflt == 12); /* moved with the arenas, kept whole */
	mm_proctable_roll(t, 5500);
	CHECK(p->closed == NULL);		  /* nothing closed yet */
	CHECK_U64(mm_proc_window(p)->minflt, 12); /* the next one starts with the carry */
	CHECK(p->carry == NULL);
	CHECK_U64(mm_proctable_count(t), 1); /* exited, kept for that window */
	CHECK(mm_proctable_find(t, 7) == p);
	mm_proctable_roll(t, 0);
	CHECK_U64(mm_proctable_count(t), 0);
	mm_proctable_free(t);
}

static void test_windows_come_zeroed_from_their_arena_window_after_window(void)
{
	/* More windows than one chunk of the arena holds, three windows in a row: each window
	 * starts at zero (the kept chunk cleared, the others mapped anew) and folds into the
	 * totals whole. */
	enum { N = 1000 };
	struct mm_proctable *t = fake_table();
	struct mm_proc *p[N];
	for (uint32_t i = 0; i < N; i++)
		p[i] = mm_proctable_get(t, 100 + i, 0);
	for (int round = 0; round < 3; round++) {
		unsigned dirty = 0;
		for (uint32_t i = 0; i < N; i++) {
			struct mm_proc_stats *w = mm_proctable_counts(t, p[i], 0);
			dirty += !w || !mm_stats_is_zero(w);
			if (w) {
				w->faults = i;
				w->mmap_lock_wait_hist.bucket[3] = 1;
			}
		}
		CHECK_U64(dirty, 0);
		mm_proctable_roll(t, 0);
	}
	unsigned wrong = 0;
	for (uint32_t i = 0; i < N; i++)
		wrong += p[i]->window ||
			 (i ? !p[i]->closed || p[i]->closed->counts[0].faults != 3 * i
			    : p[i]->closed != NULL) ||
			 !p[i]->closed_hists ||
			 mm_hist_set_get(p[i]->closed_hists, MM_HIST_INDEX(mmap_lock_wait_hist))
					 ->bucket[3] != 3;
	CHECK_U64(wrong, 0);
	mm_proctable_free(t);
}

static void test_counts_after_exit_find_their_process_by_its_start(void)
{
	/* A fork storm reuses pid 9 within seconds: counts that arrive after the first process
	 * exited (the BPF source's and the totals collector's exit settle) belong to it, not to
	 * the live entry. */
	gone = 1;
	struct mm_proctable *t = mm_proctable_new(fixed, NULL);
	mm_proctable_fork(t, 9, 0, 1000);
	struct mm_proc *first = mm_proctable_find(t, 9);
	mm_proctable_exit(t, 9);
	mm_proctable_fork(t, 9, 0, 21000);
	struct mm_proc *second = mm_proctable_find(t, 9);
	CHECK(first && second && first != second);
	CHECK(mm_proctable_find_started(t, 9, 1000) == first);
	CHECK(mm_proctable_find_started(t, 9, 1100) == first); /* /proc's ticks vs the record */
	CHECK(mm_proctable_find_started(t, 9, 21000 - 200) == second); /* within a few ticks */
	CHECK(mm_proctable_find_started(t, 9, 30000) == second);
	CHECK(mm_proctable_find_started(t, 9, 500) == NULL); /* before either: not known yet */
	CHECK(mm_proctable_find_started(t, 10, 1000) == NULL);
	/* The totals collector's settle: the start from a /proc reading, or, for a process that
	 * lived between two scans, from its exit messages' begin time (whole seconds; the start
	 * can be up to a second after it). */
	CHECK(mm_proctable_find_started(t, 9, mm_totals_start_ms(1000, 0)) == first);
	CHECK(mm_proctable_find_started(t, 9, mm_totals_start_ms(0, 1)) == first);
	CHECK(mm_proctable_find_started(t, 9, mm_totals_start_ms(0, 20)) == second);
	CHECK(mm_proctable_find_started(t, 9, mm_totals_start_ms(0, 21)) == second);
	CHECK_U64(mm_totals_start_ms(0, 0), 0); /* neither: the pid's live entry */
	/* An exit whose begin time is 30 s while only the first (1 s) and second (21 s) entries
	 * exist: a third process, its FORK record not in yet. Not the second's. */
	CHECK(mm_proctable_find_started_within(t, 9, mm_totals_start_lo_ms(0, 30),
					       mm_totals_start_ms(0, 30)) == NULL);
	CHECK(mm_proctable_find_started_within(t, 9, mm_totals_start_lo_ms(0, 21),
					       mm_totals_start_ms(0, 21)) == second);
	CHECK(mm_proctable_find_started_within(t, 9, mm_totals_start_lo_ms(0, 1),
					       mm_totals_start_ms(0, 1)) == first);
	mm_proctable_free(t);
	gone = 0;
}

/* A process that started while the daemon was starting (no FORK record) and left /proc before
 * its counts were read: 24 such were stored as pid-N in a churn run. Its exit notification's name
 * and start make it an entry of its own, exited, found by its start by the next collector
 * (totals), while the pid's live entry (a later process) keeps its own. A pid-N entry is counted
 * once, when a window of it with counts is stored. */
static void test_exited_process_without_fork_record_is_named_by_its_exit(void)
{
	gone = 1;
	struct mm_proctable *t = mm_proctable_new(fixed, NULL);
	mm_proctable_fork(t, 9, 0, 21000); /* a later process under pid 9, live */
	struct mm_proc *later = mm_proctable_find(t, 9);
	struct mm_proc *own = mm_proctable_add_exited(t, 9, 1000, "cc1");
	CHECK(own && later && own != later);
	CHECK(own->exited && !later->exited);
	CHECK_STR(own->comm, "cc1");
	CHECK(mm_proctable_find_started(t, 9, 1100) == own);
	CHECK(mm_proctable_find(t, 9) == later);
	/* Counts for pid 10, unknown everywhere: a nameless entry, and counted. */
	struct mm_proc *p = mm_proctable_get(t, 10, 500);
	CHECK(p && !strcmp(p->comm, "pid-10"));
	CHECK_U64(mm_proctable_nameless(t), 0); /* not stored yet */
	/* The exited entry goes at the roll after its window, as any exited one. Stored: the named
	 * one, and pid-10 (counted once); the later pid 9 (nameless too) has no counts yet. */
	mm_proctable_counts(t, own, 0)->minflt = 75;
	mm_proctable_counts(t, p, 0)->minflt = 3;
	CHECK_U64(mm_proctable_roll(t, 0), 1);
	CHECK(mm_proctable_find_started(t, 9, 1100) == NULL);
	CHECK_U64(mm_proctable_nameless(t), 1);
	mm_proctable_counts(t, p, 0)->minflt = 4;
	mm_proctable_roll(t, 0);
	CHECK_U64(mm_proctable_nameless(t), 1);
	mm_proctable_free(t);
	gone = 0;
}

int main(void)
{
	RUN(test_procfs_lookup_of_ourselves);
	RUN(test_stat_of_an_exiting_task_or_a_zombie_says_it_is_exiting);
	RUN(test_lookup_happens_once_per_process);
	RUN(test_processes_of_one_cgroup_share_its_path);
	RUN(test_exec_reads_the_cgroup_again);
	RUN(test_fork_of_a_reused_pid_retires_the_old_entry);
	RUN(test_fork_of_a_process_seen_early_keeps_its_entry);
	RUN(test_child_gone_before_its_fork_record_is_named_after_its_parent);
	RUN(test_process_gone_between_a_collectors_read_and_the_lookup_is_one_process);
	RUN(test_child_read_while_exiting_takes_its_parents_cgroup_never_root);
	RUN(test_start_ms_of_ticks_is_boot_relative);
	RUN(test_roll_moves_window_into_closed);
	RUN(test_counts_of_a_process_born_after_the_closing_window_go_to_the_next);
	RUN(test_a_clock_step_moves_every_start_with_it);
	RUN(test_counts_after_exit_find_their_process_by_its_start);
	RUN(test_exited_process_without_fork_record_is_named_by_its_exit);
	RUN(test_windows_come_zeroed_from_their_arena_window_after_window);
	return check_summary();
}
