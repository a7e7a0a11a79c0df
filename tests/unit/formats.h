/* Tracepoint format files as kernel 6.18 (x86_64) prints them, for tests that decode hand-built
 * records with libtraceevent exactly as the daemon does. */
#ifndef MM_TEST_FORMATS_H
#define MM_TEST_FORMATS_H

/* What every format file starts with: its name, its id and the common fields. */
#define FMT_HEAD(name, id)                                                                         \
	"name: " name "\n"                                                                         \
	"ID: " id "\n"                                                                             \
	"format:\n"                                                                                \
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"                     \
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"                     \
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"             \
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"                                 \
	"\n"

/* The fields the mmap_lock tracepoints share (TRACE_EVENT_CLASS mmap_lock in the kernel), and
 * the whole file of the two that have no more. */
#define MMAP_LOCK_FIELDS                                                                           \
	"\tfield:struct mm_struct * mm;\toffset:8;\tsize:8;\tsigned:0;\n"                          \
	"\tfield:u64 memcg_id;\toffset:16;\tsize:8;\tsigned:0;\n"                                  \
	"\tfield:bool write;\toffset:24;\tsize:1;\tsigned:0;\n"
#define MMAP_LOCK_PRINT_FMT                                                                        \
	"print fmt: \"mm=%p memcg_id=%llu write=%s\", REC->mm, REC->memcg_id, REC->write ? "       \
	"\"true\" : \"false\"\n"
#define MMAP_LOCK_FORMAT(name, id) FMT_HEAD(name, id) MMAP_LOCK_FIELDS "\n" MMAP_LOCK_PRINT_FMT

/* The files, a line of each per line here. */
/* clang-format off */
static const char fmt_page_fault_user[] = FMT_HEAD("page_fault_user", "190")
	"\tfield:unsigned long address;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned long ip;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned long error_code;\toffset:24;\tsize:8;\tsigned:0;\n"
	"\n"
	"print fmt: \"address=%ps ip=%ps error_code=0x%lx\", (void *)REC->address, (void "
	"*)REC->ip, REC->error_code\n";
static const char fmt_mmap_lock_start_locking[] = MMAP_LOCK_FORMAT("mmap_lock_start_locking", "677");
static const char fmt_mmap_lock_acquire_returned[] = FMT_HEAD("mmap_lock_acquire_returned", "675")
	MMAP_LOCK_FIELDS
	"\tfield:bool success;\toffset:25;\tsize:1;\tsigned:0;\n"
	"\n"
	"print fmt: \"mm=%p memcg_id=%llu write=%s success=%s\", REC->mm, REC->memcg_id, "
	"REC->write ? \"true\" : \"false\", REC->success ? \"true\" : \"false\"\n";
static const char fmt_mmap_lock_released[] = MMAP_LOCK_FORMAT("mmap_lock_released", "676");
static const char fmt_contention_begin[] = FMT_HEAD("contention_begin", "408")
	"\tfield:void * lock_addr;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned int flags;\toffset:16;\tsize:4;\tsigned:0;\n"
	"\n"
	"print fmt: \"%p (flags=%s)\", REC->lock_addr, "
	"__print_flags(REC->flags, \"|\", { (1U << "
	"0), \"SPIN\" }, { (1U << 1), \"READ\" }, { (1U << 2), "
	"\"WRITE\" }, { (1U << 3), \"RT\" }, "
	"{ (1U << 4), \"PERCPU\" }, { (1U << 5), \"MUTEX\" } )\n";
static const char fmt_contention_end[] = FMT_HEAD("contention_end", "407")
	"\tfield:void * lock_addr;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:int ret;\toffset:16;\tsize:4;\tsigned:1;\n"
	"\n"
	"print fmt: \"%p (ret=%d)\", REC->lock_addr, REC->ret\n";
static const char fmt_mm_filemap_fault[] = FMT_HEAD("mm_filemap_fault", "597")
	"\tfield:unsigned long i_ino;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:dev_t s_dev;\toffset:16;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned long index;\toffset:24;\tsize:8;\tsigned:0;\n"
	"\n"
	"print fmt: \"dev=%d:%d ino=%lx ofs=%lld\", ((unsigned int) ((REC->s_dev) >> 20)), "
	"((unsigned int) ((REC->s_dev) & ((1U << 20) - 1))), REC->i_ino, "
	"((loff_t)REC->index) << "
	"12\n";
static const char fmt_mm_filemap_add_to_page_cache[] = FMT_HEAD("mm_filemap_add_to_page_cache", "600")
	"\tfield:unsigned long pfn;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned long i_ino;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned long index;\toffset:24;\tsize:8;\tsigned:0;\n"
	"\tfield:dev_t s_dev;\toffset:32;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned char order;\toffset:36;\tsize:1;\tsigned:0;\n"
	"\n"
	"print fmt: \"dev %d:%d ino %lx pfn=0x%lx ofs=%lu order=%u\", ((unsigned int) "
	"((REC->s_dev) >> 20)), ((unsigned int) ((REC->s_dev) & ((1U << 20) - 1))), "
	"REC->i_ino, "
	"REC->pfn, REC->index << 12, REC->order\n";
static const char fmt_mm_filemap_map_pages[] = FMT_HEAD("mm_filemap_map_pages", "598")
	"\tfield:unsigned long i_ino;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:dev_t s_dev;\toffset:16;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned long index;\toffset:24;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned long last_index;\toffset:32;\tsize:8;\tsigned:0;\n"
	"\n"
	"print fmt: \"dev=%d:%d ino=%lx ofs=%lld-%lld\", ((unsigned int) "
	"((REC->s_dev) >> 20)), "
	"((unsigned int) ((REC->s_dev) & ((1U << 20) - 1))), REC->i_ino, "
	"((loff_t)REC->index) << "
	"12, ((((loff_t)REC->last_index + 1) << 12) - 1)\n";
/* clang-format on */
#endif
