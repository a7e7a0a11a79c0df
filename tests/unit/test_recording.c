/*
 * The recording reader (daemon/offline/recording.c) on files it must refuse: a chunk length beyond
 * the end of the file or above MM_RECORDING_CHUNK_MAX (refused before anything is allocated; the
 * offset and the reason say where and why), a truncated header or payload, and an empty first chunk
 * (a non-NULL payload pointer: fuzz_recording found decoders doing arithmetic on NULL). Every loop
 * over the chunks ends. A recording compressed with xz reads as the plain one, rewind included;
 * a corrupt xz file is refused with -ENOEXEC.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "recording.h"

static char path[256];

/* Writes the magic, a META chunk and a TICK chunk, then @tail (@n bytes) raw. */
static void write_recording(const void *tail, size_t n)
{
	FILE *f = fopen(path, "wbe");
	uint64_t t = 5;

	if (!f) {
		perror(path);
		exit(1);
	}
	mm_rec_write_magic(f);
	mm_rec_write_chunk(f, MM_CHUNK_META, "interval_s=1\n", 13, NULL, 0);
	mm_rec_write_chunk(f, MM_CHUNK_TICK, &t, 8, NULL, 0);
	if (n)
		fwrite(tail, 1, n, f);
	fclose(f);
}

/* Reads every chunk; returns the last mm_rec_next() result and the number of chunks read; @err
 * gets "OFFSET: REASON" of the failure. */
static int read_all(unsigned *ret_chunks, char *err, size_t errlen)
{
	struct mm_rec_reader *r;
	struct mm_chunk c;
	int rc;

	*ret_chunks = 0;
	if ((rc = mm_rec_open(path, &r)) < 0)
		return rc;
	while ((rc = mm_rec_next(r, &c)) > 0 && *ret_chunks < 1000) {
		CHECK(c.data != NULL);
		(*ret_chunks)++;
	}
	snprintf(err, errlen, "%lld: %s", mm_rec_offset(r), mm_rec_error(r));
	mm_rec_close(r);
	return rc;
}

static void test_intact_file_reads_to_the_end(void)
{
	unsigned n;
	char err[160];

	write_recording(NULL, 0);
	CHECK(read_all(&n, err, sizeof(err)) == 0);
	CHECK_U64(n, 2);
}

static void test_length_beyond_the_file_is_refused_with_its_offset(void)
{
	uint32_t hdr[2] = {MM_CHUNK_RECORD, 4096};
	uint8_t tail[8 + 100] = {0};
	unsigned n;
	char err[160];

	memcpy(tail, hdr, 8);
	write_recording(tail, sizeof(tail));
	CHECK(read_all(&n, err, sizeof(err)) == -EINVAL);
	CHECK_U64(n, 2);
	/* magic 8 + META (8 + 16) + TICK (8 + 8) = offset 48 */
	CHECK_CONTAINS(
		err, "48: chunk of type 4 truncated: it claims 4096 bytes, the file has 100 left");
}

static void test_impossible_length_is_refused(void)
{
	uint32_t hdr[2] = {MM_CHUNK_RECORD, 0xfffffff0u};
	unsigned n;
	char err[160];

	write_recording(hdr, sizeof(hdr));
	CHECK(read_all(&n, err, sizeof(err)) == -EINVAL);
	CHECK_CONTAINS(err, "claims 4294967280 bytes (at most");
}

static void test_truncated_header_is_refused(void)
{
	uint32_t hdr = MM_CHUNK_TICK;
	unsigned n;
	char err[160];

	write_recording(&hdr, 4);
	CHECK(read_all(&n, err, sizeof(err)) == -EINVAL);
	CHECK_U64(n, 2);
	CHECK_CONTAINS(err, "48: truncated chunk header");
}

static void test_empty_first_chunk_has_a_payload_pointer(void)
{
	struct mm_rec_reader *r;
	struct mm_chunk c;
	char buf[8];
	FILE *f = fopen(path, "wbe");

	CHECK(f != NULL);
	if (!f)
		return;
	mm_rec_write_magic(f);
	mm_rec_write_chunk(f, MM_CHUNK_META, NULL, 0, NULL, 0);
	fclose(f);
	CHECK(mm_rec_open(path, &r) == 0);
	CHECK(mm_rec_next(r, &c) == 1);
	CHECK_U64(c.len, 0);
	CHECK(c.data != NULL);
	CHECK(mm_rec_meta_get(&c, "collectors", buf, sizeof(buf)) == -ENOENT);
	CHECK(mm_rec_next(r, &c) == 0);
	/* Rewinding starts over, so both passes of replay end. */
	CHECK(mm_rec_rewind(r) == 0);
	CHECK(mm_rec_next(r, &c) == 1);
	mm_rec_close(r);
}

/* Compresses @path in place with xz (xz -f: path.xz, renamed back); false without xz. */
static bool xz_in_place(void)
{
	char cmd[4 * sizeof(path) + 64];
	snprintf(cmd, sizeof(cmd), "xz -fq '%s' && mv '%s.xz' '%s'", path, path, path);
	return system(cmd) == 0;
}

static void test_xz_compressed_recording_reads_as_the_plain_one(void)
{
	unsigned n;
	char err[160];
	struct mm_rec_reader *r;
	struct mm_chunk c;

	write_recording(NULL, 0);
	if (!xz_in_place()) {
		printf("(xz not installed: not checked)\n");
		return;
	}
	CHECK(read_all(&n, err, sizeof(err)) == 0);
	CHECK_U64(n, 2);
	/* Two passes, as a replay makes: the decompressed file seeks. */
	CHECK(mm_rec_open(path, &r) == 0);
	CHECK(mm_rec_next(r, &c) == 1);
	CHECK_U64(c.type, MM_CHUNK_META);
	CHECK(mm_rec_rewind(r) == 0);
	CHECK(mm_rec_next(r, &c) == 1);
	CHECK_U64(c.type, MM_CHUNK_META);
	mm_rec_close(r);

	/* xz's magic on a corrupt stream: xz refuses it, and so does the reader. */
	FILE *f = fopen(path, "wbe");
	fwrite("\xfd"
	       "7zXZ\0not a stream",
	       1, 18, f);
	fclose(f);
	CHECK(mm_rec_open(path, &r) == -ENOEXEC);
}

int main(void)
{
	const char *base = getenv("TMPDIR");
	int fd;

	snprintf(path, sizeof(path), "%s/mmlockd-test-rec.XXXXXX", base && *base ? base : "/tmp");
	fd = mkstemp(path);
	if (fd < 0) {
		perror("mkstemp");
		return 1;
	}
	close(fd);
	RUN(test_intact_file_reads_to_the_end);
	RUN(test_length_beyond_the_file_is_refused_with_its_offset);
	RUN(test_impossible_length_is_refused);
	RUN(test_truncated_header_is_refused);
	RUN(test_empty_first_chunk_has_a_payload_pointer);
	RUN(test_xz_compressed_recording_reads_as_the_plain_one);
	unlink(path);
	return check_summary();
}
