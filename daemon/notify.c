/*
 * sd_notify(3) in a few lines of libc (see notify.h), so the daemon needs no libsystemd. The
 * protocol is one datagram per message to the socket in $NOTIFY_SOCKET; systemd learns the
 * sender from the socket's credentials, so nothing else is needed. A fresh socket per message
 * keeps this stateless: messages are rare (start, reload, stop, a watchdog ping every few
 * seconds), and nothing has to be re-opened if systemd is restarted.
 */
#include "notify.h"
#include "parse.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int mm_notify(const char *state)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *addr = getenv("NOTIFY_SOCKET");
	socklen_t salen;
	ssize_t sent;
	size_t n;
	int fd, r;

	if (!addr || !*addr)
		return 0;
	if (!state || !*state)
		return -EINVAL;

	n = strlen(addr);
	if (addr[0] == '/') {
		/* A path needs its terminating NUL inside sun_path. */
		if (n >= sizeof(sa.sun_path))
			return -ENAMETOOLONG;
		memcpy(sa.sun_path, addr, n + 1);
		salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
	} else if (addr[0] == '@') {
		/* Abstract namespace: a leading NUL, then the name, unterminated; the address
		 * length says where it ends. */
		if (n == 1)
			return -EINVAL;
		if (n > sizeof(sa.sun_path))
			return -ENAMETOOLONG;
		sa.sun_path[0] = '\0';
		memcpy(sa.sun_path + 1, addr + 1, n - 1);
		salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	} else {
		/* e.g. "vsock:..." (systemd in a VM): not needed on a host, not supported. */
		return -EAFNOSUPPORT;
	}

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	sent = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (const struct sockaddr *)&sa, salen);
	r = sent < 0 ? -errno : 1;
	close(fd);
	return r;
}

int mm_notifyf(const char *fmt, ...)
{
	char *state;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&state, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -ENOMEM;
	r = mm_notify(state);
	free(state);
	return r;
}

/* A positive decimal number without sign, blanks or junk (parse.h's grammar). */
static int parse_positive(const char *s, uint64_t *ret)
{
	unsigned long long v;
	int r = mm_parse_number(s, NULL, 1, UINT64_MAX, &v);

	if (r < 0)
		return -EINVAL;
	*ret = v;
	return 0;
}

int mm_notify_watchdog_usec(uint64_t *ret_usec)
{
	const char *usec_s = getenv("WATCHDOG_USEC");
	const char *pid_s = getenv("WATCHDOG_PID");
	uint64_t usec, pid;

	if (!usec_s)
		return 0;
	/* UINT64_MAX is systemd's "infinity", never a timeout. */
	if (parse_positive(usec_s, &usec) < 0 || usec == UINT64_MAX)
		return -EINVAL;
	if (pid_s) {
		if (parse_positive(pid_s, &pid) < 0 || pid > INT_MAX)
			return -EINVAL;
		/* Inherited from a parent that is the real watchdog client. */
		if (pid != (uint64_t)getpid())
			return 0;
	}
	if (ret_usec)
		*ret_usec = usec;
	return 1;
}
