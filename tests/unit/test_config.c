/*
 * Unit tests for daemon/config.c: defaults, every key's accepted and rejected values, the file
 * format and its error messages, command-line precedence and commands, collector lists and the
 * --help text. Files are written to a private temporary directory removed at the end.
 */

#include "check.h"
#include "config.h"
#include "log.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[256]; /* short, so "tmpdir/name" always fits PATH_MAX */
static char err[1024];

/* Writes @text to a file named @name in the temporary directory; returns its path (static). */
static const char *write_file(const char *name, const char *text)
{
	static char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "we");
	if (!f) {
		perror(path);
		exit(1);
	}
	fputs(text, f);
	fclose(f);
	return path;
}

static int from_argv(struct mm_config *c, enum mm_command *cmd, char **argv)
{
	int argc = 0;

	while (argv[argc])
		argc++;
	return mm_config_from_args(c, argc, argv, cmd, err, sizeof(err));
}

/* FROM_ARGS(&c, &cmd, "--flag", "value", ...): runs mm_config_from_args on "mmlockd" + args. */
#define FROM_ARGS(c, cmd, ...) from_argv(c, cmd, (char *[]){"mmlockd", __VA_ARGS__, NULL})

/* Sets @key to @value on a fresh default config; returns what mm_config_set returned. */
static int set1(struct mm_config *c, const char *key, const char *value)
{
	mm_config_defaults(c);
	err[0] = '\0';
	return mm_config_set(c, key, value, err, sizeof(err));
}

/* Whether @value is rejected for @key with an error naming the key, leaving @c unchanged. */
static int rejects(const char *key, const char *value)
{
	struct mm_config c, before;

	mm_config_defaults(&c);
	before = c;
	err[0] = '\0';
	if (mm_config_set(&c, key, value, err, sizeof(err)) != -EINVAL) {
		fprintf(stderr, "  %s = '%s' was accepted\n", key, value);
		return 0;
	}
	if (!strstr(err, key)) {
		fprintf(stderr, "  error for %s = '%s' does not name the key: %s\n", key, value,
			err);
		return 0;
	}
	if (memcmp(&c, &before, sizeof(c)) != 0) {
		fprintf(stderr, "  rejected %s = '%s' still changed the config\n", key, value);
		return 0;
	}
	return 1;
}

static void test_defaults_match_documented_values(void)
{
	struct mm_config c;

	memset(&c, 0xa5, sizeof(c));
	mm_config_defaults(&c);
	CHECK_STR(c.config_path, "");
	CHECK_STR(c.db_path, MM_DEFAULT_DB);
	CHECK_STR(c.listen, MM_DEFAULT_LISTEN);
	CHECK_U64(c.interval_s, 10);
	CHECK_U64(c.retention_days, 7);
	CHECK_U64(c.top_n, 0);
	CHECK_U64(c.cgroup_top, 20);
	CHECK_U64(c.ring_pages, 256);
	CHECK_U64(c.log_level, LOG_INFO);
	CHECK_STR(c.collectors, "totals,fallbacks,vmstat,cgroups");
}

static void test_cgroup_top_is_0_to_1000_from_file_key_and_flag(void)
{
	struct mm_config c;
	enum mm_command cmd;

	mm_config_defaults(&c);
	CHECK(mm_config_set(&c, "cgroup_top", "0", err, sizeof(err)) == 0);
	CHECK_U64(c.cgroup_top, 0);
	CHECK(mm_config_set(&c, "cgroup-top", "1000", err, sizeof(err)) == 0);
	CHECK_U64(c.cgroup_top, 1000);
	CHECK(mm_config_set(&c, "cgroup_top", "1001", err, sizeof(err)) == -EINVAL);
	CHECK(mm_config_set(&c, "cgroup_top", "-1", err, sizeof(err)) == -EINVAL);
	CHECK_U64(c.cgroup_top, 1000);

	char *argv[] = {"mmlockd", "--cgroup-top", "5", NULL};
	CHECK(mm_config_from_args(&c, 3, argv, &cmd, err, sizeof(err)) == 0);
	CHECK_U64(c.cgroup_top, 5);
	char *bad[] = {"mmlockd", "--cgroup-top", NULL};
	CHECK(mm_config_from_args(&c, 2, bad, &cmd, err, sizeof(err)) == -EINVAL);
	CHECK_CONTAINS(err, "--cgroup-top needs an argument");
}

static void test_interval_accepts_seconds_and_suffixes(void)
{
	struct mm_config c;

	CHECK(set1(&c, "interval", "1") == 0);
	CHECK_U64(c.interval_s, 1);
	CHECK(set1(&c, "interval", "3600") == 0);
	CHECK_U64(c.interval_s, 3600);
	CHECK(set1(&c, "interval", "10s") == 0);
	CHECK_U64(c.interval_s, 10);
	CHECK(set1(&c, "interval", "2m") == 0);
	CHECK_U64(c.interval_s, 120);
	CHECK(set1(&c, "interval", "1h") == 0);
	CHECK_U64(c.interval_s, 3600);
	CHECK(set1(&c, "interval", "007") == 0);
	CHECK_U64(c.interval_s, 7);
}

static void test_interval_rejects_range_junk_overflow_empty(void)
{
	CHECK(rejects("interval", "0"));
	CHECK(rejects("interval", "3601"));
	CHECK(rejects("interval", "61m"));
	CHECK(rejects("interval", "2h"));
	CHECK(rejects("interval", "0s"));
	CHECK(rejects("interval", "-1"));
	CHECK(rejects("interval", "+5"));
	CHECK(rejects("interval", " 5"));
	CHECK(rejects("interval", "5 "));
	CHECK(rejects("interval", "5x"));
	CHECK(rejects("interval", "5ss"));
	CHECK(rejects("interval", "s"));
	CHECK(rejects("interval", "1.5"));
	CHECK(rejects("interval", "0x10"));
	CHECK(rejects("interval", "4294967306"));	    /* 2^32 + 10: must not wrap to 10 */
	CHECK(rejects("interval", "18446744073709551626")); /* 2^64 + 10 */
	CHECK(rejects("interval", "99999999999999999999999999"));
	CHECK(rejects("interval", "307445734561825861h")); /* suffix multiply overflows */
	CHECK(rejects("interval", ""));
	CHECK(rejects("interval", NULL));
	CHECK_CONTAINS(err, "interval");
}

static void test_interval_error_says_range(void)
{
	struct mm_config c;

	CHECK(set1(&c, "interval", "0") == -EINVAL);
	CHECK_CONTAINS(err, "'0'");
	CHECK_CONTAINS(err, "between 1 and 3600");
}

static void test_retention_accepts_days_with_optional_d(void)
{
	struct mm_config c;

	CHECK(set1(&c, "retention", "7") == 0);
	CHECK_U64(c.retention_days, 7);
	CHECK(set1(&c, "retention", "30d") == 0);
	CHECK_U64(c.retention_days, 30);
	CHECK(set1(&c, "retention", "1") == 0);
	CHECK_U64(c.retention_days, 1);
	CHECK(set1(&c, "retention", "3650d") == 0);
	CHECK_U64(c.retention_days, 3650);

	CHECK(rejects("retention", "0"));
	CHECK(rejects("retention", "0d"));
	CHECK(rejects("retention", "3651"));
	CHECK(rejects("retention", "7s"));
	CHECK(rejects("retention", "7dd"));
	CHECK(rejects("retention", "d"));
	CHECK(rejects("retention", "-7"));
	CHECK(rejects("retention", "7 d"));
	CHECK(rejects("retention", "4294967303")); /* 2^32 + 7 */
	CHECK(rejects("retention", ""));
}

static void test_top_accepts_zero_to_10000(void)
{
	struct mm_config c;

	CHECK(set1(&c, "top", "0") == 0);
	CHECK_U64(c.top_n, 0);
	CHECK(set1(&c, "top", "10000") == 0);
	CHECK_U64(c.top_n, 10000);
	CHECK(set1(&c, "top", "5") == 0);
	CHECK_U64(c.top_n, 5);

	CHECK(rejects("top", "10001"));
	CHECK(rejects("top", "-1"));
	CHECK(rejects("top", "5s"));
	CHECK(rejects("top", "4294967296"));
	CHECK(rejects("top", "abc"));
	CHECK(rejects("top", ""));
}

static void test_ring_pages_accepts_powers_of_two_8_to_65536(void)
{
	struct mm_config c;

	for (unsigned p = 8; p <= 65536; p *= 2) {
		char v[16];

		snprintf(v, sizeof(v), "%u", p);
		CHECK(set1(&c, "ring_pages", v) == 0);
		CHECK_U64(c.ring_pages, p);
	}
	CHECK(rejects("ring_pages", "4"));
	CHECK(rejects("ring_pages", "0"));
	CHECK(rejects("ring_pages", "100"));
	CHECK(rejects("ring_pages", "131072"));
	CHECK(rejects("ring_pages", "257"));
	CHECK(rejects("ring_pages", "4294967552")); /* 2^32 + 256 */
	CHECK(rejects("ring_pages", "256k"));
	CHECK(rejects("ring_pages", ""));
	CHECK(set1(&c, "ring_pages", "100") == -EINVAL);
	CHECK_CONTAINS(err, "power of two");
}

static void test_log_level_accepts_names_and_digits(void)
{
	struct mm_config c;

	CHECK(set1(&c, "log_level", "debug") == 0);
	CHECK_U64(c.log_level, LOG_DEBUG);
	CHECK(set1(&c, "log_level", "err") == 0);
	CHECK_U64(c.log_level, LOG_ERR);
	CHECK(set1(&c, "log_level", "warning") == 0);
	CHECK_U64(c.log_level, LOG_WARNING);
	CHECK(set1(&c, "log_level", "notice") == 0);
	CHECK_U64(c.log_level, LOG_NOTICE);
	CHECK(set1(&c, "log_level", "7") == 0);
	CHECK_U64(c.log_level, 7);

	CHECK(rejects("log_level", "verbose"));
	CHECK(rejects("log_level", "8"));
	CHECK(rejects("log_level", "info "));
	CHECK(rejects("log_level", ""));
}

static void test_listen_accepts_ipv4_ipv6_and_names(void)
{
	struct mm_config c;

	CHECK(set1(&c, "listen", "0.0.0.0:80") == 0);
	CHECK_STR(c.listen, "0.0.0.0:80");
	CHECK(set1(&c, "listen", "[::1]:9477") == 0);
	CHECK_STR(c.listen, "[::1]:9477");
	CHECK(set1(&c, "listen", "[::]:65535") == 0);
	CHECK(set1(&c, "listen", "[fe80::1%eth0]:1") == 0);
	CHECK(set1(&c, "listen", "[::ffff:127.0.0.1]:9477") == 0);
	CHECK(set1(&c, "listen", "localhost:9477") == 0);
	CHECK_STR(c.listen, "localhost:9477");
	CHECK(set1(&c, "listen", "metrics-1.example.org:9477") == 0);
}

static void test_listen_rejects_bad_syntax_and_ports(void)
{
	CHECK(rejects("listen", ""));
	CHECK(rejects("listen", "127.0.0.1"));
	CHECK(rejects("listen", "127.0.0.1:"));
	CHECK(!rejects("listen", "127.0.0.1:0")); /* 0: the kernel picks a free port */
	CHECK(rejects("listen", "127.0.0.1:65536"));
	CHECK(rejects("listen", "127.0.0.1:-1"));
	CHECK(rejects("listen", "127.0.0.1:80x"));
	CHECK(rejects("listen", "127.0.0.1: 80"));
	CHECK(rejects("listen", "127.0.0.1:4294967376")); /* 2^32 + 80 */
	CHECK(rejects("listen", ":9477"));
	CHECK(rejects("listen", "256.0.0.1:9477"));
	CHECK(rejects("listen", "1.2.3:9477"));
	CHECK(rejects("listen", "::1:9477"));
	CHECK(rejects("listen", "[::1]"));
	CHECK(rejects("listen", "[::1]9477"));
	CHECK(rejects("listen", "[::1:9477"));
	CHECK(rejects("listen", "[]:9477"));
	CHECK(rejects("listen", "[not-v6]:9477"));
	CHECK(rejects("listen", "[fe80::1%]:9477"));
	CHECK(rejects("listen", "bad_host:9477"));
	CHECK(rejects("listen", "-host:9477"));
	CHECK(rejects("listen", "host-:9477"));
	CHECK(rejects("listen", "a-.b:9477"));
	CHECK(rejects("listen", "host.:9477"));
	CHECK(rejects("listen", "host..name:9477"));
	CHECK(rejects("listen", "host name:9477"));

	char longest[200];

	memset(longest, 'a', sizeof(longest));
	memcpy(longest + sizeof(longest) - 6, ":9477", 6);
	CHECK(rejects("listen", longest));
}

static void test_db_accepts_paths_and_rejects_empty_or_too_long(void)
{
	struct mm_config c;
	static char huge[PATH_MAX + 10];

	CHECK(set1(&c, "db", "/tmp/x.db") == 0);
	CHECK_STR(c.db_path, "/tmp/x.db");
	CHECK(set1(&c, "db", "relative.db") == 0);
	CHECK_STR(c.db_path, "relative.db");
	CHECK(rejects("db", ""));
	memset(huge, 'a', sizeof(huge) - 1);
	huge[0] = '/';
	CHECK(rejects("db", huge));
}

static void test_collectors_accepts_all_and_lists(void)
{
	struct mm_config c;

	CHECK(set1(&c, "collectors", "all") == 0);
	CHECK_STR(c.collectors, "all");
	CHECK(set1(&c, "collectors", "faults") == 0);
	CHECK_STR(c.collectors, "faults");
	CHECK(set1(&c, "collectors", "faults,mmaplock,vmstat") == 0);
	CHECK_STR(c.collectors, "faults,mmaplock,vmstat");
	/* Blanks around names are dropped so matching stays exact. */
	CHECK(set1(&c, "collectors", "faults , vmstat") == 0);
	CHECK_STR(c.collectors, "faults,vmstat");

	CHECK(rejects("collectors", ""));
	CHECK(rejects("collectors", ","));
	CHECK(rejects("collectors", "faults,"));
	CHECK(rejects("collectors", ",faults"));
	CHECK(rejects("collectors", "faults,,vmstat"));
	CHECK(rejects("collectors", "Faults"));
	CHECK(rejects("collectors", "mmap-lock"));
	CHECK(rejects("collectors", "faults;vmstat"));
	CHECK(rejects("collectors", "all,faults"));
	CHECK(rejects("collectors", "faults vmstat"));
	/* Names are checked against the compiled-in collectors, and the known ones are listed. */
	CHECK(rejects("collectors", "bogus"));
	CHECK_CONTAINS(err, "unknown collector 'bogus'");
	CHECK_CONTAINS(err, "totals");
	CHECK(rejects("collectors", "faults,mmap_lock"));

	char longest[300];

	memset(longest, 'a', sizeof(longest) - 1);
	longest[sizeof(longest) - 1] = '\0';
	CHECK(rejects("collectors", longest));
}

/* The names are checked where they are parsed, for the daemon (file and flags) and for `record
 * --collectors` alike (both set the key through mm_config_set()): the default list names
 * compiled-in collectors, a list of known names passes, and an unknown one is refused with its
 * name and the known ones. */
static void test_default_collectors_are_known_and_unknown_names_are_refused(void)
{
	struct mm_config c, d;
	enum mm_command cmd;
	const char *path = write_file("empty.conf", "");

	mm_config_defaults(&d);
	CHECK(set1(&c, "collectors", d.collectors) == 0);
	CHECK_STR(c.collectors, d.collectors);
	CHECK(set1(&c, "collectors", "vmstat,mmaplock") == 0);
	CHECK(rejects("collectors", "vmstat,faultz"));
	CHECK_CONTAINS(err, "faultz");
	CHECK_CONTAINS(err, "mmaplock");
	CHECK(FROM_ARGS(&c, &cmd, "--config", (char *)path, "--collectors", "vmstat,mmaplock") ==
	      0);
	CHECK_STR(c.collectors, "vmstat,mmaplock");
	CHECK(FROM_ARGS(&c, &cmd, "--config", (char *)path, "--collectors", "vmstat,faultz") ==
	      -EINVAL);
	CHECK_CONTAINS(err, "--collectors");
	CHECK_CONTAINS(err, "faultz");
}

static void test_collector_enabled_matches_exact_names_only(void)
{
	struct mm_config c;

	mm_config_defaults(&c);
	/* The default is the cheap set; "all" enables every name. */
	CHECK(mm_config_collector_enabled(&c, "totals"));
	CHECK(mm_config_collector_enabled(&c, "fallbacks"));
	CHECK(mm_config_collector_enabled(&c, "vmstat"));
	/* faults runs in bursts for the split (split_duty, default 2%) unless split_duty is 0. */
	CHECK(mm_config_collector_enabled(&c, "faults"));
	CHECK(set1(&c, "split_duty", "0") == 0);
	CHECK(!mm_config_collector_enabled(&c, "faults"));
	CHECK(!mm_config_collector_enabled(&c, "fallback"));
	CHECK(set1(&c, "collectors", "all") == 0);
	CHECK(mm_config_collector_enabled(&c, "faults"));
	CHECK(mm_config_collector_enabled(&c, "anything"));
	CHECK(!mm_config_collector_enabled(&c, ""));
	CHECK(!mm_config_collector_enabled(&c, NULL));

	CHECK(set1(&c, "collectors", "faults,mmaplock") == 0);
	CHECK(mm_config_collector_enabled(&c, "faults"));
	CHECK(mm_config_collector_enabled(&c, "mmaplock"));
	CHECK(!mm_config_collector_enabled(&c, "vmstat"));
	CHECK(!mm_config_collector_enabled(&c, "fault"));
	CHECK(!mm_config_collector_enabled(&c, "faultsx"));
	CHECK(!mm_config_collector_enabled(&c, "mmap"));
	CHECK(!mm_config_collector_enabled(&c, "lock"));
	CHECK(!mm_config_collector_enabled(&c, "faults,mmaplock"));
	CHECK(!mm_config_collector_enabled(&c, "all"));
	CHECK(!mm_config_collector_enabled(&c, ""));

	CHECK(set1(&c, "collectors", "vmstat") == 0);
	CHECK(mm_config_collector_enabled(&c, "vmstat"));
	CHECK(mm_config_collector_enabled(&c, "faults")); /* bursts of the split */
	CHECK(mm_config_set(&c, "split_duty", "0", err, sizeof(err)) == 0);
	CHECK(!mm_config_collector_enabled(&c, "faults"));
}

static void test_set_rejects_unknown_keys_and_accepts_hyphen_spelling(void)
{
	struct mm_config c;

	CHECK(set1(&c, "intervals", "10") == -EINVAL);
	CHECK_CONTAINS(err, "unknown key 'intervals'");
	CHECK(set1(&c, "config", "/etc/x") == -EINVAL);
	CHECK(set1(&c, "", "1") == -EINVAL);
	CHECK(set1(&c, "Interval", "10") == -EINVAL);
	CHECK(set1(&c, "ring-pages", "512") == 0);
	CHECK_U64(c.ring_pages, 512);
	CHECK(set1(&c, "log-level", "debug") == 0);
	CHECK_U64(c.log_level, LOG_DEBUG);
}

static void test_load_reads_keys_comments_blanks_and_quotes(void)
{
	struct mm_config c;
	const char *path = write_file("good.conf", "# mmlockd test\n"
						   "\n"
						   "   \t\n"
						   "  # indented comment\n"
						   "db=/tmp/a.db\n"
						   "  listen =  [::1]:8080  \n"
						   "interval\t=\t30s # half a minute\n"
						   "retention = 14d\r\n"
						   "top = 0\n"
						   "ring_pages = 1024\n"
						   "log_level = debug\n"
						   "collectors = faults, vmstat\n");

	mm_config_defaults(&c);
	CHECK(mm_config_load(&c, path, err, sizeof(err)) == 0);
	CHECK_STR(c.config_path, path);
	CHECK_STR(c.db_path, "/tmp/a.db");
	CHECK_STR(c.listen, "[::1]:8080");
	CHECK_U64(c.interval_s, 30);
	CHECK_U64(c.retention_days, 14);
	CHECK_U64(c.top_n, 0);
	CHECK_U64(c.ring_pages, 1024);
	CHECK_U64(c.log_level, LOG_DEBUG);
	CHECK_STR(c.collectors, "faults,vmstat");

	path = write_file("quoted.conf", "db = \"/tmp/with # hash.db\"  # comment\n"
					 "listen = 127.0.0.1:1\n");
	mm_config_defaults(&c);
	CHECK(mm_config_load(&c, path, err, sizeof(err)) == 0);
	CHECK_STR(c.db_path, "/tmp/with # hash.db");

	path = write_file("hash.conf", "db = /tmp/a#b.db\n");
	mm_config_defaults(&c);
	CHECK(mm_config_load(&c, path, err, sizeof(err)) == 0);
	CHECK_STR(c.db_path, "/tmp/a#b.db");

	path = write_file("nonl.conf", "top = 3");
	mm_config_defaults(&c);
	CHECK(mm_config_load(&c, path, err, sizeof(err)) == 0);
	CHECK_U64(c.top_n, 3);

	path = write_file("empty.conf", "");
	mm_config_defaults(&c);
	CHECK(mm_config_load(&c, path, err, sizeof(err)) == 0);
	CHECK_U64(c.top_n, 0);
	CHECK_STR(c.config_path, path);
}

/* Loads @text and checks it fails with -EINVAL and an error starting with "PATH:LINE: " and
 * containing @what. */
static int load_fails_at(const char *text, unsigned line, const char *what)
{
	struct mm_config c, before;
	char want[PATH_MAX + 32];
	const char *path = write_file("bad.conf", text);

	mm_config_defaults(&c);
	before = c;
	err[0] = '\0';
	if (mm_config_load(&c, path, err, sizeof(err)) != -EINVAL) {
		fprintf(stderr, "  load of %s did not fail with -EINVAL\n", text);
		return 0;
	}
	snprintf(want, sizeof(want), "%s:%u: ", path, line);
	if (strncmp(err, want, strlen(want)) != 0 || !strstr(err, what)) {
		fprintf(stderr, "  error '%s', expected '%s...%s'\n", err, want, what);
		return 0;
	}
	if (memcmp(&c, &before, sizeof(c)) != 0) {
		fprintf(stderr, "  failed load changed the config\n");
		return 0;
	}
	return 1;
}

static void test_load_errors_name_file_and_line(void)
{
	CHECK(load_fails_at("interval = 0\n", 1, "interval"));
	CHECK(load_fails_at("# c\n\ntop = 5\nbogus = 1\n", 4, "unknown key 'bogus'"));
	CHECK(load_fails_at("top = 5\ninterval 10\n", 2, "key = value"));
	CHECK(load_fails_at("= 10\n", 1, "missing key"));
	CHECK(load_fails_at("top =\n", 1, "top"));
	CHECK(load_fails_at("top = # nothing\n", 1, "top"));
	CHECK(load_fails_at("top = 5 6\n", 1, "top"));
	CHECK(load_fails_at("db = \"/tmp/x\n", 1, "closing"));
	CHECK(load_fails_at("db = \"/tmp/x\" junk\n", 1, "junk"));
	CHECK(load_fails_at("db = \"\"\n", 1, "db"));
	CHECK(load_fails_at("top = 1\n\n\nring_pages = 300\n", 4, "power of two"));
	CHECK(load_fails_at("config = /etc/other.conf\n", 1, "unknown key"));
	CHECK(load_fails_at("[section]\n", 1, "key = value"));
	CHECK(load_fails_at("top = 1\n top = 2x\n", 2, "top"));
}

static void test_load_names_file_and_line_of_an_unknown_collector(void)
{
	CHECK(load_fails_at("top = 5\ncollectors = bogus\n", 2, "unknown collector 'bogus'"));
	CHECK(load_fails_at("collectors = faults, vmstat2 # typo\n", 1, "'vmstat2'"));
}

static void test_load_refuses_a_duplicate_key_naming_both_lines(void)
{
	CHECK(load_fails_at("interval = 5\ntop = 3\ninterval = 10\n", 3,
			    "duplicate key 'interval' (first set on line 1)"));
	/* The flag spelling is the same key. */
	CHECK(load_fails_at("ring_pages = 64\n\nring-pages = 128\n", 3,
			    "duplicate key 'ring_pages' (first set on line 1)"));
}

static void test_load_accepts_a_utf8_bom_and_crlf(void)
{
	struct mm_config c;
	const char *path = write_file("bom.conf", "\xef\xbb\xbfinterval = 5\r\ntop = 7\r\n");

	mm_config_defaults(&c);
	CHECK(mm_config_load(&c, path, err, sizeof(err)) == 0);
	CHECK_U64(c.interval_s, 5);
	CHECK_U64(c.top_n, 7);
	/* Only at the start of the file. */
	CHECK(load_fails_at("top = 7\n\xef\xbb\xbfinterval = 5\n", 2, "unknown key"));
}

/* Whether @s is one line of printable text (valid UTF-8 allowed). */
static int printable_line(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return 0;
	return 1;
}

static void test_load_escapes_binary_junk_in_messages(void)
{
	/* Control bytes, an escape sequence, a lone continuation byte, a newline inside a value. */
	CHECK(load_fails_at("\x1b[31mred\x01\x80 = 1\n", 1,
			    "unknown key '\\x1b[31mred\\x01\\x80'"));
	CHECK(printable_line(err));
	CHECK(load_fails_at("top = 1\x7f\x02\n", 1, "invalid top '1\\x7f\\x02'"));
	CHECK(printable_line(err));
	CHECK(load_fails_at("listen = \xff\xfe:80\n", 1, "'\\xff\\xfe'"));
	CHECK(printable_line(err));
	/* Valid UTF-8 is quoted as it is. */
	CHECK(load_fails_at("d\xc3\xa9j\xc3\xa0 = 1\n", 1, "unknown key 'd\xc3\xa9j\xc3\xa0'"));

	struct mm_config c;
	mm_config_defaults(&c);
	CHECK(mm_config_set(&c, "interval", "5\n<3>forged line", err, sizeof(err)) == -EINVAL);
	CHECK(printable_line(err));
	CHECK_CONTAINS(err, "'5\\n<3>forged line'");
}

static void test_load_rejects_nul_byte(void)
{
	struct mm_config c;
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/nul.conf", tmpdir);
	f = fopen(path, "we");
	CHECK(f != NULL);
	if (!f)
		return;
	fwrite("top = 1\ntop = 2\0 3\n", 1, 19, f);
	fclose(f);
	mm_config_defaults(&c);
	CHECK(mm_config_load(&c, path, err, sizeof(err)) == -EINVAL);
	CHECK_CONTAINS(err, ":2: ");
	CHECK_CONTAINS(err, "NUL");
	CHECK_U64(c.top_n, 0);
}

static void test_load_missing_file_and_directory_return_errno(void)
{
	struct mm_config c;
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/does-not-exist.conf", tmpdir);
	mm_config_defaults(&c);
	CHECK(mm_config_load(&c, path, err, sizeof(err)) == -ENOENT);
	CHECK_CONTAINS(err, path);
	CHECK_STR(c.config_path, "");

	CHECK(mm_config_load(&c, tmpdir, err, sizeof(err)) == -EISDIR);
	CHECK_CONTAINS(err, tmpdir);
	CHECK_STR(c.config_path, "");
}

static void test_flags_set_every_key(void)
{
	struct mm_config c;
	enum mm_command cmd = (enum mm_command) - 1;
	const char *path = write_file("empty.conf", "");

	CHECK(FROM_ARGS(&c, &cmd, "--config", (char *)path, "--db", "/tmp/f.db", "--listen",
			"[::]:1234", "--interval", "5m", "--retention=30", "--top", "3",
			"--ring-pages", "64", "--log-level", "notice", "--collectors", "faults",
			"--source", "perf") == 0);
	CHECK_U64(cmd, MM_CMD_RUN);
	CHECK_STR(c.config_path, path);
	CHECK_STR(c.db_path, "/tmp/f.db");
	CHECK_STR(c.listen, "[::]:1234");
	CHECK_U64(c.interval_s, 300);
	CHECK_U64(c.retention_days, 30);
	CHECK_U64(c.top_n, 3);
	CHECK_U64(c.ring_pages, 64);
	CHECK_U64(c.log_level, LOG_NOTICE);
	CHECK_STR(c.collectors, "faults");
	CHECK_STR(c.source, "perf");
	CHECK_STR(err, "");
}

static void test_source_accepts_auto_bpf_perf_only(void)
{
	struct mm_config c;
	mm_config_defaults(&c);
	CHECK_STR(c.source, "auto");
	CHECK(set1(&c, "source", "bpf") == 0);
	CHECK_STR(c.source, "bpf");
	CHECK(set1(&c, "source", "perf") == 0);
	CHECK_STR(c.source, "perf");
	CHECK(set1(&c, "source", "auto") == 0);
	CHECK_STR(c.source, "auto");
	CHECK(rejects("source", ""));
	CHECK(rejects("source", "BPF"));
	CHECK(rejects("source", "ebpf"));
	CHECK(rejects("source", "perf,bpf"));
}

static void test_fault_latency_is_off_by_default_and_on_or_off_only(void)
{
	struct mm_config c;
	enum mm_command cmd;
	mm_config_defaults(&c);
	CHECK(!c.fault_latency);
	CHECK(set1(&c, "fault_latency", "on") == 0);
	CHECK(c.fault_latency);
	CHECK(set1(&c, "fault-latency", "off") == 0);
	CHECK(!c.fault_latency);
	CHECK(rejects("fault_latency", ""));
	CHECK(rejects("fault_latency", "1"));
	CHECK(rejects("fault_latency", "yes"));
	CHECK(FROM_ARGS(&c, &cmd, "--fault-latency", "on") == 0);
	CHECK(c.fault_latency);
	CHECK(FROM_ARGS(&c, &cmd, "--fault-latency", "sometimes") == -EINVAL);
	CHECK_CONTAINS(err, "--fault-latency");
	CHECK_CONTAINS(err, "expected on or off");
}

static void test_bpf_loading_keys_default_off_and_set_from_file_or_flags(void)
{
	struct mm_config c;
	enum mm_command cmd;
	mm_config_defaults(&c);
	CHECK(!c.btf[0] && !c.bpf_skip[0] && !c.bpf_keep_attached && !c.bpf_refuse);
	CHECK(set1(&c, "btf", "/tmp/vmlinux") == 0);
	CHECK(!strcmp(c.btf, "/tmp/vmlinux"));
	CHECK(set1(&c, "bpf_skip", "on_switch,on_start") == 0);
	CHECK(!strcmp(c.bpf_skip, "on_switch,on_start"));
	CHECK(set1(&c, "bpf-keep-attached", "on") == 0);
	CHECK(c.bpf_keep_attached);
	CHECK(rejects("bpf_refuse", "1"));
	CHECK(rejects("bpf_keep_attached", "yes"));
	CHECK(FROM_ARGS(&c, &cmd, "--bpf-refuse", "on", "--btf", "/nonexistent") == 0);
	CHECK(c.bpf_refuse);
	CHECK(!strcmp(c.btf, "/nonexistent"));
}

static void test_flags_override_file_whatever_their_order(void)
{
	struct mm_config c;
	enum mm_command cmd;
	const char *path = write_file("base.conf", "interval = 30\ntop = 7\nretention = 3\n");

	/* --interval comes before --config on the command line and still wins. */
	CHECK(FROM_ARGS(&c, &cmd, "--interval", "2", "--config", (char *)path, "--top=9") == 0);
	CHECK_U64(c.interval_s, 2);
	CHECK_U64(c.top_n, 9);
	CHECK_U64(c.retention_days, 3); /* from the file */
	CHECK_U64(c.ring_pages, 256);	/* default */
	CHECK_STR(c.config_path, path);

	/* The last of a repeated flag wins. */
	CHECK(FROM_ARGS(&c, &cmd, "--config", (char *)path, "--top", "1", "--top", "4") == 0);
	CHECK_U64(c.top_n, 4);
}

static void test_from_args_can_run_repeatedly(void)
{
	struct mm_config c;
	enum mm_command cmd;
	const char *path = write_file("empty.conf", "");

	/* getopt keeps state between calls; each call must start over at argv[1]. */
	for (int i = 0; i < 3; i++) {
		CHECK(FROM_ARGS(&c, &cmd, "--config", (char *)path, "--top", "11") == 0);
		CHECK_U64(c.top_n, 11);
		CHECK(FROM_ARGS(&c, &cmd, "--config", (char *)path, "--bogus") == -EINVAL);
	}
}

static void test_config_flag_with_missing_file_is_error(void)
{
	struct mm_config c;
	enum mm_command cmd = MM_CMD_VERSION;
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/missing.conf", tmpdir);
	mm_config_defaults(&c);
	c.top_n = 4242;
	CHECK(FROM_ARGS(&c, &cmd, "--config", path) == -EINVAL);
	CHECK_CONTAINS(err, path);
	CHECK_U64(cmd, MM_CMD_VERSION); /* untouched on failure */
	CHECK_U64(c.top_n, 4242);	/* untouched on failure */

	CHECK(FROM_ARGS(&c, &cmd, "--config", "") == -EINVAL);
	CHECK(FROM_ARGS(&c, &cmd, "--config=") == -EINVAL);
}

static void test_bad_file_or_flag_value_fails_from_args_with_reason(void)
{
	struct mm_config c;
	enum mm_command cmd;
	const char *path = write_file("badline.conf", "top = 1\ntop = lots\n");

	CHECK(FROM_ARGS(&c, &cmd, "--config", (char *)path) == -EINVAL);
	CHECK_CONTAINS(err, ":2: ");
	CHECK_CONTAINS(err, path);

	path = write_file("empty.conf", "");
	CHECK(FROM_ARGS(&c, &cmd, "--config", (char *)path, "--interval", "0") == -EINVAL);
	CHECK_CONTAINS(err, "--interval");
	CHECK_CONTAINS(err, "'0'");
	CHECK(FROM_ARGS(&c, &cmd, "--config", (char *)path, "--listen", "nope") == -EINVAL);
	CHECK_CONTAINS(err, "--listen");
	CHECK(FROM_ARGS(&c, &cmd, "--config", (char *)path, "--ring-pages", "3") == -EINVAL);
	CHECK_CONTAINS(err, "--ring-pages");
	CHECK(FROM_ARGS(&c, &cmd, "--config", (char *)path, "--interval", "-5") == -EINVAL);
	CHECK(FROM_ARGS(&c, &cmd, "--config", (char *)path, "--db", "") == -EINVAL);
}

static void test_unknown_flags_missing_arguments_and_positionals_are_errors(void)
{
	struct mm_config c;
	enum mm_command cmd;
	const char *path = write_file("empty.conf", "");

	CHECK(FROM_ARGS(&c, &cmd, "--config", (char *)path, "--bogus") == -EINVAL);
	CHECK_CONTAINS(err, "--bogus");
	CHECK(FROM_ARGS(&c, &cmd, "--config", (char *)path, "-x") == -EINVAL);
	CHECK_CONTAINS(err, "-x");
	CHECK(FROM_ARGS(&c, &cmd, "--config", (char *)path, "--interval") == -EINVAL);
	CHECK_CONTAINS(err, "--interval");
	CHECK_CONTAINS(err, "argument");
	CHECK(FROM_ARGS(&c, &cmd, "--config") == -EINVAL);
	CHECK_CONTAINS(err, "--config");
	CHECK(FROM_ARGS(&c, &cmd, "--config", (char *)path, "run") == -EINVAL);
	CHECK_CONTAINS(err, "'run'");
	CHECK(FROM_ARGS(&c, &cmd, "run", "--config", (char *)path) == -EINVAL);
	CHECK_CONTAINS(err, "'run'");
	CHECK(FROM_ARGS(&c, &cmd, "--config", (char *)path, "--", "extra") == -EINVAL);
	CHECK_CONTAINS(err, "'extra'");
	CHECK(FROM_ARGS(&c, &cmd, "--config", (char *)path, "--help=yes") == -EINVAL);
	CHECK(FROM_ARGS(&c, &cmd, "--config", (char *)path, "--co", "x") == -EINVAL);
	CHECK(FROM_ARGS(&c, &cmd, "--config", (char *)path, "--") == 0);
}

/* A command word after daemon options: mm_config_operand points at it (main.c then says that a
 * command comes first), and at nothing when every word is an option or an option's value. */
static void test_operand_is_the_first_word_that_is_not_an_option_or_its_value(void)
{
	CHECK(mm_config_operand(4, (char *[]){"mmlockd", "--interval", "2", "report", NULL}) == 3);
	CHECK(mm_config_operand(3, (char *[]){"mmlockd", "--db=/x", "report", NULL}) == 2);
	CHECK(mm_config_operand(3, (char *[]){"mmlockd", "--db", "report", NULL}) == 0);
	CHECK(mm_config_operand(1, (char *[]){"mmlockd", NULL}) == 0);
}

/* SIGHUP: the keys set up once at start are listed when they change (main.c logs one line
 * each), the others are not, and a configuration equal to the running one lists nothing. */
static void test_restart_changes_name_every_restart_only_key_that_changed(void)
{
	struct mm_config a, b;
	const char *keys[32];

	mm_config_defaults(&a);
	mm_config_defaults(&b);
	CHECK(mm_config_restart_changes(&a, &b, keys, 32) == 0);
	const char *const later[][2] = {
		{"db", "/tmp/x.db"},	     {"listen", "127.0.0.1:1"}, {"ring_pages", "512"},
		{"collectors", "all"},	     {"source", "perf"},	{"split_duty", "5%"},
		{"fault_latency", "on"},     {"btf", "/tmp/btf"},	{"bpf_skip", "x"},
		{"bpf_keep_attached", "on"}, {"bpf_refuse", "on"},
	};
	for (size_t i = 0; i < sizeof(later) / sizeof(later[0]); i++) {
		mm_config_defaults(&b);
		CHECK(mm_config_set(&b, later[i][0], later[i][1], err, sizeof(err)) == 0);
		CHECK(mm_config_restart_changes(&a, &b, keys, 32) == 1);
		CHECK_STR(keys[0], later[i][0]);
	}
	mm_config_defaults(&b);
	CHECK(mm_config_set(&b, "interval", "20", err, sizeof(err)) == 0);
	CHECK(mm_config_set(&b, "retention", "3", err, sizeof(err)) == 0);
	CHECK(mm_config_set(&b, "top", "5", err, sizeof(err)) == 0);
	CHECK(mm_config_set(&b, "cgroup_top", "5", err, sizeof(err)) == 0);
	CHECK(mm_config_set(&b, "log_level", "debug", err, sizeof(err)) == 0);
	CHECK(mm_config_restart_changes(&a, &b, keys, 32) == 0);
	CHECK(mm_config_set(&b, "source", "bpf", err, sizeof(err)) == 0);
	CHECK(mm_config_set(&b, "btf", "/b", err, sizeof(err)) == 0);
	CHECK(mm_config_restart_changes(&a, &b, keys, 1) == 2);
	CHECK_STR(keys[0], "source");
}

static void test_help_and_version_skip_the_configuration(void)
{
	struct mm_config c;
	enum mm_command cmd = MM_CMD_RUN;
	char missing[PATH_MAX];

	snprintf(missing, sizeof(missing), "%s/missing.conf", tmpdir);
	CHECK(FROM_ARGS(&c, &cmd, "--help") == 0);
	CHECK_U64(cmd, MM_CMD_HELP);
	CHECK(FROM_ARGS(&c, &cmd, "-h") == 0);
	CHECK_U64(cmd, MM_CMD_HELP);
	CHECK(FROM_ARGS(&c, &cmd, "--version") == 0);
	CHECK_U64(cmd, MM_CMD_VERSION);
	CHECK(FROM_ARGS(&c, &cmd, "-V") == 0);
	CHECK_U64(cmd, MM_CMD_VERSION);
	/* A broken configuration must not stop --help from helping. */
	CHECK(FROM_ARGS(&c, &cmd, "--config", missing, "--interval", "0", "--help") == 0);
	CHECK_U64(cmd, MM_CMD_HELP);
	CHECK(FROM_ARGS(&c, &cmd, "--version", "--help") == 0);
	CHECK_U64(cmd, MM_CMD_HELP);
	/* ...but a malformed command line is still an error. */
	CHECK(FROM_ARGS(&c, &cmd, "--help", "--bogus") == -EINVAL);
	CHECK(FROM_ARGS(&c, &cmd, "--help", "extra") == -EINVAL);
}

static void test_without_config_flag_defaults_apply(void)
{
	struct mm_config c;
	enum mm_command cmd = MM_CMD_HELP;

	/* Without --config, MM_DEFAULT_CONFIG is read when it exists: only meaningful here. */
	if (access(MM_DEFAULT_CONFIG, F_OK) == 0) {
		printf("skip test_without_config_flag_defaults_apply: %s exists\n",
		       MM_DEFAULT_CONFIG);
		return;
	}
	memset(&c, 0x5a, sizeof(c));
	CHECK(FROM_ARGS(&c, &cmd, "--top", "2") == 0);
	CHECK_U64(cmd, MM_CMD_RUN);
	CHECK_STR(c.config_path, "");
	CHECK_U64(c.top_n, 2);
	CHECK_U64(c.interval_s, 10);
	CHECK_STR(c.db_path, MM_DEFAULT_DB);

	char *argv[] = {"mmlockd", NULL};

	CHECK(mm_config_from_args(&c, 1, argv, &cmd, err, sizeof(err)) == 0);
	CHECK_U64(c.top_n, 0);
}

static void test_usage_documents_flags_defaults_files_and_routes(void)
{
	const char *u = mm_config_usage();
	static const char *const needles[] = {
		"Usage: mmlockd",
		"--config FILE",
		"--db PATH",
		"--listen ADDR:PORT",
		"--interval SECONDS",
		"--retention DAYS",
		"--top N",
		"--ring-pages N",
		"--log-level LEVEL",
		"--collectors LIST",
		"--source SOURCE",
		"--help",
		"--version",
		"(default: " MM_DEFAULT_CONFIG,
		"(default: " MM_DEFAULT_DB ")",
		"(default: " MM_DEFAULT_LISTEN ")",
		"(default: 10)",
		"(default: 7)",
		"(default: 20)",
		"(default: 256)",
		"(default: info)",
		"(default: totals,fallbacks,vmstat,cgroups)",
		"key = value",
		"ring_pages",
		"log_level",
		"mmlockd COMMAND [ARGS...]",
		"  record ",
		"  replay ",
		"  report ",
		"/metrics",
		"/api/v1/status",
		"/api/v1/processes",
		"/api/v1/history?pid=&since=&until=&limit=",
		"/api/v1/locks?pid=&since=&until=&top=",
	};

	for (size_t i = 0; i < sizeof(needles) / sizeof(needles[0]); i++)
		CHECK_CONTAINS(u, needles[i]);
	CHECK(u[strlen(u) - 1] == '\n');
}

/* The example in --help must itself be a valid configuration file. */
static void test_usage_example_config_parses(void)
{
	const char *u = mm_config_usage();
	const char *start = strstr(u, "    # " MM_DEFAULT_CONFIG);
	const char *end = start ? strstr(start, "\n\n") : NULL;
	char text[1024];
	struct mm_config c;

	CHECK(start && end && (size_t)(end - start) < sizeof(text));
	if (!start || !end || (size_t)(end - start) >= sizeof(text))
		return;
	memcpy(text, start, (size_t)(end - start));
	text[end - start] = '\n';
	text[end - start + 1] = '\0';
	mm_config_defaults(&c);
	CHECK(mm_config_load(&c, write_file("example.conf", text), err, sizeof(err)) == 0);
	CHECK_U64(c.retention_days, 30);
}

static void cleanup(void)
{
	static const char *const names[] = {
		"good.conf", "quoted.conf", "hash.conf", "nonl.conf",	 "empty.conf",
		"bad.conf",  "nul.conf",    "base.conf", "badline.conf", "example.conf",
	};
	char path[PATH_MAX];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", tmpdir, names[i]);
		unlink(path);
	}
	if (rmdir(tmpdir) < 0)
		perror(tmpdir);
}

int main(void)
{
	const char *base = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/mmlockd-test-config.XXXXXX",
		 base && *base ? base : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}

	RUN(test_defaults_match_documented_values);
	RUN(test_cgroup_top_is_0_to_1000_from_file_key_and_flag);
	RUN(test_interval_accepts_seconds_and_suffixes);
	RUN(test_interval_rejects_range_junk_overflow_empty);
	RUN(test_interval_error_says_range);
	RUN(test_retention_accepts_days_with_optional_d);
	RUN(test_top_accepts_zero_to_10000);
	RUN(test_ring_pages_accepts_powers_of_two_8_to_65536);
	RUN(test_log_level_accepts_names_and_digits);
	RUN(test_listen_accepts_ipv4_ipv6_and_names);
	RUN(test_listen_rejects_bad_syntax_and_ports);
	RUN(test_db_accepts_paths_and_rejects_empty_or_too_long);
	RUN(test_collectors_accepts_all_and_lists);
	RUN(test_source_accepts_auto_bpf_perf_only);
	RUN(test_default_collectors_are_known_and_unknown_names_are_refused);
	RUN(test_collector_enabled_matches_exact_names_only);
	RUN(test_set_rejects_unknown_keys_and_accepts_hyphen_spelling);
	RUN(test_load_reads_keys_comments_blanks_and_quotes);
	RUN(test_load_errors_name_file_and_line);
	RUN(test_load_names_file_and_line_of_an_unknown_collector);
	RUN(test_load_refuses_a_duplicate_key_naming_both_lines);
	RUN(test_load_accepts_a_utf8_bom_and_crlf);
	RUN(test_load_escapes_binary_junk_in_messages);
	RUN(test_load_rejects_nul_byte);
	RUN(test_load_missing_file_and_directory_return_errno);
	RUN(test_flags_set_every_key);
	RUN(test_flags_override_file_whatever_their_order);
	RUN(test_fault_latency_is_off_by_default_and_on_or_off_only);
	RUN(test_bpf_loading_keys_default_off_and_set_from_file_or_flags);
	RUN(test_from_args_can_run_repeatedly);
	RUN(test_config_flag_with_missing_file_is_error);
	RUN(test_bad_file_or_flag_value_fails_from_args_with_reason);
	RUN(test_unknown_flags_missing_arguments_and_positionals_are_errors);
	RUN(test_operand_is_the_first_word_that_is_not_an_option_or_its_value);
	RUN(test_restart_changes_name_every_restart_only_key_that_changed);
	RUN(test_help_and_version_skip_the_configuration);
	RUN(test_without_config_flag_defaults_apply);
	RUN(test_usage_documents_flags_defaults_files_and_routes);
	RUN(test_usage_example_config_parses);

	cleanup();
	return check_summary();
}
