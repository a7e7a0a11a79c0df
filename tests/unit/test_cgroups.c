/*
 * The cgroups collector (plugins/cgroups.c): a kernel move (cgroup:cgroup_attach_task) of a
 * known process into the accounting hierarchy becomes its cgroup; moves of other hierarchies, of
 * threads, of unknown pids and records that cannot be decoded change nothing (the last counted);
 * and that following them costs small rings and no kernel symbol table.
 */
#include <string.h>

#include "check.h"
#include "formats.h"
#include "records.h"

/* clang-format off */
static const char fmt_cgroup_attach_task[] = FMT_HEAD("cgroup_attach_task", "538")
	"\tfield:int dst_root;\toffset:8;\tsize:4;\tsigned:1;\n"
	"\tfield:int dst_level;\toffset:12;\tsize:4;\tsigned:1;\n"
	"\tfield:u64 dst_id;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:int pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\tfield:__data_loc char[] dst_path;\toffset:28;\tsize:4;\tsigned:0;\n"
	"\tfield:__data_loc char[] comm;\toffset:32;\tsize:4;\tsigned:0;\n"
	"\n"
	"print fmt: \"dst_root=%d dst_id=%llu dst_level=%d dst_path=%s pid=%d comm=%s\", "
	"REC->dst_root, REC->dst_id, REC->dst_level, __get_str(dst_path), REC->pid, "
	"__get_str(comm)\n";
/* clang-format on */

/* A sample of cgroup_attach_task: task @pid moved into @path of hierarchy @root, written by the
 * task @by; @loc_len overrides the path's length in its __data_loc (0: the true one). */
static const struct perf_event_header *attach(struct rec *r, uint32_t by, int32_t root, int32_t pid,
					      const char *path, uint32_t loc_len)
{
	uint8_t raw[160] = {0};
	uint16_t type = 538;
	uint32_t n = (uint32_t)strlen(path) + 1, comm_len = 3;
	uint32_t path_loc = 36 | ((loc_len ? loc_len : n) << 16);
	uint32_t comm_loc = (36 + n) | (comm_len << 16);
	memcpy(raw, &type, 2);
	memcpy(raw + 4, &by, 4);
	memcpy(raw + 8, &root, 4);
	memcpy(raw + 24, &pid, 4);
	memcpy(raw + 28, &path_loc, 4);
	memcpy(raw + 32, &comm_loc, 4);
	memcpy(raw + 36, path, n);
	memcpy(raw + 36 + n, "sh", comm_len);
	uint32_t raw_size = 36 + n + comm_len, size = (raw_size + 4 + 7) / 8 * 8 - 4;
	memset(r, 0, sizeof(*r));
	uint8_t *p = (uint8_t *)(&r->hdr + 1);
	uint64_t v = by | ((uint64_t)by << 32), time = 1000;
	memcpy(p, &v, 8);
	memcpy(p + 8, &time, 8);
	memcpy(p + 24, &size, 4);
	memcpy(p + 28, raw, raw_size);
	r->hdr.type = PERF_RECORD_SAMPLE;
	r->hdr.size = (uint16_t)(sizeof(r->hdr) + 28 + size);
	return &r->hdr;
}

/* Every process is "/parent" when looked up. */
static int in_parent(void *ctx, uint32_t pid, struct mm_proc_ident *ret)
{
	rec_lookup(ctx, pid, ret);
	snprintf(ret->cgroup, sizeof(ret->cgroup), "/parent");
	return 0;
}

/* The cgroup of @pid's row in a snapshot of the open window ("?" when it has none). */
static void cgroup_of(struct mm_host *h, uint32_t pid, char *ret, size_t size)
{
	struct mm_snapshot *s = mm_host_snapshot(h, 2);
	snprintf(ret, size, "?");
	for (size_t i = 0; s && i < s->nprocs; i++)
		if ((uint32_t)s->procs[i].pid == pid)
			snprintf(ret, size, "%s", s->procs[i].cgroup);
	mm_snapshot_unref(s);
}

static uint64_t bad_fields(struct mm_host *h)
{
	struct mm_snapshot *s = mm_host_snapshot(h, 2);
	uint64_t n = UINT64_MAX;
	for (size_t i = 0; s && i < s->nglobals; i++)
		if (!strcmp(s->globals[i].family, "cgroups_events") &&
		    !strcmp(s->globals[i].name, "bad_field"))
			n = s->globals[i].total;
	mm_snapshot_unref(s);
	return n;
}

static void test_a_move_into_the_accounting_hierarchy_is_the_processs_cgroup(void)
{
	struct rec_fx f;
	struct rec r;
	char cg[256];
	static const char *const fmts[] = {fmt_cgroup_attach_task}, *const sys[] = {"cgroup"};
	rec_fx_new(&f, "cgroups", in_parent, NULL, 0);
	f.task = rec_add_streams(f.h, f.tep, 1, fmts, sys, f.ev, f.stream, REC_SAMPLE_TYPE, -1, 0);
	mm_host_set_cgroup_hierarchy(f.h, 4);
	mm_host_start(f.h);
	mm_host_proc(f.h, 100)->faults = 1;
	cgroup_of(f.h, 100, cg, sizeof(cg));
	CHECK_STR(cg, "/parent");
	/* Another hierarchy (cpu's, the unified one on this host): not where memory is. */
	mm_host_record(f.h, f.stream[0], attach(&r, 99, 1, 100, "/cpu/x", 0));
	mm_host_record(f.h, f.stream[0], attach(&r, 99, 0, 100, "/unified/x", 0));
	cgroup_of(f.h, 100, cg, sizeof(cg));
	CHECK_STR(cg, "/parent");
	/* The memory hierarchy: its path, as the kernel gave it. */
	mm_host_record(f.h, f.stream[0], attach(&r, 99, 4, 100, "/system.slice/a.service", 0));
	cgroup_of(f.h, 100, cg, sizeof(cg));
	CHECK_STR(cg, "/system.slice/a.service");
	CHECK_U64(bad_fields(f.h), 0);
	/* A thread of it, or a pid the host does not know: no entry made, nothing changed. */
	mm_host_record(f.h, f.stream[0], attach(&r, 99, 4, 101, "/b", 0));
	CHECK(mm_host_proc_name(f.h, 101) == NULL);
	/* A path whose __data_loc runs past the record: counted, not taken. */
	mm_host_record(f.h, f.stream[0], attach(&r, 99, 4, 100, "/c", 200));
	cgroup_of(f.h, 100, cg, sizeof(cg));
	CHECK_STR(cg, "/system.slice/a.service");
	CHECK_U64(bad_fields(f.h), 1);
	rec_fx_free(&f);
}

static void test_moves_are_not_followed_while_the_hierarchy_is_unknown(void)
{
	/* A replay's lookup tells no hierarchy: a move of hierarchy 0 is not taken for the
	 * unified one. */
	struct rec_fx f;
	struct rec r;
	char cg[256];
	static const char *const fmts[] = {fmt_cgroup_attach_task}, *const sys[] = {"cgroup"};
	rec_fx_new(&f, "cgroups", in_parent, NULL, 0);
	f.task = rec_add_streams(f.h, f.tep, 1, fmts, sys, f.ev, f.stream, REC_SAMPLE_TYPE, -1, 0);
	mm_host_start(f.h);
	mm_host_proc(f.h, 100)->faults = 1;
	mm_host_record(f.h, f.stream[0], attach(&r, 99, 0, 100, "/x", 0));
	cgroup_of(f.h, 100, cg, sizeof(cg));
	CHECK_STR(cg, "/parent");
	rec_fx_free(&f);
}

static void test_moves_cost_small_rings_and_no_symbol_table(void)
{
	struct rec_fx f;
	static const char *const fmts[] = {fmt_cgroup_attach_task}, *const sys[] = {"cgroup"};
	rec_fx_new(&f, "cgroups", in_parent, NULL, 0);
	CHECK(mm_host_tp_rare(f.h, "cgroup", "cgroup_attach_task"));
	CHECK(!mm_host_tp_rare(f.h, "mmap_lock", "mmap_lock_start_locking")); /* nobody asks */
	f.task = rec_add_streams(f.h, f.tep, 1, fmts, sys, f.ev, f.stream, REC_SAMPLE_TYPE, -1, 0);
	mm_host_start(f.h);
	CHECK(!mm_host_needs_symbols(f.h));
	rec_fx_free(&f);
	/* Beside a collector that looks addresses up, the table stays. */
	static const char *const all[] = {fmt_cgroup_attach_task, fmt_mmap_lock_start_locking,
					  fmt_mmap_lock_acquire_returned},
				 *const all_sys[] = {"cgroup", "mmap_lock", "mmap_lock"};
	rec_fx_new(&f, "cgroups,fallbacks", in_parent, NULL, 0);
	f.task = rec_add_streams(f.h, f.tep, 3, all, all_sys, f.ev, f.stream, REC_SAMPLE_TYPE, -1,
				 0);
	mm_host_start(f.h);
	CHECK(mm_host_needs_symbols(f.h));
	rec_fx_free(&f);
}

int main(void)
{
	RUN(test_a_move_into_the_accounting_hierarchy_is_the_processs_cgroup);
	RUN(test_moves_are_not_followed_while_the_hierarchy_is_unknown);
	RUN(test_moves_cost_small_rings_and_no_symbol_table);
	return check_summary();
}
