/*
 * Recording file format (see recording.h): chunk writer, chunk reader and payload decoders, plus
 * the small set used to remember which kernel symbols a recording needs.
 *
 * The reader trusts nothing in the file: a chunk's length is checked against the bytes the file
 * still holds before anything is allocated for it (a corrupt length must not make it allocate,
 * or wait for data a pipe will never send), every read advances, so every loop over the chunks
 * ends with the file, and each refusal says why (mm_rec_error()). The decoders check each payload
 * against its own length; libFuzzer runs on all of it (tests/fuzz/).
 */
#include "recording.h"

#include "host.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int write_all(FILE *f, const void *p, size_t n)
{
	if (n && fwrite(p, 1, n, f) != n)
		return errno ? -errno : -EIO;
	return 0;
}

int mm_rec_write_magic(FILE *f)
{
	return write_all(f, MM_RECORDING_MAGIC, 8);
}

int mm_rec_write_chunk(FILE *f, uint32_t type, const void *a, size_t alen, const void *b,
		       size_t blen)
{
	static const uint8_t zeros[8];
	uint32_t hdr[2] = {type, (uint32_t)(alen + blen)};
	size_t pad = (8 - (alen + blen) % 8) % 8;
	int r;
	if ((r = write_all(f, hdr, sizeof(hdr))) < 0 || (r = write_all(f, a, alen)) < 0 ||
	    (r = write_all(f, b, blen)) < 0 || (r = write_all(f, zeros, pad)) < 0)
		return r;
	return 0;
}

int mm_rec_write_stream(FILE *f, unsigned index, bool is_task, uint64_t sample_type,
			const char *system, const char *name, const char *format)
{
	size_t ls = strlen(system) + 1, ln = strlen(name) + 1, lf = strlen(format) + 1;
	uint8_t head[16];
	uint32_t idx = index, task = is_task;
	memcpy(head, &idx, 4);
	memcpy(head + 4, &task, 4);
	memcpy(head + 8, &sample_type, 8);
	char *text = malloc(ls + ln + lf);
	if (!text)
		return -ENOMEM;
	memcpy(text, system, ls);
	memcpy(text + ls, name, ln);
	memcpy(text + ls + ln, format, lf);
	int r = mm_rec_write_chunk(f, MM_CHUNK_STREAM, head, sizeof(head), text, ls + ln + lf);
	free(text);
	return r;
}

int mm_rec_write_proc(FILE *f, uint32_t pid, int result, const struct mm_proc_ident *id)
{
	uint8_t head[16 + MM_COMM_LEN];
	int32_t res = result;
	uint64_t start = result == 0 ? id->start_ms : 0;
	memset(head, 0, sizeof(head));
	memcpy(head, &pid, 4);
	memcpy(head + 4, &res, 4);
	memcpy(head + 8, &start, 8);
	if (result == 0)
		memcpy(head + 16, id->comm, MM_COMM_LEN);
	const char *cg = result == 0 ? id->cgroup : "";
	return mm_rec_write_chunk(f, MM_CHUNK_PROC, head, sizeof(head), cg,
				  strnlen(cg, MM_CGROUP_LEN - 1) + 1);
}

int mm_rec_write_record(FILE *f, unsigned stream, uint64_t time_ns,
			const struct perf_event_header *hdr)
{
	uint8_t head[16];
	uint32_t s = stream, pad = 0;
	memcpy(head, &s, 4);
	memcpy(head + 4, &pad, 4);
	memcpy(head + 8, &time_ns, 8);
	return mm_rec_write_chunk(f, MM_CHUNK_RECORD, head, sizeof(head), hdr, hdr->size);
}

int mm_rec_write_symbol(FILE *f, uint64_t addr, char type, const char *name)
{
	uint8_t head[9];
	memcpy(head, &addr, 8);
	head[8] = (uint8_t)type;
	return mm_rec_write_chunk(f, MM_CHUNK_SYMBOL, head, sizeof(head), name, strlen(name) + 1);
}

struct mm_rec_reader {
	FILE *f;
	uint64_t *buf; /* u64 for alignment */
	size_t cap;
	long long offset; /* of the chunk last read */
	uint64_t size;	  /* of the file; UINT64_MAX when unknown (a pipe) */
	char error[128];  /* why the last mm_rec_next() failed */
};

int mm_rec_open_stream(FILE *f, uint64_t size, struct mm_rec_reader **ret)
{
	char magic[8];
	if (fread(magic, 1, 8, f) != 8 || memcmp(magic, MM_RECORDING_MAGIC, 8) != 0)
		return -EINVAL;
	struct mm_rec_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->f = f;
	r->size = size;
	*ret = r;
	return 0;
}

/* xz's stream header: a recording compressed with xz (the lab's .rec.xz) starts with it. */
static const unsigned char xz_magic[6] = {0xfd, '7', 'z', 'X', 'Z', 0};

/* @f holds an xz stream: decompresses it with xz(1) into an anonymous memory file and returns
 * that, at its start (@f is closed). The reader seeks (a replay reads the file twice), which a
 * pipe from xz could not do. NULL with errno set (ENOEXEC: xz failed or is not installed). */
static FILE *xz_decompressed(FILE *f)
{
	int out = memfd_create("mmlockd-recording", MFD_CLOEXEC), status = 0;
	pid_t pid = out < 0 ? -1 : fork();
	if (pid == 0) {
		/* The child: xz -dc < the file > the memory file; the descriptors lose CLOEXEC
		 * through dup2. */
		if (dup2(fileno(f), 0) < 0 || dup2(out, 1) < 0 || lseek(0, 0, SEEK_SET) < 0)
			_exit(126);
		execlp("xz", "xz", "-dcq", (char *)NULL);
		_exit(127);
	}
	int err = pid < 0 ? errno : 0;
	fclose(f);
	if (pid > 0 &&
	    (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0))
		err = ENOEXEC;
	FILE *g = err || lseek(out, 0, SEEK_SET) < 0 ? NULL : fdopen(out, "rb");
	if (!g) {
		err = err ? err : errno;
		if (out >= 0)
			close(out);
		errno = err;
	}
	return g;
}

int mm_rec_open(const char *path, struct mm_rec_reader **ret)
{
	FILE *f = fopen(path, "rbe");
	unsigned char head[sizeof(xz_magic)];
	struct stat st;
	int r;

	if (!f)
		return -errno;
	if (fread(head, 1, sizeof(head), f) == sizeof(head) &&
	    !memcmp(head, xz_magic, sizeof(head)) && !(f = xz_decompressed(f)))
		return -errno;
	rewind(f);
	r = mm_rec_open_stream(f,
			       fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode)
				       ? (uint64_t)st.st_size
				       : UINT64_MAX,
			       ret);
	if (r < 0)
		fclose(f);
	return r;
}

void mm_rec_close(struct mm_rec_reader *r)
{
	if (!r)
		return;
	fclose(r->f);
	free(r->buf);
	free(r);
}

int mm_rec_rewind(struct mm_rec_reader *r)
{
	return fseek(r->f, 8, SEEK_SET) == 0 ? 0 : -errno;
}

int mm_rec_next(struct mm_rec_reader *r, struct mm_chunk *ret)
{
	uint32_t hdr[2];
	r->offset = ftello(r->f);
	size_t n = fread(hdr, 1, sizeof(hdr), r->f);
	if (n == 0 && feof(r->f))
		return 0;
	if (n != sizeof(hdr)) {
		mm_set_err(r->error, sizeof(r->error), "truncated chunk header");
		return -EINVAL;
	}
	if (hdr[1] > MM_RECORDING_CHUNK_MAX) {
		mm_set_err(r->error, sizeof(r->error),
			   "chunk of type %u claims %u bytes (at most %u)", hdr[0], hdr[1],
			   MM_RECORDING_CHUNK_MAX);
		return -EINVAL;
	}
	size_t padded = (hdr[1] + 7u) & ~(size_t)7u;
	uint64_t left = r->size == UINT64_MAX || r->size < (uint64_t)r->offset + sizeof(hdr)
				? UINT64_MAX
				: r->size - (uint64_t)r->offset - sizeof(hdr);
	if (padded > left) {
		mm_set_err(r->error, sizeof(r->error),
			   "chunk of type %u truncated: it claims %u bytes, the file has %llu left",
			   hdr[0], hdr[1], (unsigned long long)left);
		return -EINVAL;
	}
	/* Never a NULL payload pointer, not even for an empty first chunk: decoders do pointer
	 * arithmetic on it (fuzz_recording: UBSan, zero offset applied to NULL). */
	if (padded > r->cap || !r->buf) {
		size_t cap = padded > 8 ? padded : 8;
		uint64_t *b = realloc(r->buf, cap);
		if (!b) {
			mm_set_err(r->error, sizeof(r->error), "out of memory");
			return -ENOMEM;
		}
		r->buf = b;
		r->cap = cap;
	}
	if (padded && fread(r->buf, 1, padded, r->f) != padded) {
		mm_set_err(r->error, sizeof(r->error), "chunk of type %u truncated (%u bytes)",
			   hdr[0], hdr[1]);
		return -EINVAL;
	}
	*ret = (struct mm_chunk){hdr[0], hdr[1], (uint8_t *)r->buf};
	return 1;
}

long long mm_rec_offset(const struct mm_rec_reader *r)
{
	return r->offset;
}

const char *mm_rec_error(const struct mm_rec_reader *r)
{
	return r->error;
}

/* The NUL-terminated string at @off in @c, advancing @off past it; NULL if unterminated. */
static const char *take_str(const struct mm_chunk *c, size_t *off)
{
	if (*off >= c->len)
		return NULL;
	const char *s = (const char *)c->data + *off;
	size_t n = strnlen(s, c->len - *off);
	if (n == c->len - *off)
		return NULL;
	*off += n + 1;
	return s;
}

int mm_rec_parse_stream(const struct mm_chunk *c, struct mm_rec_stream *ret)
{
	if (c->type != MM_CHUNK_STREAM || c->len < 16)
		return -EINVAL;
	uint32_t idx, task;
	memcpy(&idx, c->data, 4);
	memcpy(&task, c->data + 4, 4);
	struct mm_rec_stream s = {.index = idx, .is_task = task != 0};
	memcpy(&s.sample_type, c->data + 8, 8);
	size_t off = 16;
	if (!(s.system = take_str(c, &off)) || !(s.name = take_str(c, &off)) ||
	    !(s.format = take_str(c, &off)))
		return -EINVAL;
	*ret = s;
	return 0;
}

int mm_rec_parse_proc(const struct mm_chunk *c, uint32_t *ret_pid, int *ret_result,
		      struct mm_proc_ident *ret_id)
{
	if (c->type != MM_CHUNK_PROC || c->len < 16 + MM_COMM_LEN + 1)
		return -EINVAL;
	struct mm_proc_ident id = {0};
	int32_t res;
	memcpy(ret_pid, c->data, 4);
	memcpy(&res, c->data + 4, 4);
	memcpy(&id.start_ms, c->data + 8, 8);
	memcpy(id.comm, c->data + 16, MM_COMM_LEN);
	id.comm[MM_COMM_LEN - 1] = '\0';
	size_t off = 16 + MM_COMM_LEN;
	const char *cg = take_str(c, &off);
	if (!cg)
		return -EINVAL;
	snprintf(id.cgroup, sizeof(id.cgroup), "%s", cg);
	*ret_result = res;
	*ret_id = id;
	return 0;
}

int mm_rec_parse_record(const struct mm_chunk *c, unsigned *ret_stream, uint64_t *ret_time,
			const struct perf_event_header **ret_hdr)
{
	if (c->type != MM_CHUNK_RECORD || c->len < 16 + sizeof(struct perf_event_header))
		return -EINVAL;
	uint32_t s;
	memcpy(&s, c->data, 4);
	memcpy(ret_time, c->data + 8, 8);
	const struct perf_event_header *h = (const void *)(c->data + 16);
	if (h->size < sizeof(*h) || h->size > c->len - 16)
		return -EINVAL;
	*ret_stream = s;
	*ret_hdr = h;
	return 0;
}

int mm_rec_parse_symbol(const struct mm_chunk *c, uint64_t *ret_addr, char *ret_type,
			const char **ret_name)
{
	if (c->type != MM_CHUNK_SYMBOL || c->len < 10)
		return -EINVAL;
	memcpy(ret_addr, c->data, 8);
	*ret_type = (char)c->data[8];
	size_t off = 9;
	*ret_name = take_str(c, &off);
	return *ret_name ? 0 : -EINVAL;
}

int mm_rec_meta_get(const struct mm_chunk *c, const char *key, char *buf, size_t size)
{
	size_t klen = strlen(key);
	const char *p = (const char *)c->data, *end = p + c->len;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		if ((size_t)(eol - p) > klen && !memcmp(p, key, klen) && p[klen] == '=') {
			size_t n = (size_t)(eol - p) - klen - 1;
			if (n >= size)
				n = size - 1;
			memcpy(buf, p + klen + 1, n);
			buf[n] = '\0';
			return 0;
		}
		p = eol + 1;
	}
	return -ENOENT;
}

static uint64_t wall_of(int64_t offset_ms, uint64_t t)
{
	int64_t ms = (int64_t)(t / 1000000) + offset_ms;
	return ms > 0 ? (uint64_t)ms : 0;
}

static int feed_time(struct mm_rec_feeder *f, uint64_t t, char *why, size_t whylen)
{
	bool stepped = f->step_at_ns && t >= f->step_at_ns;
	uint64_t wall = wall_of(stepped ? f->step_to_wall_ms : f->mono_to_wall_ms, t);

	if (wall > f->latest_ms) {
		mm_set_err(why, whylen, "time stamp %llu ns lies in the future",
			   (unsigned long long)t);
		return -EINVAL;
	}
	/* A record before the last step is in the window the step cut: it says nothing of the
	 * last window's end. */
	if (wall > f->last_ms && (stepped || !f->step_at_ns))
		f->last_ms = wall;
	return 0;
}

/* A CLOCK chunk: the live run's step, for the host and for the feeder's own times. */
static int feed_clock(struct mm_rec_feeder *f, const struct mm_chunk *c, char *why, size_t whylen)
{
	uint64_t at;
	int64_t v[2];

	if (c->len != 24) {
		mm_set_err(why, whylen, "malformed clock chunk");
		return -EINVAL;
	}
	memcpy(&at, c->data, 8);
	memcpy(v, c->data + 8, 16);
	if (f->step_at_ns)
		f->mono_to_wall_ms = f->step_to_wall_ms;
	f->step_at_ns = at ? at : 1;
	f->step_to_wall_ms = v[0];
	f->last_ms = wall_of(v[0], at); /* where the new clock's first window starts */
	mm_host_clock_step(f->host, v[0], at, v[1]);
	return 0;
}

int mm_rec_feed(struct mm_rec_feeder *f, const struct mm_chunk *c, char *why, size_t whylen)
{
	const struct perf_event_header *hdr;
	unsigned stream;
	uint64_t t;

	switch (c->type) {
	case MM_CHUNK_RECORD:
		if (mm_rec_parse_record(c, &stream, &t, &hdr) < 0) {
			mm_set_err(why, whylen, "malformed record chunk");
			return -EINVAL;
		}
		if (t && feed_time(f, t, why, whylen) < 0)
			return -EINVAL;
		mm_host_feed(f->host, stream, t, hdr);
		return 0;
	case MM_CHUNK_TICK:
		mm_host_tick(f->host);
		return 0;
	case MM_CHUNK_ADVANCE:
		if (c->len != 8) {
			mm_set_err(why, whylen, "malformed advance chunk");
			return -EINVAL;
		}
		memcpy(&t, c->data, 8);
		uint64_t last = f->last_ms;
		if (feed_time(f, t, why, whylen) < 0)
			return -EINVAL;
		f->last_ms = last; /* a horizon is not a record */
		mm_host_advance(f->host, t);
		return 0;
	case MM_CHUNK_CLOCK:
		return feed_clock(f, c, why, whylen);
	default:
		return 0;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* --- recorder --- */

#include "htab.h"
#include "sample.h"
#include "symbols.h"

#define MAX_FOLLOWED 4096

struct mm_recorder {
	FILE *f;
	int err; /* first write error */
	const struct mm_symbols *syms;
	struct mm_htab touched; /* start addresses of symbols the records touch (8-byte keys) */
	uint32_t followed[MAX_FOLLOWED];
	unsigned nfollowed;
	bool filtering, children;
	uint64_t count;
};

int mm_recorder_open(const char *path, const struct mm_symbols *syms, struct mm_recorder **ret)
{
	struct mm_recorder *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	int ok = mm_htab_init(&r->touched, 8, 8) == 0;
	r->f = fopen(path, "wbe");
	if (!r->f || !ok) {
		int e = r->f ? ENOMEM : errno;
		if (r->f)
			fclose(r->f);
		mm_htab_free(&r->touched);
		free(r);
		return -e;
	}
	setvbuf(r->f, NULL, _IOFBF, 1 << 20);
	r->syms = syms;
	r->err = mm_rec_write_magic(r->f);
	*ret = r;
	return 0;
}

static bool followed(const struct mm_recorder *r, uint32_t pid)
{
	for (unsigned i = 0; i < r->nfollowed; i++)
		if (r->followed[i] == pid)
			return true;
	return false;
}

void mm_recorder_follow(struct mm_recorder *r, uint32_t pid, bool children)
{
	r->filtering = true;
	r->children |= children;
	if (!followed(r, pid) && r->nfollowed < MAX_FOLLOWED)
		r->followed[r->nfollowed++] = pid;
}

bool mm_recorder_wants(struct mm_recorder *r, const struct perf_event_header *hdr,
		       uint64_t sample_type, bool is_task)
{
	if (!r->filtering || hdr->type == PERF_RECORD_LOST)
		return true;
	if (is_task) {
		const uint32_t *ids = (const uint32_t *)(hdr + 1);
		if (hdr->size < sizeof(*hdr) + 16)
			return false;
		/* COMM: pid, tid; FORK and EXIT: pid, ppid, tid, ptid */
		if (hdr->type == PERF_RECORD_FORK && r->children && ids[0] == ids[2] &&
		    followed(r, ids[1]))
			mm_recorder_follow(r, ids[0], true);
		return followed(r, ids[0]);
	}
	struct mm_sample s;
	return mm_sample_parse(hdr, sample_type, &s) == 0 && followed(r, s.pid);
}

static void check(struct mm_recorder *r, int err)
{
	if (err < 0 && !r->err)
		r->err = err;
}

void mm_recorder_meta(struct mm_recorder *r, const char *text)
{
	check(r, mm_rec_write_chunk(r->f, MM_CHUNK_META, text, strlen(text), NULL, 0));
}

void mm_recorder_stream(struct mm_recorder *r, unsigned index, bool is_task, uint64_t sample_type,
			const char *system, const char *name, const char *format)
{
	check(r, mm_rec_write_stream(r->f, index, is_task, sample_type, system, name, format));
}

static void touch(struct mm_recorder *r, uint64_t addr)
{
	uint64_t start;
	if (mm_symbols_find(r->syms, addr, &start))
		check(r, mm_htab_get(&r->touched, &start, true, SIZE_MAX) ? 0 : -ENOMEM);
}

void mm_recorder_record(struct mm_recorder *r, unsigned stream, uint64_t time_ns,
			const struct perf_event_header *hdr, uint64_t sample_type)
{
	struct mm_sample s;
	if (r->syms && hdr->type == PERF_RECORD_SAMPLE &&
	    mm_sample_parse(hdr, sample_type, &s) == 0) {
		for (uint64_t i = 0; i < s.nr_ips; i++)
			if (s.ips[i] < PERF_CONTEXT_MAX)
				touch(r, s.ips[i]);
		/* Tracepoint fields that hold kernel addresses (a static lock's address). */
		for (uint32_t off = 0; off + 8 <= s.raw_size; off += 8) {
			uint64_t v;
			memcpy(&v, (const uint8_t *)s.raw + off, 8);
			touch(r, v);
		}
	}
	check(r, mm_rec_write_record(r->f, stream, time_ns, hdr));
	r->count++;
}

void mm_recorder_tick(struct mm_recorder *r, uint64_t time_ns)
{
	check(r, mm_rec_write_chunk(r->f, MM_CHUNK_TICK, &time_ns, 8, NULL, 0));
}

static bool tap_wants(void *ctx, const struct perf_event_header *hdr, uint64_t sample_type,
		      bool is_task)
{
	return mm_recorder_wants(ctx, hdr, sample_type, is_task);
}

static void tap_record(void *ctx, unsigned stream, uint64_t time_ns,
		       const struct perf_event_header *hdr, uint64_t sample_type)
{
	mm_recorder_record(ctx, stream, time_ns, hdr, sample_type);
}

static void tap_tick(void *ctx, uint64_t time_ns)
{
	mm_recorder_tick(ctx, time_ns);
}

static void tap_advance(void *ctx, uint64_t horizon_ns)
{
	struct mm_recorder *r = ctx;
	check(r, mm_rec_write_chunk(r->f, MM_CHUNK_ADVANCE, &horizon_ns, 8, NULL, 0));
}

static void tap_clock_step(void *ctx, uint64_t at_ns, int64_t mono_to_wall_ms,
			   int64_t starts_moved_ms)
{
	struct mm_recorder *r = ctx;
	int64_t v[2] = {mono_to_wall_ms, starts_moved_ms};
	check(r, mm_rec_write_chunk(r->f, MM_CHUNK_CLOCK, &at_ns, 8, v, 16));
}

const struct mm_tap mm_recorder_tap = {
	.wants = tap_wants,
	.record = tap_record,
	.tick = tap_tick,
	.advance = tap_advance,
	.clock_step = tap_clock_step,
};

int mm_recorder_lookup(void *ctx, uint32_t pid, struct mm_proc_ident *ret)
{
	struct mm_recorder *r = ctx;
	struct mm_proc_ident id = {0};
	int res = mm_proc_lookup_procfs(NULL, pid, &id);
	check(r, mm_rec_write_proc(r->f, pid, res, &id));
	if (res == 0)
		*ret = id;
	return res;
}

uint64_t mm_recorder_count(const struct mm_recorder *r)
{
	return r->count;
}

/* The symbols the records touched, by address. */
static void write_symbols(struct mm_recorder *r)
{
	uint64_t *addrs = malloc((r->touched.used ? r->touched.used : 1) * sizeof(*addrs));
	size_t n = 0;

	if (!addrs) {
		check(r, -ENOMEM);
		return;
	}
	for (size_t i = 0; i < r->touched.cap; i++) {
		const uint64_t *a = mm_htab_at(&r->touched, i);
		if (a)
			addrs[n++] = *a;
	}
	qsort(addrs, n, sizeof(*addrs), cmp_u64);
	for (size_t i = 0; i < n; i++) {
		const char *name = mm_symbols_find(r->syms, addrs[i], NULL);
		if (name)
			check(r, mm_rec_write_symbol(r->f, addrs[i], 't', name));
	}
	free(addrs);
}

int mm_recorder_close(struct mm_recorder *r)
{
	if (!r)
		return 0;
	write_symbols(r);
	if (fflush(r->f) != 0)
		check(r, -errno);
	if (fclose(r->f) != 0)
		check(r, -errno);
	int err = r->err;
	mm_htab_free(&r->touched);
	free(r);
	return err;
}
