/*
 * Builders of perf records for unit tests: PERF_RECORD_SAMPLE with TID|TIME|CPU|RAW carrying a
 * tracepoint payload laid out by its libtraceevent format, and COMM/FORK/EXIT task records with a
 * TID|TIME|CPU sample_id trailer, the same layouts the sampler asks the kernel for.
 */
#ifndef MM_TEST_RECORDS_H
#define MM_TEST_RECORDS_H

#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <traceevent/event-parse.h>

#define REC_SAMPLE_TYPE (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW)
#define REC_TASK_TYPE	(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU)

struct rec {
	union {
		struct perf_event_header hdr;
		uint64_t words[64];
	};
};

struct rec_field {
	const char *name;
	uint64_t value;
};

#define REC_SAMPLE_TYPE_CC (REC_SAMPLE_TYPE | PERF_SAMPLE_CALLCHAIN)

static inline const struct perf_event_header *
rec_sample_cc(struct rec *r, struct tep_event *ev, uint32_t pid, uint32_t tid, uint64_t time,
	      const uint64_t *ips, unsigned nips, const struct rec_field *fields, unsigned n);

/* A sample of @ev by pid/tid at @time with the named fields set (others zero). */
static inline const struct perf_event_header *rec_sample(struct rec *r, struct tep_event *ev,
							 uint32_t pid, uint32_t tid, uint64_t time,
							 const struct rec_field *fields, unsigned n)
{
	return rec_sample_cc(r, ev, pid, tid, time, NULL, 0, fields, n);
}

/* The same with a kernel callchain (PERF_SAMPLE_CALLCHAIN, REC_SAMPLE_TYPE_CC) when @ips is not
 * NULL: PERF_CONTEXT_KERNEL, then @ips innermost first. */
static inline const struct perf_event_header *
rec_sample_cc(struct rec *r, struct tep_event *ev, uint32_t pid, uint32_t tid, uint64_t time,
	      const uint64_t *ips, unsigned nips, const struct rec_field *fields, unsigned n)
{
	uint8_t raw[128] = {0};
	uint16_t type = (uint16_t)ev->id;
	memcpy(raw, &type, 2);
	memcpy(raw + 4, &tid, 4);
	unsigned raw_size = 0;
	for (struct tep_format_field *f = ev->format.fields; f; f = f->next)
		if ((unsigned)(f->offset + f->size) > raw_size)
			raw_size = (unsigned)(f->offset + f->size);
	for (unsigned i = 0; i < n; i++) {
		struct tep_format_field *f = tep_find_field(ev, fields[i].name);
		if (f)
			memcpy(raw + f->offset, &fields[i].value, f->size);
	}
	memset(r, 0, sizeof(*r));
	uint8_t *p = (uint8_t *)(&r->hdr + 1);
	uint64_t v = pid | ((uint64_t)tid << 32);
	memcpy(p, &v, 8);
	memcpy(p + 8, &time, 8);
	memset(p + 16, 0, 8); /* cpu, res */
	p += 24;
	if (ips) {
		uint64_t nr = nips + 1, ctx = PERF_CONTEXT_KERNEL;
		memcpy(p, &nr, 8);
		memcpy(p + 8, &ctx, 8);
		memcpy(p + 16, ips, nips * 8);
		p += 16 + nips * 8;
	}
	/* RAW: u32 size then the payload, padded so the record stays 8-byte aligned. */
	uint32_t size = (raw_size + 4 + 7) / 8 * 8 - 4;
	memcpy(p, &size, 4);
	memcpy(p + 4, raw, raw_size);
	r->hdr.type = PERF_RECORD_SAMPLE;
	r->hdr.size = (uint16_t)(p + 4 + size - (uint8_t *)r);
	return &r->hdr;
}

#define REC_SAMPLE_TYPE_IP (REC_SAMPLE_TYPE | PERF_SAMPLE_IP)

/* The same with PERF_SAMPLE_IP (REC_SAMPLE_TYPE_IP): @ip is the code that fired the event. */
static inline const struct perf_event_header *
rec_sample_ip(struct rec *r, struct tep_event *ev, uint32_t pid, uint32_t tid, uint64_t time,
	      uint64_t ip, const struct rec_field *fields, unsigned n)
{
	struct rec tmp;
	rec_sample(&tmp, ev, pid, tid, time, fields, n);
	memset(r, 0, sizeof(*r));
	r->hdr = tmp.hdr;
	r->hdr.size = (uint16_t)(tmp.hdr.size + 8);
	uint8_t *p = (uint8_t *)(&r->hdr + 1);
	memcpy(p, &ip, 8);
	memcpy(p + 8, &tmp.hdr + 1, tmp.hdr.size - sizeof(tmp.hdr));
	return &r->hdr;
}

static inline void rec_trailer(uint8_t *p, uint32_t pid, uint32_t tid, uint64_t time)
{
	uint64_t v = pid | ((uint64_t)tid << 32);
	memcpy(p, &v, 8);
	memcpy(p + 8, &time, 8);
	memset(p + 16, 0, 8);
}

/* PERF_RECORD_FORK or _EXIT of thread @tid in process @pid. */
static inline const struct perf_event_header *rec_task(struct rec *r, uint32_t type, uint32_t pid,
						       uint32_t tid, uint64_t time)
{
	memset(r, 0, sizeof(*r));
	uint8_t *p = (uint8_t *)(&r->hdr + 1);
	uint32_t ids[4] = {pid, 1, tid, 1};
	memcpy(p, ids, 16);
	memcpy(p + 16, &time, 8);
	rec_trailer(p + 24, pid, tid, time);
	r->hdr.type = type;
	r->hdr.size = (uint16_t)(sizeof(r->hdr) + 24 + 24);
	return &r->hdr;
}

/* PERF_RECORD_COMM: @pid/@tid is now called @comm. */
static inline const struct perf_event_header *rec_comm(struct rec *r, uint32_t pid, uint32_t tid,
						       const char *comm, uint64_t time)
{
	memset(r, 0, sizeof(*r));
	uint8_t *p = (uint8_t *)(&r->hdr + 1);
	memcpy(p, &pid, 4);
	memcpy(p + 4, &tid, 4);
	size_t len = (strlen(comm) + 1 + 7) / 8 * 8;
	memcpy(p + 8, comm, strlen(comm) + 1);
	rec_trailer(p + 8 + len, pid, tid, time);
	r->hdr.type = PERF_RECORD_COMM;
	r->hdr.size = (uint16_t)(sizeof(r->hdr) + 8 + len + 24);
	return &r->hdr;
}

/* PERF_RECORD_LOST of @n records. */
static inline const struct perf_event_header *rec_lost(struct rec *r, uint64_t n, uint64_t time)
{
	memset(r, 0, sizeof(*r));
	uint8_t *p = (uint8_t *)(&r->hdr + 1);
	uint64_t id = 0;
	memcpy(p, &id, 8);
	memcpy(p + 8, &n, 8);
	rec_trailer(p + 16, 0, 0, time);
	r->hdr.type = PERF_RECORD_LOST;
	r->hdr.size = (uint16_t)(sizeof(r->hdr) + 16 + 24);
	return &r->hdr;
}

/* --- host fixtures --- */

#include "host.h"

/* A process lookup for tests: pid N is "pN", started at 1000 ms. */
static inline int rec_lookup(void *ctx, uint32_t pid, struct mm_proc_ident *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->start_ms = 1000;
	snprintf(ret->comm, sizeof(ret->comm), "p%u", (unsigned)pid);
	return 0;
}

/* Parses the @n tracepoint formats @fmts (of systems @sys) into @tep and registers each as an
 * open stream of @h, with sample type @type except @cc_index (-1: none) with @cc_type; fills
 * @ev and @stream. Then registers the task stream and returns its index. */
static inline unsigned rec_add_streams(struct mm_host *h, struct tep_handle *tep, int n,
				       const char *const *fmts, const char *const *sys,
				       struct tep_event **ev, unsigned *stream, uint64_t type,
				       int cc_index, uint64_t cc_type)
{
	for (int i = 0; i < n; i++) {
		tep_parse_format(tep, &ev[i], fmts[i], strlen(fmts[i]), sys[i]);
		stream[i] = (unsigned)mm_host_add_tp(h, sys[i], ev[i]->name, ev[i],
						     i == cc_index ? cc_type : type, NULL);
	}
	return (unsigned)mm_host_add_task_stream(h, REC_TASK_TYPE, NULL);
}

/* --- collector fixtures: a host running chosen collectors, fed a test's streams --- */

#include "config.h"
#include "symbols.h"

#define REC_MAX_TP 8

/* A kernel symbol for mm_symbols_add(). */
struct rec_sym {
	uint64_t addr;
	char type;
	const char *name;
};

/* What a collector test drives: the host, its symbol table (NULL when it has none), the parsed
 * events and their stream indices (rec_add_streams), the task stream. */
struct rec_fx {
	struct tep_handle *tep;
	struct mm_host *h;
	struct mm_symbols *syms;
	struct tep_event *ev[REC_MAX_TP];
	unsigned stream[REC_MAX_TP];
	unsigned task;
};

/* Creates @f: a host running @collectors (a configuration list) that looks processes up with
 * @lookup, with a symbol table of the @nsyms symbols @syms unless @syms is NULL, and an empty
 * tep. The test then adds its streams and starts the host. */
static inline void rec_fx_new(struct rec_fx *f, const char *collectors, mm_proc_lookup_fn lookup,
			      const struct rec_sym *syms, size_t nsyms)
{
	struct mm_config cfg;

	mm_config_defaults(&cfg);
	snprintf(cfg.collectors, sizeof(cfg.collectors), "%s", collectors);
	memset(f, 0, sizeof(*f));
	f->h = mm_host_new(&cfg, lookup, NULL, 0);
	if (syms) {
		f->syms = mm_symbols_new();
		for (size_t i = 0; i < nsyms; i++)
			mm_symbols_add(f->syms, syms[i].addr, syms[i].type, syms[i].name);
		mm_symbols_sort(f->syms);
		mm_host_set_symbols(f->h, f->syms);
	}
	f->tep = tep_alloc();
}

static inline void rec_fx_free(struct rec_fx *f)
{
	mm_host_free(f->h);
	mm_symbols_free(f->syms);
	tep_free(f->tep);
}

#endif
