/*
 * Least privilege after start-up. mmlockd needs root's capabilities to open perf events on every
 * CPU, read tracefs and kernel symbols and register for taskstats exit messages; once those are
 * open it reads rings, netlink and /proc with what it already holds. Linux keeps capabilities,
 * no_new_privs and seccomp filters per thread (a thread inherits them from the thread that
 * creates it), so each kind of thread confines itself:
 *
 *   HTTP threads: no capabilities at all and no_new_privs from the setup thread that creates
 *     them (mm_privilege_drop_http()), and a seccomp allow-list (sockets already open, reads and
 *     writes on open files, memory, time, threads). Landlock, though they run as uid 0:
 *     libmicrohttpd's thread and the sweeper open no file but /dev/urandom and /etc/localtime
 *     (mm_privilege_confine_http()); each query worker, before its first query, also the
 *     database and its -wal for reading only, its -shm, and SQLite's temporary files in the
 *     database's -tmp directory (mm_privilege_confine_query()), so whatever --db is (/x.db, a
 *     file in /tmp, a relative path) nothing else can be opened and the history cannot be
 *     written from them.
 *   The store writer: mm_privilege_drop_thread(): no capabilities, no_new_privs, the deny-list
 *     below.
 *   The main (collection) thread: mm_privilege_drop_main() once every source is set up: no
 *     capabilities except CAP_SYS_PTRACE when /proc hides other users' processes (hidepid) and
 *     CAP_BPF when it reads BPF maps on a kernel before 6.5 (which wants it for any bpf()), and
 *     a seccomp deny-list (no exec, ptrace, mounts, modules, namespaces, uid changes,
 *     perf_event_open, ...).
 *
 * Each also empties the bounding and ambient sets (when it holds CAP_SETPCAP) and locks the root
 * securebits, so nothing it runs could get capabilities back. Failures are logged once and are
 * not fatal: the daemon keeps collecting with what it has.
 */
#ifndef MM_PRIVILEGE_H
#define MM_PRIVILEGE_H

/* For the HTTP setup thread, first: drops every capability and sets no_new_privs, which the
 * threads it creates inherit. Returns 0, or -errno (logged). */
int mm_privilege_drop_http(void);

/* For the HTTP setup thread once it has created the query workers, before the socket threads:
 * Landlock with no file but /dev/urandom and /etc/localtime, and the seccomp allow-list. Returns
 * 0, or -errno when a step failed (logged; the other is still taken). */
int mm_privilege_confine_http(void);

/* For a query worker as it starts: the seccomp allow-list, and unlink (of SQLite's temporary
 * files, which Landlock confines to the database's -tmp directory). Returns 0 or -errno
 * (logged). */
int mm_privilege_filter_http(void);

/* For a query worker before it runs its first query: Landlock lets it open only @db_path and its
 * -wal for reading, its -shm for reading and writing, and make, use and remove files in its -tmp
 * directory when that exists (and /dev/urandom, /etc/localtime). Returns
 * -ENOENT, having changed nothing, while the three files are not all there yet (the writer makes
 * them: try again later); 0, or -errno when a step failed (logged). @db_path NULL: no file. */
int mm_privilege_confine_query(const char *db_path);

/* Drops every capability of the calling thread and sets no_new_privs. Returns 0 or -errno
 * (logged). */
int mm_privilege_drop_thread(void);

/* For the main thread once start-up is done (see above); logs what it kept. Returns 0 or -errno
 * (logged). */
int mm_privilege_drop_main(void);

#endif
