/*
 * What the tests that write SQLite files share (test_store, test_store_locks, test_writer): a
 * temporary directory, removed at the end unless MM_TEST_KEEP is set, fresh database paths in it,
 * and one-value queries read with plain SQLite, so a check does not go through the store.c it
 * tests.
 */
#ifndef MM_DBFILES_H
#define MM_DBFILES_H

#include <stdio.h>
#include <stdlib.h>

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

#endif
