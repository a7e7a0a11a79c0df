/*
 * The window clock (clock.h) and the pipeline around it: windows end on interval multiples; a
 * time far ahead closes at most two windows (the replay hang of a corrupted recording); a run fed
 * live (records, horizons, the recorder as a tap) and its recording replayed cut the same windows
 * with the same counts, closing tick included; a step of the wall clock cuts the open window at
 * the step and the windows after it follow the new clock, in the clock alone, through the host to
 * the stop, and in the replay of a recording; corrupted recordings are refused with the reason and
 * the offset; the run tally of a run without processes prints its header.
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
#include "hostcalls.h"
#include "records.h"
#include "recording.h"
#include "tally.h"

#define MS 1000000ull /* ns */

static void test_windows_end_on_interval_multiples(void)
{
	struct mm_clock c;

	mm_clock_init(&c, 10, 0, 12345);
	CHECK_U64(mm_clock_next_close(&c, 19999 * MS, NULL), 0);
	CHECK_U64(mm_clock_next_close(&c, 20000 * MS, NULL), 20000);
	CHECK_U64(mm_clock_next_close(&c, 20000 * MS, NULL), 0);
	CHECK_U64(c.end_ms, 30000);
	/* The offset converts monotonic to wall time. */
	mm_clock_init(&c, 1, 5000, 5000);
	CHECK_U64(mm_clock_wall_ms(&c, 999 * MS), 5999);
	CHECK_U64(mm_clock_next_close(&c, 999 * MS, NULL), 0);
	CHECK_U64(mm_clock_next_close(&c, 1000 * MS, NULL), 6000);
	mm_clock_set_interval(&c, 10, 6500);
	CHECK_U64(c.end_ms, 10000);
}

static void test_one_empty_window_closes_like_any_other(void)
{
	struct mm_clock c;

	mm_clock_init(&c, 1, 0, 0);
	CHECK_U64(mm_clock_next_close(&c, 2500 * MS, NULL), 1000);
	CHECK_U64(mm_clock_next_close(&c, 2500 * MS, NULL), 2000);
	CHECK_U64(mm_clock_next_close(&c, 2500 * MS, NULL), 0);
}

static void test_a_wild_time_closes_at_most_two_windows(void)
{
	struct mm_clock c;
	unsigned n = 0;

	mm_clock_init(&c, 1, 0, 0);
	uint64_t ends[3] = {0};
	for (uint64_t end; (end = mm_clock_next_close(&c, UINT64_MAX - 1, NULL)) && n < 3; n++)
		ends[n] = end;
	CHECK_U64(n, 2);
	CHECK_U64(ends[0], 1000);
	CHECK(ends[1] > 1000 && ends[1] % 1000 == 0);
	CHECK_U64(mm_clock_next_close(&c, UINT64_MAX - 1, NULL), 0);
}

/* --- clock steps (NTP setting the clock after the daemon started) --- */

#define HOUR_MS 3600000ll

static void test_a_forward_step_cuts_the_open_window_at_the_step(void)
{
	struct mm_clock c;
	uint64_t start = 0, end = 0;

	mm_clock_init(&c, 10, 0, 0);
	CHECK(mm_clock_observe(&c, HOUR_MS, 25000 * MS) == HOUR_MS);
	/* The stream has not reached the step: its times stay on the old clock. */
	CHECK_U64(mm_clock_wall_ms(&c, 24999 * MS), 24999);
	CHECK_U64(mm_clock_next_close(&c, 24999 * MS, &start), 10000);
	CHECK_U64(start, 0);
	CHECK_U64(mm_clock_next_close(&c, 24999 * MS, &start), 20000);
	CHECK_U64(start, 10000);
	CHECK_U64(mm_clock_next_close(&c, 24999 * MS, NULL), 0);
	CHECK(!mm_clock_take_step(&c, 24999 * MS, &start, &end));
	/* It reached it: nothing else closes before the step, which cuts [20 s, 25 s). */
	CHECK_U64(mm_clock_wall_ms(&c, 26000 * MS), HOUR_MS + 26000);
	CHECK_U64(mm_clock_next_close(&c, 26000 * MS, NULL), 0);
	CHECK(mm_clock_take_step(&c, 26000 * MS, &start, &end));
	CHECK_U64(start, 20000);
	CHECK_U64(end, 25000);
	CHECK(c.mono_to_wall_ms == HOUR_MS);
	CHECK_U64(c.start_ms, HOUR_MS + 25000);
	CHECK_U64(c.end_ms, HOUR_MS + 30000);
	CHECK(!mm_clock_take_step(&c, 26000 * MS, &start, &end));
	CHECK_U64(mm_clock_next_close(&c, 29999 * MS, NULL), 0);
	CHECK_U64(mm_clock_next_close(&c, 30000 * MS, &start), HOUR_MS + 30000);
	CHECK_U64(start, HOUR_MS + 25000);
}

/* A clock an hour ahead set right: the windows after the step do not span the hour, and the cut
 * one lasted what it lasted. */
static void test_a_backward_step_starts_the_next_window_on_the_new_clock(void)
{
	struct mm_clock c;
	uint64_t start = 0, end = 0;

	mm_clock_init(&c, 10, HOUR_MS, HOUR_MS + 3000);
	CHECK(mm_clock_observe(&c, 0, 7500 * MS) == -HOUR_MS);
	CHECK_U64(mm_clock_next_close(&c, 8000 * MS, NULL), 0);
	CHECK(mm_clock_take_step(&c, 8000 * MS, &start, &end));
	CHECK_U64(start, HOUR_MS + 3000);
	CHECK_U64(end, HOUR_MS + 7500);
	CHECK_U64(c.start_ms, 7500);
	CHECK_U64(c.end_ms, 10000);
	CHECK_U64(mm_clock_wall_ms(&c, 8000 * MS), 8000);
	CHECK_U64(mm_clock_next_close(&c, 10000 * MS, &start), 10000);
	CHECK_U64(start, 7500);
}

static void test_jitter_below_a_second_is_no_step(void)
{
	struct mm_clock c;

	mm_clock_init(&c, 10, 5000, 5000);
	CHECK(mm_clock_observe(&c, 5999, 1000 * MS) == 0);
	CHECK(mm_clock_observe(&c, 4001, 1000 * MS) == 0);
	CHECK_U64(c.step_at_ns, 0);
	CHECK(c.mono_to_wall_ms == 5000);
	CHECK(mm_clock_observe(&c, 6000, 2000 * MS) == 1000);
	CHECK_U64(c.step_at_ns, 2000 * MS);
	/* Compared with the pending step's offset, not the one in force. */
	CHECK(mm_clock_observe(&c, 6500, 2100 * MS) == 0);
	CHECK(mm_clock_latest_offset(&c) == 6000);
}

static void test_a_step_on_a_window_end_cuts_nothing(void)
{
	struct mm_clock c;
	uint64_t start = 0, end = 1;

	mm_clock_init(&c, 10, 0, 0);
	CHECK(mm_clock_observe(&c, -2000, 10000 * MS) == -2000);
	CHECK_U64(mm_clock_next_close(&c, 10000 * MS, &start), 10000);
	CHECK_U64(start, 0);
	CHECK_U64(mm_clock_next_close(&c, 10000 * MS, NULL), 0);
	CHECK(mm_clock_take_step(&c, 10000 * MS, &start, &end));
	CHECK_U64(end, 0);
	CHECK_U64(c.start_ms, 8000);
	CHECK_U64(c.end_ms, 10000);
	CHECK_U64(mm_clock_next_close(&c, 12000 * MS, &start), 10000);
	CHECK_U64(start, 8000);
}

/* Two steps before the stream reached the first: the records from the first on take the last
 * offset, those before it the old one. */
static void test_a_second_pending_step_keeps_the_first_time(void)
{
	struct mm_clock c;
	uint64_t start, end;

	mm_clock_init(&c, 10, 0, 0);
	CHECK(mm_clock_observe(&c, HOUR_MS, 3000 * MS) == HOUR_MS);
	CHECK(mm_clock_observe(&c, 2 * HOUR_MS, 3100 * MS) == HOUR_MS);
	CHECK_U64(mm_clock_wall_ms(&c, 2999 * MS), 2999);
	CHECK_U64(mm_clock_wall_ms(&c, 3000 * MS), 2 * HOUR_MS + 3000);
	CHECK(mm_clock_take_step(&c, 3200 * MS, &start, &end));
	CHECK_U64(end, 3000);
	CHECK_U64(c.start_ms, 2 * HOUR_MS + 3000);
}

/* --- one run fed live and replayed from its recording --- */

enum { FAULT, START, ACQ, FF, NTP };

struct window {
	uint64_t start_ms, end_ms, faults, timed_out, samples, observed_ns;
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
	w->observed_ns = s->all_window.split_observed_ns;
	for (size_t i = 0; i < s->nglobals; i++)
		if (!strcmp(s->globals[i].name, "windows_timed_out"))
			w->timed_out = s->globals[i].window;
	for (size_t i = 0; i < s->nevents; i++)
		w->samples += s->events[i].window_samples;
}

/* A run of the faults collector in 2-second windows from wall time @start_ms, @offset_ms its
 * clock offset, cycled at @duty_pm per mille (-1: continuous). */
static void start_run_at(struct run *r, const struct mm_tap *tap, void *tap_ctx, int duty_pm,
			 uint64_t start_ms, int64_t offset_ms)
{
	static const char *const fmts[NTP] = {fmt_page_fault_user, fmt_mmap_lock_start_locking,
					      fmt_mmap_lock_acquire_returned, fmt_mm_filemap_fault};
	static const char *const sys[NTP] = {"exceptions", "mmap_lock", "mmap_lock", "filemap"};
	struct mm_config cfg;

	mm_config_defaults(&cfg);
	snprintf(cfg.collectors, sizeof(cfg.collectors), "faults");
	cfg.interval_s = 2;
	cfg.duty_pm = duty_pm;
	memset(r, 0, sizeof(*r));
	r->h = mm_host_new(&cfg, rec_lookup, NULL, start_ms);
	mm_host_set_clock_offset(r->h, offset_ms);
	r->tep = tep_alloc();
	mm_host_add_sink(r->h, sink, r);
	mm_host_set_tap(r->h, tap, tap_ctx);
	unsigned stream[NTP];
	rec_add_streams(r->h, r->tep, NTP, fmts, sys, r->ev, stream, REC_SAMPLE_TYPE, ACQ,
			REC_SAMPLE_TYPE_CC);
	mm_host_start(r->h);
}

static void start_run(struct run *r, const struct mm_tap *tap, void *tap_ctx)
{
	start_run_at(r, tap, tap_ctx, -1, 0, 0);
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

/* Runs @live_fn on a new run @a with the recorder as its tap, into the new file @path (a
 * mkstemp() template). */
static void record_run(struct run *a, char *path, void (*live_fn)(struct run *))
{
	int fd = mkstemp(path);
	struct mm_recorder *rec = NULL;

	CHECK(fd >= 0);
	close(fd);
	CHECK(mm_recorder_open(path, NULL, &rec) == 0);
	start_run(a, &mm_recorder_tap, rec);
	live_fn(a);
	CHECK(mm_recorder_close(rec) == 0);
}

/* Replays the recording @path into a new run @b, collectors finished, its last window still
 * open; *@ret_n counts the chunks of @type. Returns the feeder's last_ms. */
static uint64_t replay_run(struct run *b, const char *path, uint32_t type, unsigned *ret_n)
{
	struct mm_rec_reader *rd = NULL;
	struct mm_rec_feeder f = {.host = NULL, .latest_ms = UINT64_MAX};
	struct mm_chunk c;
	char why[160];

	start_run(b, NULL, NULL);
	f.host = b->h;
	*ret_n = 0;
	CHECK(mm_rec_open(path, &rd) == 0);
	while (rd && mm_rec_next(rd, &c) > 0) {
		*ret_n += c.type == type;
		CHECK(mm_rec_feed(&f, &c, why, sizeof(why)) == 0);
	}
	mm_rec_close(rd);
	mm_host_finish(b->h);
	return f.last_ms;
}

/* Replay @b cut the windows of the live run @a, with the same counts. */
static void check_same_windows(const struct run *a, const struct run *b)
{
	CHECK_U64(b->nw, a->nw);
	for (unsigned i = 0; i < a->nw && i < b->nw; i++) {
		CHECK_U64(b->w[i].start_ms, a->w[i].start_ms);
		CHECK_U64(b->w[i].end_ms, a->w[i].end_ms);
		CHECK_U64(b->w[i].faults, a->w[i].faults);
		CHECK_U64(b->w[i].timed_out, a->w[i].timed_out);
		CHECK_U64(b->w[i].samples, a->w[i].samples);
	}
}

static void test_live_and_replay_cut_the_same_windows(void)
{
	char path[] = "/tmp/mmlockd-test-clock-XXXXXX";
	struct run a, b;
	unsigned records;

	record_run(&a, path, live);
	CHECK_U64(replay_run(&b, path, MM_CHUNK_RECORD, &records), 4500);
	mm_host_close_now(b.h, 5000);
	CHECK_U64(records, 4);
	CHECK_U64(a.nw, 3);
	check_same_windows(&a, &b);
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

/* A live run whose wall clock is set an hour forward at 2.6 s (seen by the loop then, reached by
 * the stream at the record of 2.7 s), and an hour back at 4.2 s, seen just before the stop and
 * reached by no record: every window lasts what it lasted, none spans a step (the last one closes
 * on the clock it started on), and the records count once. */
static void test_windows_follow_a_stepped_clock_to_the_stop(void)
{
	struct run r;

	start_run(&r, NULL, NULL);
	feed_fault(&r, 1, 100 * MS);
	feed_fault(&r, 2, 1500 * MS);
	CHECK(mm_host_observe_clock(r.h, HOUR_MS, 2600 * MS) == HOUR_MS);
	feed_fault(&r, 2, 2500 * MS);
	CHECK_U64(r.nw, 1);
	feed_fault(&r, 2, 2700 * MS);
	struct mm_snapshot *now = mm_host_snapshot(r.h, HOUR_MS + 2800);
	CHECK(now && now->started_ms == HOUR_MS && now->window_start_ms == HOUR_MS + 2600);
	mm_snapshot_unref(now);
	mm_host_advance(r.h, 4100 * MS);
	CHECK(mm_host_observe_clock(r.h, 0, 4200 * MS) == -HOUR_MS);
	mm_host_stop(r.h, 4300 * MS);

	static const uint64_t want[][2] = {{0, 2000},
					   {2000, 2600},
					   {HOUR_MS + 2600, HOUR_MS + 4000},
					   {HOUR_MS + 4000, HOUR_MS + 4300}};
	CHECK_U64(r.nw, 4);
	uint64_t faults = 0;
	for (unsigned i = 0; i < r.nw && i < 4; i++) {
		CHECK_U64(r.w[i].start_ms, want[i][0]);
		CHECK_U64(r.w[i].end_ms, want[i][1]);
		faults += r.w[i].faults;
	}
	CHECK_U64(faults, 4);
	free_run(&r);
}

/* The fault split in bursts (50%: 500 ms of each 1-second slot) on a clock an hour ahead, set
 * back at 3 s: the on-periods go on on the new clock (without their schedule moved back, none
 * would end for an hour), and each 2-second window, the ones on either side of the step and the
 * one it cut, observed the on-time of its slots. */
static void test_the_bursts_follow_a_step_back(void)
{
	struct run r;

	start_run_at(&r, NULL, NULL, 500, HOUR_MS, HOUR_MS);
	/* Each fault also counted as the totals collector would (a window without an exact count
	 * shows no estimate). */
	for (uint64_t t = 20; t < 9000; t += 20) {
		if (t == 3000)
			CHECK(mm_host_observe_clock(r.h, 0, 3000 * MS) == -HOUR_MS);
		feed_fault(&r, 3, t * MS);
		mm_host_proc(r.h, 10)->minflt++;
	}
	mm_host_advance(r.h, 9100 * MS);

	static const uint64_t want[][3] = {{HOUR_MS, HOUR_MS + 2000, 1000},
					   {HOUR_MS + 2000, HOUR_MS + 3000, 500},
					   {3000, 4000, 500},
					   {4000, 6000, 1000},
					   {6000, 8000, 1000}};
	CHECK_U64(r.nw, 5);
	for (unsigned i = 0; i < r.nw && i < 5; i++) {
		CHECK_U64(r.w[i].start_ms, want[i][0]);
		CHECK_U64(r.w[i].end_ms, want[i][1]);
		CHECK_U64(r.w[i].observed_ns, want[i][2] * MS);
	}
	free_run(&r);
}

/* A live run whose clock is set an hour forward and back (as in
 * test_windows_follow_a_stepped_clock_to_the_stop), ending at its last record, as replay ends. */
static void live_stepped(struct run *r)
{
	feed_fault(r, 1, 100 * MS);
	feed_fault(r, 2, 1500 * MS);
	mm_host_observe_clock(r->h, HOUR_MS, 2600 * MS);
	feed_fault(r, 2, 2500 * MS);
	feed_fault(r, 2, 2700 * MS);
	mm_host_advance(r->h, 4100 * MS);
	mm_host_observe_clock(r->h, 0, 4200 * MS);
	feed_fault(r, 2, 4300 * MS);
	mm_host_finish(r->h);
	mm_host_close_now(r->h, 4300);
}

/* Its recording replayed cuts the same windows at the steps, with the same counts, and ends at
 * the same time on the last clock. */
static void test_a_recording_replays_the_steps_of_its_clock(void)
{
	char path[] = "/tmp/mmlockd-test-clock-XXXXXX";
	struct run a, b;
	unsigned steps;

	record_run(&a, path, live_stepped);
	uint64_t last_ms = replay_run(&b, path, MM_CHUNK_CLOCK, &steps);
	mm_host_close_now(b.h, last_ms);
	CHECK_U64(steps, 2);
	CHECK_U64(last_ms, 4300);
	CHECK_U64(a.nw, 5);
	check_same_windows(&a, &b);
	CHECK_U64(a.w[1].end_ms, 2600);
	CHECK_U64(a.w[2].start_ms, HOUR_MS + 2600);
	CHECK_U64(a.w[4].start_ms, 4200);
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
	struct mm_rec_feeder f = {.host = r.h, .latest_ms = 86400000};
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
	RUN(test_a_forward_step_cuts_the_open_window_at_the_step);
	RUN(test_a_backward_step_starts_the_next_window_on_the_new_clock);
	RUN(test_jitter_below_a_second_is_no_step);
	RUN(test_a_step_on_a_window_end_cuts_nothing);
	RUN(test_a_second_pending_step_keeps_the_first_time);
	RUN(test_live_and_replay_cut_the_same_windows);
	RUN(test_windows_follow_a_stepped_clock_to_the_stop);
	RUN(test_a_recording_replays_the_steps_of_its_clock);
	RUN(test_the_bursts_follow_a_step_back);
	RUN(test_a_wild_time_stamp_is_refused_and_closes_nothing);
	RUN(test_an_impossible_chunk_size_is_refused_with_its_offset);
	RUN(test_a_truncated_chunk_is_refused);
	RUN(test_tally_of_a_run_without_processes_prints_its_header);
	RUN(test_tally_sums_a_process_over_windows);
	return check_summary();
}
