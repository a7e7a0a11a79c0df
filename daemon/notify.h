/*
 * The sd_notify(3) protocol without libsystemd: a service of Type=notify tells systemd it is ready
 * (READY=1), what it is doing (STATUS=...), that it is reloading or stopping, and pets the watchdog
 * (WATCHDOG=1), by sending one datagram to the AF_UNIX socket named in $NOTIFY_SOCKET. Outside
 * systemd the variable is unset and every call is a successful no-op, so callers need no special
 * case for running by hand.
 */
#ifndef MM_NOTIFY_H
#define MM_NOTIFY_H

#include <stdint.h>

/* Sends @state (newline-separated "KEY=value" assignments, e.g. "READY=1\nSTATUS=collecting")
 * to $NOTIFY_SOCKET, a file system path ("/run/...") or an abstract name ("@name"). Returns 0
 * when the variable is unset or empty (not under systemd), 1 when the datagram was sent, or
 * -errno: -EINVAL for an empty @state, -EAFNOSUPPORT for an address that is neither a path nor
 * "@name", -ENAMETOOLONG when it does not fit a sockaddr_un, or the error of socket()/sendto().
 * Does not log: the caller decides whether a failure matters. Thread-safe as long as nothing
 * changes the environment concurrently. */
int mm_notify(const char *state);

/* mm_notify() with a printf-formatted state, e.g. mm_notifyf("STATUS=%u collectors", n).
 * Returns what mm_notify() returns, or -ENOMEM. */
int mm_notifyf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Whether systemd expects this process to send "WATCHDOG=1" periodically: reads $WATCHDOG_USEC
 * and, when set, $WATCHDOG_PID, which must equal getpid() (else the watchdog belongs to another
 * process, e.g. our parent). Returns 1 and sets *ret_usec (when non-NULL) to the timeout in
 * microseconds (send at least every half of it), 0 when no watchdog is expected, or -EINVAL when
 * a variable is malformed (not a positive decimal number). *ret_usec is untouched unless 1 is
 * returned. */
int mm_notify_watchdog_usec(uint64_t *ret_usec);

#endif
