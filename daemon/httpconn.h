/*
 * The HTTP server's client connections: what one local client may hold, and how many ended
 * early. http.c hands libmicrohttpd's connection notifications here; this file keeps every
 * connection on a list with its client address and age, and
 *  - gives each one a head deadline (MM_HTTPCONN_HEAD_S from opening, or from its previous reply,
 *    to a complete request head) and a request deadline (MM_HTTPCONN_REQUEST_S to the reply),
 *    which a sweeper thread enforces: a byte now and then resets libmicrohttpd's idle timeout,
 *    not these;
 *  - admits connections so that a well-formed request from any address always gets in, however
 *    many connections a local user opens from the same address (127.0.0.1, say, where
 *    Prometheus scrapes from) or from many: a connection whose request head is complete when it
 *    is accepted (the TCP socket defers accept until data arrives, so a scrape's one-packet
 *    request is) is always admitted and never evicted for another. At most CONN_PER_ADDR (32)
 *    live connections per client address (per peer uid on a Unix socket): a new one evicts the
 *    oldest of its address still waiting for its head, whatever its age; when none is waiting, a
 *    new one whose head is complete is admitted anyway, one whose head is not is answered 503.
 *    Over CONN_EVICT_AT (224) live connections in all, each new one evicts the oldest waiting
 *    one of anyone. Under pressure (over CONN_PRESSURE_AT, 64, in all, or 16 or more from the
 *    connection's address) the head deadline is PRESSURE_HEAD_MS (1 s) instead of
 *    MM_HTTPCONN_HEAD_S. libmicrohttpd's per-address limit is not used (it refused a scrape
 *    before any of this could run); its limit in all (MM_HTTPCONN_MAX) stays far above these;
 *  - looks at the first request line when a connection is accepted and refuses in JSON what
 *    libmicrohttpd would refuse in HTML before any callback, or not answer at all: bytes that
 *    cannot start a request line (a TLS ClientHello), a line that is not HTTP/1.x, one that is
 *    too long, a head over MM_HTTP_HEAD_MAX already in, a header line without a colon, a
 *    Content-Length that is not a number. A head that arrives in pieces is checked by
 *    libmicrohttpd alone, which answers those in HTML;
 *  - counts the connections that end before their reply is complete, by reason, for
 *    mmlockd_http_connections_aborted_total, and rate-limits libmicrohttpd's messages.
 *
 * A connection is shut down (shutdown(2)), never closed, from here: libmicrohttpd closes it at its
 * next read or write and tells us, under the list's lock, before the fd can be reused.
 */
#ifndef MM_HTTPCONN_H
#define MM_HTTPCONN_H

#include <microhttpd.h>

#include "buf.h"

#define MM_HTTPCONN_HEAD_S    10	  /* open (or previous reply) to a complete request head */
#define MM_HTTPCONN_REQUEST_S 60	  /* open (or previous reply) to the reply sent */
#define MM_HTTPCONN_MAX	      512	  /* libmicrohttpd's hard limit in all */
#define MM_HTTP_HEAD_MAX      (16 * 1024) /* request line and headers (431 above) */

struct mm_httpconn;

/* Allocates the connection list. Returns 0 and sets *ret, or -ENOMEM. */
int mm_httpconn_new(struct mm_httpconn **ret);

/* Starts the sweeper thread (from the HTTP setup thread, so it inherits its confinement).
 * Returns 0 or a positive pthread error. */
int mm_httpconn_start(struct mm_httpconn *g);

/* Stops the sweeper and frees; accepts NULL. libmicrohttpd must be stopped first. */
void mm_httpconn_free(struct mm_httpconn *g);

/* Sets TCP_DEFER_ACCEPT on a listening TCP socket (see above); failure is harmless. */
void mm_httpconn_tune_listen(int fd);

/* libmicrohttpd's MHD_OPTION_NOTIFY_CONNECTION callback; @cls is the mm_httpconn. */
void mm_httpconn_notify(void *cls, struct MHD_Connection *mc, void **socket_context,
			enum MHD_ConnectionNotificationCode code);

/* The request head of @mc is complete: the request deadline applies now. */
void mm_httpconn_head_complete(struct mm_httpconn *g, struct MHD_Connection *mc);

/* A request of @mc ended (libmicrohttpd's MHD_OPTION_NOTIFY_COMPLETED code @toe): counts it when
 * it did not complete, and starts the connection's next head deadline. */
void mm_httpconn_request_done(struct mm_httpconn *g, struct MHD_Connection *mc,
			      enum MHD_RequestTerminationCode toe);

/* Answers @mc's request with @status, @reason and the JSON error @msg written on the socket
 * directly, and shuts the connection down: for what is refused before libmicrohttpd would parse
 * it. The reply is small and the first bytes on the socket since the previous reply, so one
 * non-blocking send writes it. */
void mm_httpconn_refuse(struct mm_httpconn *g, struct MHD_Connection *mc, unsigned status,
			const char *reason, const char *msg);

/* Shuts @mc down because its unsent reply must make way (http.c's reply budget); counted as
 * "slow_reader". @mc must still be open (its reply not yet freed). */
void mm_httpconn_drop_slow_reader(struct mm_httpconn *g, struct MHD_Connection *mc);

/* Logs one libmicrohttpd message at notice level, at most LOG_BURST a minute; then one line says
 * how many were dropped. */
void mm_httpconn_log(struct mm_httpconn *g, const char *msg);

/* Appends mmlockd_http_connections and mmlockd_http_connections_aborted_total. */
void mm_httpconn_format_metrics(struct mm_httpconn *g, struct mm_buf *b);

/* Replaces @body with the JSON error {"error": "..."} and a newline. */
void mm_http_error_json(struct mm_buf *body, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
