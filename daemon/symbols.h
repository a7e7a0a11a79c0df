/*
 * Kernel symbols: address -> name, from /proc/kallsyms live or from a recording's symbol table.
 * Callchains are symbolized by name (never by address), so classification survives a reboot,
 * KASLR and another kernel build. Pure code apart from mm_symbols_load_kallsyms().
 */
#ifndef MM_SYMBOLS_H
#define MM_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

struct mm_symbols;

struct mm_symbols *mm_symbols_new(void);
void mm_symbols_free(struct mm_symbols *s); /* accepts NULL */

/* Adds one symbol (@type as in kallsyms: 't', 'T', 'd', ...). Call mm_symbols_sort() after the
 * last add and before any lookup. Returns 0 or -ENOMEM. */
int mm_symbols_add(struct mm_symbols *s, uint64_t addr, char type, const char *name);
void mm_symbols_sort(struct mm_symbols *s);

/* Loads every symbol of @path (normally /proc/kallsyms) and sorts. Returns the number loaded, or
 * -errno with a reason in @err; -EPERM when the addresses are hidden (kptr_restrict, not root). */
int mm_symbols_load_kallsyms(struct mm_symbols *s, const char *path, char *err, size_t errlen);

/* The symbol containing @addr (the last one starting at or below it, at most 1 MiB below), or
 * NULL. *ret_start (optional) gets its start address. */
const char *mm_symbols_find(const struct mm_symbols *s, uint64_t addr, uint64_t *ret_start);

/* The start address of the first symbol named @name, or 0. */
uint64_t mm_symbols_addr(const struct mm_symbols *s, const char *name);

/* Iteration, in address order: 0 <= i < mm_symbols_count(). */
size_t mm_symbols_count(const struct mm_symbols *s);
void mm_symbols_get(const struct mm_symbols *s, size_t i, uint64_t *ret_addr, char *ret_type,
		    const char **ret_name);

#endif
