/*
 * The host's side of the pipeline: the tracepoints the collectors want are merged (each once,
 * callchain if any asks, a filter only if all agree), the host numbers streams in one place and
 * a source that fails to open one keeps the numbering, a source's own fd reaches its handler,
 * an open window's snapshot leaves the idle processes to the last closed one's and reads back
 * whole, and every chunk of the recording format reads back as written.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "config.h"
#include "host.h"
#include "recording.h"
#include "snaps.h"

struct want {
	char name[64];
	bool callchain;
	const char *filter;
};

struct wants {
	struct want w[32];
	unsigned n;
};

static int collect(void *ctx, const char *system, const char *name, bool callchain,
		   const char *filter)
{
	struct wants *ws = ctx;
	if (ws->n < 32) {
		struct want *w = &ws->w[ws->n++];
		snprintf(w->name, sizeof(w->name), "%s:%s", system, name);
		w->callchain = callchain;
		w->filter = filter;
	}
	return 0;
}

static const struct want *find(const struct wants *ws, const char *name, unsigned *count)
{
	const struct want *found = NULL;
	*count = 0;
	for (unsigned i = 0; i < ws->n; i++)
		if (!strcmp(ws->w[i].name, name)) {
			found = &ws->w[i];
			(*count)++;
		}
	return found;
}

static struct mm_host *host(const char *collectors)
{
	struct mm_config cfg;
	mm_config_defaults(&cfg);
	snprintf(cfg.collectors, sizeof(cfg.collectors), "%s", collectors);
	mm_config_continuous(&cfg); /* faults only where named (bursts: see below) */
	return mm_host_new(&cfg, NULL, NULL, 0);
}

static void test_filters_merge_only_when_every_collector_agrees(void)
{
	struct wants alone = {0}, both = {0};
	struct mm_host *h = host("fallbacks");
	unsigned n;

	CHECK(mm_host_wanted(h, collect, &alone) == 0);
	const struct want *w = find(&alone, "mmap_lock:mmap_lock_acquire_returned", &n);
	CHECK_U64(n, 1);
	CHECK(w && w->filter && !strcmp(w->filter, "write == 0 && success == 0"));
	CHECK(w && !w->callchain);
	mm_host_free(h);

	/* faults wants every acquisition, with callchains: no filter, callchain on. */
	h = host("fallbacks,faults");
	CHECK(mm_host_wanted(h, collect, &both) == 0);
	w = find(&both, "mmap_lock:mmap_lock_acquire_returned", &n);
	CHECK_U64(n, 1);
	CHECK(w && !w->filter);
	CHECK(w && w->callchain);
	w = find(&both, "exceptions:page_fault_user", &n);
	CHECK_U64(n, 1);
	mm_host_free(h);
}

static int fail_second(void *ctx, const char *system, const char *name, bool callchain,
		       const char *filter)
{
	int *calls = ctx;
	return ++*calls == 2 ? -ENOMEM : 0;
}

/* Registers each wanted tracepoint as a stream, as the live loop does. */
static int add_each(void *ctx, const char *system, const char *name, bool callchain,
		    const char *filter)
{
	collect(((void **)ctx)[1], system, name, callchain, filter);
	return mm_host_add_tp(((void **)ctx)[0], system, name, NULL, 0, "not opened");
}

static void test_split_in_bursts_gets_streams_of_its_own(void)
{
	struct mm_config cfg;
	struct wants ws = {0};
	mm_config_defaults(&cfg); /* totals,fallbacks,vmstat,cgroups + faults in bursts */
	struct mm_host *h = mm_host_new(&cfg, NULL, NULL, 0);
	void *ctx[2] = {h, &ws};
	unsigned n;

	CHECK(mm_host_wanted(h, add_each, ctx) == 0);
	find(&ws, "mmap_lock:mmap_lock_acquire_returned", &n);
	CHECK_U64(n, 2); /* fallbacks' filtered one stays on; faults' own is switched */
	unsigned opener = 0, evidence = 0, always = 0;
	for (unsigned i = 0; i < mm_host_nstreams(h); i++) {
		enum mm_stream_role r = mm_host_stream_role(h, i);
		opener += r == MM_STREAM_OPENER;
		evidence += r == MM_STREAM_EVIDENCE;
		always += r == MM_STREAM_ALWAYS;
		if (r == MM_STREAM_OPENER)
			CHECK_STR(ws.w[i].name, "exceptions:page_fault_user");
		/* Only the default's filtered events, and the rare cgroup moves. */
		if (r == MM_STREAM_ALWAYS && strcmp(ws.w[i].name, "cgroup:cgroup_attach_task"))
			CHECK(ws.w[i].filter != NULL);
	}
	CHECK_U64(opener, 1);
	CHECK(evidence >= 4);
	CHECK_U64(always, 4); /* fallbacks' two and its kernel-mode faults, cgroup moves */
	uint64_t next;
	mm_host_phase(h, 0, &next);
	CHECK(next != UINT64_MAX);
	mm_host_free(h);
}

static void test_an_error_stops_the_walk_and_is_returned(void)
{
	struct mm_host *h = host("faults");
	int calls = 0;

	CHECK(mm_host_wanted(h, fail_second, &calls) == -ENOMEM);
	CHECK_U64(calls, 2);
	mm_host_free(h);
}

static void test_the_host_numbers_streams_and_keeps_failed_ones(void)
{
	struct mm_host *h = host("mmaplock");

	CHECK_U64(mm_host_add_tp(h, "exceptions", "page_fault_user", NULL, 0, "not opened"), 0);
	CHECK_U64(mm_host_add_tp(h, "mmap_lock", "mmap_lock_released", NULL, 0, "not opened"), 1);
	CHECK_U64(mm_host_add_task_stream(h, 0, "not opened"), 2);
	mm_host_stream_opened(h, 0, 7, NULL);
	mm_host_stream_opened(h, 1, 0, "permission denied");
	mm_host_stream_opened(h, 2, 9, NULL);
	CHECK_U64(mm_host_nstreams(h), 3);
	CHECK_U64(mm_host_sample_type(h, 0), 7);
	CHECK_U64(mm_host_sample_type(h, 2), 9);
	CHECK(mm_host_stream_is_task(h, 2));
	struct mm_snapshot *s = mm_host_snapshot(h, 1);
	CHECK(s && s->nevents == 3);
	if (s && s->nevents == 3) {
		CHECK(s->events[0].open);
		CHECK(!s->events[1].open);
		CHECK_STR(s->events[1].error, "permission denied");
		CHECK_STR(s->events[2].name, "perf:task");
	}
	mm_snapshot_unref(s);
	mm_host_free(h);
}

static void test_rows_sort_busiest_first_each_row_whole(void)
{
	/* Rows moved by the sort's permutation keep their own window and total together. */
	enum { N = 257 };
	struct mm_snapshot *s = mm_snapshot_new(N, 0, 0, 0);
	unsigned seed = 7;
	for (int i = 0; i < N; i++) {
		struct mm_snap_proc *p = &s->procs[i];
		p->pid = i;
		seed = seed * 1103515245u + 12345u;
		snap_proc_total(p)->minflt = (seed >> 16) % 40; /* ties: ordered by pid */
		((struct mm_proc_counts *)p->window)->faults = (uint64_t)i;
	}
	CHECK(mm_snapshot_sort_rows(s->procs, N) == 0);
	int seen[N] = {0};
	for (int i = 0; i < N; i++) {
		const struct mm_snap_proc *p = &s->procs[i];
		CHECK_U64(p->window->faults, (uint64_t)p->pid);
		seen[p->pid]++;
		if (i) {
			const struct mm_snap_proc *q = &s->procs[i - 1];
			CHECK(q->total->minflt > p->total->minflt ||
			      (q->total->minflt == p->total->minflt && q->pid < p->pid));
		}
	}
	for (int i = 0; i < N; i++)
		CHECK_U64(seen[i], 1);
	mm_snapshot_unref(s);
}

static int named(void *ctx, uint32_t pid, struct mm_proc_ident *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->start_ms = 500 + pid;
	snprintf(ret->comm, sizeof(ret->comm), "p%u", pid);
	snprintf(ret->cgroup, sizeof(ret->cgroup), "/u%u", pid % 2);
	return 0;
}

static void test_an_open_windows_snapshot_holds_the_active_rows_and_reads_back_whole(void)
{
	struct mm_config cfg;
	mm_config_defaults(&cfg);
	mm_config_continuous(&cfg);
	struct mm_host *h = mm_host_new(&cfg, named, NULL, 1000);
	mm_host_proc(h, 10)->faults = 5;
	mm_host_proc(h, 11)->faults = 7;
	mm_host_proc(h, 12)->fallback_locks = 1;
	/* Before any window closed: whole. */
	struct mm_snapshot *s = mm_host_snapshot(h, 1500);
	CHECK(s->base == NULL);
	CHECK_U64(s->nprocs, 3);
	mm_snapshot_unref(s);
	mm_snapshot_unref(mm_host_close_window(h, 2000));

	mm_host_proc(h, 11)->faults += 3;
	s = mm_host_snapshot(h, 2500);
	CHECK(s->base != NULL);
	CHECK_U64(s->nprocs, 1); /* only 11 counted in the open window */
	CHECK_U64(s->procs[0].pid, 11);
	CHECK_U64(s->procs[0].window->faults, 3);
	CHECK_U64(s->procs[0].total->faults, 10);
	mm_snapshot_publish(s);
	struct mm_snapshot *r = mm_snapshot_current(); /* completes it */
	CHECK(r == s && r->base == NULL);
	CHECK_U64(r->nprocs, 3);
	if (r->nprocs == 3) {
		/* busiest first, by total; the idle ones with an empty window, their total kept */
		CHECK_U64(r->procs[0].pid, 11);
		CHECK_U64(r->procs[1].pid, 10);
		CHECK_U64(r->procs[1].window->faults, 0);
		CHECK_U64(r->procs[1].total->faults, 5);
		CHECK_STR(r->procs[1].comm, "p10");
		CHECK_U64(r->procs[1].start_ms, 510);
		CHECK_U64(r->procs[2].pid, 12);
		CHECK_U64(r->procs[2].total->fallback_locks, 1);
	}
	CHECK(mm_snapshot_find(r, 10) != NULL);
	CHECK_U64(mm_snapshot_complete(r), 0); /* once is enough */
	CHECK_U64(r->nprocs, 3);
	/* The rows of one cgroup share the snapshot's own copy of its path, which outlives the
	 * closed window's snapshot the idle rows came from (the ASan build sees a dangling one). */
	mm_host_free(h); /* drops that snapshot */
	if (r->nprocs == 3) {
		CHECK_STR(r->procs[0].cgroup, "/u1");
		CHECK_STR(r->procs[1].cgroup, "/u0");
		CHECK(r->procs[1].cgroup == r->procs[2].cgroup);
	}
	mm_snapshot_unref(r);
	mm_snapshot_publish(NULL);
}

/* A row keeps only its histograms with a sample: each one reads back where it was counted, the
 * others read empty, and a row carried over idle keeps the total's and no window's. */
static void test_a_rows_histograms_keep_only_those_with_a_sample(void)
{
	unsigned wait = MM_HIST_INDEX(mmap_lock_wait_hist), vma = MM_HIST_INDEX(fault_ns_vma_hist),
		 retry = MM_HIST_INDEX(fault_ns_outcome_hist[2]);
	struct mm_config cfg;
	mm_config_defaults(&cfg);
	mm_config_continuous(&cfg);
	struct mm_host *h = mm_host_new(&cfg, named, NULL, 1000);
	mm_host_proc(h, 10)->faults = 1;
	mm_hist_add(&mm_host_proc(h, 10)->mmap_lock_wait_hist, 4000);	    /* bucket 11 */
	mm_hist_add(&mm_host_proc(h, 10)->fault_ns_outcome_hist[2], 70000); /* bucket 16 */
	mm_host_proc(h, 11)->faults = 1;				    /* no histogram */
	mm_snapshot_unref(mm_host_close_window(h, 2000));

	mm_host_proc(h, 10)->faults++;
	mm_host_proc(h, 11)->faults++;
	mm_hist_add(&mm_host_proc(h, 10)->fault_ns_vma_hist, 3000);	 /* bucket 11 */
	mm_hist_add(&mm_host_proc(h, 10)->mmap_lock_wait_hist, 1 << 20); /* bucket 20 */
	struct mm_snapshot *s = mm_host_snapshot(h, 2500);
	const struct mm_snap_proc *p = mm_snapshot_find(s, 10);
	CHECK(p != NULL && p->hists[0] != NULL && p->hists[1] != NULL);
	if (p && p->hists[0] && p->hists[1]) {
		CHECK_U64(p->hists[0]->present, (1u << wait) | (1u << vma));
		CHECK_U64(p->hists[1]->present, (1u << wait) | (1u << vma) | (1u << retry));
		CHECK_U64(mm_snap_proc_hist(p, false, wait)->bucket[20], 1);
		CHECK_U64(mm_snap_proc_hist(p, false, wait)->bucket[11], 0);
		CHECK_U64(mm_snap_proc_hist(p, false, vma)->bucket[11], 1);
		CHECK(mm_hist_is_zero(mm_snap_proc_hist(p, false, retry)));
		CHECK_U64(mm_snap_proc_hist(p, true, wait)->bucket[11], 1);
		CHECK_U64(mm_snap_proc_hist(p, true, wait)->bucket[20], 1);
		CHECK_U64(mm_snap_proc_hist(p, true, vma)->bucket[11], 1);
		CHECK_U64(mm_snap_proc_hist(p, true, retry)->bucket[16], 1);
		struct mm_proc_hists all;
		mm_snap_proc_hists(p, true, &all);
		CHECK_U64(all.fault_ns_outcome_hist[2].bucket[16], 1);
		CHECK(mm_hist_is_zero(&all.fault_ns_mmap_hist));
		CHECK(!mm_snap_proc_idle(p));
	}
	const struct mm_snap_proc *q = mm_snapshot_find(s, 11);
	CHECK(q != NULL && !q->hists[0] && !q->hists[1]);
	mm_snapshot_unref(s);
	mm_snapshot_unref(mm_host_close_window(h, 3000));

	/* Idle in the next window: completed from the closed window's row. */
	mm_host_proc(h, 11)->faults++;
	s = mm_host_snapshot(h, 3500);
	mm_snapshot_publish(s);
	struct mm_snapshot *r = mm_snapshot_current();
	p = mm_snapshot_find(r, 10);
	CHECK(p != NULL && p->hists[1] != NULL);
	if (p && p->hists[1]) {
		CHECK(p->hists[0] == NULL);
		CHECK(mm_snap_proc_idle(p));
		CHECK(mm_hist_is_zero(mm_snap_proc_hist(p, false, wait)));
		CHECK_U64(mm_snap_proc_hist(p, true, wait)->bucket[20], 1);
		CHECK_U64(mm_snap_proc_hist(p, true, retry)->bucket[16], 1);
	}
	mm_snapshot_unref(r);
	mm_snapshot_publish(NULL);
	mm_host_free(h);
}

static void count_ready(void *ctx, struct mm_host *h)
{
	(*(int *)ctx)++;
}

static void test_a_watched_fd_reaches_its_handler(void)
{
	struct mm_host *h = host("");
	int fds[2], calls = 0;

	CHECK(pipe(fds) == 0);
	CHECK(mm_host_watched_fd(h, 0) == -1);
	CHECK(mm_host_watch(h, fds[0], count_ready, &calls) == 0);
	CHECK(mm_host_watched_fd(h, 0) == fds[0]);
	CHECK(mm_host_watched_fd(h, 1) == -1);
	mm_host_watch_ready(h, 0);
	mm_host_watch_ready(h, 1); /* none: ignored */
	CHECK_U64(calls, 1);
	for (int i = 1; i < MM_HOST_MAX_WATCHES; i++)
		CHECK(mm_host_watch(h, fds[0], count_ready, &calls) == 0);
	CHECK(mm_host_watch(h, fds[0], count_ready, &calls) == -ENOSPC);
	close(fds[0]);
	close(fds[1]);
	mm_host_free(h);
}

static void test_recording_chunks_read_back_as_written(void)
{
	char path[] = "/tmp/mmlockd-test-pipeline-XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	struct mm_proc_ident id = {.start_ms = 1234};
	struct {
		struct perf_event_header h;
		uint64_t payload;
	} rec = {{PERF_RECORD_SAMPLE, 0, sizeof(rec)}, 0x1122334455667788ull};

	CHECK(f != NULL);
	if (!f)
		return;
	snprintf(id.comm, sizeof(id.comm), "worker");
	snprintf(id.cgroup, sizeof(id.cgroup), "/system.slice/x.service");
	CHECK(mm_rec_write_magic(f) == 0);
	CHECK(mm_rec_write_chunk(f, MM_CHUNK_META, "kernel=6.18\ninterval_s=1\n", 25, NULL, 0) ==
	      0);
	CHECK(mm_rec_write_stream(f, 3, false, 0x4a7, "mmap_lock", "mmap_lock_released",
				  "name: x\n") == 0);
	CHECK(mm_rec_write_proc(f, 42, 0, &id) == 0);
	CHECK(mm_rec_write_record(f, 3, 987654321, &rec.h) == 0);
	CHECK(mm_rec_write_symbol(f, 0xffffffff81000000ull, 't', "lock_mm_and_find_vma") == 0);
	fclose(f);

	struct mm_rec_reader *rd = NULL;
	struct mm_chunk c;
	char value[64];
	CHECK(mm_rec_open(path, &rd) == 0);
	if (!rd)
		return;
	CHECK(mm_rec_next(rd, &c) == 1 && c.type == MM_CHUNK_META);
	CHECK(mm_rec_meta_get(&c, "interval_s", value, sizeof(value)) == 0);
	CHECK_STR(value, "1");
	CHECK(mm_rec_meta_get(&c, "collectors", value, sizeof(value)) == -ENOENT);

	struct mm_rec_stream st;
	CHECK(mm_rec_next(rd, &c) == 1 && mm_rec_parse_stream(&c, &st) == 0);
	CHECK_U64(st.index, 3);
	CHECK(!st.is_task);
	CHECK_U64(st.sample_type, 0x4a7);
	CHECK_STR(st.name, "mmap_lock_released");
	CHECK_STR(st.format, "name: x\n");

	uint32_t pid = 0;
	int result;
	struct mm_proc_ident got = {0};
	CHECK(mm_rec_next(rd, &c) == 1 && mm_rec_parse_proc(&c, &pid, &result, &got) == 0);
	CHECK_U64(pid, 42);
	CHECK_U64(got.start_ms, 1234);
	CHECK_STR(got.comm, "worker");
	CHECK_STR(got.cgroup, "/system.slice/x.service");

	unsigned stream = 0;
	uint64_t t = 0;
	const struct perf_event_header *hdr = NULL;
	CHECK(mm_rec_next(rd, &c) == 1 && mm_rec_parse_record(&c, &stream, &t, &hdr) == 0);
	CHECK_U64(stream, 3);
	CHECK_U64(t, 987654321);
	CHECK(hdr && hdr->size == sizeof(rec) && !memcmp(hdr, &rec, sizeof(rec)));

	uint64_t addr = 0;
	char type = 0;
	const char *name = "";
	CHECK(mm_rec_next(rd, &c) == 1 && mm_rec_parse_symbol(&c, &addr, &type, &name) == 0);
	CHECK_U64(addr, 0xffffffff81000000ull);
	CHECK(type == 't');
	CHECK_STR(name, "lock_mm_and_find_vma");
	CHECK(mm_rec_next(rd, &c) == 0);
	mm_rec_close(rd);
	unlink(path);
}

int main(void)
{
	RUN(test_filters_merge_only_when_every_collector_agrees);
	RUN(test_split_in_bursts_gets_streams_of_its_own);
	RUN(test_an_error_stops_the_walk_and_is_returned);
	RUN(test_the_host_numbers_streams_and_keeps_failed_ones);
	RUN(test_an_open_windows_snapshot_holds_the_active_rows_and_reads_back_whole);
	RUN(test_a_rows_histograms_keep_only_those_with_a_sample);
	RUN(test_rows_sort_busiest_first_each_row_whole);
	RUN(test_a_watched_fd_reaches_its_handler);
	RUN(test_recording_chunks_read_back_as_written);
	return check_summary();
}
