/*
 * The taskstats exit parser on hand-built netlink buffers: one and two messages, the per-tgid
 * aggregate that must not count twice, structs shorter (older kernel) and longer (newer kernel)
 * than our header's, padding attributes, other message types and families skipped, and truncated
 * or corrupted buffers that must fail cleanly. As root, also live: a child that faults in a known
 * number of pages exits and its message must carry exactly the count getrusage() saw, a
 * two-thread child gives exactly two calls adding up to that count, and a listener with a tiny
 * receive buffer must count ENOBUFS and keep receiving. Not root (or no CAP_NET_ADMIN, or not in
 * the initial namespaces): the live checks print why they are skipped.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* libperf's tools/include/uapi/linux/types.h shadows the system one without the posix types
 * that <linux/netlink.h> (through <linux/kernel.h>) needs: include them first. */
#include <linux/posix_types.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/taskstats.h>

#include "check.h"
#include "taskstats.h"

#define FAMILY 0x17 /* any id >= GENL_MIN_ID */

/* ---- building buffers ---- */

struct nlbuf {
	unsigned char b[16384];
	size_t len;
};

/* Appends @len bytes of @data (zeros when NULL) padded to 4; returns their offset. */
static size_t put(struct nlbuf *nb, const void *data, size_t len)
{
	size_t off = nb->len;
	if (data)
		memcpy(nb->b + off, data, len);
	else
		memset(nb->b + off, 0, len);
	memset(nb->b + off + len, 0, NLA_ALIGN(len) - len);
	nb->len += NLA_ALIGN(len);
	return off;
}

static size_t msg_begin(struct nlbuf *nb, uint16_t type, uint8_t cmd)
{
	struct nlmsghdr nh = {.nlmsg_type = type};
	struct genlmsghdr gh = {.cmd = cmd, .version = 1};
	size_t off = put(nb, &nh, sizeof(nh));
	put(nb, &gh, sizeof(gh));
	return off;
}

static void msg_end(struct nlbuf *nb, size_t off)
{
	uint32_t len = (uint32_t)(nb->len - off);
	memcpy(nb->b + off + offsetof(struct nlmsghdr, nlmsg_len), &len, sizeof(len));
}

static size_t nest_begin(struct nlbuf *nb, uint16_t type)
{
	struct nlattr nla = {.nla_type = type};
	return put(nb, &nla, sizeof(nla));
}

static void nest_end(struct nlbuf *nb, size_t off)
{
	uint16_t len = (uint16_t)(nb->len - off);
	memcpy(nb->b + off + offsetof(struct nlattr, nla_len), &len, sizeof(len));
}

static void attr(struct nlbuf *nb, uint16_t type, const void *data, size_t len)
{
	struct nlattr nla = {.nla_len = (uint16_t)(NLA_HDRLEN + len), .nla_type = type};
	put(nb, &nla, sizeof(nla));
	put(nb, data, len);
}

/* AGGR_PID or AGGR_TGID (by @aggr) with the id and @len bytes of @stats (zero-extended when @len
 * exceeds the struct, as a newer kernel's larger struct would be). */
static void add_aggr(struct nlbuf *nb, uint16_t aggr, uint32_t id, const struct taskstats *ts,
		     size_t len, bool null_pad)
{
	unsigned char big[sizeof(struct taskstats) + 64];
	memset(big, 0xAB, sizeof(big)); /* a newer kernel's extra fields: must be ignored */
	memcpy(big, ts, sizeof(*ts));
	size_t nest = nest_begin(nb, aggr);
	attr(nb, aggr == TASKSTATS_TYPE_AGGR_PID ? TASKSTATS_TYPE_PID : TASKSTATS_TYPE_TGID, &id,
	     sizeof(id));
	if (null_pad) /* what nla_reserve_64bit() adds where unaligned access is slow */
		attr(nb, TASKSTATS_TYPE_NULL, NULL, 0);
	attr(nb, TASKSTATS_TYPE_STATS, big, len);
	nest_end(nb, nest);
}

static struct taskstats stats(uint32_t pid, uint32_t tgid, uint64_t minflt, uint64_t majflt,
			      const char *comm)
{
	struct taskstats ts;
	memset(&ts, 0, sizeof(ts));
	ts.version = TASKSTATS_VERSION;
	ts.ac_pid = pid;
	ts.ac_tgid = tgid;
	ts.ac_minflt = minflt;
	ts.ac_majflt = majflt;
	ts.ac_btime = 1700000000u;
	ts.ac_btime64 = 1700000000u;
	ts.ac_etime = 123456;
	strncpy(ts.ac_comm, comm, sizeof(ts.ac_comm) - 1);
	return ts;
}

/* One exit message: AGGR_PID, and AGGR_TGID with @tg when not NULL. */
static void add_exit(struct nlbuf *nb, const struct taskstats *ts, size_t len,
		     const struct taskstats *tg)
{
	size_t m = msg_begin(nb, FAMILY, TASKSTATS_CMD_NEW);
	add_aggr(nb, TASKSTATS_TYPE_AGGR_PID, ts->ac_pid, ts, len, false);
	if (tg)
		add_aggr(nb, TASKSTATS_TYPE_AGGR_TGID, tg->ac_tgid, tg, sizeof(*tg), false);
	msg_end(nb, m);
}

/* ---- collecting ---- */

struct got {
	int n;
	struct mm_task_exit e[8];
};

static void collect(void *ctx, const struct mm_task_exit *e)
{
	struct got *g = ctx;
	if (g->n < 8)
		g->e[g->n] = *e;
	g->n++;
}

/* Parses a private, exactly sized copy so an overread is caught by a sanitizer. */
static long parse_copy(const void *buf, size_t len, struct got *g)
{
	void *copy = malloc(len ? len : 1);
	memcpy(copy, buf, len);
	long r = mm_taskstats_parse(copy, len, FAMILY, collect, g);
	free(copy);
	return r;
}

/* An exit as parsed: its ids, its fault counts and (unless NULL) its name. */
static void check_exit(const struct mm_task_exit *e, uint32_t pid, uint32_t tgid, uint64_t minflt,
		       uint64_t majflt, const char *comm)
{
	CHECK_U64(e->pid, pid);
	CHECK_U64(e->tgid, tgid);
	CHECK_U64(e->minflt, minflt);
	CHECK_U64(e->majflt, majflt);
	if (comm)
		CHECK_STR(e->comm, comm);
}

/* ---- pure tests ---- */

static void test_one_message(void)
{
	struct nlbuf nb = {0};
	struct taskstats ts = stats(4242, 4200, 1000, 7, "a-very-long-thread-name");
	add_exit(&nb, &ts, sizeof(ts), NULL);
	struct got g = {0};
	CHECK_U64(parse_copy(nb.b, nb.len, &g), 1);
	CHECK_U64(g.n, 1);
	/* 15 characters and the NUL */
	check_exit(&g.e[0], 4242, 4200, 1000, 7, "a-very-long-thr");
	CHECK_U64(g.e[0].btime_s, 1700000000u);
	CHECK_U64(g.e[0].version, TASKSTATS_VERSION);
	CHECK_U64(g.e[0].stats_len, sizeof(ts));
	/* The struct sits 4 bytes off an 8-byte boundary here, as it does in the kernel's buffer.
	 */
	CHECK_U64((NLMSG_HDRLEN + GENL_HDRLEN + 2 * NLA_HDRLEN + 4 + NLA_HDRLEN) % 8, 4);
}

static void test_two_messages_in_one_buffer(void)
{
	struct nlbuf nb = {0};
	struct taskstats a = stats(10, 10, 1, 2, "a"), b = stats(11, 10, 3, 4, "b");
	add_exit(&nb, &a, sizeof(a), NULL);
	add_exit(&nb, &b, sizeof(b), NULL);
	struct got g = {0};
	CHECK_U64(parse_copy(nb.b, nb.len, &g), 2);
	CHECK_U64(g.n, 2);
	check_exit(&g.e[0], 10, 10, 1, 2, "a");
	check_exit(&g.e[1], 11, 10, 3, 4, "b");
}

static void test_tgid_aggregate_is_not_a_second_exit(void)
{
	struct nlbuf nb = {0};
	struct taskstats pid = stats(501, 500, 30, 1, "worker");
	struct taskstats tg = stats(0, 500, 9000, 90, "main"); /* the process's sum */
	add_exit(&nb, &pid, sizeof(pid), &tg);
	struct got g = {0};
	CHECK_U64(parse_copy(nb.b, nb.len, &g), 1);
	CHECK_U64(g.n, 1);
	check_exit(&g.e[0], 501, 500, 30, 1, "worker");
}

static void test_last_task_of_a_process_is_marked(void)
{
	struct nlbuf nb = {0};
	struct taskstats a = stats(501, 500, 30, 1, "worker"), b = stats(500, 500, 40, 0, "main");
	b.ac_flag = 0x20; /* AGROUP: the kernel's group_dead */
	add_exit(&nb, &a, sizeof(a), NULL);
	add_exit(&nb, &b, sizeof(b), NULL);
	struct got g = {0};
	CHECK_U64(parse_copy(nb.b, nb.len, &g), 2);
	CHECK(!g.e[0].group_dead);
	CHECK(g.e[1].group_dead);
	/* Before version 12 the flag meant nothing: not read. */
	b.version = 11;
	nb.len = 0;
	add_exit(&nb, &b, sizeof(b), NULL);
	g.n = 0;
	CHECK_U64(parse_copy(nb.b, nb.len, &g), 1);
	CHECK(!g.e[0].group_dead);
}

static void test_old_short_struct(void)
{
	struct taskstats ts = stats(77, 70, 5, 6, "old");

	/* A version 11 kernel: the struct ends after compact_delay_total, before ac_tgid. */
	ts.version = 11;
	struct nlbuf nb = {0};
	add_exit(&nb, &ts, offsetof(struct taskstats, ac_tgid), NULL);
	struct got g = {0};
	CHECK_U64(parse_copy(nb.b, nb.len, &g), 1);
	check_exit(&g.e[0], 77, 0, 5, 6, "old");
	CHECK_U64(g.e[0].btime_s, 1700000000u); /* ac_btime64 */
	CHECK_U64(g.e[0].version, 11);
	CHECK_U64(g.e[0].stats_len, offsetof(struct taskstats, ac_tgid));

	/* Version 9: no ac_btime64 either, ac_btime is used. */
	ts.version = 9;
	ts.ac_btime = 1600000000u;
	nb.len = 0;
	add_exit(&nb, &ts, offsetof(struct taskstats, ac_btime64), NULL);
	memset(&g, 0, sizeof(g));
	CHECK_U64(parse_copy(nb.b, nb.len, &g), 1);
	CHECK_U64(g.e[0].btime_s, 1600000000u);
	CHECK_U64(g.e[0].minflt, 5);

	/* Cut in the middle of ac_minflt: it and everything after read as 0, comm survives. */
	nb.len = 0;
	add_exit(&nb, &ts, offsetof(struct taskstats, ac_minflt) + 3, NULL);
	memset(&g, 0, sizeof(g));
	CHECK_U64(parse_copy(nb.b, nb.len, &g), 1);
	CHECK_U64(g.e[0].minflt, 0);
	CHECK_U64(g.e[0].majflt, 0);
	CHECK_STR(g.e[0].comm, "old");

	/* Nothing but the version, then not even that. */
	for (size_t len = 0; len <= 2; len += 2) {
		nb.len = 0;
		add_exit(&nb, &ts, len, NULL);
		memset(&g, 0, sizeof(g));
		CHECK_U64(parse_copy(nb.b, nb.len, &g), 1);
		CHECK_U64(g.e[0].pid, 77);
		CHECK_U64(g.e[0].version, len ? 9 : 0);
		CHECK_U64(g.e[0].minflt, 0);
		CHECK_U64(g.e[0].btime_s, 0);
		CHECK_STR(g.e[0].comm, "");
	}
}

static void test_newer_larger_struct_and_null_padding(void)
{
	struct taskstats ts = stats(90, 89, 11, 12, "new");
	ts.version = TASKSTATS_VERSION + 3;
	struct nlbuf nb = {0};
	size_t m = msg_begin(&nb, FAMILY, TASKSTATS_CMD_NEW);
	add_aggr(&nb, TASKSTATS_TYPE_AGGR_PID, 90, &ts, sizeof(ts) + 40, true);
	msg_end(&nb, m);
	struct got g = {0};
	CHECK_U64(parse_copy(nb.b, nb.len, &g), 1);
	check_exit(&g.e[0], 90, 89, 11, 12, "new");
	CHECK_U64(g.e[0].version, TASKSTATS_VERSION + 3);
	CHECK_U64(g.e[0].stats_len, sizeof(ts) + 40);
}

static void test_other_types_and_families_skipped(void)
{
	struct nlbuf nb = {0};
	struct taskstats ts = stats(300, 300, 8, 0, "x");

	/* An error/acknowledgement, a foreign family carrying an exit-shaped payload, another
	 * command of our family, NLMSG_DONE, then the one real exit. */
	struct nlmsghdr eh = {.nlmsg_type = NLMSG_ERROR};
	struct nlmsgerr ee = {.error = -EPERM};
	size_t m = put(&nb, &eh, sizeof(eh));
	put(&nb, &ee, sizeof(ee));
	msg_end(&nb, m);
	m = msg_begin(&nb, FAMILY + 1, TASKSTATS_CMD_NEW);
	add_aggr(&nb, TASKSTATS_TYPE_AGGR_PID, 999, &ts, sizeof(ts), false);
	msg_end(&nb, m);
	m = msg_begin(&nb, FAMILY, TASKSTATS_CMD_GET);
	add_aggr(&nb, TASKSTATS_TYPE_AGGR_PID, 998, &ts, sizeof(ts), false);
	msg_end(&nb, m);
	struct nlmsghdr dh = {.nlmsg_len = NLMSG_HDRLEN, .nlmsg_type = NLMSG_DONE};
	put(&nb, &dh, sizeof(dh));
	add_exit(&nb, &ts, sizeof(ts), NULL);

	struct got g = {0};
	CHECK_U64(parse_copy(nb.b, nb.len, &g), 1);
	CHECK_U64(g.n, 1);
	CHECK_U64(g.e[0].pid, 300);

	/* Only the foreign family: nothing. */
	nb.len = 0;
	m = msg_begin(&nb, FAMILY + 1, TASKSTATS_CMD_NEW);
	add_aggr(&nb, TASKSTATS_TYPE_AGGR_PID, 999, &ts, sizeof(ts), false);
	msg_end(&nb, m);
	memset(&g, 0, sizeof(g));
	CHECK_U64(parse_copy(nb.b, nb.len, &g), 0);
	CHECK_U64(g.n, 0);
	CHECK_U64(mm_taskstats_parse(NULL, 0, FAMILY, collect, &g), 0);
}

static void test_truncated_at_every_length(void)
{
	struct nlbuf nb = {0};
	struct taskstats a = stats(1, 1, 1, 1, "a"), b = stats(2, 1, 2, 2, "b");
	add_exit(&nb, &a, sizeof(a), NULL);
	size_t first = nb.len;
	add_exit(&nb, &b, sizeof(b), &a);
	for (size_t len = 0; len < nb.len; len++) {
		struct got g = {0};
		long r = parse_copy(nb.b, len, &g);
		long want = len == 0 ? 0 : len == first ? 1 : -EINVAL;
		if (r != want || g.n != (len >= first ? 1 : 0)) {
			fprintf(stderr, "length %zu: %ld exits, %d calls\n", len, r, g.n);
			CHECK(!"truncated buffer parsed wrongly");
			break;
		}
	}
	struct got g = {0};
	CHECK_U64(parse_copy(nb.b, nb.len, &g), 2);
}

static void set_u16(struct nlbuf *nb, size_t off, uint16_t v)
{
	memcpy(nb->b + off, &v, sizeof(v));
}

static void test_corrupt_lengths(void)
{
	struct taskstats ts = stats(5, 5, 5, 5, "c");
	struct nlbuf ok = {0};
	add_exit(&ok, &ts, sizeof(ts), NULL);
	/* Offsets: nest at 20, PID attribute at 24 (payload 28), STATS attribute at 32. */
	const size_t nest = NLMSG_HDRLEN + GENL_HDRLEN, pid = nest + NLA_HDRLEN,
		     st = pid + NLA_HDRLEN + 4;
	struct nlbuf nb;
	struct got g;

	nb = ok; /* the nest claims more than the message holds */
	set_u16(&nb, nest, (uint16_t)(nb.len - nest + 4));
	CHECK_U64(parse_copy(nb.b, nb.len, &g), (uint64_t)-EINVAL);
	nb = ok; /* an attribute shorter than its own header */
	set_u16(&nb, st, 3);
	CHECK_U64(parse_copy(nb.b, nb.len, &g), (uint64_t)-EINVAL);
	nb = ok; /* a PID of 2 bytes */
	set_u16(&nb, pid, NLA_HDRLEN + 2);
	CHECK_U64(parse_copy(nb.b, nb.len, &g), (uint64_t)-EINVAL);
	nb = ok; /* STATS renamed: an AGGR_PID without stats */
	set_u16(&nb, st + 2, 99);
	CHECK_U64(parse_copy(nb.b, nb.len, &g), (uint64_t)-EINVAL);
	nb = ok; /* a message length under the header's */
	set_u16(&nb, 0, 8);
	CHECK_U64(parse_copy(nb.b, nb.len, &g), (uint64_t)-EINVAL);
	nb = ok; /* a message too short for its genl header */
	set_u16(&nb, 0, NLMSG_HDRLEN + 2);
	CHECK_U64(parse_copy(nb.b, NLMSG_HDRLEN + 2, &g), (uint64_t)-EINVAL);

	/* Random corruption: any answer but a crash or an overread, and never more exits than
	 * messages. */
	srand(4242);
	struct nlbuf two = {0};
	add_exit(&two, &ts, sizeof(ts), &ts);
	add_exit(&two, &ts, 40, NULL);
	for (int i = 0; i < 50000; i++) {
		nb = two;
		int flips = 1 + rand() % 4;
		for (int f = 0; f < flips; f++)
			nb.b[rand() % nb.len] = (unsigned char)rand();
		memset(&g, 0, sizeof(g));
		size_t len = (size_t)rand() % (nb.len + 1);
		long r = parse_copy(nb.b, len, &g);
		if (!(r == -EINVAL || (r >= 0 && r <= 2 && r == g.n)) || g.n > 2) {
			fprintf(stderr, "iteration %d: %ld exits, %d calls\n", i, r, g.n);
			CHECK(!"corrupted buffer parsed wrongly");
			break;
		}
	}
}

/* ---- live (root) ---- */

struct find {
	uint32_t tgid;
	int want; /* messages expected for @tgid (0 counts as 1) */
	int matches;
	long exits;
	uint64_t minflt, majflt; /* summed over the matches */
	uint32_t pids[4];
	struct mm_task_exit e; /* the last match */
};

static void find_tgid(void *ctx, const struct mm_task_exit *e)
{
	struct find *f = ctx;
	f->exits++;
	if (e->tgid == f->tgid) {
		if (f->matches < 4)
			f->pids[f->matches] = e->pid;
		f->matches++;
		f->minflt += e->minflt;
		f->majflt += e->majflt;
		f->e = *e;
	}
}

/* Drains @t until @f->want messages for @f->tgid arrived or 2 s pass, then once more so that an
 * extra message would be seen. (The kernel sends them in do_exit() before the parent can reap the
 * child, so after waitpid() they are already queued.) */
static void drain_until_found(struct mm_taskstats *t, struct find *f)
{
	struct timespec start, now;
	int want = f->want ? f->want : 1;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		long r = mm_taskstats_drain(t, find_tgid, f);
		CHECK(r >= 0);
		if (r < 0)
			return;
		if (f->matches >= want) {
			CHECK(mm_taskstats_drain(t, find_tgid, f) >= 0);
			return;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		long left = 2000 - ((now.tv_sec - start.tv_sec) * 1000 +
				    (now.tv_nsec - start.tv_nsec) / 1000000);
		if (left <= 0)
			return;
		struct pollfd pfd = {.fd = mm_taskstats_fd(t), .events = POLLIN};
		poll(&pfd, 1, (int)left);
	}
}

#define CHILD_PAGES 256

/* One pass of what a child does last: getrusage(), send the result to the parent, exit. A fork
 * child maps file-backed pages (text, libc's wrappers) lazily and its stack and GOT are
 * copy-on-write, so any of them touched for the first time between getrusage() and the exit would
 * add a fault the report misses. Hence a rehearsal (@final false: a 0-byte write and getpid()
 * through the same instructions) before the real pass. */
static void __attribute__((noinline)) child_report(int fd, struct rusage *ru, bool final)
{
	getrusage(RUSAGE_SELF, ru);
	ssize_t want = final ? (ssize_t)sizeof(*ru) : 0;
	ssize_t w = write(fd, ru, (size_t)want);
	syscall(final ? SYS_exit_group : SYS_getpid, w == want ? 0 : 2);
}

static void child_report_and_exit(int fd)
{
	struct rusage ru;
	memset(&ru, 0, sizeof(ru)); /* getrusage() writes here: no fault inside it */
	child_report(fd, &ru, false);
	child_report(fd, &ru, true);
	_exit(4); /* not reached */
}

/* The parent's side of a @child that reports with child_report_and_exit() on @pfd: its own
 * minflt and majflt into @ru; it must exit 0. */
static void reap_child(pid_t child, int pfd[2], uint64_t ru[2])
{
	struct rusage cru;
	int status = -1;

	CHECK(child > 0);
	close(pfd[1]);
	memset(&cru, 0, sizeof(cru));
	CHECK(read(pfd[0], &cru, sizeof(cru)) == sizeof(cru));
	ru[0] = (uint64_t)cru.ru_minflt;
	ru[1] = (uint64_t)cru.ru_majflt;
	close(pfd[0]);
	CHECK(waitpid(child, &status, 0) == child);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Forks a child that runs @body (its faults), then child_report_and_exit(), and reaps it (its own
 * minflt and majflt into @ru). Returns its pid. */
static pid_t run_child(void (*body)(void), uint64_t ru[2])
{
	int pfd[2];
	pid_t child;

	CHECK(pipe(pfd) == 0);
	child = fork();
	if (child == 0) {
		body();
		child_report_and_exit(pfd[1]);
	}
	reap_child(child, pfd, ru);
	return child;
}

/* In a child: @pages anonymous pages, without huge pages (one fault per page); exits 1 if the
 * mapping fails. */
static unsigned char *child_map(size_t pages)
{
	size_t size = pages * (size_t)sysconf(_SC_PAGESIZE);
	unsigned char *m =
		mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		_exit(1);
	madvise(m, size, MADV_NOHUGEPAGE);
	return m;
}

/* Writes one byte of each page @from..@to of @m: one fault each. */
static void touch_pages(unsigned char *m, size_t from, size_t to)
{
	long pg = sysconf(_SC_PAGESIZE);

	for (size_t i = from; i < to; i++)
		m[i * (size_t)pg] = 1;
}

static void child_faults(void)
{
	touch_pages(child_map(CHILD_PAGES), 0, CHILD_PAGES);
}

/* AddressSanitizer, as gcc (__SANITIZE_ADDRESS__) and clang (__has_feature) say it. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TASKSTATS_TEST_ASAN 1
#endif
#endif
#ifndef TASKSTATS_TEST_ASAN
#define TASKSTATS_TEST_ASAN 0
#endif

/* The live tests' taskstats socket with a receive buffer of @rcvbuf bytes, or NULL after saying
 * why @test skips: not root, or the socket cannot be opened. */
static struct mm_taskstats *open_live(const char *test, size_t rcvbuf)
{
	char err[256] = "";
	struct mm_taskstats *t;

	if (geteuid() != 0) {
		printf("skip %s: not root\n", test);
		return NULL;
	}
	if (mm_taskstats_open(rcvbuf, &t, err, sizeof(err)) < 0) {
		printf("skip %s: %s\n", test, err);
		return NULL;
	}
	return t;
}

/* What a live test of one child sees: its pid, its messages (f.want of them awaited), and its own
 * getrusage() minflt and majflt. */
struct live {
	pid_t child;
	struct find f;
	uint64_t ru[2];
};

/* Opens the taskstats socket (4 MiB buffer), runs a child that does @body, and fills @l. Returns
 * the socket, or NULL when @test skips (see open_live()). */
static struct mm_taskstats *live_child(const char *test, void (*body)(void), struct live *l)
{
	struct mm_taskstats *t = open_live(test, 4u << 20);

	if (!t)
		return NULL;
	l->child = run_child(body, l->ru);
	l->f.tgid = (uint32_t)l->child;
	drain_until_found(t, &l->f);
	return t;
}

static void test_live_child_fault_count(void)
{
	struct live l = {0};
	struct mm_taskstats *t = live_child(__func__, child_faults, &l);
	const struct mm_task_exit *e = &l.f.e;

	if (!t)
		return;
	CHECK_U64(l.f.matches, 1);
	CHECK_U64(e->pid, (uint32_t)l.child);
	CHECK(e->minflt >= CHILD_PAGES);
	CHECK(l.ru[0] + l.ru[1] <= e->minflt + e->majflt);
	/* Measured: equal. Nothing runs in user space between getrusage() and _exit(), and the
	 * kernel fills the message in do_exit() before exit_mm(), where the last user-memory
	 * accesses (clear_child_tid, robust futexes) happen. Under AddressSanitizer something does:
	 * its write() interceptor reads the buffer's shadow, which can fault a shadow page in. */
#if defined(__SANITIZE_ADDRESS__) || TASKSTATS_TEST_ASAN
	CHECK(e->minflt + e->majflt <= l.ru[0] + l.ru[1] + 2);
#else
	CHECK_U64(e->minflt + e->majflt, l.ru[0] + l.ru[1]);
	CHECK_U64(e->minflt, l.ru[0]);
#endif
	CHECK(e->version >= 12);
	char comm[17] = "";
	prctl(PR_GET_NAME, comm); /* the child inherited ours */
	CHECK_STR(e->comm, comm);
	time_t now = time(NULL);
	CHECK(e->btime_s + 10 >= (uint64_t)now && e->btime_s <= (uint64_t)now);
	printf("live: child %d: taskstats minflt %" PRIu64 " majflt %" PRIu64
	       ", getrusage minflt %" PRIu64 " majflt %" PRIu64
	       "; struct taskstats version %u, %u bytes (header: version %d, %zu bytes); "
	       "rcvbuf %zu; %ld exits seen, %" PRIu64 " overflows\n",
	       (int)l.child, e->minflt, e->majflt, l.ru[0], l.ru[1], e->version, e->stats_len,
	       TASKSTATS_VERSION, sizeof(struct taskstats), mm_taskstats_rcvbuf(t), l.f.exits,
	       mm_taskstats_overflows(t));
	mm_taskstats_close(t);
}

#define THREAD_PAGES 64

static void *thread_faults(void *arg)
{
	touch_pages(arg, 0, THREAD_PAGES);
	return NULL;
}

/* RUSAGE_SELF includes the dead thread's faults. */
static void child_thread_faults(void)
{
	unsigned char *m = child_map(THREAD_PAGES + CHILD_PAGES);
	pthread_t th;

	if (pthread_create(&th, NULL, thread_faults, m) != 0 || pthread_join(th, NULL) != 0)
		_exit(3);
	touch_pages(m, THREAD_PAGES, THREAD_PAGES + CHILD_PAGES);
}

/* A two-thread child: one message per thread, none for the process sum the kernel appends to the
 * last one, and the per-thread counts add up to what getrusage(RUSAGE_SELF) saw. */
static void test_live_threads_one_call_each(void)
{
	struct live l = {.f.want = 2};
	struct mm_taskstats *t = live_child(__func__, child_thread_faults, &l);

	if (!t)
		return;
	CHECK_U64(l.f.matches, 2);
	CHECK(l.f.pids[0] != l.f.pids[1]);
	CHECK(l.f.pids[0] == (uint32_t)l.child || l.f.pids[1] == (uint32_t)l.child);
	CHECK(l.f.minflt >= THREAD_PAGES + CHILD_PAGES);
	CHECK_U64(l.f.minflt + l.f.majflt, l.ru[0] + l.ru[1]);
	printf("live: two-thread child %d: %d messages, summed minflt %" PRIu64 " majflt %" PRIu64
	       ", getrusage minflt %" PRIu64 " majflt %" PRIu64 "\n",
	       (int)l.child, l.f.matches, l.f.minflt, l.f.majflt, l.ru[0], l.ru[1]);
	mm_taskstats_close(t);
}

#define BURST 200

static void test_live_overflow_is_counted(void)
{
	struct mm_taskstats *t =
		open_live("test_live_overflow_is_counted", 1); /* the kernel's minimum */

	if (!t)
		return;
	for (int i = 0; i < BURST; i++) {
		pid_t c = fork();
		if (c == 0)
			_exit(0);
		CHECK(c > 0);
		if (c > 0)
			waitpid(c, NULL, 0);
	}
	struct find f = {.tgid = 0};
	long n = mm_taskstats_drain(t, find_tgid, &f);
	CHECK(n >= 1);
	CHECK(n < BURST);
	CHECK(mm_taskstats_overflows(t) >= 1);
	printf("live: rcvbuf %zu held %ld of %d exits, %" PRIu64 " overflows counted\n",
	       mm_taskstats_rcvbuf(t), n, BURST, mm_taskstats_overflows(t));

	/* Still registered after the overflow: the queue is empty now, so the next exit delivered
	 * is kept, whichever it is (with other exits on the machine it need not be our child's,
	 * which the kernel sends before waitpid() returns). */
	pid_t c = fork();
	if (c == 0)
		_exit(0);
	waitpid(c, NULL, 0);
	struct find again = {.tgid = (uint32_t)c};
	CHECK(mm_taskstats_drain(t, find_tgid, &again) >= 1);
	mm_taskstats_close(t);
	mm_taskstats_close(NULL);
}

int main(void)
{
	RUN(test_one_message);
	RUN(test_two_messages_in_one_buffer);
	RUN(test_tgid_aggregate_is_not_a_second_exit);
	RUN(test_last_task_of_a_process_is_marked);
	RUN(test_old_short_struct);
	RUN(test_newer_larger_struct_and_null_padding);
	RUN(test_other_types_and_families_skipped);
	RUN(test_truncated_at_every_length);
	RUN(test_corrupt_lengths);
	RUN(test_live_child_fault_count);
	RUN(test_live_threads_one_call_each);
	RUN(test_live_overflow_is_counted);
	return check_summary();
}
