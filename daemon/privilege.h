/*
 * Least privilege after start-up. mmlockd needs root's capabilities to open perf events on every
 * CPU, read tracefs and kernel symbols and register for taskstats exit messages; once those are
 * open it reads rings, netlink and /proc with what it already holds. Linux keeps capabilities,
 * no_new_privs and seccomp filters per thread (a thread inherits them from the thread that
 * creates it), so each kind of thread confines itself:
 *
 *   HTTP threads (libmicrohttpd's, the query workers, the sweeper): mm_privilege_confine_http()
 *     on the setup thread that creates them: no capabilities at all, no_new_privs, Landlock
 *     (files only in the database's directory, though they run as uid 0), a seccomp allow-list
 *     (sockets already open, SQLite read-only, memory, time, threads).
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

/* Confines the calling thread for parsing HTTP (see above); with Landlock it may then open files
 * only in the directory of @db_path (NULL: none). Returns 0, or -errno when a step failed
 * (logged; the remaining steps are still taken). */
int mm_privilege_confine_http(const char *db_path);

/* Drops every capability of the calling thread and sets no_new_privs. Returns 0 or -errno
 * (logged). */
int mm_privilege_drop_thread(void);

/* For the main thread once start-up is done (see above); logs what it kept. Returns 0 or -errno
 * (logged). */
int mm_privilege_drop_main(void);

#endif
