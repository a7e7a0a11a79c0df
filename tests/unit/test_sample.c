/*
 * perf record decoding: field order for every supported sample_type bit, callchains, the RAW
 * payload, sample_id trailers of task records, and rejection of truncated or unsupported records.
 */
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "sample.h"

struct rec {
	union {
		struct perf_event_header hdr;
		uint64_t w[32];
	};
};

/* The identity of a parsed sample: its stream id, task, time and cpu. */
static void check_ids(const struct mm_sample *s, uint64_t id, uint32_t pid, uint32_t tid,
		      uint64_t time_ns, uint32_t cpu)
{
	CHECK_U64(s->id, id);
	CHECK_U64(s->pid, pid);
	CHECK_U64(s->tid, tid);
	CHECK_U64(s->time_ns, time_ns);
	CHECK_U64(s->cpu, cpu);
}

static void test_full_layout_is_walked_in_kernel_order(void)
{
	struct rec r = {0};
	uint64_t type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID |
			PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
			PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW;
	uint64_t *w = &r.w[1];
	*w++ = 77;			    /* identifier */
	*w++ = 0xffffffff81000000ull;	    /* ip */
	*w++ = 100 | ((uint64_t)101 << 32); /* pid, tid */
	*w++ = 123456789;		    /* time */
	*w++ = 0xdead;			    /* addr */
	*w++ = 77;			    /* id */
	*w++ = 78;			    /* stream id */
	*w++ = 3;			    /* cpu, res */
	*w++ = 1;			    /* period */
	*w++ = 2;			    /* nr */
	*w++ = PERF_CONTEXT_KERNEL;
	*w++ = 0xffffffff81234567ull;
	uint32_t size = 12;
	memcpy(w, &size, 4);
	memcpy((uint8_t *)w + 4, "abcdefghijk", 12);
	w += 2;
	r.hdr.type = PERF_RECORD_SAMPLE;
	r.hdr.size = (uint16_t)((uint8_t *)w - (uint8_t *)&r);

	struct mm_sample s;
	CHECK(mm_sample_parse(&r.hdr, type, &s) == 0);
	check_ids(&s, 77, 100, 101, 123456789, 3);
	CHECK_U64(s.nr_ips, 2);
	CHECK_U64(s.ips[1], 0xffffffff81234567ull);
	CHECK_U64(s.raw_size, 12);
	CHECK(s.raw && memcmp(s.raw, "abcdefghijk", 12) == 0);
	CHECK_U64(mm_record_time(&r.hdr, type), 123456789);
}

static void test_truncated_records_are_rejected(void)
{
	struct rec r = {0};
	uint64_t type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN;
	r.w[1] = 1;
	r.w[2] = 2;
	r.w[3] = 1000; /* callchain claims 1000 entries */
	r.hdr.type = PERF_RECORD_SAMPLE;
	r.hdr.size = 8 + 4 * 8;
	struct mm_sample s = {.pid = 99};
	CHECK(mm_sample_parse(&r.hdr, type, &s) == -EINVAL);
	CHECK_U64(s.pid, 99); /* untouched */

	r.hdr.size = 8 + 8; /* TID only, TIME missing */
	CHECK(mm_sample_parse(&r.hdr, PERF_SAMPLE_TID | PERF_SAMPLE_TIME, &s) == -EINVAL);

	/* RAW size beyond the record */
	r.w[1] = 500;
	r.hdr.size = 8 + 8;
	CHECK(mm_sample_parse(&r.hdr, PERF_SAMPLE_RAW, &s) == -EINVAL);
}

static void test_unsupported_sample_type_is_refused(void)
{
	struct rec r = {0};
	r.hdr.type = PERF_RECORD_SAMPLE;
	r.hdr.size = 64;
	struct mm_sample s;
	CHECK(mm_sample_parse(&r.hdr, PERF_SAMPLE_TID | PERF_SAMPLE_READ, &s) == -EOPNOTSUPP);
	r.hdr.type = PERF_RECORD_COMM;
	CHECK(mm_sample_parse(&r.hdr, PERF_SAMPLE_TID, &s) == -EINVAL);
}

static void test_sample_id_trailer_of_exit_record(void)
{
	struct rec r = {0};
	uint64_t type =
		PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
	/* EXIT body: pid, ppid, tid, ptid, time; then the trailer */
	uint32_t ids[4] = {5, 2, 6, 1}; /* pid, ppid, tid, ptid */
	memcpy(&r.w[1], ids, 16);
	r.w[3] = 555;
	r.w[4] = 5 | ((uint64_t)6 << 32);
	r.w[5] = 999;
	r.w[6] = 1;
	r.w[7] = 4242;
	r.hdr.type = PERF_RECORD_EXIT;
	r.hdr.size = 8 * 8;
	struct mm_sample s;
	CHECK(mm_sample_id_parse(&r.hdr, type, &s) == 0);
	check_ids(&s, 4242, 5, 6, 999, 1);
	CHECK_U64(mm_record_time(&r.hdr, type), 999);
	CHECK_U64(mm_record_time(&r.hdr, PERF_SAMPLE_TID), 0);
}

static void test_task_records_are_decoded_with_their_bounds(void)
{
	struct rec r = {0};
	struct mm_task_record t;
	uint32_t ids[4] = {5, 2, 6, 1}; /* pid, ppid, tid, ptid */
	memcpy(&r.w[1], ids, 16);
	r.w[3] = 555;
	r.hdr.type = PERF_RECORD_FORK;
	r.hdr.size = 4 * 8;
	CHECK(mm_task_record_parse(&r.hdr, &t) == 0);
	CHECK(t.type == PERF_RECORD_FORK && t.pid == 5 && t.tid == 6 && t.ppid == 2);
	CHECK_U64(t.time_ns, 555);
	r.hdr.size = 3 * 8; /* the time cut off */
	CHECK(mm_task_record_parse(&r.hdr, &t) == -EINVAL);

	struct rec c = {0};
	uint32_t pt[2] = {7, 7};
	memcpy(&c.w[1], pt, 8);
	memcpy(&c.w[2], "a-very-long-command-name", 24);
	c.hdr.type = PERF_RECORD_COMM;
	c.hdr.misc = PERF_RECORD_MISC_COMM_EXEC;
	c.hdr.size = 6 * 8;
	CHECK(mm_task_record_parse(&c.hdr, &t) == 0);
	CHECK(t.pid == 7 && t.tid == 7 && t.exec);
	CHECK(!strcmp(t.comm, "a-very-long-com")); /* cut to 15 bytes and a NUL */

	c.hdr.type = PERF_RECORD_LOST;
	c.w[2] = 3;
	c.hdr.size = 3 * 8;
	CHECK(mm_task_record_parse(&c.hdr, &t) == 0);
	CHECK_U64(t.lost, 3);
	c.hdr.type = PERF_RECORD_SAMPLE;
	CHECK(mm_task_record_parse(&c.hdr, &t) == -ENOENT);
}

int main(void)
{
	RUN(test_full_layout_is_walked_in_kernel_order);
	RUN(test_truncated_records_are_rejected);
	RUN(test_unsupported_sample_type_is_refused);
	RUN(test_sample_id_trailer_of_exit_record);
	RUN(test_task_records_are_decoded_with_their_bounds);
	return check_summary();
}
