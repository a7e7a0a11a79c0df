/*
 * Decoding of perf ring-buffer records. libperf hands out raw records and has no sample parser,
 * so the layout is walked here in the order the kernel writes it for the event's sample_type.
 * Pure code (libperf's copy of <linux/perf_event.h> only), shared by the live sampler and by
 * replay, and unit-tested on hand-built records.
 */
#ifndef MM_SAMPLE_H
#define MM_SAMPLE_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>

struct mm_tp;

struct mm_sample {
	const struct mm_tp *tp; /* the tracepoint it came from (set by the host, not the parser) */
	uint64_t id;		/* PERF_SAMPLE_IDENTIFIER / ID, else 0 */
	uint64_t ip;	   /* PERF_SAMPLE_IP (for a tracepoint: the code that fired it), else 0 */
	uint32_t pid, tid; /* thread group and thread of the task that fired the event */
	uint64_t time_ns;  /* PERF_SAMPLE_TIME in the event's clock */
	uint32_t cpu;
	uint64_t nr_ips;     /* callchain length, 0 without PERF_SAMPLE_CALLCHAIN */
	const uint64_t *ips; /* callchain, context markers (PERF_CONTEXT_*) included */
	uint32_t raw_size;   /* PERF_SAMPLE_RAW payload: the tracepoint's record */
	const void *raw;
};

/* The sample_type bits mm_sample_parse() understands. */
#define MM_SAMPLE_SUPPORTED                                                                        \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |            \
	 PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |             \
	 PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW)

/* Parses a PERF_RECORD_SAMPLE of an event with @sample_type. Pointers in *ret point into @hdr's
 * record. Returns 0, -EINVAL for a truncated or inconsistent record, -EOPNOTSUPP for sample_type
 * bits outside MM_SAMPLE_SUPPORTED. *ret is untouched on failure. */
int mm_sample_parse(const struct perf_event_header *hdr, uint64_t sample_type,
		    struct mm_sample *ret);

/* Parses the sample_id trailer (attr.sample_id_all) of a non-sample record such as
 * PERF_RECORD_COMM, _FORK, _EXIT or _LOST: fills pid, tid, time_ns, cpu, id as present.
 * Returns 0 or -EINVAL. */
int mm_sample_id_parse(const struct perf_event_header *hdr, uint64_t sample_type,
		       struct mm_sample *ret);

/* A task or lost record, decoded: PERF_RECORD_COMM (pid, tid, comm, exec), _FORK and _EXIT
 * (pid, tid, ppid, time_ns: the record's own time), _LOST (lost). */
struct mm_task_record {
	uint32_t type; /* PERF_RECORD_* */
	uint32_t pid, tid;
	uint32_t ppid; /* FORK, EXIT: the parent's thread group */
	uint64_t time_ns;
	char comm[16]; /* NUL-terminated, cut to fit */
	bool exec;     /* COMM: the name came with an exec */
	uint64_t lost;
};

/* Parses a PERF_RECORD_COMM, _FORK, _EXIT or _LOST record into *ret. Returns 0, -EINVAL when it is
 * too short, or -ENOENT for another type (*ret untouched then). */
int mm_task_record_parse(const struct perf_event_header *hdr, struct mm_task_record *ret);

/* The timestamp of any record (sample or sample_id trailer); 0 when it has none. */
uint64_t mm_record_time(const struct perf_event_header *hdr, uint64_t sample_type);

#endif
