/*
 * The HTTP server (see http.h): libmicrohttpd with one internal polling thread, which runs the
 * request handlers of the fast routes (/metrics, /api/v1/status, /api/v1/processes and the web
 * page, all formatted from the latest published snapshot without a lock held), and two query
 * workers for the routes that read SQLite (/api/v1/history, /api/v1/locks): their handler parses
 * the parameters, suspends the connection and queues the query; a worker runs it on its own
 * read-only handle and resumes the connection with the reply. So fifty history queries cannot
 * delay a scrape, and nothing here can stall collection. At most QUERY_QUEUE_MAX queries wait;
 * more get 503 at once. A running query is stopped (query_check(), about every millisecond of
 * SQLite's work) when it has run QUERY_TIMEOUT_S, when its client has closed the connection
 * (polled on the suspended connection's socket; libmicrohttpd does not watch it meanwhile), and
 * when the server stops, so a worker is never held by a query nobody waits for and a stop takes
 * milliseconds whatever runs.
 *
 * Abuse. Any local user can connect, so what one client may hold is bounded: connection limits
 * per address and in all, a head and a request deadline, refusals before libmicrohttpd parses a
 * request, counts of aborted connections and rate-limited logs are httpconn.h's. Here: the raw
 * target is checked in the URI log callback (too long, too many parameters, an HTTP version
 * other than 1.0/1.1) and refused there in JSON, before libmicrohttpd stores the arguments (a
 * thousand of them used to exhaust its connection memory and get no reply at all); the handler
 * refuses NUL bytes, bad escapes and empty names (route.h), request heads over MM_HTTP_HEAD_MAX
 * (431) and bodies (413). Left to libmicrohttpd's own HTML: a request head over CONN_MEMORY whose
 * first MM_HTTP_HEAD_MAX bytes were not there yet when the connection was accepted (httpconn.c
 * refuses it in JSON when they were).
 *
 * Privilege: the listening socket is bound by the caller's thread (which may need
 * CAP_NET_BIND_SERVICE, or CAP_CHOWN for a Unix socket's group); the threads that then parse
 * requests are all created from a setup thread that first drops every capability and sets
 * no_new_privs (inherited), creates the query workers, which confine themselves to the database's
 * files before their first query, then confines itself (Landlock: no file; seccomp allow-list) and
 * creates libmicrohttpd's thread and the sweeper, which inherit that (privilege.h).
 *
 * Responses: GET and HEAD only (anything else gets 405 with an Allow header, before any body is
 * read); the body is built in an mm_buf whose storage is handed to libmicrohttpd with free() as
 * its release callback, so nothing is copied. libmicrohttpd drops the body of HEAD replies.
 */
#include "http.h"

#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <malloc.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "api.h"
#include "buf.h"
#include "httpconn.h"
#include "log.h"
#include "parse.h"
#include "privilege.h"
#include "prom.h"
#include "route.h"
#include "snapshot.h"
#include "stats.h"
#include "store.h"

/* Generated from web/ by scripts/embed.py; index.html is the first asset. */
extern const char *const mm_web_assets[];
extern const char *const mm_web_assets_names[];
extern const unsigned mm_web_assets_count;

#define CONNECTION_TIMEOUT_S 30		  /* libmicrohttpd's idle timeout */
#define CONN_MEMORY	     (128 * 1024) /* libmicrohttpd's buffer per connection */
#define QUERY_WORKERS	     2
#define QUERY_QUEUE_MAX	     64
#define OPEN_RETRY_S	     10 /* a database that failed to open is tried again after this */
#define QUERY_TIMEOUT_S	     20 /* a history query running longer is stopped: 503 */
#define GONE_CHECK_NS	     (100 * 1000000ull) /* how often a running query polls its client */

/* Replies: a history reply is a page of at most about REPLY_PAGE_BYTES (it ends at the first
 * window boundary past it and names where the next page starts, "next_since"); the bodies of
 * replies not yet sent take at most REPLY_BUDGET_BYTES in all. A reply that would go past it
 * first drops the connections of the oldest unsent replies (readers that do not read: their
 * ends are counted as "slow_reader" in mmlockd_http_connections_aborted_total), and is itself
 * answered 503 when that is not enough. */
#define REPLY_PAGE_BYTES   (4u << 20)
#define REPLY_BUDGET_BYTES (64u << 20)

#define HISTORY_LIMIT_MAX 100000
#define HISTORY_LIMIT_DEF 1000
#define LOCKS_TOP_MAX	  100000
#define LOCKS_TOP_DEF	  50
#define SERIES_POINTS_MAX 5000
#define SERIES_POINTS_DEF 300
#define TOP_LIMIT_MAX	  10000
#define TOP_LIMIT_DEF	  200

#define TYPE_JSON "application/json"
#define TYPE_PROM "text/plain; version=0.0.4; charset=utf-8"
#define TYPE_HTML "text/html; charset=utf-8"

struct request;

/* A reply body handed to libmicrohttpd and not yet freed by it (sent, or its connection gone):
 * on mm_http.unsent, oldest first. */
struct unsent {
	struct unsent *prev, *next;
	struct mm_http *h;
	struct MHD_Connection *conn;
	char *data;
	size_t bytes;
	bool dropped; /* its connection was shut down; no longer counted */
};

struct mm_http {
	struct MHD_Daemon *mhd;
	int listen_fd;
	char *unix_path; /* a Unix socket we created, unlinked at stop */
	bool any_port;	 /* listen asked for port 0: say the one we got */
	char where[128]; /* what the daemon serves on, as bound (mm_http_where()) */
	char *db_path;	 /* NULL: no history */
	unsigned top_n;	 /* __atomic: set from the main thread, read by handlers */

	struct mm_httpconn *conns; /* limits, deadlines, aborted counts (httpconn.h) */

	pthread_mutex_t jobs_lock;
	pthread_cond_t jobs_cond;
	struct request *jobs, **jobs_tail;
	unsigned njobs;
	bool stopping; /* set under jobs_lock, __atomic: workers stop, no new jobs */
	pthread_t workers[QUERY_WORKERS];
	unsigned nworkers;

	uint64_t queries_refused; /* __atomic: 503 because the query queue was full */

	pthread_mutex_t open_lock;
	int open_errno;	       /* of the last failed open of the database, or 0 */
	uint64_t open_fail_ns; /* when (CLOCK_MONOTONIC) */

	pthread_mutex_t unsent_lock;
	struct unsent unsent; /* list head */
	size_t unsent_bytes;  /* of the replies on the list not dropped */

	bool started;	     /* __atomic: libmicrohttpd messages are logged once set */
	char start_msg[256]; /* last libmicrohttpd message during start-up */
};

/* libmicrohttpd's messages: kept during start-up for the failure message, then logged
 * rate-limited (mm_httpconn_log()), so a client that aborts thousands of connections cannot flood
 * the journal. */
static void mhd_logger(void *cls, const char *fmt, va_list ap)
{
	struct mm_http *h = cls;
	char msg[256];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	if (!__atomic_load_n(&h->started, __ATOMIC_ACQUIRE)) {
		snprintf(h->start_msg, sizeof(h->start_msg), "%s", msg);
		return;
	}
	mm_httpconn_log(h->conns, msg);
}

/* libmicrohttpd is done with a reply body (sent, or its connection closed). */
static void unsent_free(void *cls)
{
	struct unsent *u = cls;
	struct mm_http *h = u->h;

	pthread_mutex_lock(&h->unsent_lock);
	u->prev->next = u->next;
	u->next->prev = u->prev;
	if (!u->dropped)
		h->unsent_bytes -= u->bytes;
	pthread_mutex_unlock(&h->unsent_lock);
	free(u->data);
	free(u);
}

/* Makes room for @u under REPLY_BUDGET_BYTES, dropping the connections of the oldest unsent
 * replies as needed, and puts it on the list. Returns false (nothing changed but the drops)
 * when even then it does not fit. */
static bool unsent_admit(struct mm_http *h, struct unsent *u)
{
	bool ok;

	pthread_mutex_lock(&h->unsent_lock);
	for (struct unsent *o = h->unsent.next;
	     o != &h->unsent && h->unsent_bytes + u->bytes > REPLY_BUDGET_BYTES; o = o->next) {
		if (o->dropped)
			continue;
		o->dropped = true;
		h->unsent_bytes -= o->bytes;
		/* o's body is not freed before unsent_free() takes the lock: its connection is
		 * still there. */
		mm_httpconn_drop_slow_reader(h->conns, o->conn);
	}
	ok = h->unsent_bytes + u->bytes <= REPLY_BUDGET_BYTES;
	if (ok) {
		u->prev = h->unsent.prev;
		u->next = &h->unsent;
		h->unsent.prev->next = u;
		h->unsent.prev = u;
		h->unsent_bytes += u->bytes;
	}
	pthread_mutex_unlock(&h->unsent_lock);
	return ok;
}

/* Queues @body (its storage moves to libmicrohttpd; @body is reset) with @status and @type. With
 * @h, the body counts against REPLY_BUDGET_BYTES until it is freed (small error replies are
 * given NULL). */
static enum MHD_Result reply(struct mm_http *h, struct MHD_Connection *conn, unsigned status,
			     const char *type, struct mm_buf *body)
{
	static const char oom[] = "{\"error\":\"out of memory\"}";
	static const char busy[] = "{\"error\":\"busy: replies waiting to be read fill the "
				   "memory budget; try again\"}\n";
	struct MHD_Response *r = NULL;
	struct unsent *u = NULL;

	if (mm_buf_failed(body) || (h && !(u = calloc(1, sizeof(*u))))) {
		mm_buf_free(body);
		status = MHD_HTTP_INTERNAL_SERVER_ERROR;
		type = TYPE_JSON;
		r = MHD_create_response_from_buffer(sizeof(oom) - 1, (void *)oom,
						    MHD_RESPMEM_PERSISTENT);
	} else if (u) {
		/* The budget counts what the body holds: a buffer grown by doubling gives back its
		 * spare half first. */
		char *fit = body->len ? realloc(body->data, body->len + 1) : NULL;

		u->h = h;
		u->conn = conn;
		u->data = fit ? fit : body->data;
		u->bytes = body->len;
		*body = (struct mm_buf)MM_BUF_INIT;
		if (!unsent_admit(h, u)) {
			free(u->data);
			free(u);
			status = MHD_HTTP_SERVICE_UNAVAILABLE;
			type = TYPE_JSON;
			r = MHD_create_response_from_buffer(sizeof(busy) - 1, (void *)busy,
							    MHD_RESPMEM_PERSISTENT);
		} else {
			r = MHD_create_response_from_buffer_with_free_callback_cls(
				u->bytes, u->data, unsent_free, u);
			if (!r)
				unsent_free(u);
		}
	} else {
		r = MHD_create_response_from_buffer_with_free_callback(body->len, body->data, free);
		if (!r)
			mm_buf_free(body);
		*body = (struct mm_buf)MM_BUF_INIT;
	}
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	enum MHD_Result ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_error(struct MHD_Connection *conn, unsigned status, const char *fmt,
				   ...) __attribute__((format(printf, 3, 4)));
static enum MHD_Result reply_error(struct MHD_Connection *conn, unsigned status, const char *fmt,
				   ...)
{
	struct mm_buf body = MM_BUF_INIT;
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	mm_http_error_json(&body, "%s", msg);
	return reply(NULL, conn, status, TYPE_JSON, &body);
}

static enum MHD_Result reply_asset(struct MHD_Connection *conn, unsigned i)
{
	const char *name = mm_web_assets_names[i], *type = "text/plain; charset=utf-8";
	const char *dot = strrchr(name, '.');

	if (dot && !strcmp(dot, ".html"))
		type = TYPE_HTML;
	else if (dot && !strcmp(dot, ".css"))
		type = "text/css; charset=utf-8";
	else if (dot && !strcmp(dot, ".js"))
		type = "text/javascript; charset=utf-8";
	else if (dot && !strcmp(dot, ".svg"))
		type = "image/svg+xml";
	struct MHD_Response *r = MHD_create_response_from_buffer(
		strlen(mm_web_assets[i]), (void *)mm_web_assets[i], MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

/* A route fills @body (and may set *@type, JSON by default) and returns the HTTP status. */
typedef unsigned route_fn(struct mm_http *h, const struct mm_route_req *req, struct mm_buf *body,
			  const char **type);

enum snapshot_view { R_METRICS, R_STATUS, R_PROCESSES };

/* Which processes /api/v1/processes lists: pid < 0 every one; start_ms 0 any start. */
struct proc_filter {
	int32_t pid;
	uint64_t start_ms;
};

static unsigned snapshot_view(struct mm_http *h, enum snapshot_view view,
			      const struct proc_filter *pf, struct mm_buf *body, const char **type)
{
	/* The status reads no rows: it does not complete a partial snapshot (a copy of every
	 * idle process's row, ~7 MiB at 10 000 processes, for each poll of the page or a monitor).
	 */
	struct mm_snapshot *s = view == R_STATUS ? mm_snapshot_latest() : mm_snapshot_current();

	if (!s) {
		mm_http_error_json(body, "no data yet: mmlockd has not taken its first snapshot");
		return MHD_HTTP_SERVICE_UNAVAILABLE;
	}
	switch (view) {
	case R_METRICS:
		mm_prom_format(s, __atomic_load_n(&h->top_n, __ATOMIC_RELAXED), body);
		mm_httpconn_format_metrics(h->conns, body);
		mm_buf_puts(body,
			    "# HELP mmlockd_http_queries_refused_total History queries answered "
			    "503 because the query queue was full.\n"
			    "# TYPE mmlockd_http_queries_refused_total counter\n");
		mm_buf_printf(body, "mmlockd_http_queries_refused_total %" PRIu64 "\n",
			      __atomic_load_n(&h->queries_refused, __ATOMIC_RELAXED));
		*type = TYPE_PROM;
		break;
	case R_STATUS:
		mm_api_status(s, body);
		mm_buf_puts(body, "\n");
		break;
	case R_PROCESSES:
		mm_api_processes_of(s, pf->pid, pf->start_ms, body);
		mm_buf_puts(body, "\n");
		break;
	}
	mm_snapshot_unref(s);
	return MHD_HTTP_OK;
}

static unsigned route_metrics(struct mm_http *h, const struct mm_route_req *req,
			      struct mm_buf *body, const char **type)
{
	return snapshot_view(h, R_METRICS, NULL, body, type);
}

static unsigned route_status(struct mm_http *h, const struct mm_route_req *req, struct mm_buf *body,
			     const char **type)
{
	return snapshot_view(h, R_STATUS, NULL, body, type);
}

/* GET /api/v1/processes[?pid=N[&start_time=T]]: every process of the open window, or those of
 * pid N (started at T, unix seconds as the route prints them): one process's view polls that
 * one, not 100 KB-1.75 MB of every process. */
static unsigned route_processes(struct mm_http *h, const struct mm_route_req *req,
				struct mm_buf *body, const char **type)
{
	struct proc_filter pf = {.pid = -1};

	for (unsigned i = 0; i < req->nparams; i++) {
		const char *name = req->params[i].name, *v = req->params[i].value;
		bool pid = !strcmp(name, "pid");
		char *end;
		double x;

		if (!pid && strcmp(name, "start_time")) {
			mm_http_error_json(
				body, "unknown parameter '%s' (expected pid, start_time)", name);
			return MHD_HTTP_BAD_REQUEST;
		}
		x = strtod(v, &end);
		if (!*v || *end || !(x >= 0) || x > (pid ? (double)INT32_MAX : 1e11)) {
			mm_http_error_json(body, "%s: bad value (expected %s)", name,
					   pid ? "a pid"
					       : "unix seconds, as this route prints them");
			return MHD_HTTP_BAD_REQUEST;
		}
		if (pid)
			pf.pid = (int32_t)x;
		else
			pf.start_ms = (uint64_t)llround(x * 1000);
	}
	return snapshot_view(h, R_PROCESSES, &pf, body, type);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The query a worker runs, for query_check(); set by query_worker() around the route's call. */
enum cancel { RUNNING, CANCEL_TIMEOUT, CANCEL_GONE, CANCEL_STOP };
struct query_run {
	struct mm_http *h;
	int fd; /* the client's socket, or -1 */
	uint64_t deadline_ns, gone_check_ns;
	enum cancel cancel;
};
static __thread struct query_run *running;

/* Whether the peer of socket @fd has closed it (or it failed). */
static bool client_gone(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLRDHUP};

	return fd >= 0 && poll(&p, 1, 0) > 0 &&
	       (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

/* SQLite's progress callback (mm_store_set_interrupt()): non-zero stops the query. */
static int query_check(void *arg)
{
	struct query_run *q = arg;
	uint64_t now = mono_ns();

	if (__atomic_load_n(&q->h->stopping, __ATOMIC_RELAXED))
		q->cancel = CANCEL_STOP;
	else if (now > q->deadline_ns)
		q->cancel = CANCEL_TIMEOUT;
	else if (now - q->gone_check_ns >= GONE_CHECK_NS) {
		q->gone_check_ns = now;
		if (client_gone(q->fd))
			q->cancel = CANCEL_GONE;
	}
	return q->cancel != RUNNING;
}

/* The reply to a history query that failed with @r: why it was stopped (503), or its error
 * (500). @what names the query. */
static unsigned query_failed(struct mm_buf *body, int r, const char *what)
{
	enum cancel why = r == -ECANCELED && running ? running->cancel : RUNNING;

	if (why == CANCEL_TIMEOUT)
		mm_http_error_json(body,
				   "%s query stopped after %d s: ask for a shorter range or fewer "
				   "fields",
				   what, QUERY_TIMEOUT_S);
	else if (why == CANCEL_STOP)
		mm_http_error_json(body, "mmlockd is stopping");
	else if (why == CANCEL_GONE)
		mm_http_error_json(body, "%s query stopped: the client went away", what);
	else {
		mm_http_error_json(body, "%s query failed: %s", what, strerror(-r));
		return MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
	return MHD_HTTP_SERVICE_UNAVAILABLE;
}

/* Reads the range parameters of a history route into @q and opens the database. Returns 0 with
 * *ret_st set, or the error status with @body holding its JSON (and *ret_st NULL). */
static unsigned open_range(struct mm_http *h, const struct mm_route_req *req, const char *limit_key,
			   unsigned long limit_def, unsigned long limit_max,
			   struct mm_route_range *q, struct mm_store **ret_st, struct mm_buf *body)
{
	struct timespec ts;
	char err[256];
	unsigned st;
	int r;

	*ret_st = NULL;
	clock_gettime(CLOCK_REALTIME, &ts);
	st = mm_route_range(req, limit_key, limit_def, limit_max,
			    (double)ts.tv_sec + (double)ts.tv_nsec / 1e9, q, err, sizeof(err));
	if (st) {
		mm_http_error_json(body, "%s", err);
		return st;
	}
	if (!h->db_path) {
		mm_http_error_json(body, "no history database");
		return MHD_HTTP_SERVICE_UNAVAILABLE;
	}
	/* A database that cannot be opened (another user's file, a newer schema) is tried again
	 * OPEN_RETRY_S after a failure, not at every request: store.c logs each failure, and a
	 * client must not be able to fill the journal with them. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t now_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	pthread_mutex_lock(&h->open_lock);
	r = h->open_errno && now_ns - h->open_fail_ns < OPEN_RETRY_S * 1000000000ull
		    ? -h->open_errno
		    : 0;
	pthread_mutex_unlock(&h->open_lock);
	if (r == 0) {
		r = mm_store_open_readonly(h->db_path, ret_st);
		pthread_mutex_lock(&h->open_lock);
		h->open_errno = r < 0 ? -r : 0;
		h->open_fail_ns = now_ns;
		pthread_mutex_unlock(&h->open_lock);
	}
	if (r < 0) {
		mm_http_error_json(body, "history database %s is not available: %s", h->db_path,
				   strerror(-r));
		return MHD_HTTP_SERVICE_UNAVAILABLE;
	}
	if (running)
		mm_store_set_interrupt(*ret_st, query_check, running);
	return 0;
}

/* GET /api/v1/history?pid=&since=&until=&limit=: rows of process_stats from SQLite. */
static unsigned route_history(struct mm_http *h, const struct mm_route_req *req,
			      struct mm_buf *body, const char **type)
{
	struct mm_route_range q;
	struct mm_store *st;
	unsigned status =
		open_range(h, req, "limit", HISTORY_LIMIT_DEF, HISTORY_LIMIT_MAX, &q, &st, body);
	if (status)
		return status;

	mm_buf_printf(body, "{\"since\":%.3f,\"until\":%.3f,\"rows\":", q.since, q.until);
	double next;
	int r = mm_store_history_json(st, q.pid, q.since, q.until, (unsigned)q.limit,
				      REPLY_PAGE_BYTES, body, &next);
	mm_store_close(st);
	if (r < 0)
		return query_failed(body, r, "history");
	/* A page: the rows go on from since=next_since. */
	if (!isnan(next))
		mm_buf_printf(body, ",\"next_since\":%.3f", next);
	mm_buf_puts(body, "}\n");
	return MHD_HTTP_OK;
}

/* GET /api/v1/locks?pid=&since=&until=&top=: lock contention rows from SQLite, summed over the
 * windows in the range per (process, type, caller, lock), longest total wait first. */
static unsigned route_locks(struct mm_http *h, const struct mm_route_req *req, struct mm_buf *body,
			    const char **type)
{
	struct mm_route_range q;
	struct mm_snap_lock *rows = NULL;
	struct mm_store *st;
	size_t n = 0;
	unsigned status = open_range(h, req, "top", LOCKS_TOP_DEF, LOCKS_TOP_MAX, &q, &st, body);
	if (status)
		return status;

	int r = mm_store_locks(st, q.pid, q.since, q.until, (unsigned)q.limit, &rows, &n);
	mm_store_close(st);
	if (r < 0)
		return query_failed(body, r, "lock");
	mm_buf_printf(body, "{\"since\":%.3f,\"until\":%.3f,\"rows\":", q.since, q.until);
	mm_api_locks(rows, n, body);
	mm_buf_puts(body, "}\n");
	free(rows);
	return MHD_HTTP_OK;
}

/* The own parameters of the page's range routes (/api/v1/series, /api/v1/top), beyond those of
 * mm_route_range(): a process filter (pid with start_time: one process; cgroup: a unit), the
 * counters to sum and, on top, "by". */
struct web_query {
	struct mm_store_filter f;
	bool by_cgroup;
	/* ended=1: only the windows that ended by until (the range ends at the last window end
	 * before it), so two ranges that meet share no window: `report --compare`'s rule. */
	bool ended;
};

/* "minflt,majflt,...": counters of mm_proc_fields[] into a mask (bit i: field i). */
static bool parse_fields(const char *s, uint64_t *ret)
{
	uint64_t mask = 0;

	while (*s) {
		size_t n = strcspn(s, ","), i;

		for (i = 0; i < mm_proc_nfields && i < 64; i++)
			if (strlen(mm_proc_fields[i].name) == n &&
			    !strncmp(s, mm_proc_fields[i].name, n))
				break;
		if (i == mm_proc_nfields || i == 64)
			return false;
		mask |= (uint64_t)1 << i;
		s += n;
		if (*s == ',' && *++s == '\0')
			return false;
	}
	*ret = mask;
	return mask != 0;
}

/* Takes the route's own parameters out of @req into @w and copies the others to @rest (for
 * mm_route_range). Returns 0, or 400 with the reason in @err (repeated or bad value). */
static unsigned web_params(const struct mm_route_req *req, bool top, struct web_query *w,
			   struct mm_route_req *rest, char *err, size_t errlen)
{
	/* The last two are top's own. */
	static const char *const keys[] = {
		"start_time", "cgroup", "fields", "ended", "by", "order",
	};
	static const char *const words[][2] = {
		[3] = {"0", "1"}, [4] = {"process", "cgroup"}, [5] = {"faults", "fallbacks"}};
	const unsigned nkeys = top ? 6u : 4u;
	unsigned seen = 0;

	*w = (struct web_query){.f = MM_STORE_FILTER_ALL};
	*rest = *req;
	rest->nparams = 0;
	for (unsigned i = 0; i < req->nparams; i++) {
		const char *name = req->params[i].name, *v = req->params[i].value;
		unsigned k;
		char *end;

		for (k = 0; k < nkeys && strcmp(name, keys[k]); k++)
			;
		if (k == nkeys) {
			/* The strings stay in req->buf, which @rest copied: rebase the pointers. */
			rest->params[rest->nparams].name = rest->buf + (name - req->buf);
			rest->params[rest->nparams++].value = rest->buf + (v - req->buf);
			continue;
		}
		if (seen & 1u << k) {
			snprintf(err, errlen, "parameter '%s' given twice", name);
			return MHD_HTTP_BAD_REQUEST;
		}
		seen |= 1u << k;
		switch (k) {
		case 0:
			w->f.start_time = strtod(v, &end);
			if (!*v || *end || !(w->f.start_time >= 0) || w->f.start_time > 1e11) {
				snprintf(err, errlen,
					 "start_time: bad value (expected unix seconds, as in "
					 "/api/v1/processes)");
				return MHD_HTTP_BAD_REQUEST;
			}
			break;
		case 1:
			if (v[0] && v[0] != '/') {
				snprintf(err, errlen,
					 "cgroup: bad value (expected a cgroup path such as "
					 "/system.slice/ssh.service, or empty for processes whose "
					 "cgroup is unknown)");
				return MHD_HTTP_BAD_REQUEST;
			}
			w->f.cgroup = v;
			break;
		case 2:
			if (!parse_fields(v, &w->f.fields)) {
				snprintf(err, errlen,
					 "fields: bad value (expected counters of /api/v1/history, "
					 "comma-separated, e.g. minflt,majflt,fallback_locks)");
				return MHD_HTTP_BAD_REQUEST;
			}
			break;
		default: /* one of two words: the second sets the flag */
			if (strcmp(v, words[k][0]) && strcmp(v, words[k][1])) {
				snprintf(err, errlen, "%s: bad value (expected %s or %s)", name,
					 words[k][0], words[k][1]);
				return MHD_HTTP_BAD_REQUEST;
			}
			*(k == 3   ? &w->ended
			  : k == 4 ? &w->by_cgroup
				   : &w->f.fallbacks_first) = !strcmp(v, words[k][1]);
			break;
		}
	}
	return 0;
}

/* GET /api/v1/series?since=&until=&points=&pid=&start_time=&cgroup=&fields=: the windows of the
 * range in about @points buckets (mm_store_series_json), so a 7-day chart is a few hundred rows;
 * GET /api/v1/top?since=&until=&limit=&by=process|cgroup&order=faults|fallbacks&pid=&start_time=
 * &cgroup=&fields=: totals over the range per process or per cgroup (mm_store_top_json), most
 * faults or most fallbacks first. fields= names the counters to sum (default: all), which is most
 * of the cost of a long range; ended=1 (both) takes only the windows that ended by until. */
static unsigned route_web(struct mm_http *h, const struct mm_route_req *req, struct mm_buf *body,
			  bool top)
{
	struct mm_route_req *rest = malloc(sizeof(*rest));
	struct mm_route_range q;
	struct web_query w;
	struct mm_store *st = NULL;
	char err[256];
	unsigned status;
	int r;

	if (!rest) {
		mm_http_error_json(body, "out of memory");
		return MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
	status = web_params(req, top, &w, rest, err, sizeof(err));
	if (status)
		mm_http_error_json(body, "%s", err);
	else
		status = open_range(h, rest, top ? "limit" : "points",
				    top ? TOP_LIMIT_DEF : SERIES_POINTS_DEF,
				    top ? TOP_LIMIT_MAX : SERIES_POINTS_MAX, &q, &st, body);
	if (status) {
		free(rest);
		return status;
	}
	/* w.f.cgroup points into rest->buf or req->buf, both alive until here. */
	w.f.pid = q.pid;
	if (w.ended) {
		double end = 0;
		r = mm_store_window_end_before(st, q.until, &end);
		if (r < 0) {
			mm_store_close(st);
			free(rest);
			mm_http_error_json(body, "range query failed: %s", strerror(-r));
			return MHD_HTTP_INTERNAL_SERVER_ERROR;
		}
		/* None ended in it: an empty range at that end (a window across since then
		 * did not end in the range either). */
		if (end <= q.since)
			q.since = end;
		q.until = end;
	}
	mm_buf_printf(body, "{\"since\":%.3f,\"until\":%.3f,", q.since, q.until);
	if (top) {
		mm_buf_printf(body, "\"by\":\"%s\",\"rows\":", w.by_cgroup ? "cgroup" : "process");
		r = mm_store_top_json(st, &w.f, w.by_cgroup, q.since, q.until, (unsigned)q.limit,
				      body);
	} else {
		double step = (q.until - q.since) / (double)q.limit;
		mm_buf_puts(body, "\"series\":");
		r = mm_store_series_json(st, &w.f, q.since, q.until, step > 0.001 ? step : 0.001,
					 body);
	}
	mm_store_close(st);
	free(rest);
	if (r < 0)
		return query_failed(body, r, top ? "top" : "series");
	mm_buf_puts(body, "}\n");
	return MHD_HTTP_OK;
}

static unsigned route_series(struct mm_http *h, const struct mm_route_req *req, struct mm_buf *body,
			     const char **type)
{
	return route_web(h, req, body, false);
}

static unsigned route_top(struct mm_http *h, const struct mm_route_req *req, struct mm_buf *body,
			  const char **type)
{
	return route_web(h, req, body, true);
}

/* The API. A route that reads SQLite is slow: it runs on a query worker, never on the thread that
 * serves /metrics. Paths not here are the web assets or 404. */
static const struct route {
	const char *path;
	route_fn *fn;
	bool slow;
} routes[] = {
	{"/metrics", route_metrics, false},
	{"/api/v1/status", route_status, false},
	{"/api/v1/processes", route_processes, false},
	{"/api/v1/history", route_history, true},
	{"/api/v1/locks", route_locks, true},
	{"/api/v1/series", route_series, true},
	{"/api/v1/top", route_top, true},
};

/* One request: created by the URI log callback (the first thing libmicrohttpd tells us about a
 * request, with the target still raw: it splits and unescapes it in place afterwards), freed by
 * request_done(). */
struct request {
	const char *line_uri; /* where the target was in libmicrohttpd's read buffer */
	size_t raw_len;	      /* bytes up to the target's first NUL */
	bool headers_seen;
	bool refused; /* answered on the socket by the URI log callback */
	/* A slow route's query: queued on mm_http.jobs, run by a worker, which sets done. */
	const struct route *route;
	struct MHD_Connection *conn;
	struct request *next_job;
	bool queued, done; /* under jobs_lock */
	int fd;		   /* the connection's socket: polled for a client gone while it runs */
	unsigned status;
	const char *type;
	struct mm_buf body;
	char raw[MM_ROUTE_TARGET_MAX + 1];
	struct mm_route_req req;
};

static void *request_new(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct mm_http *h = cls;
	struct request *rq = calloc(1, sizeof(*rq));
	char msg[128];

	if (!rq)
		return NULL; /* handle() answers 500 */
	rq->line_uri = uri;
	rq->raw_len = strnlen(uri, MM_ROUTE_TARGET_MAX + 1);
	if (rq->raw_len > MM_ROUTE_TARGET_MAX) {
		snprintf(msg, sizeof(msg), "request target longer than %u bytes",
			 MM_ROUTE_TARGET_MAX);
		mm_httpconn_refuse(h->conns, conn, MHD_HTTP_URI_TOO_LONG, "URI Too Long", msg);
		rq->refused = true;
		return rq;
	}
	memcpy(rq->raw, uri, rq->raw_len);
	unsigned params = 0;
	for (const char *p = memchr(uri, '?', rq->raw_len); p && *p; p++)
		params += *p == '?' || *p == '&';
	if (params > MM_ROUTE_PARAMS_MAX) {
		snprintf(msg, sizeof(msg), "more than %u query parameters", MM_ROUTE_PARAMS_MAX);
		mm_httpconn_refuse(h->conns, conn, MHD_HTTP_BAD_REQUEST, "Bad Request", msg);
		rq->refused = true;
		return rq;
	}
	/* At this point libmicrohttpd has cut the request line into C strings in place: the
	 * version follows the target. */
	const char *v = uri + rq->raw_len + 1;
	if (!strncmp(v, "HTTP/", 5) && strcmp(v, "HTTP/1.1") && strcmp(v, "HTTP/1.0")) {
		snprintf(msg, sizeof(msg), "HTTP version %.16s not supported (HTTP/1.0, HTTP/1.1)",
			 v + 5);
		mm_httpconn_refuse(h->conns, conn, MHD_HTTP_HTTP_VERSION_NOT_SUPPORTED,
				   "HTTP Version Not Supported", msg);
		rq->refused = true;
	}
	return rq;
}

static void request_done(void *cls, struct MHD_Connection *mc, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct mm_http *h = cls;
	struct request *rq = *con_cls;
	mm_httpconn_request_done(h->conns, mc, toe);
	if (rq)
		mm_buf_free(&rq->body);
	free(rq);
	*con_cls = NULL;
}

/* Queues @rq's slow route for a query worker and suspends its connection. Returns false when the
 * queue is full or the server is stopping; the caller answers 503. */
static bool queue_query(struct mm_http *h, struct request *rq)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	bool ok;

	rq->fd = ci ? ci->connect_fd : -1;

	pthread_mutex_lock(&h->jobs_lock);
	ok = !h->stopping && h->njobs < QUERY_QUEUE_MAX;
	if (ok) {
		rq->queued = true;
		rq->next_job = NULL;
		*h->jobs_tail = rq;
		h->jobs_tail = &rq->next_job;
		h->njobs++;
		/* Suspended before a worker can resume it: the lock is held. */
		MHD_suspend_connection(rq->conn);
		pthread_cond_signal(&h->jobs_cond);
	}
	pthread_mutex_unlock(&h->jobs_lock);
	return ok;
}

static void *query_worker(void *arg)
{
	struct mm_http *h = arg;
	bool confined = false; /* mm_privilege_confine_query() done */

	pthread_setname_np(pthread_self(), "mmlockd-query");
	mm_privilege_filter_http();

	pthread_mutex_lock(&h->jobs_lock);
	for (;;) {
		while (!h->jobs && !h->stopping)
			pthread_cond_wait(&h->jobs_cond, &h->jobs_lock);
		struct request *rq = h->jobs;
		if (!rq)
			break; /* stopping, and nothing left */
		h->jobs = rq->next_job;
		if (!h->jobs)
			h->jobs_tail = &h->jobs;
		h->njobs--;
		bool stopping = h->stopping;
		pthread_mutex_unlock(&h->jobs_lock);

		rq->type = TYPE_JSON;
		if (!confined && !stopping) {
			int r = mm_privilege_confine_query(h->db_path);
			confined = r != -ENOENT;
		}
		if (stopping) { /* what is still queued at stop is not run: stopping stays quick */
			mm_http_error_json(&rq->body, "mmlockd is stopping");
			rq->status = MHD_HTTP_SERVICE_UNAVAILABLE;
		} else if (!confined) {
			mm_http_error_json(&rq->body, "history database %s is not there yet",
					   h->db_path);
			rq->status = MHD_HTTP_SERVICE_UNAVAILABLE;
		} else {
			uint64_t now = mono_ns();
			struct query_run q = {.h = h,
					      .fd = rq->fd,
					      .deadline_ns = now + QUERY_TIMEOUT_S * 1000000000ull,
					      .gone_check_ns = now};
			running = &q;
			rq->status = rq->route->fn(h, &rq->req, &rq->body, &rq->type);
			running = NULL;
		}

		pthread_mutex_lock(&h->jobs_lock);
		rq->done = true;
		MHD_resume_connection(rq->conn);
	}
	pthread_mutex_unlock(&h->jobs_lock);
	return NULL;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **con_cls)
{
	struct mm_http *h = cls;
	struct request *rq = *con_cls;
	char err[256];

	if (!rq)
		return reply_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	if (rq->refused)
		return MHD_NO; /* answered already; close */
	if (rq->done) {
		const char *type = rq->type;
		return reply(h, conn, rq->status, type, &rq->body);
	}
	if (!rq->headers_seen) {
		rq->headers_seen = true;
		mm_httpconn_head_complete(h->conns, conn);
		if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
			return reply_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
					   "method %.32s not allowed (GET, HEAD)", method);
		const union MHD_ConnectionInfo *hs =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
		if (hs && hs->header_size > MM_HTTP_HEAD_MAX)
			return reply_error(conn, MHD_HTTP_REQUEST_HEADER_FIELDS_TOO_LARGE,
					   "request head of %zu bytes (at most %u)",
					   hs->header_size, MM_HTTP_HEAD_MAX);
		if (MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						MHD_HTTP_HEADER_TRANSFER_ENCODING) ||
		    (MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						 MHD_HTTP_HEADER_CONTENT_LENGTH) &&
		     strcmp(MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							MHD_HTTP_HEADER_CONTENT_LENGTH),
			    "0")))
			return reply_error(conn, MHD_HTTP_CONTENT_TOO_LARGE,
					   "%s requests take no body", method);
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0;
		return MHD_YES;
	}

	/* The version follows the target and its terminating NUL in libmicrohttpd's buffer; a
	 * version further on means the target went on past a NUL byte, which a C string cannot
	 * carry. */
	if (version != rq->line_uri + rq->raw_len + 1)
		return reply_error(conn, MHD_HTTP_BAD_REQUEST, "NUL byte in the request target");
	unsigned st = mm_route_parse(rq->raw, rq->raw_len, &rq->req, err, sizeof(err));
	if (st)
		return reply_error(conn, st, "%s", err);

	const char *path = rq->req.path;
	log_debug("http: %s %s", method, path);
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		if (strcmp(path, routes[i].path))
			continue;
		rq->route = &routes[i];
		rq->conn = conn;
		if (routes[i].slow) {
			if (queue_query(h, rq))
				return MHD_YES;
			__atomic_fetch_add(&h->queries_refused, 1, __ATOMIC_RELAXED);
			return reply_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
					   "busy: %u history queries are waiting; try again",
					   QUERY_QUEUE_MAX);
		}
		const char *type = TYPE_JSON;
		unsigned status = routes[i].fn(h, &rq->req, &rq->body, &type);
		return reply(h, conn, status, type, &rq->body);
	}
	if (!strcmp(path, "/") && mm_web_assets_count > 0)
		return reply_asset(conn, 0);
	for (unsigned i = 0; i < mm_web_assets_count; i++)
		if (!strcmp(path + 1, mm_web_assets_names[i]))
			return reply_asset(conn, i);
	return reply_error(conn, MHD_HTTP_NOT_FOUND, "no such path: %.200s", path);
}

/* Resolves "ADDR:PORT" or "[V6ADDR]:PORT" (parse.h) into *ret. Logs and returns -EINVAL when
 * malformed. */
static int parse_listen(const char *listen, struct sockaddr_storage *ret, socklen_t *ret_len)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
	struct addrinfo *res = NULL;
	struct mm_listen_addr la;
	char why[160], port_s[8];
	int r;

	if (mm_parse_listen(listen, &la, why, sizeof(why)) < 0)
		return log_error_errno(EINVAL, "Invalid listen address '%s': %s", listen, why);
	if (la.ipv6) {
		hints.ai_family = AF_INET6;
		hints.ai_flags |= AI_NUMERICHOST;
	}
	snprintf(port_s, sizeof(port_s), "%u", la.port);
	r = getaddrinfo(la.host, port_s, &hints, &res);
	if (r != 0)
		return log_error_errno(EINVAL, "Invalid listen address '%s': %s", listen,
				       r == EAI_SYSTEM ? strerror(errno) : gai_strerror(r));
	if (res->ai_addrlen > sizeof(*ret)) {
		freeaddrinfo(res);
		return log_error_errno(EINVAL, "Invalid listen address '%s'", listen);
	}
	memset(ret, 0, sizeof(*ret));
	memcpy(ret, res->ai_addr, res->ai_addrlen);
	*ret_len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

/* Binds "unix:PATH" (mode 0600: root only) or "unix:PATH:GROUP" (0660, group GROUP), replacing a
 * stale socket at PATH. Returns the listening fd or -errno after logging. */
static int listen_unix(struct mm_http *h, const char *spec)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *path = spec + 5, *colon = strchr(path, ':');
	size_t n = colon ? (size_t)(colon - path) : strlen(path);
	gid_t gid = (gid_t)-1;
	struct stat st;
	int fd, r;

	if (n == 0 || n >= sizeof(sa.sun_path) || path[0] != '/')
		return log_error_errno(EINVAL,
				       "Invalid listen address '%s': expected unix:/ABSOLUTE/PATH "
				       "or unix:/ABSOLUTE/PATH:GROUP, at most %zu bytes",
				       spec, sizeof(sa.sun_path) - 1);
	memcpy(sa.sun_path, path, n);
	if (colon) {
		struct group *g = getgrnam(colon + 1);
		if (!g)
			return log_error_errno(EINVAL, "Invalid listen address '%s': no group '%s'",
					       spec, colon + 1);
		gid = g->gr_gid;
	}
	if (lstat(sa.sun_path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return log_error_errno(EEXIST,
					       "Failed to listen on %s: %s exists and is not a "
					       "socket",
					       spec, sa.sun_path);
		unlink(sa.sun_path); /* a previous run's */
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return log_error_errno(errno, "Failed to listen on %s: %m", spec);
	/* Created with no access at all, opened up once owner and group are right. */
	mode_t old = umask(0777);
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || (gid != (gid_t)-1 && chown(sa.sun_path, 0, gid) < 0) ||
	    chmod(sa.sun_path, gid != (gid_t)-1 ? 0660 : 0600) < 0 || listen(fd, 1024) < 0) {
		r = -errno;
		close(fd);
		return log_error_errno(r, "Failed to listen on %s: %m", spec);
	}
	h->unix_path = strdup(sa.sun_path);
	return fd;
}

/* Binds @spec (see http.h) and listens. Returns the fd or -errno after logging. */
static int open_listen(struct mm_http *h, const char *spec)
{
	struct sockaddr_storage sa;
	socklen_t salen = 0;
	int one = 1, fd, r;

	if (!strncmp(spec, "unix:", 5))
		return listen_unix(h, spec);
	r = parse_listen(spec, &sa, &salen);
	if (r < 0)
		return r;
	h->any_port = !(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
						 : ((struct sockaddr_in *)&sa)->sin_port);
	fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return log_error_errno(errno, "Failed to listen on %s: %m", spec);
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sa.ss_family == AF_INET6)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	mm_httpconn_tune_listen(fd);
	if (bind(fd, (struct sockaddr *)&sa, salen) < 0 || listen(fd, 1024) < 0) {
		r = -errno;
		close(fd);
		return log_error_errno(r, "Failed to listen on %s: %m", spec);
	}
	return fd;
}

static void stop_threads(struct mm_http *h)
{
	pthread_mutex_lock(&h->jobs_lock);
	__atomic_store_n(&h->stopping, true, __ATOMIC_RELAXED); /* running queries stop too */
	pthread_cond_broadcast(&h->jobs_cond);
	pthread_mutex_unlock(&h->jobs_lock);
	for (unsigned i = 0; i < h->nworkers; i++)
		pthread_join(h->workers[i], NULL);
	h->nworkers = 0;
}

/* Runs on a thread of its own: confines itself, then creates every thread that touches
 * requests (libmicrohttpd's, the query workers, the sweeper), which inherit the confinement.
 * Returns NULL, or a static message when something could not start. */
static void *setup_thread(void *arg)
{
	struct mm_http *h = arg;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG |
			 MHD_USE_SUSPEND_RESUME;

	mm_privilege_drop_http();
	/* The query workers first: each confines itself to the database's files before its first
	 * query (the files may not exist yet), which a thread confined further could not. */
	for (; h->nworkers < QUERY_WORKERS; h->nworkers++)
		if (pthread_create(&h->workers[h->nworkers], NULL, query_worker, h))
			return "cannot start the query workers";
	mm_privilege_confine_http();
	h->mhd = MHD_start_daemon(
		flags, 0, NULL, NULL, handle, h, MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, h,
		MHD_OPTION_LISTEN_SOCKET, h->listen_fd, MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned)CONNECTION_TIMEOUT_S, MHD_OPTION_CONNECTION_LIMIT,
		(unsigned)MM_HTTPCONN_MAX, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY,
		MHD_OPTION_URI_LOG_CALLBACK, request_new, h, MHD_OPTION_NOTIFY_COMPLETED,
		request_done, h, MHD_OPTION_NOTIFY_CONNECTION, mm_httpconn_notify, h->conns,
		MHD_OPTION_END);
	if (!h->mhd)
		return "libmicrohttpd did not start";
	if (mm_httpconn_start(h->conns))
		return "cannot start the connection sweeper";
	return NULL;
}

static void http_free(struct mm_http *h)
{
	stop_threads(h);
	if (h->mhd)
		MHD_stop_daemon(h->mhd);
	mm_httpconn_free(h->conns);
	if (h->listen_fd >= 0)
		close(h->listen_fd);
	if (h->unix_path)
		unlink(h->unix_path);
	free(h->unix_path);
	free(h->db_path);
	pthread_mutex_destroy(&h->jobs_lock);
	pthread_cond_destroy(&h->jobs_cond);
	pthread_mutex_destroy(&h->unsent_lock); /* libmicrohttpd freed every reply at its stop */
	pthread_mutex_destroy(&h->open_lock);
	free(h);
}

int mm_http_start(const char *listen, const char *db_path, unsigned top_n, struct mm_http **ret)
{
	struct mm_http *h = calloc(1, sizeof(*h));
	pthread_t th;
	void *why = NULL;
	int r;

	if (!h)
		return log_error_errno(ENOMEM, "Failed to start the HTTP server: %m");
	h->listen_fd = -1;
	h->top_n = top_n;
	h->jobs_tail = &h->jobs;
	h->unsent.next = h->unsent.prev = &h->unsent;
	/* Reply bodies of a MiB or more are mapped on their own, so that freeing one gives its
	 * memory back at once (glibc's threshold otherwise grows with the first large free and
	 * keeps later ones in arenas the RSS never loses). */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
	pthread_mutex_init(&h->unsent_lock, NULL);
	pthread_mutex_init(&h->open_lock, NULL);
	pthread_mutex_init(&h->jobs_lock, NULL);
	pthread_cond_init(&h->jobs_cond, NULL);
	if ((db_path && !(h->db_path = strdup(db_path))) || mm_httpconn_new(&h->conns) < 0) {
		http_free(h);
		return log_error_errno(ENOMEM, "Failed to start the HTTP server: %m");
	}
	/* Before any thread queries: the setting is SQLite's, process-wide (store.h). */
	if (db_path && mm_store_use_temp_dir(db_path) < 0) {
		http_free(h);
		return -ENOMEM;
	}
	r = open_listen(h, listen);
	if (r < 0) {
		http_free(h);
		return r;
	}
	h->listen_fd = r;

	r = pthread_create(&th, NULL, setup_thread, h);
	if (r == 0)
		pthread_join(th, &why);
	if (r || why) {
		r = log_error_errno(r ? r : EIO, "Failed to start the HTTP server on %s: %s",
				    listen,
				    r		      ? strerror(r)
				    : h->start_msg[0] ? h->start_msg
						      : (const char *)why);
		http_free(h);
		return r;
	}
	__atomic_store_n(&h->started, true, __ATOMIC_RELEASE);

	struct sockaddr_storage sa;
	socklen_t salen = sizeof(sa);
	if (h->any_port && getsockname(h->listen_fd, (struct sockaddr *)&sa, &salen) == 0)
		snprintf(h->where, sizeof(h->where), "%.*s:%u",
			 (int)(strrchr(listen, ':') - listen), listen,
			 (unsigned)ntohs(sa.ss_family == AF_INET6
						 ? ((struct sockaddr_in6 *)&sa)->sin6_port
						 : ((struct sockaddr_in *)&sa)->sin_port));
	else
		snprintf(h->where, sizeof(h->where), "%s", listen);
	*ret = h;
	return 0;
}

const char *mm_http_where(const struct mm_http *h)
{
	return h->where;
}

void mm_http_set_top_n(struct mm_http *h, unsigned top_n)
{
	__atomic_store_n(&h->top_n, top_n, __ATOMIC_RELAXED);
}

void mm_http_stop(struct mm_http *h)
{
	if (h)
		http_free(h);
}
