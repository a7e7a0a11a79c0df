/*
 * The contention collector driven through the host with hand-built records (callchains included,
 * laid out as the sampler asks the kernel for them): what each begin/end sequence must count, how
 * callers, types and locks are named, and the sequences that must not be timed (unmatched ends,
 * lost records in between, a thread that exits mid-wait). Every expected number is worked out by
 * hand in the test's comments.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "config.h"
#include "formats.h"
#include "host.h"
#include "records.h"
#include "symbols.h"

#define CC_SAMPLE_TYPE                                                                             \
	(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_CALLCHAIN |            \
	 PERF_SAMPLE_RAW)

enum { BEGIN, END, START, ACQ, FAULT, REL, NTP };

/* Flags of lock:contention_begin. */
#define SPIN   (1u << 0)
#define READ   (1u << 1)
#define WRITE  (1u << 2)
#define RT     (1u << 3)
#define PERCPU (1u << 4)
#define MUTEX  (1u << 5)

/* A kernel text layout: ordinary functions, then lock and scheduler functions. */
#define F_MPROTECT  0xffffffff81000000ull /* do_mprotect_pkey */
#define F_MMAP	    0xffffffff81001000ull /* vm_mmap_pgoff */
#define F_LOCK_MM   0xffffffff81002000ull /* lock_mm_and_find_vma */
#define F_PIPE	    0xffffffff81003000ull /* anon_pipe_write */
#define F_LRUVEC    0xffffffff81004000ull /* folio_lruvec_lock_irqsave */
#define F_SYSCALL   0xffffffff81005000ull /* do_syscall_64 */
#define F_IRQEXIT   0xffffffff81006000ull /* irqentry_exit_to_user_mode */
#define F_DOWN_WS   0xffffffff82200000ull /* rwsem_down_write_slowpath */
#define F_DOWN_W    0xffffffff82200400ull /* down_write_killable */
#define F_DOWN_RS   0xffffffff82200800ull /* rwsem_down_read_slowpath */
#define F_DOWN_R    0xffffffff82200c00ull /* down_read_killable */
#define F_MUTEX	    0xffffffff82201000ull /* __mutex_lock.constprop.0 */
#define F_SCHEDULE  0xffffffff82201400ull /* schedule */
#define F_SCHED	    0xffffffff82201800ull /* __schedule */
#define F_QSPIN	    0xffffffff82202000ull /* __pv_queued_spin_lock_slowpath */
#define F_RAW_SPIN  0xffffffff82202400ull /* _raw_spin_lock */
#define F_TRACEITER 0xffffffff82202800ull /* __traceiter_contention_begin */
#define F_BPFTRACE  0xffffffff82202c00ull /* __bpf_trace_contention_begin */
#define F_BPFPROG   0xffffffffa0001000ull /* a BPF program's JIT text: no symbol */
#define D_TASKLIST  0xffffffff83000000ull /* tasklist_lock, a static lock */
#define D_NEXT	    0xffffffff83000040ull /* the next data symbol */
#define MM_A	    0xffff888100aa0000ull
#define MM_B	    0xffff888100bb0000ull
#define MMAP_OFF    0x70 /* offsetof(struct mm_struct, mmap_lock) in these tests */
#define HEAP_LOCK   0xffff888123456780ull

static int lookup(void *ctx, uint32_t pid, struct mm_proc_ident *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->start_ms = 1000 + pid;
	snprintf(ret->comm, sizeof(ret->comm), "p%u", pid);
	return 0;
}

/* The events of enum { BEGIN, ... }: formats and systems. */
static const char *const tp_fmts[NTP] = {
	fmt_contention_begin,		fmt_contention_end,  fmt_mmap_lock_start_locking,
	fmt_mmap_lock_acquire_returned, fmt_page_fault_user, fmt_mmap_lock_released};
static const char *const tp_sys[NTP] = {"lock",	     "lock",	   "mmap_lock",
					"mmap_lock", "exceptions", "mmap_lock"};

static void setup_with(struct rec_fx *f, bool symbols)
{
	static const struct rec_sym syms[] = {
		{F_MPROTECT, 'T', "do_mprotect_pkey"},
		{F_MMAP, 'T', "vm_mmap_pgoff"},
		{F_LOCK_MM, 'T', "lock_mm_and_find_vma"},
		{F_PIPE, 't', "anon_pipe_write"},
		{F_LRUVEC, 'T', "folio_lruvec_lock_irqsave"},
		{F_SYSCALL, 'T', "do_syscall_64"},
		{F_IRQEXIT, 'T', "irqentry_exit_to_user_mode"},
		{F_DOWN_WS, 't', "rwsem_down_write_slowpath"},
		{F_DOWN_W, 'T', "down_write_killable"},
		{F_DOWN_RS, 't', "rwsem_down_read_slowpath"},
		{F_DOWN_R, 'T', "down_read_killable"},
		{F_MUTEX, 't', "__mutex_lock.constprop.0"},
		{F_SCHEDULE, 'T', "schedule"},
		{F_SCHED, 't', "__schedule"},
		{F_QSPIN, 'T', "__pv_queued_spin_lock_slowpath"},
		{F_RAW_SPIN, 'T', "_raw_spin_lock"},
		{F_TRACEITER, 'T', "__traceiter_contention_begin"},
		{F_BPFTRACE, 't', "__bpf_trace_contention_begin"},
		{D_TASKLIST, 'D', "tasklist_lock"},
		{D_NEXT, 'd', "next_data"},
	};

	/* With mmaplock, processes that fault have counters and so an identity in snapshots. */
	rec_fx_new(f, "contention,mmaplock", lookup, syms,
		   symbols ? sizeof(syms) / sizeof(syms[0]) : 0);
	f->task = rec_add_streams(f->h, f->tep, NTP, tp_fmts, tp_sys, f->ev, f->stream,
				  REC_SAMPLE_TYPE, BEGIN, CC_SAMPLE_TYPE);
	mm_host_start(f->h);
}

static void setup(struct rec_fx *f)
{
	setup_with(f, true);
}

/* The contention collector fed by an in-kernel source (mm_host_waits), with mmaplock on perf. */
static void setup_fed(struct rec_fx *f)
{
	static const char *const fmts[] = {fmt_page_fault_user};
	static const char *const sys[] = {"exceptions"};
	static const struct rec_sym syms[] = {
		{F_MPROTECT, 'T', "do_mprotect_pkey"},
		{F_DOWN_WS, 't', "rwsem_down_write_slowpath"},
		{F_DOWN_W, 'T', "down_write_killable"},
		{F_QSPIN, 'T', "__pv_queued_spin_lock_slowpath"},
		{F_RAW_SPIN, 'T', "_raw_spin_lock"},
		{F_TRACEITER, 'T', "__traceiter_contention_begin"},
		{F_BPFTRACE, 't', "__bpf_trace_contention_begin"},
	};
	rec_fx_new(f, "contention", lookup, syms, sizeof(syms) / sizeof(syms[0]));
	mm_host_set_source(f->h, "contention", "bpf", "");
	f->task = rec_add_streams(f->h, f->tep, 1, fmts, sys, f->ev, f->stream, REC_SAMPLE_TYPE, -1,
				  0);
	mm_host_start(f->h);
}

/* A contention_begin sample with a kernel callchain: PERF_CONTEXT_KERNEL then @ips. */
static void begin_cc(struct rec_fx *f, uint32_t pid, uint32_t tid, uint32_t cpu, uint64_t t,
		     uint64_t addr, unsigned flags, const uint64_t *ips, unsigned nips)
{
	struct tep_event *ev = f->ev[BEGIN];
	struct rec r;
	uint8_t raw[64] = {0};
	uint16_t type = (uint16_t)ev->id;
	memcpy(raw, &type, 2);
	memcpy(raw + 4, &tid, 4);
	struct tep_format_field *fa = tep_find_field(ev, "lock_addr"),
				*ff = tep_find_field(ev, "flags");
	memcpy(raw + fa->offset, &addr, 8);
	memcpy(raw + ff->offset, &flags, 4);
	unsigned raw_size = (unsigned)(ff->offset + ff->size);

	memset(&r, 0, sizeof(r));
	uint8_t *p = (uint8_t *)(&r.hdr + 1);
	uint64_t v = pid | ((uint64_t)tid << 32);
	memcpy(p, &v, 8);
	memcpy(p + 8, &t, 8);
	memcpy(p + 16, &cpu, 4);
	uint64_t nr = nips + 1, kernel = PERF_CONTEXT_KERNEL;
	memcpy(p + 24, &nr, 8);
	memcpy(p + 32, &kernel, 8);
	memcpy(p + 40, ips, nips * 8);
	uint8_t *q = p + 40 + nips * 8;
	uint32_t size = (raw_size + 4 + 7) / 8 * 8 - 4;
	memcpy(q, &size, 4);
	memcpy(q + 4, raw, raw_size);
	r.hdr.type = PERF_RECORD_SAMPLE;
	r.hdr.size = (uint16_t)(sizeof(r.hdr) + (size_t)(q + 4 + size - p));
	mm_host_record(f->h, f->stream[BEGIN], &r.hdr);
}

static void end_on(struct rec_fx *f, uint32_t pid, uint32_t tid, uint32_t cpu, uint64_t t,
		   uint64_t addr)
{
	struct rec r;
	struct rec_field v[] = {{"lock_addr", addr}, {"ret", 0}};
	rec_sample(&r, f->ev[END], pid, tid, t, v, 2);
	memcpy((uint8_t *)(&r.hdr + 1) + 16, &cpu, 4);
	mm_host_record(f->h, f->stream[END], &r.hdr);
}

static void end(struct rec_fx *f, uint32_t pid, uint32_t tid, uint64_t t, uint64_t addr)
{
	end_on(f, pid, tid, 0, t, addr);
}

/* Callchains as the kernel records them: the lock's slow path first. */
static const uint64_t cc_mprotect[] = {F_DOWN_WS + 0x37f, F_DOWN_W + 0x5c, F_MPROTECT + 0xc7,
				       F_SYSCALL + 0x71};
static const uint64_t cc_mmap[] = {F_DOWN_WS + 0x37f, F_DOWN_W + 0x5c, F_MMAP + 0xe0,
				   F_SYSCALL + 0x71};
static const uint64_t cc_fault[] = {F_DOWN_RS + 0x335, F_DOWN_R + 0x44, F_LOCK_MM + 0x9e};
static const uint64_t cc_pipe[] = {F_MUTEX + 0x1a0, F_PIPE + 0x43, F_SYSCALL + 0x71};
static const uint64_t cc_lru[] = {F_QSPIN + 0x10e, F_RAW_SPIN + 0x3b, F_LRUVEC + 0x5f};
static const uint64_t cc_sched[] = {F_QSPIN + 0x10e, F_RAW_SPIN + 0x3b, F_SCHED + 0xad,
				    F_SCHEDULE + 0x23, F_IRQEXIT + 0x110};
#define N(a) (unsigned)(sizeof(a) / sizeof((a)[0]))

static void begin(struct rec_fx *f, uint32_t pid, uint32_t tid, uint64_t t, uint64_t addr,
		  unsigned flags, const uint64_t *ips, unsigned nips)
{
	begin_cc(f, pid, tid, 0, t, addr, flags, ips, nips);
}

static void start_locking(struct rec_fx *f, uint32_t pid, uint32_t tid, uint64_t t, uint64_t mm,
			  int write)
{
	struct rec r;
	struct rec_field v[] = {{"mm", mm}, {"write", (uint64_t)write}};
	mm_host_record(f->h, f->stream[START], rec_sample(&r, f->ev[START], pid, tid, t, v, 2));
}

static void acquired(struct rec_fx *f, uint32_t pid, uint32_t tid, uint64_t t, uint64_t mm,
		     int write)
{
	struct rec r;
	struct rec_field v[] = {{"mm", mm}, {"write", (uint64_t)write}, {"success", 1}};
	mm_host_record(f->h, f->stream[ACQ], rec_sample(&r, f->ev[ACQ], pid, tid, t, v, 3));
}

static void fault(struct rec_fx *f, uint32_t pid, uint32_t tid, uint64_t t)
{
	struct rec r;
	mm_host_record(f->h, f->stream[FAULT], rec_sample(&r, f->ev[FAULT], pid, tid, t, NULL, 0));
}

static uint64_t global(const struct mm_snapshot *s, const char *name)
{
	for (size_t i = 0; i < s->nglobals; i++)
		if (!strcmp(s->globals[i].family, "contention_unmatched") &&
		    !strcmp(s->globals[i].name, name))
			return s->globals[i].total;
	return UINT64_MAX;
}

/* The row of @pid with @caller (and @lock unless NULL), or NULL. */
static const struct mm_snap_lock *row(const struct mm_snapshot *s, int32_t pid, const char *caller,
				      const char *lock)
{
	for (size_t i = 0; i < s->nlocks; i++)
		if (s->locks[i].pid == pid && !strcmp(s->locks[i].caller, caller) &&
		    (!lock || !strcmp(s->locks[i].lock, lock)))
			return &s->locks[i];
	return NULL;
}

static uint64_t total_contended(const struct mm_snapshot *s)
{
	uint64_t n = 0;
	for (size_t i = 0; i < s->nlocks; i++)
		n += s->locks[i].contended;
	return n;
}

static void test_rwsem_waits_are_keyed_by_first_frame_outside_lock_functions(void)
{
	struct rec_fx f;
	setup(&f);
	/* Two mprotect waits of 4000 and 1000 ns, one mmap wait of 500 ns, on one heap rwsem. */
	fault(&f, 10, 11, 900);
	begin(&f, 10, 11, 1000, HEAP_LOCK, WRITE, cc_mprotect, N(cc_mprotect));
	end(&f, 10, 11, 5000, HEAP_LOCK);
	begin(&f, 10, 12, 6000, HEAP_LOCK, WRITE, cc_mprotect, N(cc_mprotect));
	end(&f, 10, 12, 7000, HEAP_LOCK);
	begin(&f, 10, 11, 8000, HEAP_LOCK, WRITE, cc_mmap, N(cc_mmap));
	end(&f, 10, 11, 8500, HEAP_LOCK);
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	CHECK_U64(s->nlocks, 2);
	const struct mm_snap_lock *r = row(s, 10, "do_mprotect_pkey+0xc7", NULL);
	CHECK(r != NULL);
	if (r) {
		CHECK_STR(r->type, "rwsem:W");
		CHECK_STR(r->lock, "0xffff888123456780");
		CHECK_STR(r->comm, "p10");
		CHECK_U64(r->start_ms, 1010);
		CHECK_U64(r->contended, 2);
		CHECK_U64(r->wait_ns, 5000);
		CHECK_U64(r->max_ns, 4000);
		CHECK_U64(r->min_ns, 1000);
		CHECK_U64(r->hist.bucket[11], 1); /* 4000 in [2048, 4096) */
		CHECK_U64(r->hist.bucket[9], 1);  /* 1000 in [512, 1024) */
		CHECK(r->lock_pid == -1);
	}
	r = row(s, 10, "vm_mmap_pgoff+0xe0", NULL);
	CHECK(r && r->contended == 1 && r->wait_ns == 500);
	/* A process without per-process counters (a kernel thread) has no known identity. */
	begin(&f, 77, 77, 9000, HEAP_LOCK, WRITE, cc_mmap, N(cc_mmap));
	end(&f, 77, 77, 9100, HEAP_LOCK);
	mm_snapshot_unref(s);
	s = mm_host_snapshot(f.h, 2);
	r = row(s, 77, "vm_mmap_pgoff+0xe0", NULL);
	CHECK(r && r->comm[0] == '\0' && r->start_ms == 0);
	/* Longest total wait first. */
	CHECK_STR(s->locks[0].caller, "do_mprotect_pkey+0xc7");
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

static void test_spinlock_caller_skips_lock_text_and_scheduler(void)
{
	struct rec_fx f;
	setup(&f);
	begin(&f, 10, 11, 100, HEAP_LOCK, SPIN, cc_lru, N(cc_lru));
	end(&f, 10, 11, 130, HEAP_LOCK);
	begin(&f, 10, 11, 200, HEAP_LOCK + 8, SPIN, cc_sched, N(cc_sched));
	end(&f, 10, 11, 210, HEAP_LOCK + 8);
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	const struct mm_snap_lock *r = row(s, 10, "folio_lruvec_lock_irqsave+0x5f", NULL);
	CHECK(r && r->wait_ns == 30 && !strcmp(r->type, "spinlock"));
	/* __schedule and schedule are scheduler functions: the caller is the irq exit. */
	r = row(s, 10, "irqentry_exit_to_user_mode+0x110", NULL);
	CHECK(r && r->wait_ns == 10);
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

/* With a BPF program on lock:contention_begin beside perf's probe, the kernel calls the probes
 * through the tracepoint's iterator, which then heads every chain (seen on 6.18). */
static void test_caller_skips_the_tracepoint_iterator_of_a_second_probe(void)
{
	static const uint64_t cc[] = {F_TRACEITER + 0x2f, F_DOWN_WS + 0x37f, F_DOWN_W + 0x5c,
				      F_MPROTECT + 0xc7, F_SYSCALL + 0x71};
	struct rec_fx f;
	setup(&f);
	begin(&f, 10, 11, 1000, HEAP_LOCK, WRITE, cc, N(cc));
	end(&f, 10, 11, 3000, HEAP_LOCK);
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	const struct mm_snap_lock *r = row(s, 10, "do_mprotect_pkey+0xc7", NULL);
	CHECK(r && r->wait_ns == 2000);
	CHECK(row(s, 10, "__traceiter_contention_begin+0x2f", NULL) == NULL);
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

/* Waits the BPF source paired and summed: its stack begins with the program (no symbol), the
 * tracepoint's glue and iterator, none of them counted among the eight frames; deliveries of
 * one row add up (counts and histogram grow, extremes are the window's so far). */
static void test_fed_waits_are_keyed_and_summed_as_records(void)
{
	const uint64_t ips[] = {F_BPFPROG + 0x40,  F_BPFTRACE + 0x20, F_TRACEITER + 0x2f,
				F_DOWN_WS + 0x37f, F_DOWN_W + 0x5c,   F_MPROTECT + 0xc7,
				F_SYSCALL + 0x71};
	uint64_t hist[MM_HIST_BUCKETS] = {0};
	struct rec_fx f;
	setup_fed(&f);
	hist[11] = hist[9] = 1;
	struct mm_lock_wait w = {.pid = 10,
				 .flags = WRITE,
				 .mmap = true,
				 .lock = 10 + 1,
				 .ips = ips,
				 .nr_ips = N(ips),
				 .contended = 2,
				 .wait_ns = 5000,
				 .max_ns = 4000,
				 .min_ns = 1000,
				 .hist = hist};
	mm_host_waits(f.h, "contention", &w);
	hist[11] = hist[9] = 0;
	hist[8] = 1;
	w.contended = 1;
	w.wait_ns = 500;
	w.min_ns = 500;
	mm_host_waits(f.h, "contention", &w);
	/* Seven lock frames after the tracing ones, the caller eighth. */
	uint64_t deep[11] = {F_BPFPROG, F_BPFTRACE, F_TRACEITER};
	for (int i = 3; i < 10; i++)
		deep[i] = F_QSPIN + 0x10e;
	deep[10] = F_MPROTECT + 0x10;
	struct mm_lock_wait d = {.pid = 10,
				 .flags = SPIN,
				 .lock = HEAP_LOCK,
				 .ips = deep,
				 .nr_ips = N(deep),
				 .contended = 1,
				 .wait_ns = 70,
				 .max_ns = 70,
				 .min_ns = 70,
				 .hist = hist};
	mm_host_waits(f.h, "contention", &d);

	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	const struct mm_snap_lock *r = row(s, 10, "do_mprotect_pkey+0xc7", "mmap_lock");
	CHECK(r != NULL);
	if (r) {
		CHECK_STR(r->type, "rwsem:W");
		CHECK(r->lock_pid == 10);
		CHECK_U64(r->contended, 3);
		CHECK_U64(r->wait_ns, 5500);
		CHECK_U64(r->max_ns, 4000);
		CHECK_U64(r->min_ns, 500);
		CHECK_U64(r->hist.bucket[11] + r->hist.bucket[9] + r->hist.bucket[8], 3);
	}
	r = row(s, 10, "do_mprotect_pkey+0x10", "0xffff888123456780");
	CHECK(r && r->contended == 1 && !strcmp(r->type, "spinlock"));
	CHECK_U64(total_contended(s), 4);
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

static void test_caller_is_unknown_past_eight_frames_or_without_symbols(void)
{
	struct rec_fx f;
	/* Nine frames: eight lock functions, then the caller, which perf lock never looks at. */
	uint64_t deep[9];
	for (int i = 0; i < 8; i++)
		deep[i] = F_RAW_SPIN + 0x10 + (uint64_t)i;
	deep[8] = F_LRUVEC + 0x5f;
	setup(&f);
	begin(&f, 10, 11, 100, HEAP_LOCK, SPIN, deep, 9);
	end(&f, 10, 11, 150, HEAP_LOCK);
	begin(&f, 10, 11, 200, HEAP_LOCK, SPIN, deep + 1, 8);
	end(&f, 10, 11, 210, HEAP_LOCK);
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	CHECK(row(s, 10, "unknown", NULL) && row(s, 10, "unknown", NULL)->wait_ns == 50);
	CHECK(row(s, 10, "folio_lruvec_lock_irqsave+0x5f", NULL) != NULL);
	mm_snapshot_unref(s);
	rec_fx_free(&f);

	setup_with(&f, false);
	begin(&f, 10, 11, 100, HEAP_LOCK, SPIN, cc_lru, N(cc_lru));
	end(&f, 10, 11, 150, HEAP_LOCK);
	s = mm_host_snapshot(f.h, 1);
	CHECK(row(s, 10, "unknown", "0xffff888123456780") != NULL);
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

static void test_types_follow_perf_lock_names(void)
{
	static const struct {
		unsigned flags;
		const char *type;
	} cases[] = {
		{SPIN, "spinlock"},
		{SPIN | READ, "rwlock:R"},
		{SPIN | WRITE, "rwlock:W"},
		{READ, "rwsem:R"},
		{WRITE, "rwsem:W"},
		{RT, "rtmutex"},
		{RT | READ, "rwlock-rt:R"},
		{RT | WRITE, "rwlock-rt:W"},
		{PERCPU | READ, "pcpu-sem:R"},
		{PERCPU | WRITE, "pcpu-sem:W"},
		{MUTEX, "mutex"},
		{MUTEX | SPIN, "mutex"},
		{0, "semaphore"},
		{PERCPU, "unknown"},
	};
	struct rec_fx f;
	setup(&f);
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* One process per case so the rows stay apart. */
		begin(&f, 100 + i, 100 + i, 10 * i, HEAP_LOCK, cases[i].flags, cc_lru, N(cc_lru));
		end(&f, 100 + i, 100 + i, 10 * i + 5, HEAP_LOCK);
	}
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct mm_snap_lock *r =
			row(s, (int32_t)(100 + i), "folio_lruvec_lock_irqsave+0x5f", NULL);
		CHECK(r != NULL);
		if (r)
			CHECK_STR(r->type, cases[i].type);
	}
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

static void test_mutex_spin_then_sleep_counts_once_from_the_first_begin(void)
{
	struct rec_fx f;
	setup(&f);
	/* Optimistic spin from 1000, sleeps from 1200, gets the mutex at 9000: one wait of 8000. */
	begin(&f, 10, 11, 1000, HEAP_LOCK, MUTEX | SPIN, cc_pipe, N(cc_pipe));
	begin(&f, 10, 11, 1200, HEAP_LOCK, MUTEX, cc_pipe, N(cc_pipe));
	end(&f, 10, 11, 9000, HEAP_LOCK);
	/* A spin that succeeds: one wait of 300. */
	begin(&f, 10, 12, 10000, HEAP_LOCK, MUTEX | SPIN, cc_pipe, N(cc_pipe));
	end(&f, 10, 12, 10300, HEAP_LOCK);
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	const struct mm_snap_lock *r = row(s, 10, "anon_pipe_write+0x43", NULL);
	CHECK(r != NULL);
	if (r) {
		CHECK_STR(r->type, "mutex");
		CHECK_U64(r->contended, 2);
		CHECK_U64(r->wait_ns, 8300);
		CHECK_U64(r->max_ns, 8000);
	}
	CHECK_U64(global(s, "begin_without_end"), 0);
	CHECK_U64(global(s, "end_without_begin"), 0);
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

static void test_waits_on_different_locks_nest(void)
{
	struct rec_fx f;
	setup(&f);
	/* The rwsem wait (1000..9000) contends on its wait_lock (1100..1150) and, in an
	 * interrupt, on another spinlock (2000..2010): three waits. */
	begin(&f, 10, 11, 1000, HEAP_LOCK, WRITE, cc_mprotect, N(cc_mprotect));
	begin(&f, 10, 11, 1100, HEAP_LOCK + 8, SPIN, cc_lru, N(cc_lru));
	end(&f, 10, 11, 1150, HEAP_LOCK + 8);
	begin(&f, 10, 11, 2000, HEAP_LOCK + 64, SPIN, cc_sched, N(cc_sched));
	end(&f, 10, 11, 2010, HEAP_LOCK + 64);
	end(&f, 10, 11, 9000, HEAP_LOCK);
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	CHECK_U64(total_contended(s), 3);
	CHECK(row(s, 10, "do_mprotect_pkey+0xc7", NULL) &&
	      row(s, 10, "do_mprotect_pkey+0xc7", NULL)->wait_ns == 8000);
	CHECK(row(s, 10, "folio_lruvec_lock_irqsave+0x5f", NULL) &&
	      row(s, 10, "folio_lruvec_lock_irqsave+0x5f", NULL)->wait_ns == 50);
	CHECK(row(s, 10, "irqentry_exit_to_user_mode+0x110", NULL) &&
	      row(s, 10, "irqentry_exit_to_user_mode+0x110", NULL)->wait_ns == 10);
	CHECK_U64(global(s, "begin_without_end"), 0);
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

static void test_unmatched_ends_are_counted_not_timed(void)
{
	struct rec_fx f;
	setup(&f);
	end(&f, 10, 11, 500, HEAP_LOCK); /* began before mmlockd started */
	begin(&f, 10, 11, 600, HEAP_LOCK, SPIN, cc_lru, N(cc_lru));
	end(&f, 10, 12, 700, HEAP_LOCK);     /* another thread's end */
	end(&f, 10, 11, 800, HEAP_LOCK + 8); /* another lock's end */
	end(&f, 10, 11, 900, HEAP_LOCK);
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	CHECK_U64(global(s, "end_without_begin"), 3);
	CHECK_U64(total_contended(s), 1);
	CHECK(row(s, 10, "folio_lruvec_lock_irqsave+0x5f", NULL) &&
	      row(s, 10, "folio_lruvec_lock_irqsave+0x5f", NULL)->wait_ns == 300);
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

static void test_lost_records_in_between_are_not_paired_across(void)
{
	struct rec_fx f;
	struct rec r;
	setup(&f);
	/* A spinlock wait whose end was lost: the thread's next begin on the same lock starts a
	 * new wait (a spinning thread cannot begin twice), and the first is dropped. */
	begin(&f, 10, 11, 1000, HEAP_LOCK, SPIN, cc_lru, N(cc_lru));
	mm_host_record(f.h, f.stream[END], rec_lost(&r, 3, 1500));
	begin(&f, 10, 11, 50000, HEAP_LOCK, SPIN, cc_lru, N(cc_lru));
	end(&f, 10, 11, 50040, HEAP_LOCK);
	/* An rwsem wait whose end was lost, then a wait for another rwsem: a thread sleeps on one
	 * lock at a time, so the first is dropped. */
	begin(&f, 10, 12, 2000, HEAP_LOCK + 128, READ, cc_fault, N(cc_fault));
	mm_host_record(f.h, f.stream[END], rec_lost(&r, 1, 2500));
	begin(&f, 10, 12, 60000, HEAP_LOCK + 256, WRITE, cc_mprotect, N(cc_mprotect));
	end(&f, 10, 12, 61000, HEAP_LOCK + 256);
	/* A begin that was lost: its end is not a wait. */
	mm_host_record(f.h, f.stream[BEGIN], rec_lost(&r, 1, 70000));
	end(&f, 10, 13, 70100, HEAP_LOCK);
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	CHECK_U64(global(s, "begin_without_end"), 2);
	CHECK_U64(global(s, "end_without_begin"), 1);
	CHECK_U64(total_contended(s), 2);
	CHECK(row(s, 10, "folio_lruvec_lock_irqsave+0x5f", NULL) &&
	      row(s, 10, "folio_lruvec_lock_irqsave+0x5f", NULL)->wait_ns == 40);
	CHECK(row(s, 10, "do_mprotect_pkey+0xc7", NULL) &&
	      row(s, 10, "do_mprotect_pkey+0xc7", NULL)->wait_ns == 1000);
	CHECK(row(s, 10, "lock_mm_and_find_vma+0x9e", NULL) == NULL);
	/* The host counted the lost records against their streams. */
	CHECK_U64(s->events[f.stream[END]].lost, 4);
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

static void test_a_thread_that_exits_mid_wait_is_forgotten(void)
{
	struct rec_fx f;
	struct rec r;
	setup(&f);
	begin(&f, 10, 11, 1000, HEAP_LOCK, WRITE, cc_mprotect, N(cc_mprotect));
	mm_host_record(f.h, f.task, rec_task(&r, PERF_RECORD_EXIT, 10, 11, 1500));
	end(&f, 10, 11, 2000, HEAP_LOCK); /* tid 11 reused by a new thread */
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	CHECK_U64(global(s, "begin_without_end"), 1);
	CHECK_U64(global(s, "end_without_begin"), 1);
	CHECK_U64(s->nlocks, 0);
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

static void test_idle_task_waits_pair_per_cpu(void)
{
	struct rec_fx f;
	setup(&f);
	/* pid/tid 0 is every CPU's idle task: interleaved waits on two CPUs stay apart. */
	begin_cc(&f, 0, 0, 0, 100, HEAP_LOCK, SPIN, cc_lru, N(cc_lru));
	begin_cc(&f, 0, 0, 1, 110, HEAP_LOCK, SPIN, cc_lru, N(cc_lru));
	end_on(&f, 0, 0, 0, 150, HEAP_LOCK);
	end_on(&f, 0, 0, 1, 200, HEAP_LOCK);
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	const struct mm_snap_lock *r = row(s, 0, "folio_lruvec_lock_irqsave+0x5f", NULL);
	CHECK(r != NULL);
	if (r) {
		CHECK_U64(r->contended, 2);
		CHECK_U64(r->wait_ns, 50 + 90);
		CHECK_STR(r->comm, "swapper");
	}
	CHECK_U64(global(s, "begin_without_end"), 0);
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

static void test_mmap_lock_is_named_with_its_owner(void)
{
	struct rec_fx f;
	setup(&f);
	/* Process 10 owns MM_A (it writes it), process 20 owns MM_B. */
	acquired(&f, 10, 10, 10, MM_A, 1);
	acquired(&f, 20, 20, 20, MM_B, 1);
	/* Process 30 reads MM_A remotely (/proc/10/maps) after that: 10 stays the owner. */
	acquired(&f, 30, 30, 30, MM_A, 0);
	/* A fault of 10 waits for its mmap_lock: learnt from start_locking. */
	start_locking(&f, 10, 11, 100, MM_A, 0);
	begin(&f, 10, 11, 110, MM_A + MMAP_OFF, READ, cc_fault, N(cc_fault));
	end(&f, 10, 11, 400, MM_A + MMAP_OFF);
	acquired(&f, 10, 11, 401, MM_A, 0);
	/* Process 20's own writer contends on MM_B + offset without its start_locking in view
	 * (the offset is known now); process 30 contends on MM_A's lock remotely. */
	begin(&f, 20, 21, 500, MM_B + MMAP_OFF, WRITE, cc_mmap, N(cc_mmap));
	end(&f, 20, 21, 600, MM_B + MMAP_OFF);
	begin(&f, 30, 31, 700, MM_A + MMAP_OFF, READ, cc_fault, N(cc_fault));
	end(&f, 30, 31, 710, MM_A + MMAP_OFF);
	/* The rwsem's wait_lock is not the mmap_lock. */
	begin(&f, 20, 21, 800, MM_B + MMAP_OFF + 8, SPIN, cc_lru, N(cc_lru));
	end(&f, 20, 21, 805, MM_B + MMAP_OFF + 8);
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	const struct mm_snap_lock *r = row(s, 10, "lock_mm_and_find_vma+0x9e", "mmap_lock");
	CHECK(r && r->lock_pid == 10 && r->wait_ns == 290);
	r = row(s, 20, "vm_mmap_pgoff+0xe0", "mmap_lock");
	CHECK(r && r->lock_pid == 20 && r->wait_ns == 100);
	r = row(s, 30, "lock_mm_and_find_vma+0x9e", "mmap_lock");
	CHECK(r && r->lock_pid == 10);
	r = row(s, 20, "folio_lruvec_lock_irqsave+0x5f", NULL);
	CHECK(r && !strcmp(r->lock, "0xffff888100bb0078") && r->lock_pid == -1);
	CHECK_U64(global(s, "mmap_lock_offset_mismatch"), 0);
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

/* Holders (plugins/bpf/holder.h) on the perf path: the acquisitions carry callchains, the begins
 * none (their caller is "unknown"). */
static void setup_holders(struct rec_fx *f)
{
	static const struct rec_sym syms[] = {
		{F_MPROTECT, 'T', "do_mprotect_pkey"},
		{F_LOCK_MM, 'T', "lock_mm_and_find_vma"},
		{F_SYSCALL, 'T', "do_syscall_64"},
	};
	rec_fx_new(f, "contention", lookup, syms, sizeof(syms) / sizeof(syms[0]));
	f->task = rec_add_streams(f->h, f->tep, NTP, tp_fmts, tp_sys, f->ev, f->stream,
				  REC_SAMPLE_TYPE, ACQ, REC_SAMPLE_TYPE_CC);
	mm_host_start(f->h);
}

static const uint64_t cc_acq_mprotect[] = {F_MPROTECT + 0x40, F_SYSCALL + 0x71};
static const uint64_t cc_acq_fault[] = {F_LOCK_MM + 0x20};

static void acq_cc(struct rec_fx *f, uint32_t pid, uint32_t tid, uint64_t t, int write,
		   const uint64_t *ips, unsigned nips)
{
	struct rec r;
	struct rec_field v[] = {{"mm", MM_A}, {"write", (uint64_t)write}, {"success", 1}};
	mm_host_record(f->h, f->stream[ACQ],
		       rec_sample_cc(&r, f->ev[ACQ], pid, tid, t, ips, nips, v, 3));
}

static void rel(struct rec_fx *f, uint32_t pid, uint32_t tid, uint64_t t, int write)
{
	struct rec r;
	struct rec_field v[] = {{"mm", MM_A}, {"write", (uint64_t)write}};
	mm_host_record(f->h, f->stream[REL], rec_sample(&r, f->ev[REL], pid, tid, t, v, 2));
}

/* A wait of @tid of process 10 on MM_A's mmap_lock from @t to @t + @len. */
static void mmap_wait(struct rec_fx *f, uint32_t tid, uint64_t t, uint64_t len, int write)
{
	struct rec r;
	start_locking(f, 10, tid, t, MM_A, write);
	struct rec_field v[] = {{"lock_addr", MM_A + MMAP_OFF}, {"flags", write ? WRITE : READ}};
	mm_host_record(f->h, f->stream[BEGIN], rec_sample(&r, f->ev[BEGIN], 10, tid, t + 1, v, 2));
	end(f, 10, tid, t + 1 + len, MM_A + MMAP_OFF);
}

static const struct mm_snap_lock *holder_row(const struct mm_snapshot *s, const char *mode,
					     int32_t tid)
{
	for (size_t i = 0; i < s->nlocks; i++)
		if (!strcmp(s->locks[i].holder_mode, mode) && s->locks[i].holder_tid == tid)
			return &s->locks[i];
	return NULL;
}

static void test_mmap_lock_waits_name_their_holder(void)
{
	struct rec_fx f;
	setup_holders(&f);
	/* Thread 12 takes MM_A's lock for write in mprotect; a fault of 11 waits 100 ns. */
	acq_cc(&f, 10, 12, 100, 1, cc_acq_mprotect, N(cc_acq_mprotect));
	mmap_wait(&f, 11, 110, 100, 0);
	rel(&f, 10, 12, 300, 1);
	acq_cc(&f, 10, 11, 301, 0, cc_acq_fault, N(cc_acq_fault));
	/* 12's next mprotect waits 50 ns behind the fault's read hold (11). */
	mmap_wait(&f, 12, 310, 50, 1);
	rel(&f, 10, 11, 400, 0);
	acq_cc(&f, 10, 12, 401, 1, cc_acq_mprotect, N(cc_acq_mprotect));
	rel(&f, 10, 12, 450, 1);
	/* Nobody is known to hold it: a wait of 30 ns has no holder. */
	mmap_wait(&f, 11, 500, 30, 0);
	/* A downgrade (write, then read by the same thread) ends the write hold: 13's read wait
	 * of 20 ns is behind 12 as a reader. */
	acq_cc(&f, 10, 12, 600, 1, cc_acq_mprotect, N(cc_acq_mprotect));
	acq_cc(&f, 10, 12, 610, 0, cc_acq_mprotect, N(cc_acq_mprotect));
	mmap_wait(&f, 13, 620, 20, 0);

	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	const struct mm_snap_lock *r = holder_row(s, "write", 12);
	CHECK(r && r->pid == 10 && r->holder_pid == 10 && r->contended == 1 && r->wait_ns == 100);
	CHECK(r && !strcmp(r->holder_op, "mprotect") && !strcmp(r->holder_comm, "p10"));
	r = holder_row(s, "read", 11);
	CHECK(r && r->holder_pid == 10 && r->wait_ns == 50 && !strcmp(r->holder_op, "fault"));
	r = holder_row(s, "unknown", -1);
	CHECK(r && r->holder_pid == -1 && r->wait_ns == 30 && !strcmp(r->holder_op, "unknown"));
	r = holder_row(s, "read", 12);
	CHECK(r && r->wait_ns == 20 && !strcmp(r->holder_op, "mprotect"));
	/* The process's counters have the same waits by operation. */
	const struct mm_snap_proc *p = mm_snapshot_find(s, 10);
	CHECK(p && p->window->mmap_lock_behind_waits == 4);
	CHECK(p && p->window->mmap_lock_behind_mprotect_ns == 120);
	CHECK(p && p->window->mmap_lock_behind_fault_ns == 50);
	CHECK(p && p->window->mmap_lock_behind_unknown_ns == 30);
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

/* The in-kernel source's holder (mm_lock_wait.holder_*) becomes the row's. */
static void test_fed_waits_keep_the_kernels_holder(void)
{
	struct rec_fx f;
	setup_fed(&f);
	uint64_t hist[MM_HIST_BUCKETS] = {0};
	hist[10] = 2;
	struct mm_lock_wait w = {.pid = 10,
				 .flags = READ,
				 .mmap = true,
				 .lock = 11,
				 .holder_pid = 21, /* process 20, + 1 */
				 .holder_tid = 22,
				 .holder_mode = 2, /* MM_HOLDER_READ */
				 .holder_op = 14,  /* MM_SRC_REMOTE */
				 .ips = cc_fault,
				 .nr_ips = N(cc_fault),
				 .contended = 2,
				 .wait_ns = 3000,
				 .max_ns = 2000,
				 .min_ns = 1000,
				 .hist = hist};
	mm_host_waits(f.h, "contention", &w);
	w.holder_mode = 3; /* MM_HOLDER_UNKNOWN */
	w.holder_pid = w.holder_tid = 0;
	w.holder_op = 16;
	mm_host_waits(f.h, "contention", &w);
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	const struct mm_snap_lock *r = holder_row(s, "read", 22);
	CHECK(r && r->holder_pid == 20 && !strcmp(r->holder_op, "remote") && r->lock_pid == 10);
	CHECK(r && !strcmp(r->holder_comm, "p20") && r->wait_ns == 3000);
	r = holder_row(s, "unknown", -1);
	CHECK(r && r->wait_ns == 3000 && !strcmp(r->holder_op, "unknown"));
	const struct mm_snap_proc *p = mm_snapshot_find(s, 10);
	CHECK(p && p->window->mmap_lock_behind_waits == 4 &&
	      p->window->mmap_lock_behind_remote_ns == 3000 &&
	      p->window->mmap_lock_behind_unknown_ns == 3000);
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

static void test_static_locks_are_named_by_symbol(void)
{
	struct rec_fx f;
	setup(&f);
	begin(&f, 10, 11, 100, D_TASKLIST, SPIN | WRITE, cc_lru, N(cc_lru));
	end(&f, 10, 11, 120, D_TASKLIST);
	begin(&f, 10, 11, 200, D_NEXT + 0x10, SPIN, cc_lru, N(cc_lru));
	end(&f, 10, 11, 220, D_NEXT + 0x10);
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	const struct mm_snap_lock *r =
		row(s, 10, "folio_lruvec_lock_irqsave+0x5f", "tasklist_lock");
	CHECK(r && !strcmp(r->type, "rwlock:W"));
	CHECK(row(s, 10, "folio_lruvec_lock_irqsave+0x5f", "next_data+0x10") != NULL);
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

static void test_a_wait_belongs_to_the_window_it_ends_in(void)
{
	struct rec_fx f;
	setup(&f);
	begin(&f, 10, 11, 1000, HEAP_LOCK, WRITE, cc_mprotect, N(cc_mprotect));
	begin(&f, 10, 12, 1100, HEAP_LOCK + 8, SPIN, cc_lru, N(cc_lru));
	end(&f, 10, 12, 1200, HEAP_LOCK + 8);
	struct mm_snapshot *w1 = mm_host_close_window(f.h, 10000);
	CHECK_U64(w1->nlocks, 1);
	CHECK(row(w1, 10, "folio_lruvec_lock_irqsave+0x5f", NULL) != NULL);
	end(&f, 10, 11, 5000, HEAP_LOCK);
	struct mm_snapshot *w2 = mm_host_close_window(f.h, 20000);
	CHECK_U64(w2->nlocks, 1);
	CHECK(row(w2, 10, "do_mprotect_pkey+0xc7", NULL) &&
	      row(w2, 10, "do_mprotect_pkey+0xc7", NULL)->wait_ns == 4000);
	/* Call sites since start span both windows. */
	CHECK_U64(w2->nlock_callers, 2);
	CHECK_STR(w2->lock_callers[0].caller, "do_mprotect_pkey+0xc7");
	CHECK_U64(w2->lock_callers[0].wait_ns, 4000);
	CHECK(w2->lock_callers[0].pid == -1);
	struct mm_snapshot *s = mm_host_snapshot(f.h, 20001);
	CHECK_U64(s->nlocks, 0);
	CHECK_U64(s->nlock_callers, 2);
	mm_snapshot_unref(s);
	mm_snapshot_unref(w1);
	mm_snapshot_unref(w2);
	rec_fx_free(&f);
}

static void test_a_full_window_keeps_waits_in_other_rows(void)
{
	struct rec_fx f;
	setup(&f);
	/* 4096 distinct locks fill the window; 10 more go to one "(other)" row. */
	const unsigned keys = 4096, extra = 10;
	for (unsigned i = 0; i < keys + extra; i++) {
		begin(&f, 10, 11, 10ull * i, HEAP_LOCK + 64ull * i, SPIN, cc_lru, N(cc_lru));
		end(&f, 10, 11, 10ull * i + 3, HEAP_LOCK + 64ull * i);
	}
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	CHECK_U64(s->nlocks, keys + 1);
	CHECK_U64(total_contended(s), keys + extra);
	const struct mm_snap_lock *r = row(s, 10, "folio_lruvec_lock_irqsave+0x5f", "(other)");
	CHECK(r && r->contended == extra && r->wait_ns == 3 * extra);
	CHECK_U64(global(s, "window_rows_dropped"), 0);
	mm_snapshot_unref(s);
	/* The next window starts empty. */
	mm_snapshot_unref(mm_host_close_window(f.h, 10000));
	begin(&f, 10, 11, 100000, HEAP_LOCK, SPIN, cc_lru, N(cc_lru));
	end(&f, 10, 11, 100003, HEAP_LOCK);
	s = mm_host_snapshot(f.h, 10001);
	CHECK_U64(s->nlocks, 1);
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

int main(void)
{
	RUN(test_rwsem_waits_are_keyed_by_first_frame_outside_lock_functions);
	RUN(test_caller_skips_the_tracepoint_iterator_of_a_second_probe);
	RUN(test_spinlock_caller_skips_lock_text_and_scheduler);
	RUN(test_caller_is_unknown_past_eight_frames_or_without_symbols);
	RUN(test_fed_waits_are_keyed_and_summed_as_records);
	RUN(test_types_follow_perf_lock_names);
	RUN(test_mutex_spin_then_sleep_counts_once_from_the_first_begin);
	RUN(test_waits_on_different_locks_nest);
	RUN(test_unmatched_ends_are_counted_not_timed);
	RUN(test_lost_records_in_between_are_not_paired_across);
	RUN(test_a_thread_that_exits_mid_wait_is_forgotten);
	RUN(test_idle_task_waits_pair_per_cpu);
	RUN(test_mmap_lock_is_named_with_its_owner);
	RUN(test_mmap_lock_waits_name_their_holder);
	RUN(test_fed_waits_keep_the_kernels_holder);
	RUN(test_static_locks_are_named_by_symbol);
	RUN(test_a_wait_belongs_to_the_window_it_ends_in);
	RUN(test_a_full_window_keeps_waits_in_other_rows);
	return check_summary();
}
