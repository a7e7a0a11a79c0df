/*
 * Kernel symbol lookup: containment, aliases, the size cap that keeps heap addresses unresolved,
 * and loading a kallsyms file, including one whose addresses are hidden.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "symbols.h"

static void test_address_resolves_to_the_containing_symbol(void)
{
	struct mm_symbols *s = mm_symbols_new();
	mm_symbols_add(s, 0xffffffff81002000ull, 'T', "b_func");
	mm_symbols_add(s, 0xffffffff81001000ull, 't', "a_local");
	mm_symbols_add(s, 0xffffffff81001000ull, 'T', "a_global");
	mm_symbols_sort(s);
	uint64_t start = 0;
	CHECK_STR(mm_symbols_find(s, 0xffffffff81001010ull, &start), "a_global");
	CHECK_U64(start, 0xffffffff81001000ull);
	CHECK_STR(mm_symbols_find(s, 0xffffffff81002000ull, NULL), "b_func");
	CHECK(mm_symbols_find(s, 0xffffffff81000fffull, NULL) == NULL);
	CHECK(mm_symbols_find(s, 0xffff888100000000ull, NULL) == NULL); /* heap, below text */
	CHECK(mm_symbols_find(s, 0xffffffff81002000ull + (2u << 20), NULL) == NULL);
	CHECK_U64(mm_symbols_addr(s, "b_func"), 0xffffffff81002000ull);
	CHECK_U64(mm_symbols_addr(s, "nope"), 0);
	CHECK_U64(mm_symbols_count(s), 3);
	mm_symbols_free(s);
	CHECK(mm_symbols_find(NULL, 1, NULL) == NULL);
}

static void test_kallsyms_file_is_loaded_and_hidden_addresses_refused(void)
{
	char path[] = "/tmp/mm_kallsymsXXXXXX";
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");
	fputs("ffffffff81000000 T _stext\nffffffff815def90 T lock_mm_and_find_vma\n"
	      "ffffffffc0001000 t mod_fn\t[somemod]\nbroken line\n",
	      f);
	fclose(f);
	struct mm_symbols *s = mm_symbols_new();
	char err[256];
	CHECK(mm_symbols_load_kallsyms(s, path, err, sizeof(err)) == 3);
	CHECK_STR(mm_symbols_find(s, 0xffffffff815def95ull, NULL), "lock_mm_and_find_vma");
	CHECK_STR(mm_symbols_find(s, 0xffffffffc0001004ull, NULL), "mod_fn");
	mm_symbols_free(s);

	f = fopen(path, "w");
	fputs("0000000000000000 T _stext\n0000000000000000 T foo\n", f);
	fclose(f);
	s = mm_symbols_new();
	CHECK(mm_symbols_load_kallsyms(s, path, err, sizeof(err)) == -EPERM);
	CHECK_CONTAINS(err, "kptr_restrict");
	mm_symbols_free(s);
	unlink(path);
	s = mm_symbols_new();
	CHECK(mm_symbols_load_kallsyms(s, path, err, sizeof(err)) == -ENOENT);
	mm_symbols_free(s);
}

int main(void)
{
	RUN(test_address_resolves_to_the_containing_symbol);
	RUN(test_kallsyms_file_is_loaded_and_hidden_addresses_refused);
	return check_summary();
}
