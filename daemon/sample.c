/*
 * perf record decoding (see sample.h). The kernel writes a sample's fields in a fixed order
 * (include/uapi/linux/perf_event.h, "struct { ... } && PERF_RECORD_SAMPLE"); every field is a
 * multiple of 8 bytes except RAW, which is padded so the record stays 8-byte aligned. Bounds are
 * checked on every read: a torn or foreign record is rejected, never read past. Task records
 * (COMM, FORK, EXIT) and LOST records are decoded here too, so every record is read in one place.
 */
#include "sample.h"

#include <errno.h>
#include <string.h>

struct cursor {
	const uint8_t *p, *end;
	int bad;
};

static uint64_t take_u64(struct cursor *c)
{
	uint64_t v;
	if (c->end - c->p < 8) {
		c->bad = 1;
		return 0;
	}
	memcpy(&v, c->p, 8);
	c->p += 8;
	return v;
}

/* PERF_SAMPLE_TID and _TIME, in the order the kernel writes them (samples and sample_id). */
static void take_tid_time(struct cursor *c, uint64_t sample_type, struct mm_sample *s)
{
	if (sample_type & PERF_SAMPLE_TID) {
		uint64_t v = take_u64(c);
		s->pid = (uint32_t)v;
		s->tid = (uint32_t)(v >> 32);
	}
	if (sample_type & PERF_SAMPLE_TIME)
		s->time_ns = take_u64(c);
}

/* PERF_SAMPLE_ID, _STREAM_ID and _CPU, likewise. */
static void take_id_cpu(struct cursor *c, uint64_t sample_type, struct mm_sample *s)
{
	if (sample_type & PERF_SAMPLE_ID)
		s->id = take_u64(c);
	if (sample_type & PERF_SAMPLE_STREAM_ID)
		take_u64(c);
	if (sample_type & PERF_SAMPLE_CPU)
		s->cpu = (uint32_t)take_u64(c);
}

int mm_sample_parse(const struct perf_event_header *hdr, uint64_t sample_type,
		    struct mm_sample *ret)
{
	struct mm_sample s = {0};
	struct cursor c = {(const uint8_t *)(hdr + 1), (const uint8_t *)hdr + hdr->size, 0};

	if (hdr->type != PERF_RECORD_SAMPLE || hdr->size < sizeof(*hdr))
		return -EINVAL;
	if (sample_type & ~(uint64_t)MM_SAMPLE_SUPPORTED)
		return -EOPNOTSUPP;

	if (sample_type & PERF_SAMPLE_IDENTIFIER)
		s.id = take_u64(&c);
	if (sample_type & PERF_SAMPLE_IP)
		s.ip = take_u64(&c);
	take_tid_time(&c, sample_type, &s);
	if (sample_type & PERF_SAMPLE_ADDR)
		take_u64(&c);
	take_id_cpu(&c, sample_type, &s);
	if (sample_type & PERF_SAMPLE_PERIOD)
		take_u64(&c);
	if (sample_type & PERF_SAMPLE_CALLCHAIN) {
		uint64_t nr = take_u64(&c);
		if (c.bad || nr > (uint64_t)(c.end - c.p) / 8)
			return -EINVAL;
		s.nr_ips = nr;
		s.ips = (const uint64_t *)c.p;
		c.p += nr * 8;
	}
	if (sample_type & PERF_SAMPLE_RAW) {
		uint32_t size;
		if (c.end - c.p < 4)
			return -EINVAL;
		memcpy(&size, c.p, 4);
		c.p += 4;
		if (size > (uint64_t)(c.end - c.p))
			return -EINVAL;
		s.raw_size = size;
		s.raw = c.p;
		c.p += size;
	}
	if (c.bad)
		return -EINVAL;
	*ret = s;
	return 0;
}

/* Number of u64 in the sample_id trailer for @sample_type. */
static unsigned trailer_words(uint64_t sample_type)
{
	unsigned n = 0;
	n += !!(sample_type & PERF_SAMPLE_TID);
	n += !!(sample_type & PERF_SAMPLE_TIME);
	n += !!(sample_type & PERF_SAMPLE_ID);
	n += !!(sample_type & PERF_SAMPLE_STREAM_ID);
	n += !!(sample_type & PERF_SAMPLE_CPU);
	n += !!(sample_type & PERF_SAMPLE_IDENTIFIER);
	return n;
}

int mm_sample_id_parse(const struct perf_event_header *hdr, uint64_t sample_type,
		       struct mm_sample *ret)
{
	struct mm_sample s = {0};
	unsigned words = trailer_words(sample_type);

	if (hdr->size < sizeof(*hdr) + words * 8)
		return -EINVAL;
	struct cursor c = {(const uint8_t *)hdr + hdr->size - words * 8,
			   (const uint8_t *)hdr + hdr->size, 0};
	take_tid_time(&c, sample_type, &s);
	take_id_cpu(&c, sample_type, &s);
	if (sample_type & PERF_SAMPLE_IDENTIFIER)
		s.id = take_u64(&c);
	*ret = s;
	return 0;
}

uint64_t mm_record_time(const struct perf_event_header *hdr, uint64_t sample_type)
{
	struct mm_sample s;
	if (!(sample_type & PERF_SAMPLE_TIME))
		return 0;
	if (hdr->type == PERF_RECORD_SAMPLE) {
		/* TIME follows at most IDENTIFIER, IP and TID: no need for a full parse. */
		unsigned skip = !!(sample_type & PERF_SAMPLE_IDENTIFIER) +
				!!(sample_type & PERF_SAMPLE_IP) +
				!!(sample_type & PERF_SAMPLE_TID);
		uint64_t t;
		if (hdr->size < sizeof(*hdr) + (skip + 1) * 8)
			return 0;
		memcpy(&t, (const uint8_t *)(hdr + 1) + skip * 8, 8);
		return t;
	}
	if (mm_sample_id_parse(hdr, sample_type, &s) < 0)
		return 0;
	return s.time_ns;
}

int mm_task_record_parse(const struct perf_event_header *hdr, struct mm_task_record *ret)
{
	struct mm_task_record r = {.type = hdr->type};
	switch (hdr->type) {
	case PERF_RECORD_COMM: {
		const struct {
			struct perf_event_header h;
			uint32_t pid, tid;
			char comm[];
		} *c = (const void *)hdr;
		if (hdr->size < sizeof(*c) + 1)
			return -EINVAL;
		size_t max = hdr->size - sizeof(*c);
		size_t len = strnlen(c->comm, max < sizeof(r.comm) ? max : sizeof(r.comm) - 1);
		memcpy(r.comm, c->comm, len);
		r.comm[len] = '\0';
		r.pid = c->pid;
		r.tid = c->tid;
		r.exec = hdr->misc & PERF_RECORD_MISC_COMM_EXEC;
		break;
	}
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT: {
		const struct {
			struct perf_event_header h;
			uint32_t pid, ppid, tid, ptid;
			uint64_t time;
		} *f = (const void *)hdr;
		if (hdr->size < sizeof(*f))
			return -EINVAL;
		r.pid = f->pid;
		r.tid = f->tid;
		r.ppid = f->ppid;
		r.time_ns = f->time;
		break;
	}
	case PERF_RECORD_LOST: {
		const struct {
			struct perf_event_header h;
			uint64_t id, lost;
		} *l = (const void *)hdr;
		if (hdr->size < sizeof(*l))
			return -EINVAL;
		r.lost = l->lost;
		break;
	}
	default:
		return -ENOENT;
	}
	*ret = r;
	return 0;
}
