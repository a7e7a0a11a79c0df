/*
 * The window clock (clock.h) and the pipeline around it: windows end on interval multiples; a
 * time far ahead closes at most two windows (the replay hang of a corrupted recording); a run fed
 * live (records, horizons, the recorder as a tap) and its recording replayed cut the same windows
 * with the same counts, closing tick included; corrupted recordings are refused with the reason
 * and the offset; the run tally of a run without processes prints its header.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "clock.h"
#include "config.h"
#include "formats.h"
#include "host.h"
#include "records.h"
#include "recording.h"
#include "tally.h"

#define MS 1000000ull /* ns */

static void test_windows_end_on_interval_multiples(void)
{
	struct mm_clock c;

	mm_clock_init(&c, 10, 0, 12345);
	CHECK_U64(mm_clock_next_close(&c, 19999 * MS), 0);
	CHECK_U64(mm_clock_next_close(&c, 20000 * MS), 20000);
	CHECK_U64(mm_clock_next_close(&c, 20000 * MS), 0);
	CHECK_U64(c.end_ms, 30000);
	/* The offset converts monotonic to wall time. */
	mm_clock_init(&c, 1, 5000, 5000);
	CHECK_U64(mm_clock_wall_ms(&c, 999 * MS), 5999);
	CHECK_U64(mm_clock_next_close(&c, 999 * MS), 0);
	CHECK_U64(mm_clock_next_close(&c, 1000 * MS), 6000);
	mm_clock_set_interval(&c, 10, 6500);
	CHECK_U64(c.end_ms, 10000);
}

static void test_one_empty_window_closes_like_any_other(void)
{
	struct mm_clock c;

	mm_clock_init(&c, 1, 0, 0);
	CHECK_U64(mm_clock_next_close(&c, 2500 * MS), 1000);
	CHECK_U64(mm_clock_next_close(&c, 2500 * MS), 2000);
	CHECK_U64(mm_clock_next_close(&c, 2500 * MS), 0);
}

static void test_a_wild_time_closes_at_most_two_windows(void)
{
	struct mm_clock c;
	unsigned n = 0;

	mm_clock_init(&c, 1, 0, 0);
	uint64_t ends[3] = {0};
	for (uint64_t end; (end = mm_clock_next_close(&c, UINT64_MAX - 1)) && n < 3; n++)
		ends[n] = end;
	CHECK_U64(n, 2);
	CHECK_U64(ends[0], 1000);
	CHECK(ends[1] > 1000 && ends[1] % 1000 == 0);
	CHECK_U64(mm_clock_next_close(&c, UINT64_MAX - 1), 0);
}

/* --- one run fed live and replayed from its recording --- */

enum { FAULT, START, ACQ, FF, NTP };

struct window {
	uint64_t start_ms, end_ms, faults, timed_out, samples;
};

struct run {
	struct mm_host *h;
	struct tep_handle *tep;
	struct tep_event *ev[NTP];
	struct window w[16];
	unsigned nw;
};

static void sink(void *ctx, struct mm_snapshot *s)
{
	struct run *r = ctx;
	struct window *w = &r->w[r->nw < 16 ? r->nw++ : 15];

	w->start_ms = s->window_start_ms;
	w->end_ms = s->window_end_ms;
	w->faults = s->all_window.faults_vma; /* outcomes: no mmap_lock here */
	for (size_t i = 0; i < s->nglobals; i++)
		if (!strcmp(s->globals[i].name, "windows_timed_out"))
			w->timed_out = s->globals[i].window;
	for (size_t i = 0; i < s->nevents; i++)
		w->samples += s->events[i].window_samples;
}

static void start_run(struct run *r, const struct mm_tap *tap, void *tap_ctx)
{
	static const char *const fmts[NTP] = {fmt_page_fault_user, fmt_mmap_lock_start_locking,
					      fmt_mmap_lock_acquire_returned, fmt_mm_filemap_fault};
	static const char *const sys[NTP] = {"exceptions", "mmap_lock", "mmap_lock", "filemap"};
	struct mm_config cfg;

	mm_config_defaults(&cfg);
	snprintf(cfg.collectors, sizeof(cfg.collectors), "faults");
	cfg.interval_s = 2;
	memset(r, 0, sizeof(*r));
	r->h = mm_host_new(&cfg, rec_lookup, NULL, 0);
	r->tep = tep_alloc();
	mm_host_add_sink(r->h, sink, r);
	mm_host_set_tap(r->h, tap, tap_ctx);
	unsigned stream[NTP];
	rec_add_streams(r->h, r->tep, NTP, fmts, sys, r->ev, stream, REC_SAMPLE_TYPE, ACQ,
			REC_SAMPLE_TYPE_CC);
	mm_host_start(r->h);
}

static void free_run(struct run *r)
{
	mm_host_free(r->h);
	tep_free(r->tep);
}

static void feed_fault(struct run *r, uint32_t tid, uint64_t t)
{
	struct rec rec;
	mm_host_feed(r->h, FAULT, t, rec_sample(&rec, r->ev[FAULT], 10, tid, t, NULL, 0));
}

/* The live run: thread 1 faults at 0.1 s and stays quiet; thread 2's faults move event time on.
 * Interval 2 s. At 1.5 s the fault of thread 1 is 1.4 s old, over the collector's 1 s limit, but
 * only a tick expires it: the closing tick of [0, 2), run before the record at 2.5 s goes in,
 * must count it in that window. A horizon then closes [2, 4) with no record crossing it, and a
 * plain tick runs in between. */
static void live(struct run *r)
{
	feed_fault(r, 1, 100 * MS);
	feed_fault(r, 2, 1500 * MS);
	feed_fault(r, 2, 2500 * MS);
	mm_host_tick(r->h);
	mm_host_advance(r->h, 4100 * MS);
	feed_fault(r, 2, 4500 * MS);
	mm_host_finish(r->h);
	mm_host_close_now(r->h, 5000);
}

static void test_live_and_replay_cut_the_same_windows(void)
{
	char path[] = "/tmp/mmlockd-test-clock-XXXXXX";
	int fd = mkstemp(path);
	struct mm_recorder *rec = NULL;
	struct run a, b;

	CHECK(fd >= 0);
	close(fd);
	CHECK(mm_recorder_open(path, NULL, &rec) == 0);
	start_run(&a, &mm_recorder_tap, rec);
	live(&a);
	CHECK(mm_recorder_close(rec) == 0);

	start_run(&b, NULL, NULL);
	struct mm_rec_reader *rd = NULL;
	struct mm_rec_feeder f = {b.h, 0, UINT64_MAX, 0};
	struct mm_chunk c;
	char why[160];
	unsigned records = 0;
	CHECK(mm_rec_open(path, &rd) == 0);
	while (rd && mm_rec_next(rd, &c) > 0) {
		records += c.type == MM_CHUNK_RECORD;
		CHECK(mm_rec_feed(&f, &c, why, sizeof(why)) == 0);
	}
	mm_rec_close(rd);
	mm_host_finish(b.h);
	mm_host_close_now(b.h, 5000);
	CHECK_U64(records, 4);
	CHECK_U64(f.last_ms, 4500);

	CHECK_U64(a.nw, 3);
	CHECK_U64(b.nw, a.nw);
	for (unsigned i = 0; i < a.nw && i < b.nw; i++) {
		CHECK_U64(b.w[i].start_ms, a.w[i].start_ms);
		CHECK_U64(b.w[i].end_ms, a.w[i].end_ms);
		CHECK_U64(b.w[i].faults, a.w[i].faults);
		CHECK_U64(b.w[i].timed_out, a.w[i].timed_out);
		CHECK_U64(b.w[i].samples, a.w[i].samples);
	}
	/* [0, 2): thread 1's fault, expired by the closing tick; thread 2's first fault is still
	 * open. [2, 4): closed by the horizon. [4, 5): the shutdown. */
	CHECK_U64(a.w[0].end_ms, 2000);
	CHECK_U64(a.w[0].timed_out, 1);
	CHECK_U64(a.w[0].faults, 1);
	CHECK_U64(a.w[0].samples, 2);
	CHECK_U64(a.w[1].end_ms, 4000);
	CHECK_U64(a.w[1].samples, 1);
	CHECK_U64(a.w[2].end_ms, 5000);
	CHECK_U64(a.w[0].faults + a.w[1].faults + a.w[2].faults, 4);
	free_run(&a);
	free_run(&b);
	unlink(path);
}

/* --- corrupted recordings --- */

static FILE *recording(char *path)
{
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	CHECK(f != NULL);
	if (f)
		CHECK(mm_rec_write_magic(f) == 0);
	return f;
}

static void test_a_wild_time_stamp_is_refused_and_closes_nothing(void)
{
	char path[] = "/tmp/mmlockd-test-clock-XXXXXX";
	FILE *fp = recording(path);
	struct run r;
	struct rec rec;

	start_run(&r, NULL, NULL);
	CHECK(mm_rec_write_record(fp, FAULT, 1500 * MS,
				  rec_sample(&rec, r.ev[FAULT], 10, 1, 1500 * MS, NULL, 0)) == 0);
	CHECK(mm_rec_write_record(fp, FAULT, 0x7fffffffffffffffull,
				  rec_sample(&rec, r.ev[FAULT], 10, 1, 1, NULL, 0)) == 0);
	fclose(fp);

	struct mm_rec_reader *rd = NULL;
	struct mm_rec_feeder f = {r.h, 0, 86400000, 0};
	struct mm_chunk c;
	char why[160] = "";
	int res = 0;
	long long off = -1;
	CHECK(mm_rec_open(path, &rd) == 0);
	while (rd && mm_rec_next(rd, &c) > 0 && (res = mm_rec_feed(&f, &c, why, sizeof(why))) == 0)
		;
	if (rd)
		off = mm_rec_offset(rd);
	mm_rec_close(rd);
	CHECK(res == -EINVAL);
	CHECK_CONTAINS(why, "in the future");
	CHECK(off > 8); /* the second record's chunk, after the first */
	CHECK_U64(r.nw, 0);

	/* Without the bound, the same time closes two windows, not one per interval. */
	feed_fault(&r, 1, 0x7fffffffffffffffull);
	CHECK_U64(r.nw, 2);
	free_run(&r);
	unlink(path);
}

static void test_an_impossible_chunk_size_is_refused_with_its_offset(void)
{
	char path[] = "/tmp/mmlockd-test-clock-XXXXXX";
	FILE *fp = recording(path);
	uint32_t hdr[2] = {MM_CHUNK_RECORD, 0xfffffff0u};

	CHECK(mm_rec_write_chunk(fp, MM_CHUNK_TICK, "\0\0\0\0\0\0\0\0", 8, NULL, 0) == 0);
	fwrite(hdr, sizeof(hdr), 1, fp);
	fclose(fp);

	struct mm_rec_reader *rd = NULL;
	struct mm_chunk c;
	CHECK(mm_rec_open(path, &rd) == 0);
	CHECK(rd && mm_rec_next(rd, &c) == 1);
	CHECK(rd && mm_rec_next(rd, &c) == -EINVAL);
	if (rd) {
		CHECK_U64(mm_rec_offset(rd), 8 + 8 + 8);
		CHECK_CONTAINS(mm_rec_error(rd), "claims 4294967280 bytes");
	}
	mm_rec_close(rd);
	unlink(path);
}

static void test_a_truncated_chunk_is_refused(void)
{
	char path[] = "/tmp/mmlockd-test-clock-XXXXXX";
	FILE *fp = recording(path);
	uint32_t hdr[2] = {MM_CHUNK_RECORD, 64};

	fwrite(hdr, sizeof(hdr), 1, fp);
	fwrite(hdr, sizeof(hdr), 1, fp); /* 8 of the 64 bytes */
	fclose(fp);

	struct mm_rec_reader *rd = NULL;
	struct mm_chunk c;
	CHECK(mm_rec_open(path, &rd) == 0);
	CHECK(rd && mm_rec_next(rd, &c) == -EINVAL);
	if (rd)
		CHECK_CONTAINS(mm_rec_error(rd), "truncated");
	mm_rec_close(rd);
	unlink(path);
}

/* --- the run tally --- */

static void test_tally_of_a_run_without_processes_prints_its_header(void)
{
	struct mm_tally *t = mm_tally_new();
	struct mm_snapshot *w = mm_snapshot_new(0, 0, 0, 0);
	char buf[4096] = "";
	FILE *out = fmemopen(buf, sizeof(buf), "w");

	CHECK(t && w && out);
	CHECK(mm_tally_add(t, w) == 0);
	mm_tally_print(t, out); /* memcpy(dst, NULL, 0) before: UBSan's nonnull-attribute */
	fclose(out);
	CHECK_CONTAINS(buf, "pid      comm");
	CHECK_CONTAINS(buf, "events:");
	mm_snapshot_unref(w);
	mm_tally_free(t);
}

static void test_tally_sums_a_process_over_windows(void)
{
	struct mm_tally *t = mm_tally_new();
	char buf[4096] = "";
	FILE *out = fmemopen(buf, sizeof(buf), "w");

	for (int i = 0; i < 3; i++) {
		struct mm_snapshot *w = mm_snapshot_new(1, 0, 0, 0);
		w->procs[0].pid = 42;
		w->procs[0].start_ms = 7;
		snprintf(w->procs[0].comm, sizeof(w->procs[0].comm), "worker");
		w->windows[0].faults = 10 + (uint64_t)i;
		CHECK(mm_tally_add(t, w) == 0);
		mm_snapshot_unref(w);
	}
	mm_tally_print(t, out);
	fclose(out);
	CHECK_CONTAINS(buf, "42       worker                   33");
	mm_tally_free(t);
}

int main(void)
{
	RUN(test_windows_end_on_interval_multiples);
	RUN(test_one_empty_window_closes_like_any_other);
	RUN(test_a_wild_time_closes_at_most_two_windows);
	RUN(test_live_and_replay_cut_the_same_windows);
	RUN(test_a_wild_time_stamp_is_refused_and_closes_nothing);
	RUN(test_an_impossible_chunk_size_is_refused_with_its_offset);
	RUN(test_a_truncated_chunk_is_refused);
	RUN(test_tally_of_a_run_without_processes_prints_its_header);
	RUN(test_tally_sums_a_process_over_windows);
	return check_summary();
}
