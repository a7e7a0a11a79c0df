/*
 * libFuzzer target: the recording reader (daemon/recording.c) and every payload decoder, in the
 * two passes `mmlockd replay` makes (metadata and streams, then the run, after a rewind). Each
 * RECORD is also decoded as a sample of its stream's sample_type, as the host does. Input: a
 * recording file, read from memory (seeds: cut-down tests/data recordings,
 * tests/fuzz/make_seeds.py; mmlockd replay opens a file the same way, mm_rec_open() adds only
 * fopen, fstat and, for an xz-compressed file, xz(1) decompressing it into memory). The reader must
 * end every file, report corruption as -EINVAL, and hand out only pointers inside chunks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "recording.h"
#include "sample.h"

#define MAX_STREAMS 64

static volatile size_t sink;

static void read_strings(const char *a, const char *b, const char *c)
{
	sink += strlen(a) + (b ? strlen(b) : 0) + (c ? strlen(c) : 0);
}

static void decode(const struct mm_chunk *c, uint64_t *types, unsigned *ntypes)
{
	struct mm_rec_stream st;
	struct mm_proc_ident id;
	struct mm_sample s;
	const struct perf_event_header *hdr;
	const char *name;
	char buf[64];
	uint64_t addr, t;
	uint32_t pid;
	unsigned stream;
	int result;
	char type;

	switch (c->type) {
	case MM_CHUNK_META:
		if (mm_rec_meta_get(c, "collectors", buf, sizeof(buf)) == 0)
			read_strings(buf, NULL, NULL);
		break;
	case MM_CHUNK_STREAM:
		if (mm_rec_parse_stream(c, &st) == 0) {
			read_strings(st.system, st.name, st.format);
			if (*ntypes < MAX_STREAMS)
				types[(*ntypes)++] = st.sample_type;
		}
		break;
	case MM_CHUNK_PROC:
		if (mm_rec_parse_proc(c, &pid, &result, &id) == 0)
			read_strings(id.comm, id.cgroup, NULL);
		break;
	case MM_CHUNK_SYMBOL:
		if (mm_rec_parse_symbol(c, &addr, &type, &name) == 0)
			read_strings(name, NULL, NULL);
		break;
	case MM_CHUNK_RECORD:
		if (mm_rec_parse_record(c, &stream, &t, &hdr) == 0 && stream < *ntypes) {
			/* The record must lie inside the chunk. */
			if ((const uint8_t *)hdr + hdr->size > c->data + c->len)
				abort();
			if (mm_sample_parse(hdr, types[stream], &s) == 0)
				sink += s.raw_size + s.nr_ips;
			sink += mm_record_time(hdr, types[stream]);
		}
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mm_rec_reader *rd;
	struct mm_chunk c;
	uint64_t types[MAX_STREAMS];
	unsigned ntypes = 0;
	int r;

	/* fmemopen: no system call per input; the size is the file's, as fstat gives it. */
	FILE *f = fmemopen((void *)data, size, "rb");
	if (!f)
		return 0;
	if (mm_rec_open_stream(f, size, &rd) < 0) {
		fclose(f);
		return 0;
	}
	for (int pass = 0; pass < 2; pass++) {
		size_t chunks = 0;
		while ((r = mm_rec_next(rd, &c)) > 0) {
			/* Every chunk takes at least its 8-byte header: more chunks than that is a
			 * reader that does not advance. */
			if (++chunks > size / 8)
				abort();
			decode(&c, types, &ntypes);
		}
		if (r < 0 && r != -EINVAL && r != -ENOMEM)
			abort();
		if (mm_rec_rewind(rd) < 0)
			break;
	}
	mm_rec_close(rd);
	return 0;
}
