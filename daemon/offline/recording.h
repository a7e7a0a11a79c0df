/*
 * The recording file: raw perf records plus everything needed to decode them again on any
 * machine. `mmlockd record` writes one; `mmlockd replay` feeds it through the same collectors,
 * so classification is testable without root and comparable across kernels.
 *
 * Layout: the 8-byte magic "MMLREC01", then chunks, each a {u32 type, u32 length} header and
 * `length` bytes padded to 8 (little-endian, as written by an x86_64 or arm64 host):
 *   META    "key=value\n" lines: kernel, recorded_at_ms, mono_to_wall_ms, interval_s, collectors
 *   STREAM  u32 index, u32 is_task, u64 sample_type, then NUL-terminated system, name, format
 *           (the tracepoint's tracefs format file; empty for the task stream)
 *   PROC    u32 pid, i32 result (0 or -errno), u64 start_ms, comm[16], cgroup NUL-terminated:
 *           one process lookup as the live run answered it, in the order the run asked
 *   RECORD  u32 stream, u32 pad, u64 time_ns, then the perf record (header included), in the
 *           order the collectors saw them (already time-ordered)
 *   SYMBOL  u64 addr, char type, name NUL-terminated: the kernel symbols the records touch
 *   TICK    u64 time_ns: the collectors' periodic hook ran here (replay runs it at the same point;
 *           recordings made before the window clock was shared also have one before each close)
 *   ADVANCE u64 horizon_ns: the live run's horizon closed a window here that no record had
 *           closed (mm_host_advance); replay advances its clock the same way
 *   CLOCK   u64 at_ns, i64 mono_to_wall_ms, i64 starts_moved_ms: the live run saw its wall clock
 *           step here (mm_host_observe_clock): the offset from at_ns on, and how far the process
 *           starts moved with it; replay takes the same step (readers before it skip the chunk)
 * Pure code (stdio only).
 */
#ifndef MM_RECORDING_H
#define MM_RECORDING_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "proctable.h"

enum mm_chunk_type {
	MM_CHUNK_META = 1,
	MM_CHUNK_STREAM = 2,
	MM_CHUNK_PROC = 3,
	MM_CHUNK_RECORD = 4,
	MM_CHUNK_SYMBOL = 5,
	MM_CHUNK_TICK = 6,
	MM_CHUNK_ADVANCE = 7,
	MM_CHUNK_CLOCK = 8,
};

#define MM_RECORDING_MAGIC "MMLREC01"

/* Writing. Each function returns 0 or -errno (-ENOSPC on a full disk). */
int mm_rec_write_magic(FILE *f);
int mm_rec_write_chunk(FILE *f, uint32_t type, const void *a, size_t alen, const void *b,
		       size_t blen);
int mm_rec_write_stream(FILE *f, unsigned index, bool is_task, uint64_t sample_type,
			const char *system, const char *name, const char *format);
int mm_rec_write_proc(FILE *f, uint32_t pid, int result, const struct mm_proc_ident *id);
int mm_rec_write_record(FILE *f, unsigned stream, uint64_t time_ns,
			const struct perf_event_header *hdr);
int mm_rec_write_symbol(FILE *f, uint64_t addr, char type, const char *name);

/* Reading: one chunk at a time. */
struct mm_chunk {
	uint32_t type;
	uint32_t len;
	uint8_t *data; /* len bytes, 8-byte aligned, owned by the reader */
};

struct mm_rec_reader;

/* Opens @path and checks the magic. Returns 0 and *ret, or -errno (-EINVAL: not a recording;
 * -ENOEXEC: an xz-compressed file that xz(1) could not decompress). A file compressed with xz (the
 * lab's .rec.xz) is decompressed into memory first. */
int mm_rec_open(const char *path, struct mm_rec_reader **ret);
/* The same on a stream positioned at the magic, of @size bytes (UINT64_MAX: unknown, e.g. a
 * pipe): a chunk longer than what is left is refused before anything is allocated for it. The
 * reader owns @f from then on (mm_rec_close() closes it), not on failure. */
int mm_rec_open_stream(FILE *f, uint64_t size, struct mm_rec_reader **ret);
void mm_rec_close(struct mm_rec_reader *r); /* accepts NULL */
/* Back to the first chunk. */
int mm_rec_rewind(struct mm_rec_reader *r);
/* The largest chunk a recording can hold: a perf record is at most 64 KiB, a tracepoint format
 * a few; a length above this is corruption, refused before anything is allocated for it. */
#define MM_RECORDING_CHUNK_MAX (1u << 20)

/* The next chunk in *ret (valid until the next call). Returns 1, 0 at the end, or -EINVAL for a
 * truncated or corrupt file (-ENOMEM), with the reason in mm_rec_error(). */
int mm_rec_next(struct mm_rec_reader *r, struct mm_chunk *ret);
/* The file offset of the chunk mm_rec_next() last read (or failed to), for error messages. */
long long mm_rec_offset(const struct mm_rec_reader *r);
/* Why the last mm_rec_next() failed ("" before any failure). */
const char *mm_rec_error(const struct mm_rec_reader *r);

/* Decoders of chunk payloads; each returns 0 or -EINVAL. Pointers point into the chunk. */
struct mm_rec_stream {
	unsigned index;
	bool is_task;
	uint64_t sample_type;
	const char *system, *name, *format;
};
int mm_rec_parse_stream(const struct mm_chunk *c, struct mm_rec_stream *ret);
int mm_rec_parse_proc(const struct mm_chunk *c, uint32_t *ret_pid, int *ret_result,
		      struct mm_proc_ident *ret_id);
int mm_rec_parse_record(const struct mm_chunk *c, unsigned *ret_stream, uint64_t *ret_time,
			const struct perf_event_header **ret_hdr);
int mm_rec_parse_symbol(const struct mm_chunk *c, uint64_t *ret_addr, char *ret_type,
			const char **ret_name);
/* Finds "key=" in a META chunk and copies its value into @buf. Returns 0 or -ENOENT. */
int mm_rec_meta_get(const struct mm_chunk *c, const char *key, char *buf, size_t size);

/* Feeds the run's chunks to a host, as the live run fed it: RECORD to mm_host_feed(), TICK to
 * mm_host_tick(), ADVANCE to mm_host_advance(), CLOCK to mm_host_clock_step(); the host's window
 * clock closes the windows. */
struct mm_host;
struct mm_rec_feeder {
	struct mm_host *host;
	int64_t mono_to_wall_ms; /* the recording's (after a CLOCK chunk: before its step) */
	uint64_t latest_ms;	 /* a record later than this wall time is corrupt */
	uint64_t last_ms;	 /* out: wall time of the latest record fed (since the last step) */
	/* The last CLOCK chunk's step: from step_at_ns on, times convert with step_to_wall_ms. */
	uint64_t step_at_ns;
	int64_t step_to_wall_ms;
};

/* Feeds chunk @c (other types are ignored). Returns 0, or -EINVAL with the reason in @why for a
 * malformed chunk or an impossible time stamp (later than f->latest_ms). */
int mm_rec_feed(struct mm_rec_feeder *f, const struct mm_chunk *c, char *why, size_t whylen);

/* --- the recorder: what `mmlockd record` does with each record the collectors see --- */

struct mm_symbols;
struct mm_recorder;

/* Creates @path and writes the magic. @syms (may be NULL) resolves the kernel addresses the
 * records touch, written as SYMBOL chunks at close. Returns 0 and *ret or -errno. */
int mm_recorder_open(const char *path, const struct mm_symbols *syms, struct mm_recorder **ret);

/* Only records of these processes (and, with @children, the processes they fork from now on) are
 * kept; without any call every record is kept. */
void mm_recorder_follow(struct mm_recorder *r, uint32_t pid, bool children);

/* Whether a record of a stream with @sample_type passes the process filter (LOST records always
 * do). Also learns forks of followed processes. */
bool mm_recorder_wants(struct mm_recorder *r, const struct perf_event_header *hdr,
		       uint64_t sample_type, bool is_task);

/* Writes a chunk; errors are sticky and reported by mm_recorder_close(). */
void mm_recorder_meta(struct mm_recorder *r, const char *text);
void mm_recorder_stream(struct mm_recorder *r, unsigned index, bool is_task, uint64_t sample_type,
			const char *system, const char *name, const char *format);
void mm_recorder_record(struct mm_recorder *r, unsigned stream, uint64_t time_ns,
			const struct perf_event_header *hdr, uint64_t sample_type);

/* Notes that the collectors' tick hook ran after the records written so far. */
void mm_recorder_tick(struct mm_recorder *r, uint64_t time_ns);

/* A process lookup (mm_proc_lookup_fn, ctx = the recorder) that asks /proc and writes the
 * answer as a PROC chunk, for replay to give the same answer. */
int mm_recorder_lookup(void *ctx, uint32_t pid, struct mm_proc_ident *ret);

/* The recorder as a tap on the host's record stream (host.h; ctx = the recorder): the filter,
 * the records, the plain ticks and the horizon's window closes. */
extern const struct mm_tap mm_recorder_tap;

/* Records written so far. */
uint64_t mm_recorder_count(const struct mm_recorder *r);

/* Writes the symbols, closes the file. Returns 0 or the first write error (-ENOSPC, ...).
 * Accepts NULL. */
int mm_recorder_close(struct mm_recorder *r);
#endif
