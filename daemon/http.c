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
#include "parse.h"
#include "prom.h"
#include "route.h"
#include "snapshot.h"
#include "store.h"

/* Generated from web/ by scripts/embed.py; index.html is the first asset. */
extern const char *const mm_web_assets[];
extern const char *const mm_web_assets_names[];
extern const unsigned mm_web_assets_count;

#define CONNECTION_TIMEOUT_S 30
#define HISTORY_LIMIT_MAX    100000
#define HISTORY_LIMIT_DEF    1000
#define LOCKS_TOP_MAX	     100000
#define LOCKS_TOP_DEF	     50

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

enum snapshot_view { R_METRICS, R_STATUS, R_PROCESSES };

static enum MHD_Result reply_snapshot(struct mm_http *h, struct MHD_Connection *conn,
				      enum snapshot_view view)
{
	struct mm_snapshot *s = mm_snapshot_current();
	struct mm_buf body = MM_BUF_INIT;
	const char *type = TYPE_JSON;

	if (!s)
		return reply_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				   "no data yet: mmlockd has not taken its first snapshot");
	switch (view) {
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

/* Reads the range parameters of a history route into @q and opens the database. Returns MHD_YES
 * with *ret_st set, or the result of the error reply already queued (and *ret_st NULL). */
static enum MHD_Result open_range(struct mm_http *h, struct MHD_Connection *conn,
				  const struct mm_route_req *req, const char *limit_key,
				  unsigned long limit_def, unsigned long limit_max,
				  struct mm_route_range *q, struct mm_store **ret_st)
{
	struct timespec ts;
	char err[256];
	unsigned st;
	int r;

	*ret_st = NULL;
	clock_gettime(CLOCK_REALTIME, &ts);
	st = mm_route_range(req, limit_key, limit_def, limit_max,
			    (double)ts.tv_sec + (double)ts.tv_nsec / 1e9, q, err, sizeof(err));
	if (st)
		return reply_error(conn, st, "%s", err);
	if (!h->db_path)
		return reply_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "no history database");
	r = mm_store_open_readonly(h->db_path, ret_st);
	if (r < 0)
		return reply_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				   "history database %s is not available: %s", h->db_path,
				   strerror(-r));
	return MHD_YES;
}

static enum MHD_Result reply_history(struct mm_http *h, struct MHD_Connection *conn,
				     const struct mm_route_req *req)
{
	struct mm_route_range q;
	struct mm_buf body = MM_BUF_INIT;
	struct mm_store *st;
	enum MHD_Result ret =
		open_range(h, conn, req, "limit", HISTORY_LIMIT_DEF, HISTORY_LIMIT_MAX, &q, &st);
	if (!st)
		return ret;

	mm_buf_printf(&body, "{\"since\":%.3f,\"until\":%.3f,\"rows\":", q.since, q.until);
	int r = mm_store_history_json(st, q.pid, q.since, q.until, (unsigned)q.limit, &body);
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
static enum MHD_Result reply_locks(struct mm_http *h, struct MHD_Connection *conn,
				   const struct mm_route_req *req)
{
	struct mm_route_range q;
	struct mm_buf body = MM_BUF_INIT;
	struct mm_snap_lock *rows = NULL;
	struct mm_store *st;
	size_t n = 0;
	enum MHD_Result ret =
		open_range(h, conn, req, "top", LOCKS_TOP_DEF, LOCKS_TOP_MAX, &q, &st);
	if (!st)
		return ret;

	int r = mm_store_locks(st, q.pid, q.since, q.until, (unsigned)q.limit, &rows, &n);
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

static enum MHD_Result route_metrics(struct mm_http *h, struct MHD_Connection *conn,
				     const struct mm_route_req *req)
{
	return reply_snapshot(h, conn, R_METRICS);
}

static enum MHD_Result route_status(struct mm_http *h, struct MHD_Connection *conn,
				    const struct mm_route_req *req)
{
	return reply_snapshot(h, conn, R_STATUS);
}

static enum MHD_Result route_processes(struct mm_http *h, struct MHD_Connection *conn,
				       const struct mm_route_req *req)
{
	return reply_snapshot(h, conn, R_PROCESSES);
}

/* The API. A route that reads SQLite is marked slow. Paths not here are the web assets or 404. */
static const struct route {
	const char *path;
	enum MHD_Result (*fn)(struct mm_http *h, struct MHD_Connection *conn,
			      const struct mm_route_req *req);
	bool slow;
} routes[] = {
	{"/metrics", route_metrics, false},
	{"/api/v1/status", route_status, false},
	{"/api/v1/processes", route_processes, false},
	{"/api/v1/history", reply_history, true},
	{"/api/v1/locks", reply_locks, true},
};

/* One request: created by the URI log callback (the first thing libmicrohttpd tells us about a
 * request, with the target still raw: it splits and unescapes it in place afterwards), freed by
 * request_done(). */
struct request {
	const char *line_uri; /* where the target was in libmicrohttpd's read buffer */
	size_t raw_len;	      /* bytes up to the target's first NUL (more: 414) */
	bool headers_seen;
	char raw[MM_ROUTE_TARGET_MAX + 1];
	struct mm_route_req route;
};

static void *request_new(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct request *rq = malloc(sizeof(*rq));

	if (rq) {
		rq->line_uri = uri;
		rq->raw_len = strnlen(uri, MM_ROUTE_TARGET_MAX + 1);
		rq->headers_seen = false;
		memcpy(rq->raw, uri, rq->raw_len <= MM_ROUTE_TARGET_MAX ? rq->raw_len : 0);
	}
	return rq; /* NULL: handle() answers 500 */
}

static void request_done(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	free(*con_cls);
	*con_cls = NULL;
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
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
				   "method %.32s not allowed (GET, HEAD)", method);
	if (!rq->headers_seen) {
		rq->headers_seen = true;
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0; /* a body on a GET means nothing here */
		return MHD_YES;
	}

	/* libmicrohttpd cut the request line into C strings in place, so the version follows the
	 * target and its terminating NUL; a version further on means the target went on past a
	 * NUL byte, which a C string cannot carry. */
	if (rq->raw_len > MM_ROUTE_TARGET_MAX)
		return reply_error(conn, MHD_HTTP_URI_TOO_LONG,
				   "request target longer than %u bytes", MM_ROUTE_TARGET_MAX);
	if (version != rq->line_uri + rq->raw_len + 1)
		return reply_error(conn, MHD_HTTP_BAD_REQUEST, "NUL byte in the request target");
	unsigned st = mm_route_parse(rq->raw, rq->raw_len, &rq->route, err, sizeof(err));
	if (st)
		return reply_error(conn, st, "%s", err);

	const char *path = rq->route.path;
	log_debug("http: %s %s", method, path);
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (!strcmp(path, routes[i].path))
			return routes[i].fn(h, conn, &rq->route);
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
				  MHD_OPTION_URI_LOG_CALLBACK, request_new, h,
				  MHD_OPTION_NOTIFY_COMPLETED, request_done, h, MHD_OPTION_END);
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
