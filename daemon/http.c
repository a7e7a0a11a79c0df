/*
 * The HTTP server (see http.h): libmicrohttpd with one internal polling thread, which is the only
 * thread that runs request handlers. Handlers read the latest published snapshot (a reference, no
 * lock held while formatting) and, for /api/v1/history and /api/v1/locks, open the SQLite
 * database read-only for the request, so nothing here can stall collection.
 *
 * The handler follows collectd's write_prometheus.c: GET and HEAD only (anything else gets 405
 * with an Allow header at once, before any body is read), the first call for a request only
 * marks it (libmicrohttpd calls again once the headers, and a body if any, are in), the body is
 * built in an mm_buf whose storage is handed to libmicrohttpd with free() as its release callback,
 * so nothing is copied. libmicrohttpd drops the body of HEAD replies itself.
 *
 * Binding uses MHD_OPTION_SOCK_ADDR with an address parsed here ("A.B.C.D:PORT", "[V6]:PORT",
 * "host:PORT" through getaddrinfo; port 0 picks a free port, which is logged). libmicrohttpd does
 * not report why it could not start, so on failure the same bind is retried on a throwaway socket
 * to learn the errno (EADDRINUSE, EACCES, EADDRNOTAVAIL); its own messages from start-up are kept
 * and quoted only if that probe finds nothing, so the failure is logged once, here.
 */
#include "http.h"

#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "api.h"
#include "buf.h"
#include "log.h"
#include "prom.h"
#include "snapshot.h"
#include "stats.h"
#include "store.h"

/* Generated from web/ by scripts/embed.py; index.html is the first asset. */
extern const char *const mm_web_assets[];
extern const char *const mm_web_assets_names[];
extern const unsigned mm_web_assets_count;

#define CONNECTION_TIMEOUT_S 30
#define HISTORY_DEFAULT_S    3600
#define HISTORY_LIMIT_MAX    100000
#define HISTORY_LIMIT_DEF    1000
#define LOCKS_TOP_MAX	     100000
#define LOCKS_TOP_DEF	     50
#define SERIES_POINTS_MAX    5000
#define SERIES_POINTS_DEF    300
#define TOP_LIMIT_MAX	     10000
#define TOP_LIMIT_DEF	     200

#define SEEN_SINCE (1u << 1) /* "since" is keys[1] in range_arg() */

#define TYPE_JSON "application/json"
#define TYPE_PROM "text/plain; version=0.0.4; charset=utf-8"
#define TYPE_HTML "text/html; charset=utf-8"

struct mm_http {
	struct MHD_Daemon *mhd;
	char *db_path;	     /* NULL: no history */
	unsigned top_n;	     /* __atomic: set from the main thread, read by handlers */
	bool started;	     /* __atomic: libmicrohttpd messages are logged once set */
	char start_msg[256]; /* last libmicrohttpd message during start-up */
};

static void mhd_logger(void *cls, const char *fmt, va_list ap)
{
	struct mm_http *h = cls;
	char msg[256];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	if (__atomic_load_n(&h->started, __ATOMIC_ACQUIRE))
		log_notice("http: %s", msg);
	else
		snprintf(h->start_msg, sizeof(h->start_msg), "%s", msg);
}

/* Queues @body (its storage moves to libmicrohttpd; @body is reset) with @status and @type. */
static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *type,
			     struct mm_buf *body)
{
	static const char oom[] = "{\"error\":\"out of memory\"}";
	struct MHD_Response *r;

	if (mm_buf_failed(body)) {
		mm_buf_free(body);
		status = MHD_HTTP_INTERNAL_SERVER_ERROR;
		type = TYPE_JSON;
		r = MHD_create_response_from_buffer(sizeof(oom) - 1, (void *)oom,
						    MHD_RESPMEM_PERSISTENT);
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
	mm_buf_puts(&body, "{");
	mm_buf_json_key(&body, "error");
	mm_buf_json_str(&body, msg);
	mm_buf_puts(&body, "}\n");
	return reply(conn, status, TYPE_JSON, &body);
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

enum route { R_METRICS, R_STATUS, R_PROCESSES };

static enum MHD_Result reply_snapshot(struct mm_http *h, struct MHD_Connection *conn,
				      enum route route)
{
	struct mm_snapshot *s = mm_snapshot_current();
	struct mm_buf body = MM_BUF_INIT;
	const char *type = TYPE_JSON;

	if (!s)
		return reply_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				   "no data yet: mmlockd has not taken its first snapshot");
	switch (route) {
	case R_METRICS:
		mm_prom_format(s, __atomic_load_n(&h->top_n, __ATOMIC_RELAXED), &body);
		type = TYPE_PROM;
		break;
	case R_STATUS:
		mm_api_status(s, &body);
		mm_buf_puts(&body, "\n");
		break;
	case R_PROCESSES:
		mm_api_processes(s, &body);
		mm_buf_puts(&body, "\n");
		break;
	}
	mm_snapshot_unref(s);
	return reply(conn, MHD_HTTP_OK, type, &body);
}

/* Query parameters of /api/v1/history. */
struct history_query {
	double now;
	int pid; /* -1: every process */
	double since, until;
	unsigned limit;
	const char *limit_key;	 /* the row limit's parameter name: "limit" or "top" */
	unsigned long limit_max; /* its largest value */
	unsigned seen;		 /* bit per parameter (1 << index in keys[]), to refuse repeats */
	char err[256];		 /* set when a parameter is bad; iteration stops */
	/* A route's own parameters (reply_web's): returns true when it took @key, setting err
	 * on a bad value; NULL for none. extra_keys names them for the error message. */
	bool (*extra_arg)(struct history_query *q, const char *key, const char *value);
	const char *extra_keys;
};

/* Whether @s is digits, optionally followed by '.' and digits; sets *ret_end past them. */
static bool scan_decimal(const char *s, const char **ret_end)
{
	const char *p = s;
	while (*p >= '0' && *p <= '9')
		p++;
	if (p == s)
		return false;
	if (*p == '.') {
		const char *frac = ++p;
		while (*p >= '0' && *p <= '9')
			p++;
		if (p == frac)
			return false;
	}
	*ret_end = p;
	return true;
}

/* "1700000000", "1700000000.5" (unix seconds), "now", or "90s", "15m", "2h", "7d" (that long
 * before @now). Returns false on anything else. */
static bool parse_time(const char *s, double now, double *ret)
{
	const char *end;
	double v;

	if (!strcmp(s, "now")) {
		*ret = now;
		return true;
	}
	if (strlen(s) > 32 || !scan_decimal(s, &end))
		return false;
	v = strtod(s, NULL);
	if (*end == '\0') {
		*ret = v;
		return true;
	}
	if (end[1] != '\0')
		return false;
	switch (*end) {
	case 's':
		break;
	case 'm':
		v *= 60;
		break;
	case 'h':
		v *= 3600;
		break;
	case 'd':
		v *= 86400;
		break;
	default:
		return false;
	}
	*ret = v < now ? now - v : 0;
	return true;
}

/* A decimal integer in [min, max] and nothing else. */
static bool parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *ret)
{
	unsigned long v = 0;
	const char *p = s;

	if (!*p)
		return false;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return false;
		v = v * 10 + (unsigned long)(*p - '0');
		if (v > max)
			return false;
	}
	if (v < min)
		return false;
	*ret = v;
	return true;
}

/* One query parameter of /api/v1/history or /api/v1/locks: pid, since, until, and the row limit
 * under the route's own name (q->limit_key). */
static enum MHD_Result range_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				 const char *value)
{
	struct history_query *q = cls;
	const char *const keys[] = {"pid", "since", "until", q->limit_key};
	unsigned long v;
	unsigned k;

	if (q->extra_arg && q->extra_arg(q, key, value ? value : ""))
		return q->err[0] ? MHD_NO : MHD_YES;
	for (k = 0; k < 4 && strcmp(key, keys[k]); k++)
		;
	if (k == 4) {
		snprintf(q->err, sizeof(q->err),
			 "unknown parameter '%.64s' (expected pid, since, until, %s%s)", key,
			 q->limit_key, q->extra_keys ? q->extra_keys : "");
		return MHD_NO;
	}
	if (q->seen & (1u << k)) {
		snprintf(q->err, sizeof(q->err), "parameter '%s' given twice", key);
		return MHD_NO;
	}
	q->seen |= 1u << k;
	if (!value)
		value = "";
	switch (k) {
	case 0:
		if (!parse_uint(value, 1, INT32_MAX, &v))
			goto bad;
		q->pid = (int)v;
		break;
	case 1:
	case 2:
		if (!parse_time(value, q->now, k == 1 ? &q->since : &q->until))
			goto bad;
		break;
	case 3:
		if (!parse_uint(value, 1, q->limit_max, &v))
			goto bad;
		q->limit = (unsigned)v;
		break;
	}
	return MHD_YES;
bad:
	if (k == 3)
		snprintf(q->err, sizeof(q->err),
			 "%s: bad value '%.64s' (expected an integer from 1 to %lu)", key, value,
			 q->limit_max);
	else
		snprintf(q->err, sizeof(q->err), "%s: bad value '%.64s' (expected %s)", key, value,
			 k == 0 ? "a positive integer"
				: "unix seconds, 'now', or a duration before now like 90s, 15m, "
				  "2h, 7d");
	return MHD_NO;
}

/* Parses the query of a history route into @q and opens the database. Returns MHD_YES with *ret_st
 * set, or the result of the error reply already queued (and *ret_st NULL). */
static enum MHD_Result open_range(struct mm_http *h, struct MHD_Connection *conn,
				  struct history_query *q, struct mm_store **ret_st)
{
	struct timespec ts;
	int r;

	*ret_st = NULL;
	clock_gettime(CLOCK_REALTIME, &ts);
	q->now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	q->until = q->now;
	MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, range_arg, q);
	if (q->err[0])
		return reply_error(conn, MHD_HTTP_BAD_REQUEST, "%s", q->err);
	if (!(q->seen & SEEN_SINCE))
		q->since = q->until > HISTORY_DEFAULT_S ? q->until - HISTORY_DEFAULT_S : 0;
	if (q->since > q->until)
		return reply_error(conn, MHD_HTTP_BAD_REQUEST, "since (%.3f) is after until (%.3f)",
				   q->since, q->until);
	if (!h->db_path)
		return reply_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "no history database");
	r = mm_store_open_readonly(h->db_path, ret_st);
	if (r < 0)
		return reply_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				   "history database %s is not available: %s", h->db_path,
				   strerror(-r));
	return MHD_YES;
}

static enum MHD_Result reply_history(struct mm_http *h, struct MHD_Connection *conn)
{
	struct history_query q = {.pid = -1,
				  .limit = HISTORY_LIMIT_DEF,
				  .limit_key = "limit",
				  .limit_max = HISTORY_LIMIT_MAX};
	struct mm_buf body = MM_BUF_INIT;
	struct mm_store *st;
	enum MHD_Result ret = open_range(h, conn, &q, &st);
	if (!st)
		return ret;

	mm_buf_printf(&body, "{\"since\":%.3f,\"until\":%.3f,\"rows\":", q.since, q.until);
	int r = mm_store_history_json(st, q.pid, q.since, q.until, q.limit, &body);
	mm_store_close(st);
	if (r < 0) {
		mm_buf_free(&body);
		return reply_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "history query failed: %s",
				   strerror(-r));
	}
	mm_buf_puts(&body, "}\n");
	return reply(conn, MHD_HTTP_OK, TYPE_JSON, &body);
}

/* GET /api/v1/locks?pid=&since=&until=&top=: lock contention rows from SQLite, summed over the
 * windows in the range per (process, type, caller, lock), longest total wait first. */
static enum MHD_Result reply_locks(struct mm_http *h, struct MHD_Connection *conn)
{
	struct history_query q = {
		.pid = -1, .limit = LOCKS_TOP_DEF, .limit_key = "top", .limit_max = LOCKS_TOP_MAX};
	struct mm_buf body = MM_BUF_INIT;
	struct mm_snap_lock *rows = NULL;
	struct mm_store *st;
	size_t n = 0;
	enum MHD_Result ret = open_range(h, conn, &q, &st);
	if (!st)
		return ret;

	int r = mm_store_locks(st, q.pid, q.since, q.until, q.limit, &rows, &n);
	mm_store_close(st);
	if (r < 0)
		return reply_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "lock query failed: %s",
				   strerror(-r));
	mm_buf_printf(&body, "{\"since\":%.3f,\"until\":%.3f,\"rows\":", q.since, q.until);
	mm_api_locks(rows, n, &body);
	mm_buf_puts(&body, "}\n");
	free(rows);
	return reply(conn, MHD_HTTP_OK, TYPE_JSON, &body);
}

/* The page's range routes (/api/v1/series, /api/v1/top): the history parameters plus a process
 * filter (pid with start_time for one process; cgroup for a unit) and, on top, "by". */
struct web_query {
	struct history_query q; /* first, so extra_arg's @q is the web_query */
	bool top;		/* /api/v1/top: "by" is allowed */
	struct mm_store_filter f;
	bool by_cgroup;
	char cgroup[512];
	unsigned seen; /* WEB_SEEN_* */
};

enum { WEB_SEEN_START = 1, WEB_SEEN_CGROUP = 2, WEB_SEEN_BY = 4, WEB_SEEN_FIELDS = 8 };

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

static bool web_arg(struct history_query *q, const char *key, const char *value)
{
	struct web_query *w = (struct web_query *)q;
	const char *end;
	unsigned bit;

	if (!strcmp(key, "start_time"))
		bit = WEB_SEEN_START;
	else if (!strcmp(key, "cgroup"))
		bit = WEB_SEEN_CGROUP;
	else if (w->top && !strcmp(key, "by"))
		bit = WEB_SEEN_BY;
	else if (!strcmp(key, "fields"))
		bit = WEB_SEEN_FIELDS;
	else
		return false;
	if (w->seen & bit) {
		snprintf(q->err, sizeof(q->err), "parameter '%s' given twice", key);
		return true;
	}
	w->seen |= bit;
	switch (bit) {
	case WEB_SEEN_START:
		if (strlen(value) > 32 || !scan_decimal(value, &end) || *end)
			snprintf(q->err, sizeof(q->err),
				 "start_time: bad value '%.64s' (expected unix seconds, as in "
				 "/api/v1/processes)",
				 value);
		else
			w->f.start_time = strtod(value, NULL);
		break;
	case WEB_SEEN_CGROUP:
		if ((value[0] && value[0] != '/') || strlen(value) >= sizeof(w->cgroup))
			snprintf(q->err, sizeof(q->err),
				 "cgroup: bad value '%.64s' (expected a cgroup path such as "
				 "/system.slice/ssh.service, or empty for processes whose cgroup "
				 "is unknown)",
				 value);
		else
			w->f.cgroup = strcpy(w->cgroup, value);
		break;
	case WEB_SEEN_FIELDS:
		if (!parse_fields(value, &w->f.fields))
			snprintf(q->err, sizeof(q->err),
				 "fields: bad value '%.64s' (expected counters of /api/v1/history, "
				 "comma-separated, e.g. minflt,majflt,fallback_locks)",
				 value);
		break;
	case WEB_SEEN_BY:
		if (strcmp(value, "process") && strcmp(value, "cgroup"))
			snprintf(q->err, sizeof(q->err),
				 "by: bad value '%.64s' (expected process or cgroup)", value);
		else
			w->by_cgroup = !strcmp(value, "cgroup");
		break;
	}
	return true;
}

/* GET /api/v1/series?since=&until=&points=&pid=&start_time=&cgroup=&fields=: the windows of the
 * range in at most about @points buckets (mm_store_series_json), so a 7-day chart is a few hundred
 * rows; GET /api/v1/top?since=&until=&limit=&by=process|cgroup&pid=&start_time=&cgroup=&fields=:
 * totals over the range per process or per cgroup (mm_store_top_json). fields= names the
 * counters to sum (default: all), which is most of the cost of a long range. */
static enum MHD_Result reply_web(struct mm_http *h, struct MHD_Connection *conn, bool top)
{
	struct web_query w = {
		.q = {.pid = -1,
		      .limit = top ? TOP_LIMIT_DEF : SERIES_POINTS_DEF,
		      .limit_key = top ? "limit" : "points",
		      .limit_max = top ? TOP_LIMIT_MAX : SERIES_POINTS_MAX,
		      .extra_arg = web_arg,
		      .extra_keys = top ? ", start_time, cgroup, fields, by"
					: ", start_time, cgroup, fields"},
		.top = top,
		.f = MM_STORE_FILTER_ALL,
	};
	struct mm_buf body = MM_BUF_INIT;
	struct mm_store *st;
	enum MHD_Result ret = open_range(h, conn, &w.q, &st);
	int r;

	if (!st)
		return ret;
	w.f.pid = w.q.pid;
	mm_buf_printf(&body, "{\"since\":%.3f,\"until\":%.3f,", w.q.since, w.q.until);
	if (top) {
		mm_buf_printf(&body, "\"by\":\"%s\",\"rows\":", w.by_cgroup ? "cgroup" : "process");
		r = mm_store_top_json(st, &w.f, w.by_cgroup, w.q.since, w.q.until, w.q.limit,
				      &body);
	} else {
		double step = (w.q.until - w.q.since) / w.q.limit;
		mm_buf_puts(&body, "\"series\":");
		r = mm_store_series_json(st, &w.f, w.q.since, w.q.until,
					 step > 0.001 ? step : 0.001, &body);
	}
	mm_store_close(st);
	if (r < 0) {
		mm_buf_free(&body);
		return reply_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "%s query failed: %s",
				   top ? "top" : "series", strerror(-r));
	}
	mm_buf_puts(&body, "}\n");
	return reply(conn, MHD_HTTP_OK, TYPE_JSON, &body);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **con_cls)
{
	static int first_call_seen;
	struct mm_http *h = cls;

	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
				   "method %.32s not allowed (GET, HEAD)", method);
	if (!*con_cls) {
		*con_cls = &first_call_seen;
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0; /* a body on a GET means nothing here */
		return MHD_YES;
	}

	log_debug("http: %s %s", method, url);
	if (!strcmp(url, "/metrics"))
		return reply_snapshot(h, conn, R_METRICS);
	if (!strcmp(url, "/api/v1/status"))
		return reply_snapshot(h, conn, R_STATUS);
	if (!strcmp(url, "/api/v1/processes"))
		return reply_snapshot(h, conn, R_PROCESSES);
	if (!strcmp(url, "/api/v1/history"))
		return reply_history(h, conn);
	if (!strcmp(url, "/api/v1/locks"))
		return reply_locks(h, conn);
	if (!strcmp(url, "/api/v1/series"))
		return reply_web(h, conn, false);
	if (!strcmp(url, "/api/v1/top"))
		return reply_web(h, conn, true);
	if (!strcmp(url, "/") && mm_web_assets_count > 0)
		return reply_asset(conn, 0);
	for (unsigned i = 0; url[0] == '/' && i < mm_web_assets_count; i++)
		if (!strcmp(url + 1, mm_web_assets_names[i]))
			return reply_asset(conn, i);
	return reply_error(conn, MHD_HTTP_NOT_FOUND, "no such path: %.200s", url);
}

/* Resolves "ADDR:PORT" or "[V6ADDR]:PORT" into *ret. Logs and returns -EINVAL when malformed. */
static int parse_listen(const char *listen, struct sockaddr_storage *ret, socklen_t *ret_len)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
	struct addrinfo *res = NULL;
	unsigned long port;
	char host[256];
	const char *port_s;
	const char *host_s = listen;
	size_t n;
	int r;

	if (listen[0] == '[') {
		const char *end = strchr(listen, ']');
		if (!end || end[1] != ':')
			return log_error_errno(
				EINVAL, "Invalid listen address '%s': expected [IPV6ADDRESS]:PORT",
				listen);
		host_s = listen + 1;
		n = (size_t)(end - host_s);
		port_s = end + 2;
		hints.ai_family = AF_INET6;
		hints.ai_flags |= AI_NUMERICHOST;
	} else {
		const char *colon = strrchr(listen, ':');
		if (!colon)
			return log_error_errno(EINVAL,
					       "Invalid listen address '%s': expected "
					       "ADDRESS:PORT, e.g. 127.0.0.1:9477",
					       listen);
		n = (size_t)(colon - listen);
		port_s = colon + 1;
		if (memchr(listen, ':', n))
			return log_error_errno(EINVAL,
					       "Invalid listen address '%s': IPv6 addresses go in "
					       "brackets, e.g. [::1]:9477",
					       listen);
	}
	if (n == 0 || n >= sizeof(host))
		return log_error_errno(
			EINVAL, "Invalid listen address '%s': missing or overlong host", listen);
	memcpy(host, host_s, n);
	host[n] = '\0';
	if (!parse_uint(port_s, 0, 65535, &port))
		return log_error_errno(
			EINVAL,
			"Invalid listen address '%s': port must be a number from 0 to 65535",
			listen);

	r = getaddrinfo(host, port_s, &hints, &res);
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

/* Binds a throwaway socket the way libmicrohttpd does, to learn why it could not. Returns 0 when
 * the bind works, or -errno. */
static int probe_bind(const struct sockaddr_storage *sa, socklen_t len)
{
	int one = 1, r = 0;
	int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sa->ss_family == AF_INET6)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)sa, len) < 0)
		r = -errno;
	close(fd);
	return r;
}

int mm_http_start(const char *listen, const char *db_path, unsigned top_n, struct mm_http **ret)
{
	struct sockaddr_storage sa;
	socklen_t salen = 0;
	struct mm_http *h;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG;
	int r;

	r = parse_listen(listen, &sa, &salen);
	if (r < 0)
		return r;
	if (sa.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;

	h = calloc(1, sizeof(*h));
	if (!h)
		return log_error_errno(ENOMEM, "Failed to start the HTTP server: %m");
	h->top_n = top_n;
	if (db_path && !(h->db_path = strdup(db_path))) {
		free(h);
		return log_error_errno(ENOMEM, "Failed to start the HTTP server: %m");
	}

	uint16_t port = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
						       : ((struct sockaddr_in *)&sa)->sin_port);
	h->mhd = MHD_start_daemon(flags, port, NULL, NULL, handle, h, MHD_OPTION_EXTERNAL_LOGGER,
				  mhd_logger, h, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONNECTION_TIMEOUT_S,
				  MHD_OPTION_END);
	if (!h->mhd) {
		r = probe_bind(&sa, salen);
		if (r < 0)
			r = log_error_errno(r, "Failed to listen on %s: %m", listen);
		else
			r = log_error_errno(
				EIO, "Failed to start the HTTP server on %s: %s", listen,
				h->start_msg[0] ? h->start_msg : "libmicrohttpd gave no reason");
		free(h->db_path);
		free(h);
		return r;
	}
	__atomic_store_n(&h->started, true, __ATOMIC_RELEASE);

	const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_BIND_PORT);
	if (port == 0 && info)
		log_info("Serving HTTP on %s (port %u)", listen, (unsigned)info->port);
	else
		log_info("Serving HTTP on %s", listen);
	*ret = h;
	return 0;
}

void mm_http_set_top_n(struct mm_http *h, unsigned top_n)
{
	__atomic_store_n(&h->top_n, top_n, __ATOMIC_RELAXED);
}

void mm_http_stop(struct mm_http *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->mhd);
	free(h->db_path);
	free(h);
}
