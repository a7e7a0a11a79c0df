/*
 * Interned cgroup paths (see names.h).
 */
#include "names.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot.h"

struct name {
	char key[MM_CGROUP_LEN]; /* the path, zero-padded: the table's key */
	char *copy;
	uint64_t refs;
};

int mm_names_init(struct mm_names *n)
{
	return mm_htab_init(&n->t, sizeof(struct name), MM_CGROUP_LEN);
}

void mm_names_free(struct mm_names *n)
{
	for (size_t i = 0; i < n->t.cap; i++) {
		struct name *e = mm_htab_at(&n->t, i);
		if (e)
			free(e->copy);
	}
	mm_htab_free(&n->t);
}

static void key_of(char key[MM_CGROUP_LEN], const char *path)
{
	memset(key, 0, MM_CGROUP_LEN);
	memcpy(key, path, strnlen(path, MM_CGROUP_LEN - 1));
}

const char *mm_names_ref(struct mm_names *n, const char *path)
{
	if (!path[0])
		return "";
	char key[MM_CGROUP_LEN];
	key_of(key, path);
	struct name *e = mm_htab_get(&n->t, key, true, SIZE_MAX);
	if (!e)
		return NULL;
	if (!e->copy && !(e->copy = strdup(key))) {
		mm_htab_remove(&n->t, key);
		return NULL;
	}
	e->refs++;
	return e->copy;
}

void mm_names_unref(struct mm_names *n, const char *copy)
{
	if (!copy[0])
		return;
	char key[MM_CGROUP_LEN];
	key_of(key, copy);
	struct name *e = mm_htab_get(&n->t, key, false, 0);
	if (!e || --e->refs)
		return;
	free(e->copy);
	mm_htab_remove(&n->t, key);
}
