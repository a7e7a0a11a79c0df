/*
 * The confinement of the HTTP threads (privilege.h), checked from inside threads that took it.
 * The socket threads' (mm_privilege_confine_http()): no file can be opened even by uid 0, not the
 * database either (Landlock); execve, new sockets, executable memory and prctl beyond thread
 * names fail with EPERM (seccomp); new threads still work. A query worker's
 * (mm_privilege_confine_query()), with the database at /, in /tmp and at a relative path: the
 * database and its -wal open for reading only, SQLite reads history through them, and nothing
 * else opens: not a file beside the database, not a new one there, not /etc/shadow or
 * /proc/self/mem (the confinement was once the database's whole directory: all of /tmp, or all
 * of / for --db /x.db). The thread that ran the test keeps none of it: capabilities and filters
 * are per thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <sqlite3.h>

#include "check.h"
#include "privilege.h"

/* Whether this test runs in a build with AddressSanitizer (as privilege.c decides it). */
static bool sanitized(void)
{
#if defined(__SANITIZE_ADDRESS__)
	return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
	return true;
#endif
#endif
	return false;
}
static char dir[64], outside[128];

struct seen {
	int outside_errno, db_errno, exec_errno, socket_errno, mmap_errno, thread_ok, prctl_errno,
		name_ok;
};

static bool have_landlock(void)
{
	return syscall(SYS_landlock_create_ruleset, NULL, 0, 1) >= 1;
}

static void *child(void *arg)
{
	return arg;
}

/* Opens @path with @flags and returns 0 or the errno. */
static int open_errno(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC, 0600);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

static void *socket_thread(void *arg)
{
	struct seen *s = arg;

	mm_privilege_drop_http();
	mm_privilege_confine_http();
	s->outside_errno = open_errno(outside, O_RDONLY);
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

static void test_socket_threads_open_no_file_and_stay_in_their_thread(void)
{
	CHECK(open_errno(outside, O_WRONLY | O_CREAT) == 0);

	struct seen s = {0};
	pthread_t t;
	CHECK(pthread_create(&t, NULL, socket_thread, &s) == 0);
	pthread_join(t, NULL);

	if (have_landlock())
		CHECK_U64(s.outside_errno, EACCES);
	else
		fprintf(stderr, "note: no Landlock here; the file check is skipped\n");
	CHECK_U64(s.exec_errno, EPERM);
	CHECK_U64(s.socket_errno, EPERM);
	CHECK_U64(s.mmap_errno, EPERM);
	CHECK(s.thread_ok);
	CHECK_U64(s.prctl_errno, EPERM);
	CHECK(s.name_ok);

	/* This thread is untouched. */
	CHECK_U64(open_errno(outside, O_RDONLY), 0);
	CHECK_U64(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), 0);
}

struct query_seen {
	const char *db, *beside, *created;
	int confine, db_read, db_write, wal_write, beside_errno, created_errno, shadow_errno,
		mem_errno, rows;
};

static void *query_thread(void *arg)
{
	struct query_seen *q = arg;
	char wal[300];

	mm_privilege_drop_http();
	mm_privilege_filter_http();
	q->confine = mm_privilege_confine_query(q->db);
	snprintf(wal, sizeof(wal), "%s-wal", q->db);
	q->db_read = open_errno(q->db, O_RDONLY);
	q->db_write = open_errno(q->db, O_RDWR);
	q->wal_write = open_errno(wal, O_RDWR);
	q->beside_errno = open_errno(q->beside, O_RDONLY);
	q->created_errno = open_errno(q->created, O_RDWR | O_CREAT);
	q->shadow_errno = open_errno("/etc/shadow", O_RDONLY);
	q->mem_errno = open_errno("/proc/self/mem", O_RDONLY);
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	q->rows = -1;
	if (sqlite3_open_v2(q->db, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, "SELECT count(*) FROM t", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		q->rows = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return NULL;
}

/* A WAL database at @db with one row, held open by the returned connection (as the writer holds
 * it: SQLite removes -wal and -shm when the last connection closes), and a file beside it. */
static sqlite3 *make_db(const char *db, const char *beside)
{
	sqlite3 *h = NULL;

	if (sqlite3_open(db, &h) != SQLITE_OK ||
	    sqlite3_exec(h,
			 "PRAGMA journal_mode = WAL; CREATE TABLE t (x); INSERT INTO t VALUES (1);",
			 NULL, NULL, NULL) != SQLITE_OK) {
		sqlite3_close(h);
		return NULL;
	}
	open_errno(beside, O_WRONLY | O_CREAT);
	return h;
}

static void remove_db(sqlite3 *h, const char *db, const char *beside, const char *created)
{
	char p[300];

	sqlite3_close(h);
	unlink(db);
	snprintf(p, sizeof(p), "%s-wal", db);
	unlink(p);
	snprintf(p, sizeof(p), "%s-shm", db);
	unlink(p);
	unlink(beside);
	unlink(created);
}

static void check_query_confinement(const char *where, const char *db, const char *beside,
				    const char *created)
{
	struct query_seen q = {.db = db, .beside = beside, .created = created};
	sqlite3 *h = make_db(db, beside);
	pthread_t t;

	CHECK(h != NULL);
	if (!h)
		return;
	CHECK(pthread_create(&t, NULL, query_thread, &q) == 0);
	pthread_join(t, NULL);
	printf("--db %s (%s): confine %d, read %d, write %d, -wal write %d, beside %d, create %d, "
	       "/etc/shadow %d, /proc/self/mem %d, rows %d\n",
	       db, where, q.confine, q.db_read, q.db_write, q.wal_write, q.beside_errno,
	       q.created_errno, q.shadow_errno, q.mem_errno, q.rows);
	CHECK_U64(q.confine, 0);
	CHECK_U64(q.db_read, 0);
	CHECK_U64(q.rows, 1);
	if (have_landlock()) {
		CHECK_U64(q.db_write, EACCES);
		CHECK_U64(q.wal_write, EACCES);
		CHECK_U64(q.beside_errno, EACCES);
		CHECK_U64(q.created_errno, EACCES);
		CHECK_U64(q.shadow_errno, EACCES);
		/* A sanitized build leaves /proc readable (privilege.c: ASan reads /proc/self/maps
		 * for its reports), so /proc/self/mem opens there; the product build refuses it. */
		if (!sanitized())
			CHECK_U64(q.mem_errno, EACCES);
	}
	remove_db(h, db, beside, created);
}

static void test_query_workers_open_only_the_database_wherever_it_is(void)
{
	char db[128], beside[128], created[128];

	/* Before the writer made the files, nothing is done and the caller is told to wait. */
	snprintf(db, sizeof(db), "%s/none.db", dir);
	CHECK_U64(mm_privilege_confine_query(db), -ENOENT);

	snprintf(db, sizeof(db), "%s/in-tmp.db", dir);
	snprintf(beside, sizeof(beside), "%s/beside", dir);
	snprintf(created, sizeof(created), "%s/created", dir);
	check_query_confinement("in /tmp", db, beside, created);

	if (access("/", W_OK) == 0) {
		snprintf(db, sizeof(db), "/mmlockd-test-priv-%d.db", (int)getpid());
		snprintf(beside, sizeof(beside), "/mmlockd-test-priv-%d.beside", (int)getpid());
		snprintf(created, sizeof(created), "/mmlockd-test-priv-%d.new", (int)getpid());
		check_query_confinement("at /", db, beside, created);
	} else {
		printf("skip --db at /: / is not writable here\n");
	}

	char cwd[4096];
	CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
	CHECK(chdir(dir) == 0);
	check_query_confinement("relative", "rel.db", "rel.beside", "rel.new");
	CHECK(chdir(cwd) == 0);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/mmlockd-priv.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	snprintf(outside, sizeof(outside), "%s/outside", dir);
	RUN(test_socket_threads_open_no_file_and_stay_in_their_thread);
	RUN(test_query_workers_open_only_the_database_wherever_it_is);
	unlink(outside);
	rmdir(dir);
	return check_summary();
}
