/*
 * Which cgroup a process is accounted to, from /proc/PID/cgroup texts of v1-only, v2-only and
 * hybrid hosts (daemon/cgpath.h): the memory controller's path wherever it is mounted, the
 * unified one when memory is not on v1, unknown (never "/") when a v1 host hides an exiting task.
 */
#include <errno.h>
#include <string.h>

#include "cgpath.h"
#include "check.h"

/* This project's development machine: v1 controllers plus the unified hierarchy (no controller
 * on it), the process in a v1 memory cgroup. */
static const char hybrid_v1_memory[] = "9:name=systemd:/\n"
				       "8:pids:/\n"
				       "4:memory:/process_api/987f98b4\n"
				       "3:cpuset:/\n"
				       "1:cpu:/\n"
				       "0::/\n";

static void test_hybrid_host_takes_the_v1_memory_path_not_the_unified_root(void)
{
	char cg[256];
	CHECK(mm_cgpath_parse(hybrid_v1_memory, false, cg, sizeof(cg)) == 0);
	CHECK_STR(cg, "/process_api/987f98b4");
	/* The unified line before the memory one changes nothing. */
	CHECK(mm_cgpath_parse("0::/user.slice\n4:memory:/m\n", false, cg, sizeof(cg)) == 0);
	CHECK_STR(cg, "/m");
}

static void test_exiting_task_on_a_v1_memory_hierarchy_is_unknown_not_root(void)
{
	/* What the kernel prints for a zombie on v1 ("/" everywhere), and what it prints for a
	 * live one read just before it exited: both unknown once stat says it was exiting. */
	char cg[256] = "stale";
	CHECK(mm_cgpath_parse("4:memory:/\n0::/\n", true, cg, sizeof(cg)) == -ENODATA);
	CHECK_STR(cg, "");
	CHECK(mm_cgpath_parse(hybrid_v1_memory, true, cg, sizeof(cg)) == -ENODATA);
	CHECK_STR(cg, "");
}

static void test_v2_host_takes_the_unified_path_also_while_exiting(void)
{
	char cg[256];
	CHECK(mm_cgpath_parse("0::/system.slice/nginx.service\n", false, cg, sizeof(cg)) == 0);
	CHECK_STR(cg, "/system.slice/nginx.service");
	/* A zombie keeps its cgroup on v2; removed since, the kernel appends " (deleted)". */
	CHECK(mm_cgpath_parse("0::/app.scope (deleted)\n", true, cg, sizeof(cg)) == 0);
	CHECK_STR(cg, "/app.scope");
}

static void test_hybrid_host_with_memory_on_the_unified_hierarchy_takes_the_unified_path(void)
{
	/* systemd's "hybrid" mode puts only name=systemd on v1; controllers, memory among them,
	 * can be on the unified hierarchy: no v1 line names memory. */
	char cg[256];
	const char *text = "1:name=systemd:/user.slice/u.scope\n0::/user.slice/u.scope/app\n";
	CHECK(mm_cgpath_parse(text, false, cg, sizeof(cg)) == 0);
	CHECK_STR(cg, "/user.slice/u.scope/app");
}

static void test_v1_only_host_takes_a_co_mounted_memory_path_and_without_memory_knows_none(void)
{
	char cg[256];
	CHECK(mm_cgpath_parse("5:cpu,cpuacct:/a\n3:blkio,memory:/docker/abc\n", false, cg,
			      sizeof(cg)) == 0);
	CHECK_STR(cg, "/docker/abc");
	/* "memoryx" or "name=memory" is not the memory controller; no unified line either. */
	CHECK(mm_cgpath_parse("5:cpu:/a\n2:memoryx:/b\n1:name=memory:/c\n", false, cg,
			      sizeof(cg)) == -ENODATA);
	CHECK_STR(cg, "");
}

static void test_odd_texts_give_the_path_as_written_or_unknown(void)
{
	char cg[256], small[8];
	/* A colon inside the path, no final newline. */
	CHECK(mm_cgpath_parse("4:memory:/a:b/c", false, cg, sizeof(cg)) == 0);
	CHECK_STR(cg, "/a:b/c");
	CHECK(mm_cgpath_parse("", false, cg, sizeof(cg)) == -ENODATA);
	CHECK(mm_cgpath_parse("garbage\n\n", false, cg, sizeof(cg)) == -ENODATA);
	/* "10::x" is not the unified line (id 0 only). */
	CHECK(mm_cgpath_parse("10::/x\n", false, cg, sizeof(cg)) == -ENODATA);
	CHECK(mm_cgpath_parse("0::/a/long/path\n", false, small, sizeof(small)) == 0);
	CHECK_STR(small, "/a/long");
}

static void test_hierarchy_whose_moves_count_is_memorys_v1_one_else_the_unified(void)
{
	CHECK(mm_cgpath_hierarchy(hybrid_v1_memory) == 4);
	CHECK(mm_cgpath_hierarchy("12:blkio,memory:/x\n") == 12);
	CHECK(mm_cgpath_hierarchy("1:name=systemd:/\n0::/a\n") == 0);
	CHECK(mm_cgpath_hierarchy("0::/\n") == 0);
	CHECK(mm_cgpath_hierarchy("5:cpu:/a\n") == -ENODATA);
	CHECK(mm_cgpath_hierarchy("x:memory:/a\n") == -ENODATA);
	CHECK(mm_cgpath_hierarchy("") == -ENODATA);
}

int main(void)
{
	RUN(test_hybrid_host_takes_the_v1_memory_path_not_the_unified_root);
	RUN(test_exiting_task_on_a_v1_memory_hierarchy_is_unknown_not_root);
	RUN(test_v2_host_takes_the_unified_path_also_while_exiting);
	RUN(test_hybrid_host_with_memory_on_the_unified_hierarchy_takes_the_unified_path);
	RUN(test_v1_only_host_takes_a_co_mounted_memory_path_and_without_memory_knows_none);
	RUN(test_odd_texts_give_the_path_as_written_or_unknown);
	RUN(test_hierarchy_whose_moves_count_is_memorys_v1_one_else_the_unified);
	return check_summary();
}
