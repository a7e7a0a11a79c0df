/*
 * Configuration: defaults, a "key = value" file, and command-line flags with the same keys.
 * Precedence: defaults < file (--config) < flags. Pure code (no I/O beyond reading the file), so
 * every rule here is unit-tested.
 */
#ifndef MM_CONFIG_H
#define MM_CONFIG_H

#include <limits.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>

#define MM_DEFAULT_DB	  "/var/lib/mmlockd/mmlockd.db"
#define MM_DEFAULT_LISTEN "127.0.0.1:9477"
/* meson sets it from its sysconfdir (<prefix>/etc, /etc for prefix /usr), where it installs the
 * file, so the installed unit and a hand-run mmlockd read the same one. */
#ifndef MM_DEFAULT_CONFIG
#define MM_DEFAULT_CONFIG "/etc/mmlockd.conf"
#endif
/* meson sets it to <datadir>/doc/mmlockd, where it installs README.md and docs/: what --help
 * points to. */
#ifndef MM_DOCDIR
#define MM_DOCDIR "/usr/share/doc/mmlockd"
#endif

struct mm_config {
	char config_path[PATH_MAX]; /* file the configuration came from, "" if none */
	char db_path[PATH_MAX];	    /* key "db" */
	char listen[128];	    /* key "listen": "ADDR:PORT", "[V6ADDR]:PORT" */
	unsigned interval_s;	 /* key "interval": window length in seconds, 1..3600, default 10 */
	unsigned retention_days; /* key "retention": days of history kept, 1..3650, default 7 */
	unsigned top_n;	      /* key "top": processes with their own /metrics series, default 0 */
	unsigned cgroup_top;  /* key "cgroup_top": cgroups with their own series, default 20 */
	unsigned ring_pages;  /* key "ring_pages": pages per ring (per event per CPU), power of two,
				 default 256 */
	int log_level;	      /* key "log_level": err|warning|notice|info|debug, default info */
	char collectors[256]; /* key "collectors": comma-separated list to run, default: those
				 marked by_default (plugin.h) */
	char source[8];	      /* key "source": auto|bpf|perf, what counts the collectors that
				 have a BPF program (bpfsource.h), default auto */
	int duty_pm;	      /* the cycled collector's key (plugin.h struct mm_plugin_cycle):
				 share of each window it runs, per mille; -1 (default): see
				 mm_config_duty_pm(); 0: off */
	bool fault_latency;   /* key "fault_latency": on|off (default off), sample fault latency
				 per outcome on the BPF source (the fault-completion software
				 events, which cost every fault on the machine while open) */
	/* The BPF source's loading (bpfsource.h). For users: */
	char btf[PATH_MAX]; /* key "btf": the kernel BTF file the programs are loaded against,
			       "" (default): /sys/kernel/btf/vmlinux */
	/* For benchmarks and tests only (each logged as such when set; counts are then wrong or
	 * the source refused on purpose): */
	char bpf_skip[256];	/* key "bpf_skip": comma-separated programs not loaded, to
				   measure what each costs a workload */
	bool bpf_keep_attached; /* key "bpf_keep_attached": on|off (default off), a cycled
				   collector's programs stay attached between its on-periods,
				   to tell what
				   switching them costs from what they cost attached */
	bool bpf_refuse;	/* key "bpf_refuse": on|off (default off), a program reads out
				   of bounds so the verifier refuses it, to check the fall-back
				   to the perf rings */
};

enum mm_command {
	MM_CMD_RUN,	/* run the daemon */
	MM_CMD_HELP,	/* --help was given: print mm_config_usage() and exit 0 */
	MM_CMD_VERSION, /* --version was given */
};

void mm_config_defaults(struct mm_config *c);

/* Sets one key from text, validating it. Returns 0, or -EINVAL with a one-line reason in @err. */
int mm_config_set(struct mm_config *c, const char *key, const char *value, char *err,
		  size_t errlen);

/* Reads a "key = value" file: '#' starts a comment, blank lines are ignored, unknown keys and bad
 * values are errors naming the file and line. Returns 0, -errno when the file cannot be read, or
 * -EINVAL; @err says why. */
int mm_config_load(struct mm_config *c, const char *path, char *err, size_t errlen);

/* The same for a stream already open (the caller closes it); @path names it in messages and
 * becomes c->config_path. */
int mm_config_load_stream(struct mm_config *c, FILE *f, const char *path, char *err, size_t errlen);

/* Parses the command line into @c (starting from defaults, then --config FILE if given, then the
 * other flags) and the command to run. Flags: --config FILE, --db PATH, --listen ADDR:PORT,
 * --interval SECONDS, --retention DAYS, --top N, --cgroup-top N, --ring-pages N, --log-level LEVEL,
 * --collectors LIST, --help, --version. Without --config, MM_DEFAULT_CONFIG is read when it
 * exists. Returns 0, or -EINVAL with the reason in @err. */
int mm_config_from_args(struct mm_config *c, int argc, char **argv, enum mm_command *ret_cmd,
			char *err, size_t errlen);

/* The keys whose value differs between @running and @next and that a running daemon takes only
 * at restart (db, listen, ring_pages, collectors, source, the cycled collector's share,
 * fault_latency, btf and the bpf_* keys), in the order of the --help list; up to @max of them
 * into @ret_keys (static names). Returns how many differ. The other keys apply on SIGHUP. */
size_t mm_config_restart_changes(const struct mm_config *running, const struct mm_config *next,
				 const char **ret_keys, size_t max);

/* The index in @argv of the first argument that is not an option or an option's value (where
 * mm_config_from_args stops with "unexpected argument"), 0 if there is none. */
int mm_config_operand(int argc, char **argv);

/* Whether collector @name is enabled: named by c->collectors ("all", or a comma list), or, for
 * a collector that runs cycled (plugin.h struct mm_plugin_cycle), implied by a share above 0
 * (mm_config_duty_pm). */
bool mm_config_collector_enabled(const struct mm_config *c, const char *name);

/* The cycled collector's share of each window in force, per mille: its key when set, else 1000
 * (continuous) when collectors names it and its default share when not. 0: it is off. */
unsigned mm_config_duty_pm(const struct mm_config *c);

/* For commands without a duty cycle (record, replay: a recording has no period edges): the
 * cycled collector runs continuously when collectors names it and not at all otherwise. */
void mm_config_continuous(struct mm_config *c);

/* The flag of configuration key @key ("split_duty" -> "split-duty", without the dashes). */
void mm_config_flag_name(const char *key, char *buf, size_t len);

/* The --help text. */
const char *mm_config_usage(void);

#endif
