/*
 * The confinement of the HTTP threads (privilege.h), checked from inside a thread that took it:
 * files outside the database's directory cannot be opened even by uid 0 (Landlock), execve,
 * new sockets, executable memory and prctl beyond thread names fail with EPERM (seccomp), and
 * what the HTTP threads do need (files beside the database, new threads) still works. The thread
 * that ran the test keeps none of it: capabilities and filters are per thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "privilege.h"

static char dir[64], db_dir[96], db_file[128], outside[128];

struct seen {
	int outside_errno, beside_fd, exec_errno, socket_errno, mmap_errno, thread_ok, prctl_errno,
		name_ok;
};

static void *child(void *arg)
{
	return arg;
}

static void *confined(void *arg)
{
	struct seen *s = arg;

	mm_privilege_confine_http(db_file);
	int fd = open(outside, O_RDONLY | O_CLOEXEC);
	s->outside_errno = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	s->beside_fd = open(db_file, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (s->beside_fd >= 0)
		close(s->beside_fd);
	char *const argv[] = {"/bin/false", NULL}; /* if it ran, the test exits 1 */
	execv(argv[0], argv);
	s->exec_errno = errno;
	int sk = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	s->socket_errno = sk < 0 ? errno : 0;
	if (sk >= 0)
		close(sk);
	void *m = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	s->mmap_errno = m == MAP_FAILED ? errno : 0;
	if (m != MAP_FAILED)
		munmap(m, 4096);
	pthread_t t;
	s->thread_ok = pthread_create(&t, NULL, child, NULL) == 0 && pthread_join(t, NULL) == 0;
	/* prctl is narrowed to thread names: anything else is EPERM. */
	s->prctl_errno = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) < 0 ? errno : 0;
	s->name_ok = prctl(PR_SET_NAME, "confined", 0, 0, 0) == 0;
	return NULL;
}

static void test_http_confinement_holds_inside_and_stays_in_its_thread(void)
{
	snprintf(dir, sizeof(dir), "/tmp/mmlockd-priv.XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	snprintf(db_dir, sizeof(db_dir), "%s/db", dir);
	snprintf(db_file, sizeof(db_file), "%s/mmlockd.db", db_dir);
	snprintf(outside, sizeof(outside), "%s/outside", dir);
	CHECK(mkdir(db_dir, 0700) == 0);
	int fd = open(outside, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	CHECK(fd >= 0);
	close(fd);

	struct seen s = {0};
	pthread_t t;
	CHECK(pthread_create(&t, NULL, confined, &s) == 0);
	pthread_join(t, NULL);

	long abi = syscall(444 /* landlock_create_ruleset */, NULL, 0, 1);
	if (abi >= 1)
		CHECK_U64(s.outside_errno, EACCES);
	else
		fprintf(stderr, "note: no Landlock here; the file check is skipped\n");
	CHECK(s.beside_fd >= 0);
	CHECK_U64(s.exec_errno, EPERM);
	CHECK_U64(s.socket_errno, EPERM);
	CHECK_U64(s.mmap_errno, EPERM);
	CHECK(s.thread_ok);
	CHECK_U64(s.prctl_errno, EPERM);
	CHECK(s.name_ok);

	/* This thread is untouched. */
	fd = open(outside, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	CHECK_U64(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), 0);
	unlink(outside);
	unlink(db_file);
	rmdir(db_dir);
	rmdir(dir);
}

int main(void)
{
	RUN(test_http_confinement_holds_inside_and_stays_in_its_thread);
	return check_summary();
}
