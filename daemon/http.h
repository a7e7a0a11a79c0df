/*
 * The HTTP API, served by libmicrohttpd on threads of its own that hold no capabilities and run
 * under a seccomp filter (privilege.h). It reads the latest published snapshot (snapshot.h) and,
 * for history, a read-only SQLite handle per query on two query workers, so neither a slow client
 * nor a slow query can stall collection or the /metrics scrape. Connections are bounded per client
 * address and in all, and by a head and a request deadline (http.c says how).
 *
 * Routes (GET and HEAD only; anything else is 405, unknown paths 404, bad parameters 400, all with
 * a JSON body {"error": "..."}):
 *   /                  the web page (web/index.html, compiled in)
 *   /metrics           Prometheus text format 0.0.4 (prom.h)
 *   /api/v1/status     version, kernel, uptime, collectors, events and lost events per tracepoint
 *   /api/v1/processes  per process: current window and since start
 *   /api/v1/history    ?pid=&since=&until=&limit= rows of process_stats from SQLite
 *
 * The request target is parsed by route.h (pure code): a NUL byte, a bad escape, an empty
 * parameter name or more than 16 parameters is a 400, a target over 4096 bytes a 414.
 */
#ifndef MM_HTTP_H
#define MM_HTTP_H

struct mm_http;

/* Starts serving on @listen ("127.0.0.1:9477", "[::1]:9477", "0.0.0.0:9477", or a Unix socket:
 * "unix:/run/mmlockd/http.sock" mode 0600, root only, or "unix:PATH:GROUP" mode 0660 for root and
 * GROUP, for hosts where process names are not for every local user). @db_path is opened
 * read-only per history request. @top_n limits per-process /metrics series. Returns 0 and sets
 * *ret, or a negative errno after logging (bad address, port in use). */
int mm_http_start(const char *listen, const char *db_path, unsigned top_n, struct mm_http **ret);

/* What @h serves on, as bound: @listen, or ADDR:PORT with the port the kernel chose when @listen
 * asked for port 0. Logged once the daemon runs, not at mm_http_start(): a later start-up failure
 * (the database) must not follow an announcement that it serves. Owned by @h. */
const char *mm_http_where(const struct mm_http *h);

/* Changes the per-process series limit (SIGHUP reload). Thread-safe. */
void mm_http_set_top_n(struct mm_http *h, unsigned top_n);

/* Stops the server and waits for in-flight requests; accepts NULL. */
void mm_http_stop(struct mm_http *h);

#endif
