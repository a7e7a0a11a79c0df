/*
 * Client connections of the HTTP server: limits per address and in all, head and request
 * deadlines, refusals before libmicrohttpd parses a request, and the counts of connections that
 * ended early (see httpconn.h for what each does and why).
 *
 * Locking: one mutex over the list and its counts. libmicrohttpd's thread adds and removes
 * connections and marks their requests; the sweeper thread and refusals shut connections down
 * under the same mutex, and libmicrohttpd tells conn_closed() before it closes the fd, so a
 * shutdown never reaches a reused fd.
 */
#include "httpconn.h"

#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "log.h"
#include "route.h"

/* Connections in all that may wait for their head before the oldest is evicted: far below
 * MM_HTTPCONN_MAX, so libmicrohttpd keeps accepting while a flood is being evicted and a scrape
 * queued behind it in the listen backlog gets in. */
#define CONN_EVICT_AT 224
#define CONN_PER_ADDR 32 /* live connections per client address */
/* Under pressure (more than CONN_PRESSURE_AT live connections in all, or the address at
 * CONN_PER_ADDR), a connection without its head is shut down after PRESSURE_HEAD_MS. */
#define CONN_PRESSURE_AT 64
#define PRESSURE_HEAD_MS 1000
#define SWEEP_MS	 100
#define LOG_BURST	 10 /* libmicrohttpd messages logged per minute */

/* Why a connection ended before its reply was complete; the label of
 * mmlockd_http_connections_aborted_total. */
enum abort_reason {
	AB_CLIENT,	  /* the client closed or reset it */
	AB_IDLE,	  /* idle: libmicrohttpd's timeout, or kept alive past MM_HTTPCONN_HEAD_S */
	AB_HEAD_DEADLINE, /* no complete request head within MM_HTTPCONN_HEAD_S */
	AB_REQUEST_DEADLINE, /* no reply sent within MM_HTTPCONN_REQUEST_S */
	AB_EVICTED,	     /* made room for a new connection */
	AB_REFUSED,	     /* refused in the URI log callback (reply written directly) */
	AB_SLOW_READER,	     /* its unsent reply made way for newer ones (http.c's budget) */
	AB_COUNT
};
static const char *const abort_names[AB_COUNT] = {
	"client",  "idle_timeout", "head_deadline", "request_deadline",
	"evicted", "refused",	   "slow_reader",
};

/* One client connection (libmicrohttpd's socket context), on mm_httpconn.conns under lock. */
struct conn {
	struct conn *prev, *next;
	int fd;
	unsigned char addr[17]; /* family byte, then IPv4/6 address or peer uid (Unix) */
	uint64_t since_ns;	/* opened, or its previous reply was complete (CLOCK_MONOTONIC) */
	bool busy;		/* its request head is complete: the request deadline applies */
	bool served;		/* it has had a complete reply: waiting now is keep-alive idle */
	bool killed;		/* shut down by us: its end is counted already */
};

struct mm_httpconn {
	pthread_mutex_t lock;
	struct conn conns;	    /* list head */
	unsigned nconns;	    /* on the list */
	unsigned nlive;		    /* on the list and not killed */
	uint64_t aborted[AB_COUNT]; /* __atomic */

	pthread_t sweeper;
	bool sweeper_started;
	bool sweeper_stop; /* __atomic */

	pthread_mutex_t log_lock;
	uint64_t log_window_ns;
	unsigned log_count, log_suppressed;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void count_abort(struct mm_httpconn *g, enum abort_reason why)
{
	__atomic_fetch_add(&g->aborted[why], 1, __ATOMIC_RELAXED);
}

void mm_http_error_json(struct mm_buf *body, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	mm_buf_reset(body);
	mm_buf_puts(body, "{");
	mm_buf_json_key(body, "error");
	mm_buf_json_str(body, msg);
	mm_buf_puts(body, "}\n");
}

static struct conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *i =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return i ? i->socket_context : NULL;
}

/* Shuts @c's socket down so libmicrohttpd closes it at its next read or write, and counts why.
 * Caller holds conns_lock, which conn_closed() takes before libmicrohttpd closes the fd, so the
 * fd is still this connection's. */
static void kill_conn(struct mm_httpconn *g, struct conn *c, enum abort_reason why)
{
	if (c->killed)
		return;
	c->killed = true;
	g->nlive--;
	shutdown(c->fd, SHUT_RDWR);
	count_abort(g, why);
}

/* The answer to a connection its address has no room for. */
static const char busy_reply[] =
	"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Type: "
	"application/json\r\nCache-Control: no-store\r\nRetry-After: 1\r\nContent-Length: 59\r\n"
	"\r\n{\"error\":\"too many connections from this address; try again\"}\n";

/* mm_httpconn_refuse() on a connection of the list. */
static void refuse_conn(struct mm_httpconn *g, struct conn *c, unsigned status, const char *reason,
			const char *msg)
{
	struct mm_buf body = MM_BUF_INIT, all = MM_BUF_INIT;

	mm_http_error_json(&body, "%s", msg);
	mm_buf_printf(&all,
		      "HTTP/1.1 %u %s\r\nConnection: close\r\nContent-Type: "
		      "application/json"
		      "\r\nCache-Control: no-store\r\nContent-Length: %zu\r\n\r\n%s",
		      status, reason, body.len, body.data ? body.data : "");
	pthread_mutex_lock(&g->lock);
	if (!c->killed && !mm_buf_failed(&all)) {
		(void)send(c->fd, all.data, all.len, MSG_NOSIGNAL | MSG_DONTWAIT);
		kill_conn(g, c, AB_REFUSED);
	}
	pthread_mutex_unlock(&g->lock);
	mm_buf_free(&body);
	mm_buf_free(&all);
}

void mm_httpconn_drop_slow_reader(struct mm_httpconn *g, struct MHD_Connection *mc)
{
	struct conn *c = conn_of(mc);

	if (!c)
		return;
	pthread_mutex_lock(&g->lock);
	kill_conn(g, c, AB_SLOW_READER);
	pthread_mutex_unlock(&g->lock);
}

void mm_httpconn_refuse(struct mm_httpconn *g, struct MHD_Connection *mc, unsigned status,
			const char *reason, const char *msg)
{
	struct conn *c = conn_of(mc);
	if (c)
		refuse_conn(g, c, status, reason, msg);
}

/* The client's address key: family and address (the port does not matter; IPv6 by its /64), or
 * the peer's uid on a Unix socket. */
static void addr_key(struct MHD_Connection *mc, int fd, unsigned char key[17])
{
	const union MHD_ConnectionInfo *i =
		MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = i ? i->client_addr : NULL;

	memset(key, 0, 17);
	if (sa && sa->sa_family == AF_INET) {
		key[0] = AF_INET;
		memcpy(key + 1, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa && sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a)) {
			key[0] = AF_INET;
			memcpy(key + 1, a->s6_addr + 12, 4);
		} else {
			/* A host owns a /64 (one for loopback's ::1 too): it counts as one client.
			 */
			key[0] = AF_INET6;
			memcpy(key + 1, a->s6_addr, IN6_IS_ADDR_LOOPBACK(a) ? 16 : 8);
		}
	} else {
		struct ucred cred = {.uid = (uid_t)-1};
		socklen_t len = sizeof(cred);
		(void)getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len);
		key[0] = AF_UNIX;
		memcpy(key + 1, &cred.uid, sizeof(cred.uid));
	}
}

/* The oldest connection of address @key (NULL: anyone) that is waiting for its request head (a
 * head that was complete when it was accepted never is). */
static struct conn *oldest(struct mm_httpconn *g, const unsigned char *key)
{
	struct conn *best = NULL;

	for (struct conn *c = g->conns.next; c != &g->conns; c = c->next)
		if (!c->killed && !c->busy && (!key || !memcmp(c->addr, key, 17)) &&
		    (!best || c->since_ns < best->since_ns))
			best = c;
	return best;
}

/* A byte of an HTTP token (RFC 9110 tchar), as a method is made of. */
static bool is_tchar(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

/* The header lines of a complete head (@p to @end, the request line already cut off): the
 * reason to refuse them in JSON, or NULL. libmicrohttpd answers these in HTML of its own before
 * any callback: a line without a colon, a Content-Length that is not a decimal number. */
static const char *bad_header(const char *p, const char *end)
{
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		size_t n = eol ? (size_t)(eol - p) : (size_t)(end - p);

		if (n && p[n - 1] == '\r')
			n--;
		if (!n)
			return NULL; /* the empty line: end of the head */
		const char *colon = memchr(p, ':', n);
		if (!colon || colon == p)
			return "a header line without a name and a colon";
		if ((size_t)(colon - p) == 14 && !strncasecmp(p, "Content-Length", 14)) {
			const char *v = colon + 1, *ve = p + n;
			while (v < ve && (*v == ' ' || *v == '\t'))
				v++;
			while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
			if (v == ve || ve - v > 18)
				return "Content-Length is not a number of bytes";
			for (const char *d = v; d < ve; d++)
				if (*d < '0' || *d > '9')
					return "Content-Length is not a number of bytes";
		}
		if (!eol)
			break;
		p = eol + 1;
	}
	return NULL;
}

/* Looks at the first request line before libmicrohttpd reads it, for what libmicrohttpd would
 * refuse in HTML before any callback, or not answer at all: bytes that cannot begin a request
 * line (a TLS ClientHello, binary junk: 400 at once, without waiting for a line feed that may
 * never come), a line that is not "METHOD TARGET HTTP/1.x" (505 for another HTTP version, 400
 * for anything else), one too long to be ours (414), MM_HTTP_HEAD_MAX bytes already there
 * without the head's end (431), and in a complete head a header line without a colon or a
 * Content-Length that is not a number (400). The listening TCP socket defers accept until data
 * arrives, so a request sent in one piece is there to peek at; when it is not (yet) complete,
 * libmicrohttpd decides as usual. Returns whether the whole head was there (and acceptable). */
static bool check_first_line(struct mm_httpconn *g, struct conn *c)
{
	static __thread char buf[MM_HTTP_HEAD_MAX + 1];
	const size_t line_max = MM_ROUTE_TARGET_MAX + 64;
	char msg[128];
	ssize_t n = recv(c->fd, buf, sizeof(buf) - 1, MSG_PEEK | MSG_DONTWAIT);

	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* RFC 9112 2.2: empty lines before the request line are ignored. */
	size_t skip = 0;
	while (skip < (size_t)n && (buf[skip] == '\r' || buf[skip] == '\n'))
		skip++;
	size_t m = 0;
	while (skip + m < (size_t)n && is_tchar((unsigned char)buf[skip + m]))
		m++;
	if (skip + m < (size_t)n && (buf[skip + m] != ' ' || m == 0 || m > 32)) {
		refuse_conn(g, c, MHD_HTTP_BAD_REQUEST, "Bad Request",
			    "not an HTTP/1.x request line (METHOD TARGET HTTP/1.1)");
		return false;
	}
	char *eol = memchr(buf, '\n', (size_t)n < line_max ? (size_t)n : line_max);
	if (!eol) {
		if ((size_t)n >= line_max)
			refuse_conn(g, c, MHD_HTTP_URI_TOO_LONG, "URI Too Long",
				    "request line too long");
		return false;
	}
	/* A whole head's worth without its end: libmicrohttpd would read on to its connection
	 * memory and answer in HTML. */
	const char *head_end = memmem(buf, (size_t)n, "\n\r\n", 3);
	if (!head_end)
		head_end = memmem(buf, (size_t)n, "\n\n", 2);
	bool head_too_long = (size_t)n == sizeof(buf) - 1 && !head_end;
	if (memchr(buf, '\0', (size_t)(eol - buf))) {
		refuse_conn(g, c, MHD_HTTP_BAD_REQUEST, "Bad Request",
			    "NUL byte in the request line");
		return false;
	}
	const char *why = head_end ? bad_header(eol + 1, head_end + 1) : NULL;
	*eol = '\0';
	if (eol > buf && eol[-1] == '\r')
		eol[-1] = '\0';
	char *sp1 = strchr(buf + skip, ' '), *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
	const char *version = sp2 ? sp2 + 1 : "";
	if (!strncmp(version, "HTTP/1.", 7)) {
		if (head_too_long) {
			snprintf(msg, sizeof(msg), "request head over %u bytes", MM_HTTP_HEAD_MAX);
			refuse_conn(g, c, MHD_HTTP_REQUEST_HEADER_FIELDS_TOO_LARGE,
				    "Request Header Fields Too Large", msg);
			return false;
		}
		if (why) {
			refuse_conn(g, c, MHD_HTTP_BAD_REQUEST, "Bad Request", why);
			return false;
		}
		return head_end != NULL;
	}
	if (!strncmp(version, "HTTP/", 5)) {
		snprintf(msg, sizeof(msg), "HTTP version %.16s not supported (HTTP/1.0, HTTP/1.1)",
			 version + 5);
		refuse_conn(g, c, MHD_HTTP_HTTP_VERSION_NOT_SUPPORTED, "HTTP Version Not Supported",
			    msg);
	} else {
		refuse_conn(g, c, MHD_HTTP_BAD_REQUEST, "Bad Request",
			    "not an HTTP/1.x request line (METHOD TARGET HTTP/1.1)");
	}
	return false;
}

/* Admission of a new connection @c of address @c->addr whose head is @complete already, under the
 * lock: a connection whose head is complete is always admitted and never makes room for another,
 * so a client that sends its request at once always gets in (see httpconn.h). Returns false when
 * @c itself must go: its head is not complete and its address holds CONN_PER_ADDR connections,
 * none of them waiting for its head. */
static bool admit(struct mm_httpconn *g, struct conn *c, bool complete)
{
	unsigned same = 0;
	struct conn *victim;

	for (struct conn *o = g->conns.next; o != &g->conns; o = o->next)
		same += !o->killed && !memcmp(o->addr, c->addr, 17);
	if (same >= CONN_PER_ADDR) {
		victim = oldest(g, c->addr);
		if (victim)
			kill_conn(g, victim, AB_EVICTED);
		else if (!complete)
			return false;
	}
	if (g->nlive >= CONN_EVICT_AT && (victim = oldest(g, NULL)))
		kill_conn(g, victim, AB_EVICTED);
	return true;
}

static void conn_started(struct mm_httpconn *g, struct MHD_Connection *mc, void **socket_context)
{
	const union MHD_ConnectionInfo *i =
		MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct conn *c = calloc(1, sizeof(*c));

	if (!c || !i) {
		free(c);
		return; /* untracked: only libmicrohttpd's own limits apply */
	}
	c->fd = i->connect_fd;
	c->since_ns = mono_ns();
	addr_key(mc, c->fd, c->addr);

	pthread_mutex_lock(&g->lock);
	c->prev = g->conns.prev;
	c->next = &g->conns;
	g->conns.prev->next = c;
	g->conns.prev = c;
	g->nconns++;
	g->nlive++;
	pthread_mutex_unlock(&g->lock);
	*socket_context = c;
	/* Peeked first, so that a complete request decides its own admission. */
	bool complete = check_first_line(g, c);
	pthread_mutex_lock(&g->lock);
	if (!c->killed) {
		c->busy = complete;
		c->killed = true; /* not its own victim */
		g->nlive--;
		bool ok = admit(g, c, complete);
		c->killed = false;
		g->nlive++;
		if (!ok) {
			(void)send(c->fd, busy_reply, sizeof(busy_reply) - 1,
				   MSG_NOSIGNAL | MSG_DONTWAIT);
			kill_conn(g, c, AB_EVICTED);
		}
	}
	pthread_mutex_unlock(&g->lock);
}

static void conn_closed(struct mm_httpconn *g, void **socket_context)
{
	struct conn *c = *socket_context;

	if (!c)
		return;
	pthread_mutex_lock(&g->lock);
	c->prev->next = c->next;
	c->next->prev = c->prev;
	g->nconns--;
	if (!c->killed)
		g->nlive--;
	pthread_mutex_unlock(&g->lock);
	free(c);
	*socket_context = NULL;
}

void mm_httpconn_notify(void *cls, struct MHD_Connection *mc, void **socket_context,
			enum MHD_ConnectionNotificationCode code)
{
	if (code == MHD_CONNECTION_NOTIFY_STARTED)
		conn_started(cls, mc, socket_context);
	else
		conn_closed(cls, socket_context);
}

/* Whether @c's address holds CONN_PER_ADDR / 2 live connections or more. Under the lock. */
static bool crowded(struct mm_httpconn *g, const struct conn *c)
{
	unsigned same = 0;

	for (struct conn *o = g->conns.next; o != &g->conns; o = o->next)
		same += !o->killed && !memcmp(o->addr, c->addr, 17);
	return same >= CONN_PER_ADDR / 2;
}

/* Every SWEEP_MS: shuts down connections past their head deadline (PRESSURE_HEAD_MS under
 * pressure) or request deadline, and evicts the oldest waiting ones while there are more than
 * CONN_EVICT_AT. */
static void *sweeper(void *arg)
{
	struct mm_httpconn *g = arg;
	const uint64_t head_ns = MM_HTTPCONN_HEAD_S * 1000000000ull;
	const uint64_t req_ns = MM_HTTPCONN_REQUEST_S * 1000000000ull;

	pthread_setname_np(pthread_self(), "mmlockd-sweep");

	for (;;) {
		struct timespec pause = {0, SWEEP_MS * 1000000L};
		nanosleep(&pause, NULL);
		if (__atomic_load_n(&g->sweeper_stop, __ATOMIC_ACQUIRE))
			return NULL;

		pthread_mutex_lock(&g->lock);
		/* Read under the lock: a connection added or served while the sweeper waited for
		 * it has a since_ns later than a clock read before, and its age would wrap. */
		uint64_t now = mono_ns();
		bool pressure = g->nlive > CONN_PRESSURE_AT;
		for (struct conn *c = g->conns.next; c != &g->conns; c = c->next) {
			if (c->killed)
				continue;
			uint64_t head_deadline =
				pressure || crowded(g, c) ? PRESSURE_HEAD_MS * 1000000ull : head_ns;
			uint64_t age = now > c->since_ns ? now - c->since_ns : 0;
			if (!c->busy && age > head_deadline)
				kill_conn(g, c, c->served ? AB_IDLE : AB_HEAD_DEADLINE);
			else if (age > req_ns)
				kill_conn(g, c, AB_REQUEST_DEADLINE);
		}
		/* A burst of slow clients can fill libmicrohttpd's CONN_MAX before any new
		 * connection is accepted to evict one: make room here. */
		struct conn *victim;
		while (g->nlive > CONN_EVICT_AT && (victim = oldest(g, NULL)))
			kill_conn(g, victim, AB_EVICTED);
		pthread_mutex_unlock(&g->lock);
	}
}

int mm_httpconn_new(struct mm_httpconn **ret)
{
	struct mm_httpconn *g = calloc(1, sizeof(*g));

	if (!g)
		return -ENOMEM;
	pthread_mutex_init(&g->lock, NULL);
	pthread_mutex_init(&g->log_lock, NULL);
	g->conns.next = g->conns.prev = &g->conns;
	*ret = g;
	return 0;
}

int mm_httpconn_start(struct mm_httpconn *g)
{
	int r = pthread_create(&g->sweeper, NULL, sweeper, g);
	g->sweeper_started = r == 0;
	return r;
}

void mm_httpconn_free(struct mm_httpconn *g)
{
	if (!g)
		return;
	if (g->sweeper_started) {
		__atomic_store_n(&g->sweeper_stop, true, __ATOMIC_RELEASE);
		pthread_join(g->sweeper, NULL);
	}
	/* libmicrohttpd told conn_closed() about every connection when it stopped. */
	pthread_mutex_destroy(&g->lock);
	pthread_mutex_destroy(&g->log_lock);
	free(g);
}

void mm_httpconn_tune_listen(int fd)
{
	/* Connections that send nothing do not reach libmicrohttpd, and the first request line is
	 * there to check when they do (check_first_line()). */
	int defer_s = MM_HTTPCONN_HEAD_S;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer_s, sizeof(defer_s));
}

void mm_httpconn_head_complete(struct mm_httpconn *g, struct MHD_Connection *mc)
{
	struct conn *c = conn_of(mc);

	if (!c)
		return;
	pthread_mutex_lock(&g->lock);
	c->busy = true;
	pthread_mutex_unlock(&g->lock);
}

void mm_httpconn_request_done(struct mm_httpconn *g, struct MHD_Connection *mc,
			      enum MHD_RequestTerminationCode toe)
{
	struct conn *c = conn_of(mc);

	if (!c)
		return;
	pthread_mutex_lock(&g->lock);
	if (!c->killed && toe != MHD_REQUEST_TERMINATED_COMPLETED_OK &&
	    toe != MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN)
		count_abort(g, toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED ? AB_IDLE : AB_CLIENT);
	c->busy = false;
	c->served |= toe == MHD_REQUEST_TERMINATED_COMPLETED_OK;
	c->since_ns = mono_ns();
	pthread_mutex_unlock(&g->lock);
}

void mm_httpconn_log(struct mm_httpconn *g, const char *msg)
{
	uint64_t now = mono_ns();
	unsigned dropped = 0;
	bool show;

	pthread_mutex_lock(&g->log_lock);
	if (now - g->log_window_ns >= 60000000000ull) {
		dropped = g->log_suppressed;
		g->log_window_ns = now;
		g->log_count = 0;
		g->log_suppressed = 0;
	}
	show = g->log_count < LOG_BURST;
	if (show)
		g->log_count++;
	else
		g->log_suppressed++;
	pthread_mutex_unlock(&g->log_lock);
	if (dropped)
		log_notice("http: %u more libmicrohttpd messages in the last minute not logged "
			   "(aborted connections are counted in "
			   "mmlockd_http_connections_aborted_total)",
			   dropped);
	if (show)
		log_notice("http: %s", msg);
}

void mm_httpconn_format_metrics(struct mm_httpconn *g, struct mm_buf *b)
{
	pthread_mutex_lock(&g->lock);
	unsigned open = g->nconns;
	pthread_mutex_unlock(&g->lock);

	mm_buf_puts(b, "# HELP mmlockd_http_connections Client connections open now.\n"
		       "# TYPE mmlockd_http_connections gauge\n");
	mm_buf_printf(b, "mmlockd_http_connections %u\n", open);
	mm_buf_puts(b,
		    "# HELP mmlockd_http_connections_aborted_total Connections that ended before "
		    "their reply was complete, by why.\n"
		    "# TYPE mmlockd_http_connections_aborted_total counter\n");
	for (unsigned i = 0; i < AB_COUNT; i++)
		mm_buf_printf(b,
			      "mmlockd_http_connections_aborted_total{reason=\"%s\"} %" PRIu64 "\n",
			      abort_names[i], __atomic_load_n(&g->aborted[i], __ATOMIC_RELAXED));
}
