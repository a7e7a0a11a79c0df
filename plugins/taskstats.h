/*
 * Exact per-thread page-fault totals at exit, from the kernel's taskstats genetlink family
 * (kernel/taskstats.c). Live processes are read from /proc/PID/stat; the last faults of a process
 * that exits between two reads would be lost, so a listener registered for every possible CPU gets
 * one message per exiting thread carrying its final minflt/majflt.
 *
 * What the kernel sends: one NETLINK_GENERIC message of the "TASKSTATS" family per exiting task,
 * command TASKSTATS_CMD_NEW, with a nested TASKSTATS_TYPE_AGGR_PID holding TASKSTATS_TYPE_PID (u32,
 * init pid namespace) and TASKSTATS_TYPE_STATS (struct taskstats); when the last thread of a
 * multi-threaded process exits the same message also carries TASKSTATS_TYPE_AGGR_TGID (the
 * process's sum over its threads), which is ignored here: summing the per-thread messages of a tgid
 * gives the same minflt/majflt. The struct is sent at the running kernel's size and version, which
 * may be larger or smaller than the header we compile against.
 *
 * Rules of the kernel worth knowing: registering needs CAP_NET_ADMIN (EPERM) and a listener in the
 * initial user and pid namespaces (EINVAL otherwise); messages are unicast in the initial network
 * namespace only; a full receive queue drops messages and reports ENOBUFS once on the next read.
 *
 * mm_taskstats_parse() is pure (unit-tested on hand-built buffers); the rest wraps the socket.
 */
#ifndef MM_TASKSTATS_H
#define MM_TASKSTATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mm_task_exit {
	uint32_t pid;	 /* the thread (TASKSTATS_TYPE_PID, = ac_pid) */
	uint32_t tgid;	 /* its process (ac_tgid; 0 when the kernel's struct is too old to carry it,
			    i.e. taskstats version < 12) */
	uint64_t minflt; /* the thread's final counts */
	uint64_t majflt;
	uint64_t btime_s;   /* start, unix seconds (ac_btime64 when present, else ac_btime). The
			       kernel   derives it at exit as now - elapsed, so it may differ by a
			       second from a   start time computed from /proc/PID/stat */
	char comm[16];	    /* NUL-terminated */
	bool group_dead;    /* AGROUP in ac_flag (version >= 12): the process's last task. A
			       later message under the same tgid is another process's (the pid
			       reused) */
	uint16_t version;   /* struct taskstats version the kernel sent */
	uint16_t stats_len; /* bytes of struct taskstats the kernel sent (the attribute's length) */
};

struct mm_taskstats;

/* Opens a NETLINK_GENERIC socket, resolves the "TASKSTATS" family (CTRL_CMD_GETFAMILY), registers
 * for exit messages of every possible CPU (/sys/devices/system/cpu/possible, e.g. "0-1"), sets a
 * receive buffer of @rcvbuf_bytes (SO_RCVBUFFORCE, falling back to SO_RCVBUF, which
 * net.core.rmem_max caps; 0 keeps the default), non-blocking, CLOEXEC. Then proves delivery: a
 * thread is started and joined, and its exit message (or any other, or ENOBUFS) must arrive within
 * a second, because in another network namespace the kernel accepts the registration and then
 * delivers nothing. Exit messages received during open are kept for the first drain. Returns 0
 * with *ret, or -errno with a one-line reason in @err: -ENOENT no TASKSTATS family (kernel without
 * CONFIG_TASKSTATS), -EPERM registration needs CAP_NET_ADMIN, -EINVAL the kernel refused the
 * registration (not in the initial user and pid namespaces), -EXDEV not in the initial network
 * namespace (nothing would be delivered), -ETIMEDOUT the kernel did not answer, or the error of a
 * socket call. */
int mm_taskstats_open(size_t rcvbuf_bytes, struct mm_taskstats **ret, char *err, size_t errlen);

/* Deregisters (TASKSTATS_CMD_ATTR_DEREGISTER_CPUMASK), closes; accepts NULL. */
void mm_taskstats_close(struct mm_taskstats *t);

/* The socket, for poll(): readable when exit messages (or an ENOBUFS error) are queued. */
int mm_taskstats_fd(const struct mm_taskstats *t);

/* The receive buffer the kernel granted, as SO_RCVBUF reports it (twice the requested size). */
size_t mm_taskstats_rcvbuf(const struct mm_taskstats *t);

/* Reads every queued message without blocking and calls @fn once per exited task (per-pid stats
 * only; the per-tgid aggregate that multi-threaded processes also send does not produce a second
 * call). Returns the number of exits, or -errno on a socket error other than EAGAIN. ENOBUFS (the
 * socket overflowed: messages were dropped) is counted, not returned, and reading continues. A
 * malformed datagram is skipped (counted by mm_taskstats_malformed()). */
long mm_taskstats_drain(struct mm_taskstats *t, void (*fn)(void *ctx, const struct mm_task_exit *e),
			void *ctx);

/* ENOBUFS seen so far. The kernel reports an overflow once however many messages it dropped
 * until the next read, so this counts episodes of loss, not lost exits. */
uint64_t mm_taskstats_overflows(const struct mm_taskstats *t);
uint64_t mm_taskstats_malformed(const struct mm_taskstats *t); /* datagrams skipped as malformed */

/* Pure: parses one buffer as returned by recv() (one or more netlink messages) of genl family
 * @family, calling @fn per exited task. Returns the number of exits, or -EINVAL on a malformed
 * buffer (truncated or overlong netlink headers or attributes, an AGGR_PID without PID or STATS);
 * @fn has then been called for the well-formed messages before the bad one, never for the bad one.
 * Never reads outside [buf, buf + len). struct taskstats is copied with min(attribute length,
 * sizeof) and fields beyond the attribute's length read as 0. Messages of other types
 * (NLMSG_ERROR, NLMSG_DONE, other families, other commands) and unknown attributes (the
 * TASKSTATS_TYPE_NULL padding, AGGR_TGID) are skipped. */
long mm_taskstats_parse(const void *buf, size_t len, uint16_t family,
			void (*fn)(void *ctx, const struct mm_task_exit *e), void *ctx);

#endif
