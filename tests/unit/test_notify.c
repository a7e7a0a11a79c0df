/*
 * Unit tests for daemon/notify.c: messages arrive intact, as one datagram from this process, on
 * path and abstract sockets; no socket means a successful no-op; bad addresses fail with the
 * documented errors without leaking descriptors; $WATCHDOG_USEC/$WATCHDOG_PID parsing. Plays
 * systemd's part with a datagram socket bound in a private temporary directory. Exits 77 (meson's
 * "skipped") when AF_UNIX datagram sockets are not available.
 */
#include "check.h"
#include "notify.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

static char tmpdir[256];
static char sock_path[300];

/* What the last sendto() saw: this definition interposes on libc's so the test can inspect the
 * socket mm_notify() opened, which it closes before returning. */
static int sendto_fd_flags = -1, sendto_msg_flags = -1;

ssize_t sendto(int fd, const void *buf, size_t len, int flags, __CONST_SOCKADDR_ARG addr,
	       socklen_t addrlen)
{
	sendto_fd_flags = fcntl(fd, F_GETFD);
	sendto_msg_flags = flags;
	return syscall(SYS_sendto, fd, buf, len, flags, addr.__sockaddr__, addrlen);
}

/* Binds a datagram socket at @path ("@name" for the abstract namespace) with SO_PASSCRED, as
 * systemd does. Returns the fd or -1. */
static int bind_receiver(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t n = strlen(path);
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
	int one = 1, fd;

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	memcpy(sa.sun_path, path, n);
	if (path[0] == '@') {
		sa.sun_path[0] = '\0';
		len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	}
	if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, len) < 0) {
		perror("bind_receiver");
		close(fd);
		return -1;
	}
	return fd;
}

/* Receives one pending datagram into @buf (NUL-terminated) without blocking; @ret_pid gets the
 * sender's pid from its credentials. Returns the length or -errno (-EAGAIN: nothing pending). */
static ssize_t receive(int fd, char *buf, size_t size, pid_t *ret_pid)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(struct ucred))];
	} control;
	struct iovec iov = {.iov_base = buf, .iov_len = size - 1};
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = &control,
		.msg_controllen = sizeof(control),
	};
	ssize_t n = recvmsg(fd, &msg, MSG_DONTWAIT);

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	*ret_pid = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
			struct ucred cred;

			memcpy(&cred, CMSG_DATA(c), sizeof(cred));
			*ret_pid = cred.pid;
		}
	}
	return n;
}

/* The lowest free descriptor number: unchanged after a call means the call leaked nothing. */
static int next_fd(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (fd >= 0)
		close(fd);
	return fd;
}

static void test_notify_without_socket_is_a_noop(void)
{
	unsetenv("NOTIFY_SOCKET");
	CHECK(mm_notify("READY=1") == 0);
	CHECK(mm_notifyf("STATUS=%d", 1) == 0);
	setenv("NOTIFY_SOCKET", "", 1);
	CHECK(mm_notify("READY=1") == 0);
	unsetenv("NOTIFY_SOCKET");
}

static void test_notify_delivers_state_as_one_datagram_from_us(void)
{
	char buf[512];
	pid_t pid = 0;
	int fd = bind_receiver(sock_path);

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	setenv("NOTIFY_SOCKET", sock_path, 1);
	CHECK(mm_notify("READY=1\nSTATUS=collecting") == 1);
	CHECK(receive(fd, buf, sizeof(buf), &pid) == (ssize_t)strlen("READY=1\nSTATUS=collecting"));
	CHECK_STR(buf, "READY=1\nSTATUS=collecting");
	CHECK_U64(pid, getpid());
	CHECK(receive(fd, buf, sizeof(buf), &pid) == -EAGAIN); /* exactly one datagram */

	CHECK(mm_notify("WATCHDOG=1") == 1);
	CHECK(receive(fd, buf, sizeof(buf), &pid) > 0);
	CHECK_STR(buf, "WATCHDOG=1");

	unsetenv("NOTIFY_SOCKET");
	close(fd);
	unlink(sock_path);
}

static void test_notifyf_formats_the_state(void)
{
	char buf[512];
	pid_t pid;
	int fd = bind_receiver(sock_path);

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	setenv("NOTIFY_SOCKET", sock_path, 1);
	CHECK(mm_notifyf("STATUS=%u collectors, %s", 3u, "0 failed") == 1);
	CHECK(receive(fd, buf, sizeof(buf), &pid) > 0);
	CHECK_STR(buf, "STATUS=3 collectors, 0 failed");
	unsetenv("NOTIFY_SOCKET");
	close(fd);
	unlink(sock_path);
}

static void test_notify_reaches_abstract_socket(void)
{
	char name[64], buf[512];
	pid_t pid;
	int fd;

	snprintf(name, sizeof(name), "@mmlockd-test-notify-%ld", (long)getpid());
	fd = bind_receiver(name);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	setenv("NOTIFY_SOCKET", name, 1);
	CHECK(mm_notify("RELOADING=1") == 1);
	CHECK(receive(fd, buf, sizeof(buf), &pid) > 0);
	CHECK_STR(buf, "RELOADING=1");
	/* The file system path of the same name is not the abstract socket. */
	setenv("NOTIFY_SOCKET", name + 1, 1);
	CHECK(mm_notify("READY=1") == -EAFNOSUPPORT);
	unsetenv("NOTIFY_SOCKET");
	close(fd);
}

static void test_notify_reports_bad_addresses_and_states_without_leaking(void)
{
	char longest[200];
	int before = next_fd();

	memset(longest, 'a', sizeof(longest) - 1);
	longest[0] = '/';
	longest[sizeof(longest) - 1] = '\0';

	setenv("NOTIFY_SOCKET", sock_path, 1); /* nobody bound there */
	CHECK(mm_notify("READY=1") == -ENOENT);
	CHECK(mm_notify("") == -EINVAL);
	CHECK(mm_notify(NULL) == -EINVAL);
	setenv("NOTIFY_SOCKET", "relative/socket", 1);
	CHECK(mm_notify("READY=1") == -EAFNOSUPPORT);
	setenv("NOTIFY_SOCKET", "vsock:2:1234", 1);
	CHECK(mm_notify("READY=1") == -EAFNOSUPPORT);
	setenv("NOTIFY_SOCKET", "@", 1);
	CHECK(mm_notify("READY=1") == -EINVAL);
	setenv("NOTIFY_SOCKET", longest, 1);
	CHECK(mm_notify("READY=1") == -ENAMETOOLONG);
	longest[0] = '@';
	setenv("NOTIFY_SOCKET", longest, 1);
	CHECK(mm_notify("READY=1") == -ENAMETOOLONG);
	unsetenv("NOTIFY_SOCKET");

	CHECK(next_fd() == before);
}

static void test_notify_socket_is_cloexec_and_closed_after_sending(void)
{
	int fd = bind_receiver(sock_path);
	int before = next_fd();

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	setenv("NOTIFY_SOCKET", sock_path, 1);
	sendto_fd_flags = sendto_msg_flags = -1;
	CHECK(mm_notify("STOPPING=1") == 1);
	CHECK(sendto_fd_flags >= 0 && (sendto_fd_flags & FD_CLOEXEC));
	CHECK(sendto_msg_flags >= 0 && (sendto_msg_flags & MSG_NOSIGNAL));
	CHECK(next_fd() == before);
	unsetenv("NOTIFY_SOCKET");
	close(fd);
	unlink(sock_path);
}

static void test_watchdog_absent_means_disabled(void)
{
	uint64_t usec = 42;

	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	CHECK(mm_notify_watchdog_usec(&usec) == 0);
	CHECK_U64(usec, 42);
	/* A pid alone does not enable it. */
	char pid[32];

	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	setenv("WATCHDOG_PID", pid, 1);
	CHECK(mm_notify_watchdog_usec(&usec) == 0);
	CHECK_U64(usec, 42);
	unsetenv("WATCHDOG_PID");
}

static void test_watchdog_usec_is_returned_for_this_process(void)
{
	uint64_t usec = 0;
	char pid[32];

	unsetenv("WATCHDOG_PID");
	setenv("WATCHDOG_USEC", "30000000", 1);
	CHECK(mm_notify_watchdog_usec(&usec) == 1);
	CHECK_U64(usec, 30000000);
	CHECK(mm_notify_watchdog_usec(NULL) == 1);

	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	setenv("WATCHDOG_PID", pid, 1);
	setenv("WATCHDOG_USEC", "1", 1);
	CHECK(mm_notify_watchdog_usec(&usec) == 1);
	CHECK_U64(usec, 1);
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
}

static void test_watchdog_for_another_pid_is_disabled(void)
{
	uint64_t usec = 42;
	char pid[32];

	setenv("WATCHDOG_USEC", "30000000", 1);
	snprintf(pid, sizeof(pid), "%ld", (long)getpid() + 1);
	setenv("WATCHDOG_PID", pid, 1);
	CHECK(mm_notify_watchdog_usec(&usec) == 0);
	CHECK_U64(usec, 42);
	setenv("WATCHDOG_PID", "1", 1);
	CHECK(mm_notify_watchdog_usec(&usec) == (getpid() == 1 ? 1 : 0));
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
}

static void test_watchdog_rejects_malformed_values(void)
{
	static const char *const bad[] = {
		"",
		"0",
		"-1",
		"+5",
		" 5",
		"5 ",
		"5s",
		"abc",
		"0x10",
		"18446744073709551615",
		"99999999999999999999999",
	};
	uint64_t usec = 42;
	char pid[32];

	unsetenv("WATCHDOG_PID");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("WATCHDOG_USEC", bad[i], 1);
		if (mm_notify_watchdog_usec(&usec) != -EINVAL) {
			fprintf(stderr, "  WATCHDOG_USEC='%s' not rejected\n", bad[i]);
			CHECK(0);
		}
	}
	CHECK_U64(usec, 42);

	setenv("WATCHDOG_USEC", "1000", 1);
	snprintf(pid, sizeof(pid), "%ldx", (long)getpid());
	setenv("WATCHDOG_PID", pid, 1);
	CHECK(mm_notify_watchdog_usec(&usec) == -EINVAL);
	setenv("WATCHDOG_PID", "", 1);
	CHECK(mm_notify_watchdog_usec(&usec) == -EINVAL);
	setenv("WATCHDOG_PID", "0", 1);
	CHECK(mm_notify_watchdog_usec(&usec) == -EINVAL);
	setenv("WATCHDOG_PID", "-1", 1);
	CHECK(mm_notify_watchdog_usec(&usec) == -EINVAL);
	CHECK_U64(usec, 42);
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
}

int main(void)
{
	const char *base = getenv("TMPDIR");
	int probe = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (probe < 0) {
		perror("skipping: AF_UNIX datagram socket");
		return 77;
	}
	close(probe);

	/* sun_path holds 108 bytes: keep the directory short whatever $TMPDIR is. */
	if (!base || !*base || strlen(base) > 60)
		base = "/tmp";
	snprintf(tmpdir, sizeof(tmpdir), "%s/mmlockd-test-notify.XXXXXX", base);
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(sock_path, sizeof(sock_path), "%s/notify", tmpdir);

	RUN(test_notify_without_socket_is_a_noop);
	RUN(test_notify_delivers_state_as_one_datagram_from_us);
	RUN(test_notifyf_formats_the_state);
	RUN(test_notify_reaches_abstract_socket);
	RUN(test_notify_reports_bad_addresses_and_states_without_leaking);
	RUN(test_notify_socket_is_cloexec_and_closed_after_sending);
	RUN(test_watchdog_absent_means_disabled);
	RUN(test_watchdog_usec_is_returned_for_this_process);
	RUN(test_watchdog_for_another_pid_is_disabled);
	RUN(test_watchdog_rejects_malformed_values);

	unlink(sock_path);
	if (rmdir(tmpdir) < 0)
		perror(tmpdir);
	return check_summary();
}
