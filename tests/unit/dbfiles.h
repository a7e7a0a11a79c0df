/*
 * What the tests that write SQLite files share (test_store, test_store_locks, test_writer): a
 * temporary directory, removed at the end unless MM_TEST_KEEP is set, fresh database paths in it,
 * and one-value queries read with plain SQLite, so a check does not go through the store.c it
 * tests.
 */
#ifndef MM_DBFILES_H
#define MM_DBFILES_H

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

static char tmpdir[64];
static int dbno;

/* Creates the directory /tmp/mmlockd-test-@name-XXXXXX (tmpdir). Returns 0, or -1 after saying
 * why. */
static inline int tmpdir_create(const char *name)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/mmlockd-test-%s-XXXXXX", name);
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return -1;
	}
	return 0;
}

static inline void tmpdir_remove(void)
{
	char cmd[128];

	if (getenv("MM_TEST_KEEP")) {
		printf("kept %s\n", tmpdir);
		return;
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
}

/* A fresh database path in tmpdir, in a directory that does not exist yet. */
static inline const char *new_path(void)
{
	static char path[256];

	snprintf(path, sizeof(path), "%s/db%d/history.db", tmpdir, ++dbno);
	return path;
}

/* First column of the first row of @sql on the database at @path, as an integer; -2 when it is
 * NULL, -1 on error. */
static inline long long q_int(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	long long v = -1;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_type(s, 0) == SQLITE_NULL ? -2 : sqlite3_column_int64(s, 0);
	else
		fprintf(stderr, "q_int(%s): %s\n", sql, sqlite3_errmsg(db));
	sqlite3_finalize(s);
	sqlite3_close(db);
	return v;
}

/* Same, as text into @buf ("" on error or NULL). */
static inline const char *q_text(const char *path, const char *sql, char *buf, size_t size)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;

	buf[0] = '\0';
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
		snprintf(buf, size, "%s", (const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	sqlite3_close(db);
	return buf;
}

/* Runs @fn(DIR) in a child with its own mount namespace and a tmpfs of @size (mount's "size=")
 * on DIR = tmpdir/@sub. Returns the child's exit status (fn's return), 77 when it could not
 * mount (not root, or no CAP_SYS_ADMIN in a container), or -1 when it did not exit. */
static inline int in_small_tmpfs(const char *sub, const char *size, int (*fn)(const char *dir))
{
	char dir[256], opts[64];
	int status;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/%s", tmpdir, sub);
	snprintf(opts, sizeof(opts), "size=%s,mode=0700", size);
	if (mkdir(dir, 0700) < 0)
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("tmpfs", dir, "tmpfs", 0, opts) < 0)
			_exit(77);
		_exit(fn(dir));
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

#endif
