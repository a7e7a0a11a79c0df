/*
 * Taskstats exit listener (see taskstats.h). Netlink framing is parsed by hand with bounds checks
 * on every header: nlmsghdr (NLMSG_ALIGN'd messages), genlmsghdr, then netlink attributes
 * (NLA_ALIGN'd, 4 bytes) whose payloads are copied out with memcpy because struct taskstats sits
 * at a 4-byte boundary in the buffer while it holds 8-byte fields. The socket side does two
 * request/acknowledge exchanges (resolve the family, register the cpumask), checks with a probe
 * thread that exits are delivered, and then only reads. Exit messages received during open are
 * stashed (whole datagrams, NLMSG_ALIGN'd) and parsed by the first drain.
 */
#include "taskstats.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* libperf's tools/include/uapi/linux/types.h shadows the system one without the posix types
 * that <linux/netlink.h> (through <linux/kernel.h>) needs: include them first. */
#include <linux/posix_types.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/taskstats.h>

#ifndef AGROUP
#define AGROUP 0x20 /* <linux/acct.h>: the last task of its process */
#endif

#include "log.h"

#define RECV_BUF_SIZE	  (64 * 1024) /* far above one exit message (under 1 KiB) */
#define PENDING_MAX	  (1024 * 1024)
#define REPLY_TIMEOUT_MS  5000
#define GENL_PAYLOAD(buf) ((buf) + NLMSG_HDRLEN + GENL_HDRLEN)

struct mm_taskstats {
	int fd;
	uint16_t family;
	uint32_t seq;
	size_t rcvbuf;
	uint64_t overflows, malformed;
	char *cpumask;		/* what was registered, for the deregistration */
	unsigned char *buf;	/* RECV_BUF_SIZE bytes */
	unsigned char *pending; /* exit datagrams received during open */
	size_t pending_len;
};

/* ---- parsing (pure) ---- */

/* The next attribute of [*p, end): 1 with its type (flags masked off) and payload, advancing *p;
 * 0 at the end; -EINVAL when a header or a length does not fit. */
static int next_attr(const unsigned char **p, const unsigned char *end, uint16_t *type,
		     const unsigned char **data, size_t *dlen)
{
	size_t rem = (size_t)(end - *p);
	struct nlattr nla;

	if (rem == 0)
		return 0;
	if (rem < NLA_HDRLEN)
		return -EINVAL;
	memcpy(&nla, *p, sizeof(nla));
	if (nla.nla_len < NLA_HDRLEN || nla.nla_len > rem)
		return -EINVAL;
	*type = nla.nla_type & NLA_TYPE_MASK;
	*data = *p + NLA_HDRLEN;
	*dlen = nla.nla_len - NLA_HDRLEN;
	/* The last attribute of a message may lack its padding. */
	size_t adv = NLA_ALIGN(nla.nla_len);
	*p += adv < rem ? adv : rem;
	return 1;
}

/* Whether field @f of struct taskstats lies entirely within the @len bytes the kernel sent. */
#define TS_HAS(len, f) ((len) >= offsetof(struct taskstats, f) + sizeof(((struct taskstats *)0)->f))

static void decode_stats(const unsigned char *data, size_t len, struct mm_task_exit *e)
{
	struct taskstats ts;

	memset(&ts, 0, sizeof(ts));
	memcpy(&ts, data, len < sizeof(ts) ? len : sizeof(ts));
	e->stats_len = len > UINT16_MAX ? UINT16_MAX : (uint16_t)len;
	e->version = TS_HAS(len, version) ? ts.version : 0;
	/* ac_tgid and ac_btime64 came with versions 12 and 10 at the end of the struct. */
	e->tgid = TS_HAS(len, ac_tgid) && e->version >= 12 ? ts.ac_tgid : 0;
	e->minflt = TS_HAS(len, ac_minflt) ? ts.ac_minflt : 0;
	e->majflt = TS_HAS(len, ac_majflt) ? ts.ac_majflt : 0;
	if (TS_HAS(len, ac_btime64) && e->version >= 10 && ts.ac_btime64)
		e->btime_s = ts.ac_btime64;
	else
		e->btime_s = TS_HAS(len, ac_btime) ? ts.ac_btime : 0;
	e->group_dead = TS_HAS(len, ac_flag) && e->version >= 12 && (ts.ac_flag & AGROUP);
	memset(e->comm, 0, sizeof(e->comm));
	if (TS_HAS(len, ac_comm))
		memcpy(e->comm, ts.ac_comm, strnlen(ts.ac_comm, sizeof(e->comm) - 1));
}

/* The genl payload of one TASKSTATS_CMD_NEW message: the number of AGGR_PID nests (each calls
 * @fn when @fn is not NULL), or -EINVAL. */
static long parse_genl(const unsigned char *p, const unsigned char *end,
		       void (*fn)(void *ctx, const struct mm_task_exit *e), void *ctx)
{
	const unsigned char *data;
	size_t dlen;
	uint16_t type;
	long n = 0;
	int r;

	while ((r = next_attr(&p, end, &type, &data, &dlen)) > 0) {
		if (type != TASKSTATS_TYPE_AGGR_PID)
			continue; /* AGGR_TGID (the process sum), NULL padding, anything newer */
		const unsigned char *q = data, *qend = data + dlen, *idata;
		size_t ilen;
		uint16_t itype;
		bool have_pid = false, have_stats = false;
		struct mm_task_exit e;

		memset(&e, 0, sizeof(e));
		while ((r = next_attr(&q, qend, &itype, &idata, &ilen)) > 0) {
			if (itype == TASKSTATS_TYPE_PID) {
				if (ilen < sizeof(uint32_t))
					return -EINVAL;
				memcpy(&e.pid, idata, sizeof(uint32_t));
				have_pid = true;
			} else if (itype == TASKSTATS_TYPE_STATS) {
				decode_stats(idata, ilen, &e);
				have_stats = true;
			}
		}
		if (r < 0 || !have_pid || !have_stats)
			return -EINVAL;
		if (fn)
			fn(ctx, &e);
		n++;
	}
	return r < 0 ? -EINVAL : n;
}

/* Parses [buf, buf + len): 0 or -EINVAL, with the number of exits reported in *emitted either
 * way. A message is validated in full before @fn sees any exit of it. */
static int parse_buf(const unsigned char *buf, size_t len, uint16_t family,
		     void (*fn)(void *ctx, const struct mm_task_exit *e), void *ctx, long *emitted)
{
	size_t off = 0;

	*emitted = 0;
	while (off < len) {
		size_t rem = len - off;
		struct nlmsghdr nh;
		struct genlmsghdr gh;

		if (rem < sizeof(nh))
			return -EINVAL;
		memcpy(&nh, buf + off, sizeof(nh));
		if (nh.nlmsg_len < NLMSG_HDRLEN || nh.nlmsg_len > rem)
			return -EINVAL;
		if (nh.nlmsg_type >= NLMSG_MIN_TYPE && nh.nlmsg_type == family) {
			if (nh.nlmsg_len < NLMSG_HDRLEN + GENL_HDRLEN)
				return -EINVAL;
			memcpy(&gh, buf + off + NLMSG_HDRLEN, sizeof(gh));
			if (gh.cmd == TASKSTATS_CMD_NEW) {
				const unsigned char *p = GENL_PAYLOAD(buf + off);
				const unsigned char *end = buf + off + nh.nlmsg_len;
				if (parse_genl(p, end, NULL, NULL) < 0)
					return -EINVAL;
				*emitted += parse_genl(p, end, fn, ctx);
			}
		}
		/* NLMSG_ERROR, NLMSG_DONE, other families and commands: skipped. */
		size_t adv = NLMSG_ALIGN(nh.nlmsg_len);
		off += adv < rem ? adv : rem;
	}
	return 0;
}

long mm_taskstats_parse(const void *buf, size_t len, uint16_t family,
			void (*fn)(void *ctx, const struct mm_task_exit *e), void *ctx)
{
	long n;

	if (!buf && len)
		return -EINVAL;
	if (parse_buf(buf, len, family, fn, ctx, &n) < 0)
		return -EINVAL;
	return n;
}

/* ---- the socket ---- */

static int send_request(struct mm_taskstats *t, uint16_t type, uint8_t cmd, uint8_t version,
			uint16_t attr, const char *str, uint16_t flags, uint32_t *ret_seq)
{
	unsigned char msg[NLMSG_HDRLEN + GENL_HDRLEN + NLA_HDRLEN + 512];
	size_t slen = strlen(str) + 1;
	struct nlmsghdr nh = {0};
	struct genlmsghdr gh = {0};
	struct nlattr nla = {0};
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};

	if (slen > sizeof(msg) - (NLMSG_HDRLEN + GENL_HDRLEN + NLA_HDRLEN))
		return -E2BIG;
	memset(msg, 0, sizeof(msg));
	nla.nla_len = (uint16_t)(NLA_HDRLEN + slen);
	nla.nla_type = attr;
	nh.nlmsg_len = (uint32_t)(NLMSG_HDRLEN + GENL_HDRLEN + NLA_ALIGN(nla.nla_len));
	nh.nlmsg_type = type;
	nh.nlmsg_flags = (uint16_t)(NLM_F_REQUEST | flags);
	nh.nlmsg_seq = ++t->seq;
	gh.cmd = cmd;
	gh.version = version;
	memcpy(msg, &nh, sizeof(nh));
	memcpy(msg + NLMSG_HDRLEN, &gh, sizeof(gh));
	memcpy(GENL_PAYLOAD(msg), &nla, sizeof(nla));
	memcpy(GENL_PAYLOAD(msg) + NLA_HDRLEN, str, slen);
	for (;;) {
		ssize_t r = sendto(t->fd, msg, nh.nlmsg_len, 0, (struct sockaddr *)&kernel,
				   sizeof(kernel));
		if (r >= 0)
			break;
		if (errno != EINTR)
			return -errno;
	}
	if (ret_seq)
		*ret_seq = nh.nlmsg_seq;
	return 0;
}

/* CTRL_ATTR_FAMILY_ID of a CTRL_CMD_NEWFAMILY reply, or 0. */
static uint16_t family_id(const unsigned char *msg, size_t len)
{
	const unsigned char *p = GENL_PAYLOAD(msg), *end = msg + len, *data;
	size_t dlen;
	uint16_t type, id = 0;

	if (len < NLMSG_HDRLEN + GENL_HDRLEN)
		return 0;
	while (next_attr(&p, end, &type, &data, &dlen) > 0) {
		if (type == CTRL_ATTR_FAMILY_ID && dlen >= sizeof(id))
			memcpy(&id, data, sizeof(id));
	}
	return id;
}

/* Appends a datagram to the pending ones, zero-padded to NLMSG_ALIGN so the next one starts where
 * the parser's alignment expects it. */
static void stash(struct mm_taskstats *t, const unsigned char *buf, size_t len)
{
	size_t padded = NLMSG_ALIGN(len);

	if (t->pending_len + padded > PENDING_MAX) {
		t->overflows++;
		return;
	}
	unsigned char *p = realloc(t->pending, t->pending_len + padded);
	if (!p) {
		t->overflows++;
		return;
	}
	memcpy(p + t->pending_len, buf, len);
	memset(p + t->pending_len + len, 0, padded - len);
	t->pending = p;
	t->pending_len += padded;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for the acknowledgement of request @seq: 0 or the kernel's -errno (-ETIMEDOUT when none
 * came). A CTRL_CMD_NEWFAMILY answer on the way sets *ret_family. Datagrams unrelated to @seq
 * (exit messages of a listener that is already registered) are stashed for the first drain. */
static int wait_ack(struct mm_taskstats *t, uint32_t seq, uint16_t *ret_family)
{
	int64_t deadline = now_ms() + REPLY_TIMEOUT_MS;

	for (;;) {
		int64_t left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd pfd = {.fd = t->fd, .events = POLLIN};
		int pr = poll(&pfd, 1, (int)left);
		if (pr < 0 && errno != EINTR)
			return -errno;
		if (pr <= 0)
			continue;
		ssize_t r = recv(t->fd, t->buf, RECV_BUF_SIZE, MSG_DONTWAIT | MSG_TRUNC);
		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
				continue;
			if (errno == ENOBUFS) {
				t->overflows++;
				continue;
			}
			return -errno;
		}
		size_t len = (size_t)r;
		if (len > RECV_BUF_SIZE) {
			t->malformed++;
			continue;
		}
		bool ours = false;
		int ack = 1; /* 1: not seen yet */
		for (size_t off = 0; off + NLMSG_HDRLEN <= len;) {
			struct nlmsghdr nh;
			memcpy(&nh, t->buf + off, sizeof(nh));
			if (nh.nlmsg_len < NLMSG_HDRLEN || nh.nlmsg_len > len - off)
				break;
			if (nh.nlmsg_seq == seq && nh.nlmsg_type == NLMSG_ERROR &&
			    nh.nlmsg_len >= NLMSG_HDRLEN + sizeof(int)) {
				int error;
				memcpy(&error, t->buf + off + NLMSG_HDRLEN, sizeof(error));
				ack = error > 0 ? -error : error;
				ours = true;
			} else if (nh.nlmsg_seq == seq && nh.nlmsg_type == GENL_ID_CTRL) {
				if (ret_family)
					*ret_family = family_id(t->buf + off, nh.nlmsg_len);
				ours = true;
			}
			off += NLMSG_ALIGN(nh.nlmsg_len);
		}
		if (!ours && t->family)
			stash(t, t->buf, len);
		if (ack <= 0)
			return ack;
	}
}

/* The possible CPUs as a cpulist ("0-3"), malloc'd. */
static char *possible_cpus(void)
{
	char line[4096];
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");

	if (f) {
		bool ok = fgets(line, sizeof(line), f) != NULL;
		fclose(f);
		if (ok) {
			line[strcspn(line, " \t\r\n")] = '\0';
			if (line[0])
				return strdup(line);
		}
	}
	long n = sysconf(_SC_NPROCESSORS_CONF);
	snprintf(line, sizeof(line), "0-%ld", n > 1 ? n - 1 : 0);
	return strdup(line);
}

/* Counts exits for probe_delivery(). */
static void count_exit(void *ctx, const struct mm_task_exit *e)
{
	(*(long *)ctx)++;
}

static void *probe_thread(void *arg)
{
	return NULL;
}

/* Proves that exit messages reach this socket: a thread that exits at once must produce one (the
 * kernel queues it in do_exit() before pthread_join() can return), unless other exits filled the
 * queue first, which ENOBUFS shows. Any exit message or ENOBUFS within a second will do; what
 * arrives is kept for the first drain. 0, -EXDEV when nothing came, or -errno. */
static int probe_delivery(struct mm_taskstats *t)
{
	pthread_t th;
	int r = pthread_create(&th, NULL, probe_thread, NULL);

	if (r)
		return -r;
	pthread_join(th, NULL);
	int64_t deadline = now_ms() + 1000;
	for (;;) {
		ssize_t n = recv(t->fd, t->buf, RECV_BUF_SIZE, MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0 && errno == ENOBUFS) {
			t->overflows++;
			return 0;
		}
		if (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		if (n > 0 && (size_t)n <= RECV_BUF_SIZE) {
			long exits = 0, ignored;
			parse_buf(t->buf, (size_t)n, t->family, count_exit, &exits, &ignored);
			stash(t, t->buf, (size_t)n);
			if (exits > 0)
				return 0;
			continue;
		}
		if (n >= 0)
			continue;
		int64_t left = deadline - now_ms();
		if (left <= 0)
			return -EXDEV;
		struct pollfd pfd = {.fd = t->fd, .events = POLLIN};
		poll(&pfd, 1, (int)left);
	}
}

/* Whether we share pid 1's network namespace (unknown, e.g. /proc/1/ns unreadable, counts as
 * yes: probe_delivery() settles it). */
static bool in_init_netns(void)
{
	struct stat self, init;

	if (stat("/proc/self/ns/net", &self) < 0 || stat("/proc/1/ns/net", &init) < 0)
		return true;
	return self.st_dev == init.st_dev && self.st_ino == init.st_ino;
}

/* A bound NETLINK_GENERIC socket with the receive buffer asked for (what was granted goes to
 * t->rcvbuf). */
static int open_socket(struct mm_taskstats *t, size_t rcvbuf_bytes, char *err, size_t errlen)
{
	struct sockaddr_nl local = {.nl_family = AF_NETLINK};
	int r;

	t->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (t->fd < 0) {
		r = -errno;
		mm_set_err(err, errlen, "taskstats: socket(AF_NETLINK, NETLINK_GENERIC): %s",
			   strerror(-r));
		return r;
	}
	if (bind(t->fd, (struct sockaddr *)&local, sizeof(local)) < 0) {
		r = -errno;
		mm_set_err(err, errlen, "taskstats: bind(AF_NETLINK): %s", strerror(-r));
		return r;
	}
	if (rcvbuf_bytes) {
		int v = rcvbuf_bytes > INT_MAX / 2 ? INT_MAX / 2 : (int)rcvbuf_bytes;
		if (setsockopt(t->fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)) < 0 &&
		    setsockopt(t->fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)) < 0) {
			r = -errno;
			mm_set_err(err, errlen, "taskstats: setsockopt(SO_RCVBUF, %d): %s", v,
				   strerror(-r));
			return r;
		}
	}
	int granted = 0;
	socklen_t glen = sizeof(granted);
	if (getsockopt(t->fd, SOL_SOCKET, SO_RCVBUF, &granted, &glen) == 0 && granted > 0)
		t->rcvbuf = (size_t)granted;
	return 0;
}

/* The "TASKSTATS" genetlink family id into t->family. */
static int resolve_family(struct mm_taskstats *t, char *err, size_t errlen)
{
	uint32_t seq;
	uint16_t family = 0;
	int r = send_request(t, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1, CTRL_ATTR_FAMILY_NAME,
			     TASKSTATS_GENL_NAME, NLM_F_ACK, &seq);

	if (r == 0)
		r = wait_ack(t, seq, &family);
	if (r == -ENOENT || (r == 0 && family == 0)) {
		mm_set_err(err, errlen,
			   "taskstats: no \"%s\" genetlink family (kernel built without "
			   "CONFIG_TASKSTATS)",
			   TASKSTATS_GENL_NAME);
		return -ENOENT;
	}
	if (r < 0) {
		mm_set_err(err, errlen, "taskstats: resolving the \"%s\" genetlink family: %s",
			   TASKSTATS_GENL_NAME, strerror(-r));
		return r;
	}
	t->family = family;
	return 0;
}

/* Registers for the exit statistics of every possible cpu. */
static int register_cpus(struct mm_taskstats *t, char *err, size_t errlen)
{
	uint32_t seq;
	int r;

	if (!in_init_netns()) {
		mm_set_err(err, errlen,
			   "taskstats: not in the initial network namespace (the kernel sends exit "
			   "statistics there only)");
		return -EXDEV;
	}
	t->cpumask = possible_cpus();
	if (!t->cpumask) {
		mm_set_err(err, errlen, "taskstats: out of memory");
		return -ENOMEM;
	}
	r = send_request(t, t->family, TASKSTATS_CMD_GET, TASKSTATS_GENL_VERSION,
			 TASKSTATS_CMD_ATTR_REGISTER_CPUMASK, t->cpumask, NLM_F_ACK, &seq);
	if (r == 0)
		r = wait_ack(t, seq, NULL);
	if (r == -EPERM || r == -EACCES)
		mm_set_err(err, errlen,
			   "taskstats: registering for exit statistics needs CAP_NET_ADMIN (%s)",
			   strerror(-r));
	else if (r == -EINVAL)
		mm_set_err(
			err, errlen,
			"taskstats: the kernel refused to register cpus \"%s\" (EINVAL): listeners "
			"must run in the initial user and pid namespaces",
			t->cpumask);
	else if (r < 0)
		mm_set_err(err, errlen, "taskstats: registering cpus \"%s\": %s", t->cpumask,
			   strerror(-r));
	return r;
}

int mm_taskstats_open(size_t rcvbuf_bytes, struct mm_taskstats **ret, char *err, size_t errlen)
{
	struct mm_taskstats *t = calloc(1, sizeof(*t));
	int r;

	*ret = NULL;
	if (!t || !(t->buf = malloc(RECV_BUF_SIZE))) {
		free(t);
		mm_set_err(err, errlen, "taskstats: out of memory");
		return -ENOMEM;
	}
	if ((r = open_socket(t, rcvbuf_bytes, err, errlen)) < 0 ||
	    (r = resolve_family(t, err, errlen)) < 0 || (r = register_cpus(t, err, errlen)) < 0)
		goto fail;
	r = probe_delivery(t);
	if (r < 0) {
		if (r == -EXDEV)
			mm_set_err(
				err, errlen,
				"taskstats: registered, but no exit message arrived for a probe "
				"thread: not in the initial network namespace? (the kernel sends "
				"exit "
				"statistics there only)");
		else
			mm_set_err(err, errlen, "taskstats: probing delivery with a thread: %s",
				   strerror(-r));
		mm_taskstats_close(t); /* deregisters */
		return r;
	}

	int fl = fcntl(t->fd, F_GETFL);
	if (fl < 0 || fcntl(t->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		r = -errno;
		mm_set_err(err, errlen, "taskstats: fcntl(O_NONBLOCK): %s", strerror(-r));
		mm_taskstats_close(t);
		return r;
	}
	*ret = t;
	return 0;
fail:
	if (t->fd >= 0)
		close(t->fd);
	free(t->cpumask);
	free(t->pending);
	free(t->buf);
	free(t);
	return r;
}

void mm_taskstats_close(struct mm_taskstats *t)
{
	if (!t)
		return;
	if (t->fd >= 0) {
		/* Best effort: the kernel also drops a listener whose socket is gone, but only on
		 * the next exit it tries to deliver to it. */
		if (t->cpumask)
			send_request(t, t->family, TASKSTATS_CMD_GET, TASKSTATS_GENL_VERSION,
				     TASKSTATS_CMD_ATTR_DEREGISTER_CPUMASK, t->cpumask, 0, NULL);
		close(t->fd);
	}
	free(t->cpumask);
	free(t->pending);
	free(t->buf);
	free(t);
}

int mm_taskstats_fd(const struct mm_taskstats *t)
{
	return t->fd;
}

size_t mm_taskstats_rcvbuf(const struct mm_taskstats *t)
{
	return t->rcvbuf;
}

uint64_t mm_taskstats_overflows(const struct mm_taskstats *t)
{
	return t->overflows;
}

uint64_t mm_taskstats_malformed(const struct mm_taskstats *t)
{
	return t->malformed;
}

long mm_taskstats_drain(struct mm_taskstats *t, void (*fn)(void *ctx, const struct mm_task_exit *e),
			void *ctx)
{
	long total = 0, n;

	if (t->pending) {
		/* Datagrams were stashed whole; parse them one by one (each is aligned). */
		if (parse_buf(t->pending, t->pending_len, t->family, fn, ctx, &n) < 0)
			t->malformed++;
		total += n;
		free(t->pending);
		t->pending = NULL;
		t->pending_len = 0;
	}
	for (;;) {
		ssize_t r = recv(t->fd, t->buf, RECV_BUF_SIZE, MSG_DONTWAIT | MSG_TRUNC);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			if (errno == ENOBUFS) {
				t->overflows++;
				continue;
			}
			return -errno;
		}
		if (r == 0)
			break;
		if ((size_t)r > RECV_BUF_SIZE) {
			t->malformed++; /* cut short by our buffer */
			continue;
		}
		if (parse_buf(t->buf, (size_t)r, t->family, fn, ctx, &n) < 0)
			t->malformed++;
		total += n;
	}
	return total;
}
