/*
 * The ordering queue: records from several rings come out sorted by time, only below the horizon,
 * equal times in push order, and the remainder survives compaction intact.
 */
#include <stdlib.h>

#include "check.h"
#include "order.h"

struct rec {
	struct perf_event_header hdr;
	uint64_t payload[3];
};

static uint64_t got_time[4096];
static unsigned got_stream[4096], got_payload[4096], ngot;

static void collect(void *ctx, unsigned stream, uint64_t time_ns,
		    const struct perf_event_header *hdr)
{
	const struct rec *r = (const struct rec *)hdr;
	got_time[ngot] = time_ns;
	got_stream[ngot] = stream;
	got_payload[ngot] = (unsigned)r->payload[0];
	ngot++;
}

static void push(struct mm_order *o, unsigned stream, uint64_t t, unsigned payload)
{
	struct rec r = {{PERF_RECORD_SAMPLE, 0, sizeof(r)}, {payload, 0, 0}};
	CHECK(mm_order_push(o, stream, t, &r.hdr) == 0);
}

static void test_records_of_two_rings_come_out_in_time_order(void)
{
	struct mm_order *o = mm_order_new();
	ngot = 0;
	/* ring 0 and ring 1 each in order, interleaved in time */
	push(o, 0, 10, 1);
	push(o, 0, 30, 3);
	push(o, 0, 50, 5);
	push(o, 1, 20, 2);
	push(o, 1, 40, 4);
	push(o, 1, 60, 6);
	CHECK_U64(mm_order_flush(o, 45, collect, NULL), 4);
	CHECK_U64(ngot, 4);
	for (unsigned i = 0; i < 4; i++)
		CHECK_U64(got_payload[i], i + 1);
	CHECK_U64(mm_order_count(o), 2);
	/* a late record below the old horizon still sorts in front of the rest */
	push(o, 0, 55, 55);
	CHECK_U64(mm_order_flush(o, UINT64_MAX, collect, NULL), 3);
	CHECK_U64(got_payload[4], 5);
	CHECK_U64(got_payload[5], 55);
	CHECK_U64(got_payload[6], 6);
	CHECK_U64(got_stream[6], 1);
	CHECK_U64(mm_order_count(o), 0);
	mm_order_free(o);
}

static void test_equal_times_keep_push_order(void)
{
	struct mm_order *o = mm_order_new();
	ngot = 0;
	for (unsigned i = 0; i < 100; i++)
		push(o, i % 3, 7, i);
	mm_order_flush(o, 8, collect, NULL);
	CHECK_U64(ngot, 100);
	for (unsigned i = 0; i < 100; i++)
		CHECK_U64(got_payload[i], i);
	mm_order_free(o);
}

static void test_remainder_survives_many_partial_flushes(void)
{
	struct mm_order *o = mm_order_new();
	ngot = 0;
	uint64_t t = 0;
	for (unsigned round = 0; round < 20; round++) {
		for (unsigned i = 0; i < 150; i++, t++)
			push(o, 0, t, (unsigned)t);
		mm_order_flush(o, t - 100, collect, NULL); /* keep the newest 100 */
	}
	mm_order_flush(o, UINT64_MAX, collect, NULL);
	CHECK_U64(ngot, 3000);
	for (unsigned i = 0; i < 3000; i++)
		if (got_payload[i] != i || got_time[i] != i) {
			CHECK(got_payload[i] == i);
			break;
		}
	CHECK_U64(mm_order_bytes(o), 0);
	mm_order_free(o);
}

int main(void)
{
	RUN(test_records_of_two_rings_come_out_in_time_order);
	RUN(test_equal_times_keep_push_order);
	RUN(test_remainder_survives_many_partial_flushes);
	return check_summary();
}
