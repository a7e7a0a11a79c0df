/*
 * Dropping capabilities, no_new_privs and seccomp filters per thread (see privilege.h).
 *
 * Capabilities are set with the raw capset(2) system call, which changes the calling thread only
 * (glibc has no wrapper that broadcasts it, unlike setuid); the bounding set is emptied with
 * PR_CAPBSET_DROP for every capability still in it, which needs CAP_SETPCAP and is skipped (the
 * sets stay as they are) when the thread lacks it, e.g. in the tests that run as nobody. The
 * seccomp filters are built with libseccomp; a system call name the running architecture does
 * not have is skipped, so the lists stay portable. A filter that cannot load is logged and the
 * daemon goes on without it.
 */
#include "privilege.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/landlock.h>
#include <linux/securebits.h>
#include <sched.h>
#include <dirent.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <termios.h>
#include <unistd.h>

#include "log.h"

/* Built with AddressSanitizer (meson -Db_sanitize=address): its leak check needs ptrace. */
#if defined(__SANITIZE_ADDRESS__)
#define MM_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MM_SANITIZED 1
#endif
#endif

/* What the HTTP threads may call; everything else fails with EPERM. Sockets are already open
 * (libmicrohttpd accepts on the listening socket it is given), SQLite opens the database
 * read-only per query, glibc needs memory, time, futexes and (at start) new threads. */
static const char *const http_allow[] = {
	"read",
	"readv",
	"pread64",
	"preadv",
	"write",
	"writev",
	"pwrite64",
	"recvfrom",
	"recvmsg",
	"sendto",
	"sendmsg",
	"sendfile",
	"accept",
	"accept4",
	"shutdown",
	"close",
	"getsockopt",
	"setsockopt",
	"getsockname",
	"getpeername",
	"fcntl",
	"epoll_create",
	"epoll_create1",
	"epoll_ctl",
	"epoll_wait",
	"epoll_pwait",
	"poll",
	"ppoll",
	"select",
	"pselect6",
	"eventfd2",
	"pipe2",
	"futex",
	"set_robust_list",
	"get_robust_list",
	"rseq",
	"clock_gettime",
	"clock_getres",
	"clock_nanosleep",
	"nanosleep",
	"gettimeofday",
	"time",
	"munmap",
	"mremap",
	"madvise",
	"brk",
	"open",
	"openat",
	"stat",
	"fstat",
	"lstat",
	"newfstatat",
	"statx",
	"lseek",
	"access",
	"faccessat",
	"faccessat2",
	"getcwd",
	"readlink",
	"readlinkat",
	"fsync",
	"fdatasync",
	"ftruncate",
	"getpid",
	"gettid",
	"getuid",
	"geteuid",
	"getgid",
	"getegid",
	"getrandom",
	"rt_sigprocmask",
	"rt_sigreturn",
	"sigaltstack",
	"tgkill",
	"sched_yield",
	"sched_getaffinity",
	"exit",
	"exit_group",
	"uname",
	"sysinfo",
	"membarrier",
	"getrusage",
	/* Only ever narrows what the caller can open: a query worker confines itself to the
	 * database's files once they exist (mm_privilege_confine_query()). */
	"landlock_create_ruleset",
	"landlock_add_rule",
	"landlock_restrict_self",
};

/* What the main and store threads may no longer call after start-up: nothing it does needs these,
 * and each is a step an attacker who got code running in it would take. */
static const char *const main_deny[] = {
	"execve",
	"execveat",
#ifndef MM_SANITIZED /* LeakSanitizer stops the threads at exit with ptrace from a child */
	"ptrace",
#endif
	"process_vm_readv",
	"process_vm_writev",
	"mount",
	"umount2",
	"pivot_root",
	"chroot",
	"move_mount",
	"open_tree",
	"fsopen",
	"fsmount",
	"fspick",
	"mount_setattr",
	"init_module",
	"finit_module",
	"delete_module",
	"kexec_load",
	"kexec_file_load",
	"reboot",
	"swapon",
	"swapoff",
	"setns",
	"unshare",
	"setuid",
	"setgid",
	"setreuid",
	"setregid",
	"setresuid",
	"setresgid",
	"setgroups",
	"setfsuid",
	"setfsgid",
	"capset",
	"perf_event_open",
	"open_by_handle_at",
	"name_to_handle_at",
	"keyctl",
	"add_key",
	"request_key",
	"userfaultfd",
	"acct",
	"iopl",
	"ioperm",
	"personality",
	"settimeofday",
	"clock_settime",
	"clock_adjtime",
	"adjtimex",
	"sethostname",
	"setdomainname",
	"quotactl",
	"lookup_dcookie",
	"vhangup",
};

static int last_cap(void)
{
	static int last = -1;
	char buf[16] = "";

	if (last >= 0)
		return last;
	int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 0)
			last = atoi(buf);
	}
	if (last <= 0 || last > 63)
		last = CAP_LAST_CAP;
	return last;
}

/* Sets the calling thread's permitted and effective sets to @keep (a bit mask), its inheritable
 * and ambient sets to nothing, and empties its bounding set of everything not in @keep. */
static int drop_caps(uint64_t keep)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {{0}};
	int r = 0;

	if (syscall(SYS_capget, &hdr, data) < 0)
		return log_warning_errno(errno, "privileges: capget: %m");
	bool setpcap = data[0].effective & (1u << CAP_SETPCAP);
	for (int c = 0; c <= last_cap(); c++) {
		if ((keep >> c) & 1 || prctl(PR_CAPBSET_READ, c, 0, 0, 0) != 1)
			continue;
		if (!setpcap)
			break; /* only CAP_SETPCAP can shrink the bounding set */
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && !r)
			r = log_warning_errno(errno,
					      "privileges: dropping capability %d from the "
					      "bounding set: %m",
					      c);
	}
	(void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (setpcap)
		/* uid 0 gets no capabilities back from exec or a uid change, ever. */
		(void)prctl(PR_SET_SECUREBITS,
			    SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
				    SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
				    SECBIT_NO_CAP_AMBIENT_RAISE |
				    SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
			    0, 0, 0);
	for (int i = 0; i < 2; i++) {
		uint32_t k = (uint32_t)(keep >> (32 * i));
		data[i].effective &= k;
		data[i].permitted &= k;
		data[i].inheritable = 0;
	}
	if (syscall(SYS_capset, &hdr, data) < 0 && !r)
		r = log_warning_errno(errno, "privileges: capset: %m");
	return r;
}

static int no_new_privs(void)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return log_warning_errno(errno, "privileges: PR_SET_NO_NEW_PRIVS: %m");
	return 0;
}

/* Adds @action for each name in @names that this architecture has. */
static int add_rules(scmp_filter_ctx ctx, uint32_t action, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int nr = seccomp_syscall_resolve_name(names[i]);
		if (nr == __NR_SCMP_ERROR)
			continue;
		int r = seccomp_rule_add(ctx, action, nr, 0);
		if (r < 0)
			return r;
	}
	return 0;
}

static int load(scmp_filter_ctx ctx, int r, const char *what)
{
	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	if (r < 0)
		return log_warning_errno(
			r, "privileges: the %s seccomp filter is not installed: %m", what);
	return 0;
}

/* The HTTP threads' allow-list, with the arguments narrowed where a call can do more than they
 * need: memory is never mapped executable, new threads only (clone3 says ENOSYS, so glibc falls
 * back to clone, whose flags a filter can see), prctl only names threads, ioctl only asks about
 * sockets and terminals. */
static int http_filter(bool query)
{
	/* A query worker also unlinks SQLite's temporary files, which Landlock lets it create and
	 * remove in the database's -tmp directory only (mm_privilege_confine_query()). */
	static const char *const query_allow[] = {"unlink", "unlinkat"};
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
	int r;

	if (!ctx)
		return log_warning_errno(ENOMEM, "privileges: the HTTP seccomp filter: %m");
	r = add_rules(ctx, SCMP_ACT_ALLOW, http_allow, sizeof(http_allow) / sizeof(http_allow[0]));
	if (!r && query)
		r = add_rules(ctx, SCMP_ACT_ALLOW, query_allow,
			      sizeof(query_allow) / sizeof(query_allow[0]));
	/* Calls allowed with one argument so: no executable mappings, threads only (clone3 says
	 * ENOSYS so glibc falls back to clone), the thread's name, the ioctls of sockets and
	 * terminals. */
	static const struct {
		int nr;
		struct scmp_arg_cmp arg;
	} allow_if[] = {
		{SCMP_SYS(mmap), SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0)},
		{SCMP_SYS(mprotect), SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0)},
		{SCMP_SYS(clone), SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD)},
		{SCMP_SYS(prctl), SCMP_A0(SCMP_CMP_EQ, PR_SET_NAME, 0)},
		{SCMP_SYS(prctl), SCMP_A0(SCMP_CMP_EQ, PR_GET_NAME, 0)},
		{SCMP_SYS(ioctl), SCMP_A1(SCMP_CMP_EQ, FIONREAD, 0)},
		{SCMP_SYS(ioctl), SCMP_A1(SCMP_CMP_EQ, FIONBIO, 0)},
		{SCMP_SYS(ioctl), SCMP_A1(SCMP_CMP_EQ, TCGETS, 0)},
	};
	for (size_t i = 0; !r && i < sizeof(allow_if) / sizeof(allow_if[0]); i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allow_if[i].nr, 1, allow_if[i].arg);
	if (!r)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	return load(ctx, r, "HTTP");
}

#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#define LANDLOCK_FS_TRUNCATE  (1ULL << 14) /* ABI 3 */
#define LANDLOCK_FS_IOCTL_DEV (1ULL << 15) /* ABI 5 */

/* One file the Landlock ruleset of landlock_files() allows, and how. */
struct file_rule {
	const char *path;
	uint64_t access;
};

/* Lets the calling thread (and the threads it creates) open only the files of @extra[0..nextra)
 * with their access, and read /dev/urandom (SQLite seeds its PRNG from it) and /etc/localtime
 * (glibc's time zone), nothing else, although it runs as uid 0: Landlock (Linux 5.13). Every
 * rule is for a file, never a directory, so no file can be created. Skipped, with a notice, on a
 * kernel without Landlock. */
static int landlock_files(const struct file_rule *extra, size_t nextra)
{
	long abi = syscall(__NR_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < 1)
		return log_notice(
			"privileges: no Landlock in this kernel (%m); HTTP threads keep uid "
			"0's file access");
	struct landlock_ruleset_attr attr = {.handled_access_fs = (1ULL << 13) - 1};
	if (abi >= 2)
		attr.handled_access_fs |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		attr.handled_access_fs |= LANDLOCK_FS_TRUNCATE;
	if (abi >= 5)
		attr.handled_access_fs |= LANDLOCK_FS_IOCTL_DEV;
	int rs = (int)syscall(__NR_landlock_create_ruleset, &attr, sizeof(attr), 0);
	if (rs < 0)
		return log_warning_errno(errno, "privileges: Landlock ruleset: %m");

	const struct file_rule common[] = {
		{"/dev/urandom", LANDLOCK_ACCESS_FS_READ_FILE},
		{"/etc/localtime", LANDLOCK_ACCESS_FS_READ_FILE},
#ifdef MM_SANITIZED
		{"/proc", LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR}, /* reports */
#endif
	};
	const size_t ncommon = sizeof(common) / sizeof(common[0]);
	int r = 0;
	for (size_t i = 0; i < ncommon + nextra && !r; i++) {
		const struct file_rule *rule = i < ncommon ? &common[i] : &extra[i - ncommon];
		int fd = open(rule->path, O_PATH | O_CLOEXEC);
		if (fd < 0)
			continue; /* nothing there to allow */
		struct stat st;
		struct landlock_path_beneath_attr pb = {.allowed_access = rule->access,
							.parent_fd = fd};
		if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
			pb.allowed_access &=
				LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE;
		pb.allowed_access &= attr.handled_access_fs; /* a right this kernel knows */
		if (syscall(__NR_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
			r = log_warning_errno(errno, "privileges: Landlock rule for %s: %m",
					      rule->path);
		close(fd);
	}
	if (!r && syscall(__NR_landlock_restrict_self, rs, 0) < 0)
		r = log_warning_errno(errno, "privileges: Landlock: %m");
	close(rs);
	return r;
}

int mm_privilege_drop_http(void)
{
	int r = drop_caps(0);
	int n = no_new_privs();
	return r < 0 ? r : n;
}

int mm_privilege_confine_http(void)
{
	int l = landlock_files(NULL, 0);
	int f = http_filter(false);
	return l < 0 ? l : f;
}

int mm_privilege_confine_query(const char *db_path)
{
	char wal[PATH_MAX], shm[PATH_MAX], tmp[PATH_MAX];

	if (db_path) {
		if (snprintf(wal, sizeof(wal), "%s-wal", db_path) >= (int)sizeof(wal) ||
		    snprintf(shm, sizeof(shm), "%s-shm", db_path) >= (int)sizeof(shm) ||
		    snprintf(tmp, sizeof(tmp), "%s-tmp", db_path) >= (int)sizeof(tmp))
			return -ENAMETOOLONG;
		/* Landlock allows files that exist: wait for the writer to have made all three. */
		if (access(db_path, F_OK) < 0 || access(wal, F_OK) < 0 || access(shm, F_OK) < 0)
			return -ENOENT;
	}
	/* The database and its WAL for reading only; the -shm index, which readers of a WAL
	 * database update, for reading and writing. */
	/* And SQLite's temporary files (store.c: a long range's sort spills there), made and
	 * removed in the -tmp directory only; none allowed when the writer could not make it. */
	const struct file_rule db[] = {
		{db_path, LANDLOCK_ACCESS_FS_READ_FILE},
		{wal, LANDLOCK_ACCESS_FS_READ_FILE},
		{shm, LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE},
		{tmp, LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE |
			      LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_REMOVE_FILE |
			      LANDLOCK_FS_TRUNCATE},
	};
	return landlock_files(db, db_path ? 4 : 0);
}

int mm_privilege_filter_http(void)
{
	return http_filter(true);
}

/* The deny-list filter of main_deny[]. */
static int deny_filter(const char *what)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);

	if (!ctx)
		return log_warning_errno(ENOMEM, "privileges: the %s seccomp filter: %m", what);
	return load(ctx,
		    add_rules(ctx, SCMP_ACT_ERRNO(EPERM), main_deny,
			      sizeof(main_deny) / sizeof(main_deny[0])),
		    what);
}

int mm_privilege_drop_thread(void)
{
	int r = drop_caps(0);
	int n = no_new_privs();
	int f = n < 0 ? n : deny_filter("store thread's");
	return r < 0 ? r : n < 0 ? n : f;
}

/* Whether /proc hides processes of other users (mount option hidepid other than 0), in which
 * case reading their /proc/PID/stat and cgroup takes CAP_SYS_PTRACE. */
static bool proc_hides_pids(void)
{
	char line[4096];
	bool hides = false;
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ... - FSTYPE SOURCE SUPEROPTIONS */
		char mnt[256];
		if (sscanf(line, "%*s %*s %*s %*s %255s", mnt) != 1 || strcmp(mnt, "/proc"))
			continue;
		const char *hp = strstr(line, "hidepid=");
		hides = hp && strncmp(hp + 8, "0", 1) && strncmp(hp + 8, "off", 3);
	}
	fclose(f);
	return hides;
}

/* Whether this process holds BPF maps (the BPF source) on a kernel older than 6.5, which refuses
 * every bpf() command, map reads on an open fd included, without CAP_BPF while
 * kernel.unprivileged_bpf_disabled is set; 6.5 moved that check to creating maps and loading
 * programs. */
static bool bpf_reads_need_cap(void)
{
	struct utsname u;
	unsigned major = 0, minor = 0;
	char link[64];
	bool maps = false;

	if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2 || major > 6 ||
	    (major == 6 && minor >= 5))
		return false;
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return true; /* cannot tell: keep it */
	struct dirent *de;
	while (!maps && (de = readdir(d))) {
		ssize_t n = readlinkat(dirfd(d), de->d_name, link, sizeof(link) - 1);
		maps = n > 0 && (link[n] = '\0', !strcmp(link, "anon_inode:bpf-map"));
	}
	closedir(d);
	return maps;
}

int mm_privilege_drop_main(void)
{
	uint64_t keep = 0;
	int r, n, f;

	if (proc_hides_pids())
		keep |= 1ull << CAP_SYS_PTRACE;
	if (bpf_reads_need_cap())
		keep |= 1ull << CAP_BPF;
	r = drop_caps(keep);
	n = no_new_privs();
	f = n < 0 ? n : deny_filter("main thread's");
	if (r == 0 && n == 0 && f == 0)
		log_info("privileges: collection thread keeps %s%s%s; HTTP and store threads keep "
			 "no "
			 "capabilities; no_new_privs and seccomp filters on every thread",
			 keep ? "" : "no capabilities",
			 keep & (1ull << CAP_SYS_PTRACE) ? "CAP_SYS_PTRACE (/proc has hidepid) "
							 : "",
			 keep & (1ull << CAP_BPF) ? "CAP_BPF (BPF map reads before Linux 6.5)"
						  : "");
	return r < 0 ? r : n < 0 ? n : f;
}
