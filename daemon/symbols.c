/*
 * Kernel symbol table (see symbols.h): one sorted array of (address, type, name offset) over one
 * string pool. /proc/kallsyms has ~120k lines; loading takes a few tens of milliseconds and a few
 * MiB, once at start.
 */
#include "symbols.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "log.h"

struct sym {
	uint64_t addr;
	uint32_t name; /* offset in the pool */
	char type;
};

struct mm_symbols {
	struct sym *syms;
	size_t n, cap;
	char *pool;
	size_t pool_len, pool_cap;
};

#define MAX_SYMBOL_SIZE (1u << 20)

struct mm_symbols *mm_symbols_new(void)
{
	return calloc(1, sizeof(struct mm_symbols));
}

void mm_symbols_free(struct mm_symbols *s)
{
	if (!s)
		return;
	free(s->syms);
	free(s->pool);
	free(s);
}

int mm_symbols_add(struct mm_symbols *s, uint64_t addr, char type, const char *name)
{
	size_t len = strlen(name) + 1;
	if (mm_grow((void **)&s->syms, &s->cap, s->n + 1, sizeof(*s->syms), 4096) < 0 ||
	    mm_grow((void **)&s->pool, &s->pool_cap, s->pool_len + len, 1, 65536) < 0)
		return -ENOMEM;
	memcpy(s->pool + s->pool_len, name, len);
	s->syms[s->n++] = (struct sym){addr, (uint32_t)s->pool_len, type};
	s->pool_len += len;
	return 0;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* Among aliases prefer global text symbols ('T' sorts before 't'), then the earlier
	 * added, so lookups are deterministic. */
	if (x->type != y->type)
		return x->type < y->type ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

void mm_symbols_sort(struct mm_symbols *s)
{
	if (s->n)
		qsort(s->syms, s->n, sizeof(*s->syms), cmp_sym);
}

int mm_symbols_load_kallsyms(struct mm_symbols *s, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		int e = errno;
		mm_set_err(err, errlen, "cannot read %s: %s", path, strerror(e));
		return -e;
	}
	char line[512];
	int loaded = 0, zero = 0;
	while (fgets(line, sizeof(line), f)) {
		char *end, type, name[256];
		unsigned long long addr = strtoull(line, &end, 16);
		if (end == line || *end != ' ' || sscanf(end, " %c %255s", &type, name) != 2)
			continue;
		if (!addr) {
			zero++;
			continue;
		}
		if (mm_symbols_add(s, addr, type, name) < 0) {
			fclose(f);
			mm_set_err(err, errlen, "out of memory loading %s", path);
			return -ENOMEM;
		}
		loaded++;
	}
	fclose(f);
	if (!loaded && zero) {
		mm_set_err(err, errlen,
			   "%s shows no addresses (kernel.kptr_restrict, or not root): callchains "
			   "cannot be symbolized",
			   path);
		return -EPERM;
	}
	mm_symbols_sort(s);
	return loaded;
}

const char *mm_symbols_find(const struct mm_symbols *s, uint64_t addr, uint64_t *ret_start)
{
	if (!s || !s->n || addr < s->syms[0].addr)
		return NULL;
	size_t lo = 0, hi = s->n; /* first symbol above addr is at hi */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t i = lo - 1;
	/* Step back to the first alias at that address, which sorting made the preferred one. */
	while (i > 0 && s->syms[i - 1].addr == s->syms[i].addr)
		i--;
	if (addr - s->syms[i].addr >= MAX_SYMBOL_SIZE)
		return NULL;
	if (ret_start)
		*ret_start = s->syms[i].addr;
	return s->pool + s->syms[i].name;
}

uint64_t mm_symbols_addr(const struct mm_symbols *s, const char *name)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (!strcmp(s->pool + s->syms[i].name, name))
			return s->syms[i].addr;
	return 0;
}

size_t mm_symbols_count(const struct mm_symbols *s)
{
	return s ? s->n : 0;
}

void mm_symbols_get(const struct mm_symbols *s, size_t i, uint64_t *ret_addr, char *ret_type,
		    const char **ret_name)
{
	*ret_addr = s->syms[i].addr;
	*ret_type = s->syms[i].type;
	*ret_name = s->pool + s->syms[i].name;
}
