/*
 * Configuration: defaults, the "key = value" file and command-line flags (see config.h). Every
 * value goes through one table of setters, so a key means the same thing in the file and on the
 * command line, and a value is validated the same way wherever it comes from. Nothing is applied
 * halfway: loading a file or parsing the command line works on a copy and commits it only when
 * everything was valid, so a bad reload leaves the running configuration intact.
 *
 * A file is read as an operator's editor leaves it: a UTF-8 byte-order mark before the first key
 * and CRLF line ends are accepted. A key given twice is an error naming both lines (one of them
 * would otherwise win silently, and which one is a guess). Collector names are checked against
 * the compiled-in list here, so `collectors = bogus` is reported with its file and line. Messages
 * quote the offending text escaped (mm_set_err), never raw bytes.
 */

#include "config.h"

#include "buf.h"
#include "log.h"
#include "parse.h"
#include "plugin.h"

#include <errno.h>
#include <stddef.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_INTERVAL_S     10
#define DEFAULT_RETENTION_DAYS 7
#define DEFAULT_TOP_N	       0 /* per-pid series churn: opt-in */
#define DEFAULT_CGROUP_TOP     20
#define DEFAULT_RING_PAGES     256

#define STR_(x) #x
#define STR(x)	STR_(x)

/* Room for the reason a setter gives; the full message adds the key, the value and the place. */
#define WHY_MAX 160

/* The collectors that run by default (plugin.h by_default), comma-separated. */
static const char *default_collectors(void)
{
	static char list[256];
	size_t n = 0;

	if (!*list)
		for (const struct mm_plugin *const *p = mm_plugins; *p; p++)
			if ((*p)->by_default && n < sizeof(list))
				n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s",
						      n ? "," : "", (*p)->name);
	return list;
}

/* The duty cycle of the collector that runs cycled (plugin.h), NULL if none does. Its key sets
 * the share of each window it runs. */
static const struct mm_plugin_cycle *cycle(void)
{
	for (const struct mm_plugin *const *p = mm_plugins; *p; p++)
		if ((*p)->cycle)
			return (*p)->cycle;
	return NULL;
}

void mm_config_defaults(struct mm_config *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->db_path, sizeof(c->db_path), "%s", MM_DEFAULT_DB);
	snprintf(c->listen, sizeof(c->listen), "%s", MM_DEFAULT_LISTEN);
	c->interval_s = DEFAULT_INTERVAL_S;
	c->retention_days = DEFAULT_RETENTION_DAYS;
	c->top_n = DEFAULT_TOP_N;
	c->cgroup_top = DEFAULT_CGROUP_TOP;
	c->ring_pages = DEFAULT_RING_PAGES;
	c->log_level = LOG_INFO;
	snprintf(c->collectors, sizeof(c->collectors), "%s", default_collectors());
	snprintf(c->source, sizeof(c->source), "auto");
	c->duty_pm = -1;
}

/* Parses a number within [min, max]; on failure @why says what was expected, using @what for
 * the unit and @syntax for the accepted forms. */
static int parse_ranged(const char *value, const struct mm_unit *units, unsigned long long min,
			unsigned long long max, const char *what, const char *syntax, unsigned *ret,
			char *why, size_t whylen)
{
	unsigned long long v;
	int r = mm_parse_number(value, units, min, max, &v);

	if (r == -EINVAL) {
		mm_set_err(why, whylen, "expected %s", syntax);
		return -EINVAL;
	}
	if (r < 0) {
		mm_set_err(why, whylen, "must be between %llu and %llu %s", min, max, what);
		return -EINVAL;
	}
	*ret = (unsigned)v;
	return 0;
}

static int set_db(struct mm_config *c, const char *v, char *why, size_t whylen)
{
	if (!*v) {
		mm_set_err(why, whylen, "must not be empty");
		return -EINVAL;
	}
	if (strlen(v) >= sizeof(c->db_path)) {
		mm_set_err(why, whylen, "path is longer than %zu bytes", sizeof(c->db_path) - 1);
		return -EINVAL;
	}
	strcpy(c->db_path, v);
	return 0;
}

/* Syntax only: the address is resolved (or refused) when the HTTP server binds it. */
static int set_listen(struct mm_config *c, const char *v, char *why, size_t whylen)
{
	struct mm_listen_addr a;

	if (strlen(v) >= sizeof(c->listen)) {
		mm_set_err(why, whylen, "longer than %zu bytes", sizeof(c->listen) - 1);
		return -EINVAL;
	}
	/* A Unix socket restricts the API to root or one group (http.h). */
	if (!strncmp(v, "unix:", 5)) {
		if (v[5] != '/') {
			mm_set_err(why, whylen, "expected unix:/ABSOLUTE/PATH or unix:/PATH:GROUP");
			return -EINVAL;
		}
		strcpy(c->listen, v);
		return 0;
	}
	if (mm_parse_listen(v, &a, why, whylen) < 0)
		return -EINVAL;
	strcpy(c->listen, v);
	return 0;
}

static int set_interval(struct mm_config *c, const char *v, char *why, size_t whylen)
{
	static const struct mm_unit units[] = {{"s", 1}, {"m", 60}, {"h", 3600}, {NULL, 0}};

	return parse_ranged(v, units, 1, 3600, "seconds",
			    "a whole number of seconds, optionally with s, m or h", &c->interval_s,
			    why, whylen);
}

static int set_retention(struct mm_config *c, const char *v, char *why, size_t whylen)
{
	static const struct mm_unit units[] = {{"d", 1}, {NULL, 0}};

	return parse_ranged(v, units, 1, 3650, "days", "a whole number of days, optionally with d",
			    &c->retention_days, why, whylen);
}

static int set_top(struct mm_config *c, const char *v, char *why, size_t whylen)
{
	return parse_ranged(v, NULL, 0, 10000, "processes", "a whole number", &c->top_n, why,
			    whylen);
}

static int set_cgroup_top(struct mm_config *c, const char *v, char *why, size_t whylen)
{
	return parse_ranged(v, NULL, 0, 1000, "cgroups", "a whole number", &c->cgroup_top, why,
			    whylen);
}

static int set_ring_pages(struct mm_config *c, const char *v, char *why, size_t whylen)
{
	unsigned pages;

	if (parse_ranged(v, NULL, 8, 65536, "pages", "a whole number", &pages, why, whylen) < 0)
		return -EINVAL;
	/* The kernel maps a ring of 2^n data pages only. */
	if (pages & (pages - 1)) {
		mm_set_err(why, whylen, "must be a power of two (8, 16, ..., 65536)");
		return -EINVAL;
	}
	c->ring_pages = pages;
	return 0;
}

static int set_log_level(struct mm_config *c, const char *v, char *why, size_t whylen)
{
	int level = mm_log_parse_level(v);

	if (level < 0) {
		mm_set_err(why, whylen, "expected err, warning, notice, info or debug");
		return -EINVAL;
	}
	c->log_level = level;
	return 0;
}

static bool known_collector(const char *name, size_t n)
{
	for (unsigned i = 0; mm_plugins[i]; i++)
		if (strlen(mm_plugins[i]->name) == n && !memcmp(mm_plugins[i]->name, name, n))
			return true;
	return false;
}

/* Stored normalised ("a,b", no blanks) so mm_config_collector_enabled() can match exactly. Names
 * must be compiled-in collectors (plugins/registry.c). */
static int set_collectors(struct mm_config *c, const char *v, char *why, size_t whylen)
{
	char out[sizeof(c->collectors)];
	size_t len = 0, count = 0;
	bool all = false;
	const char *p = v, *s;
	size_t slen;

	while (mm_parse_list_next(&p, &s, &slen)) {
		const char *e = s + slen;
		if (s == e) {
			mm_set_err(why, whylen,
				   "expected \"all\" or a comma-separated list of collector names");
			return -EINVAL;
		}
		for (const char *q = s; q < e; q++) {
			if (!((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '_')) {
				mm_set_err(
					why, whylen,
					"collector names contain only a-z, 0-9 and '_', not '%c'",
					*q);
				return -EINVAL;
			}
		}
		if ((size_t)(e - s) == 3 && memcmp(s, "all", 3) == 0) {
			all = true;
		} else if (!known_collector(s, (size_t)(e - s))) {
			size_t n = 0;

			n += (size_t)snprintf(why, whylen,
					      "unknown collector '%.*s' (known:", (int)(e - s), s);
			for (unsigned i = 0; mm_plugins[i] && n < whylen; i++)
				n += (size_t)snprintf(why + n, whylen - n, " %s",
						      mm_plugins[i]->name);
			if (n < whylen)
				snprintf(why + n, whylen - n, ")");
			return -EINVAL;
		}
		if (len + (count ? 1 : 0) + (size_t)(e - s) >= sizeof(out)) {
			mm_set_err(why, whylen, "longer than %zu bytes", sizeof(out) - 1);
			return -EINVAL;
		}
		if (count++)
			out[len++] = ',';
		memcpy(out + len, s, (size_t)(e - s));
		len += (size_t)(e - s);
	}
	if (all && count > 1) {
		mm_set_err(why, whylen, "\"all\" cannot be combined with other names");
		return -EINVAL;
	}
	out[len] = '\0';
	memcpy(c->collectors, out, len + 1);
	return 0;
}

static int set_source(struct mm_config *c, const char *v, char *why, size_t whylen)
{
	if (strcmp(v, "auto") && strcmp(v, "bpf") && strcmp(v, "perf")) {
		mm_set_err(why, whylen, "expected auto, bpf or perf");
		return -EINVAL;
	}
	snprintf(c->source, sizeof(c->source), "%s", v);
	return 0;
}

static int set_on_off(bool *b, const char *v, char *why, size_t whylen)
{
	if (strcmp(v, "on") && strcmp(v, "off")) {
		mm_set_err(why, whylen, "expected on or off");
		return -EINVAL;
	}
	*b = !strcmp(v, "on");
	return 0;
}

static int set_string(char *dst, size_t size, const char *v, char *why, size_t whylen)
{
	if (strlen(v) >= size) {
		mm_set_err(why, whylen, "longer than %zu bytes", size - 1);
		return -EINVAL;
	}
	memcpy(dst, v, strlen(v) + 1);
	return 0;
}

static int set_fault_latency(struct mm_config *c, const char *v, char *why, size_t whylen)
{
	return set_on_off(&c->fault_latency, v, why, whylen);
}

static int set_btf(struct mm_config *c, const char *v, char *why, size_t whylen)
{
	return set_string(c->btf, sizeof(c->btf), v, why, whylen);
}

static int set_bpf_skip(struct mm_config *c, const char *v, char *why, size_t whylen)
{
	return set_string(c->bpf_skip, sizeof(c->bpf_skip), v, why, whylen);
}

static int set_bpf_keep_attached(struct mm_config *c, const char *v, char *why, size_t whylen)
{
	return set_on_off(&c->bpf_keep_attached, v, why, whylen);
}

static int set_bpf_refuse(struct mm_config *c, const char *v, char *why, size_t whylen)
{
	return set_on_off(&c->bpf_refuse, v, why, whylen);
}

/* "N%" with at most one decimal ("2%", "0.5%", "100%"), or "0" (off). Stored per mille. */
static int set_duty(struct mm_config *c, const char *v, char *why, size_t whylen)
{
	unsigned whole = 0, tenth = 0, digits = 0;
	const char *p = v;

	for (; *p >= '0' && *p <= '9' && digits < 4; p++, digits++)
		whole = whole * 10 + (unsigned)(*p - '0');
	if (digits && *p == '.' && p[1] >= '0' && p[1] <= '9') {
		tenth = (unsigned)(p[1] - '0');
		p += 2;
	}
	bool zero = digits && !whole && !tenth;
	if (!digits || (strcmp(p, "%") && !(zero && !*p)) || whole * 10 + tenth > 1000) {
		mm_set_err(why, whylen,
			   "expected a share of the window as N%% (0.1%%..100%%, one decimal at "
			   "most) or 0 (off)");
		return -EINVAL;
	}
	c->duty_pm = (int)(whole * 10 + tenth);
	return 0;
}

/* How a running daemon takes a key on SIGHUP: at once (main.c's reload applies it), or only at
 * restart, when what it sets up (the database, the socket, the rings, the sources and their
 * programs) is made once at start. */
enum key_reload { RELOAD_APPLIES, RELOAD_RESTART };

struct key {
	const char *name; /* NULL: the cycled collector's key (cycle()), when there is one */
	int (*set)(struct mm_config *c, const char *value, char *why, size_t whylen);
	enum key_reload reload;
	size_t offset, size; /* the field it sets, for mm_config_restart_changes() */
	bool text;	     /* a NUL-terminated string (compared up to its NUL) */
};

#define FIELD(f)   offsetof(struct mm_config, f), sizeof(((struct mm_config *)0)->f)
#define NOW(f)	   RELOAD_APPLIES, FIELD(f), false
#define LATER(f)   RELOAD_RESTART, FIELD(f), false
#define LATER_S(f) RELOAD_RESTART, FIELD(f), true

static const struct key keys[] = {
	{"db", set_db, LATER_S(db_path)},
	{"listen", set_listen, LATER_S(listen)},
	{"interval", set_interval, NOW(interval_s)},
	{"retention", set_retention, NOW(retention_days)},
	{"top", set_top, NOW(top_n)},
	{"ring_pages", set_ring_pages, LATER(ring_pages)},
	{"log_level", set_log_level, NOW(log_level)},
	{"collectors", set_collectors, LATER_S(collectors)},
	{"cgroup_top", set_cgroup_top, NOW(cgroup_top)},
	{"source", set_source, LATER_S(source)},
	{NULL, set_duty, LATER(duty_pm)},
	{"fault_latency", set_fault_latency, LATER(fault_latency)},
	{"btf", set_btf, LATER_S(btf)},
	{"bpf_skip", set_bpf_skip, LATER_S(bpf_skip)},
	{"bpf_keep_attached", set_bpf_keep_attached, LATER(bpf_keep_attached)},
	{"bpf_refuse", set_bpf_refuse, LATER(bpf_refuse)},
};

void mm_config_flag_name(const char *key, char *buf, size_t len)
{
	snprintf(buf, len, "%s", key);
	for (char *p = buf; *p; p++)
		if (*p == '_')
			*p = '-';
}

static const char *key_name(const struct key *k)
{
	return k->name ? k->name : cycle() ? cycle()->key : NULL;
}

/* Keys are spelled with '_'; '-' is accepted too, so a file may use the flag's spelling. */
static const struct key *find_key(const char *name)
{
	for (size_t i = 0; name && i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *a = key_name(&keys[i]), *b = name;

		if (!a)
			continue;
		while (*a && (*a == *b || (*a == '_' && *b == '-'))) {
			a++;
			b++;
		}
		if (!*a && !*b)
			return &keys[i];
	}
	return NULL;
}

/* Sets @k from @value, or writes "invalid LABEL 'VALUE': reason" to @err. */
static int apply(struct mm_config *c, const struct key *k, const char *label, const char *value,
		 char *err, size_t errlen)
{
	char why[WHY_MAX];

	if (!value) {
		mm_set_err(err, errlen, "missing value for %s", label);
		return -EINVAL;
	}
	if (k->set(c, value, why, sizeof(why)) < 0) {
		mm_set_err(err, errlen, "invalid %s '%s': %s", label, value, why);
		return -EINVAL;
	}
	return 0;
}

int mm_config_set(struct mm_config *c, const char *key, const char *value, char *err, size_t errlen)
{
	const struct key *k = find_key(key);

	if (!k) {
		mm_set_err(err, errlen, "unknown key '%s'", key ? key : "");
		return -EINVAL;
	}
	return apply(c, k, key_name(k), value, err, errlen);
}

static void rstrip(char *s)
{
	size_t n = strlen(s);

	while (n > 0 &&
	       (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
		s[--n] = '\0';
}

/* Parses one line of a configuration file into @c; @msg gets the reason on failure. *ret_key is
 * the key the line set, NULL for a blank or comment line. */
static int parse_line(struct mm_config *c, char *line, size_t n, const struct key **ret_key,
		      char *msg, size_t msglen)
{
	const struct key *k;
	char *p, *eq, *key, *value;

	if (strlen(line) != n) {
		mm_set_err(msg, msglen, "line contains a NUL byte");
		return -EINVAL;
	}
	*ret_key = NULL;
	rstrip(line);
	p = line + strspn(line, " \t");
	if (*p == '\0' || *p == '#')
		return 0;

	eq = strchr(p, '=');
	if (!eq) {
		mm_set_err(msg, msglen, "expected 'key = value', got '%s'", p);
		return -EINVAL;
	}
	*eq = '\0';
	key = p;
	rstrip(key);
	if (!*key) {
		mm_set_err(msg, msglen, "missing key before '='");
		return -EINVAL;
	}
	k = find_key(key);
	if (!k) {
		mm_set_err(msg, msglen, "unknown key '%s'", key);
		return -EINVAL;
	}

	value = eq + 1 + strspn(eq + 1, " \t");
	if (*value == '"') {
		/* Quoted: taken verbatim, so it may contain " #"; no escapes. */
		char *close = strchr(value + 1, '"'), *rest;

		if (!close) {
			mm_set_err(msg, msglen, "missing closing '\"' for %s", key_name(k));
			return -EINVAL;
		}
		*close = '\0';
		value++;
		rest = close + 1 + strspn(close + 1, " \t");
		if (*rest && *rest != '#') {
			mm_set_err(msg, msglen, "unexpected '%s' after the quoted value of %s",
				   rest, key_name(k));
			return -EINVAL;
		}
	} else {
		/* '#' starts a comment at the start of the value or after a blank, so a path
		 * like /srv/a#b survives. */
		for (char *q = value; *q; q++) {
			if (*q == '#' && (q == value || q[-1] == ' ' || q[-1] == '\t')) {
				*q = '\0';
				break;
			}
		}
		rstrip(value);
	}
	*ret_key = k;
	return apply(c, k, key_name(k), value, msg, msglen);
}

int mm_config_load_stream(struct mm_config *c, FILE *f, const char *path, char *err, size_t errlen)
{
	struct mm_config tmp = *c;
	char msg[WHY_MAX + 2 * PATH_MAX];
	size_t set_on[sizeof(keys) / sizeof(keys[0])] = {0}; /* line of each key, 0: not yet */
	const struct key *k;
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t n;
	int r = 0;

	if (strlen(path) >= sizeof(tmp.config_path)) {
		mm_set_err(err, errlen, "configuration file path is too long");
		return -ENAMETOOLONG;
	}
	for (;;) {
		errno = 0;
		n = getline(&line, &cap, f);
		if (n < 0)
			break;
		lineno++;
		char *text = line;
		/* A byte-order mark, as some editors write at the start of a UTF-8 file. */
		if (lineno == 1 && n >= 3 && !memcmp(text, "\xef\xbb\xbf", 3)) {
			text += 3;
			n -= 3;
		}
		r = parse_line(&tmp, text, (size_t)n, &k, msg, sizeof(msg));
		if (r < 0) {
			mm_set_err(err, errlen, "%s:%zu: %s", path, lineno, msg);
			goto out;
		}
		if (!k)
			continue;
		if (set_on[k - keys]) {
			mm_set_err(err, errlen,
				   "%s:%zu: duplicate key '%s' (first set on line %zu)", path,
				   lineno, key_name(k), set_on[k - keys]);
			r = -EINVAL;
			goto out;
		}
		set_on[k - keys] = lineno;
	}
	if (!feof(f)) {
		/* getline() failed: EISDIR for a directory, EIO, ENOMEM. */
		r = errno > 0 ? -errno : -EIO;
		mm_set_err(err, errlen, "cannot read %s: %s", path, strerror(-r));
		goto out;
	}
	strcpy(tmp.config_path, path);
	*c = tmp;
	r = 0;
out:
	free(line);
	return r;
}

int mm_config_load(struct mm_config *c, const char *path, char *err, size_t errlen)
{
	FILE *f;
	int r;

	if (!path || !*path) {
		mm_set_err(err, errlen, "configuration file path is empty");
		return -EINVAL;
	}
	f = fopen(path, "re");
	if (!f) {
		r = -errno;
		mm_set_err(err, errlen, "cannot open %s: %s", path, strerror(-r));
		return r;
	}
	r = mm_config_load_stream(c, f, path, err, errlen);
	fclose(f);
	return r;
}

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

/* The flags: --config, one per key of keys[] (its name spelled with '-', "ring-pages"), --help and
 * --version. A flag that takes a key has the value OPT_KEY + its index in keys[], so a getopt
 * result (or optopt after a missing argument) names its key. */
#define OPT_CONFIG 0x100
#define OPT_KEY	   (OPT_CONFIG + 1)

struct flags {
	struct option opt[1 + NKEYS + 3];
	char name[NKEYS][32];
};

static void make_flags(struct flags *f)
{
	size_t n = 0;

	f->opt[n++] = (struct option){"config", required_argument, NULL, OPT_CONFIG};
	for (size_t i = 0; i < NKEYS; i++) {
		if (!key_name(&keys[i]))
			continue;
		mm_config_flag_name(key_name(&keys[i]), f->name[i], sizeof(f->name[i]));
		f->opt[n++] =
			(struct option){f->name[i], required_argument, NULL, OPT_KEY + (int)i};
	}
	f->opt[n++] = (struct option){"help", no_argument, NULL, 'h'};
	f->opt[n++] = (struct option){"version", no_argument, NULL, 'V'};
	f->opt[n] = (struct option){NULL, 0, NULL, 0};
}

/* '+': stop at the first non-option (so argv is never permuted and a stray word is reported);
 * ':': report a missing argument as ':' rather than printing. */
#define SHORT_OPTS "+:hV"

/* One getopt_long pass over argv. The first pass (@c NULL) checks the syntax and picks up
 * --config, --help and --version; the second applies the other flags to @c. */
static int scan(int argc, char **argv, struct mm_config *c, const char **ret_config,
		enum mm_command *ret_cmd, int *ret_operand, char *err, size_t errlen)
{
	struct flags flags;
	char label[40];
	int o;

	make_flags(&flags);
	/* 0, not 1: makes GNU getopt reinitialise, so this works more than once per process. */
	optind = 0;
	while ((o = getopt_long(argc, argv, SHORT_OPTS, flags.opt, NULL)) != -1) {
		switch (o) {
		case 'h':
			*ret_cmd = MM_CMD_HELP;
			break;
		case 'V':
			if (*ret_cmd != MM_CMD_HELP)
				*ret_cmd = MM_CMD_VERSION;
			break;
		case OPT_CONFIG:
			*ret_config = optarg;
			break;
		case ':':
			if (optopt == OPT_CONFIG)
				mm_set_err(err, errlen, "option --config needs an argument");
			else if (optopt >= OPT_KEY && optopt < OPT_KEY + (int)NKEYS)
				mm_set_err(err, errlen, "option --%s needs an argument",
					   flags.name[optopt - OPT_KEY]);
			else
				mm_set_err(err, errlen, "option '%s' needs an argument",
					   argv[optind - 1]);
			return -EINVAL;
		case '?':
			if (optopt == 'h' || optopt == 'V')
				mm_set_err(err, errlen, "option '%s' does not take an argument",
					   argv[optind - 1]);
			else if (optopt > 0 && optopt < OPT_CONFIG)
				mm_set_err(err, errlen, "unknown option '-%c'", optopt);
			else
				mm_set_err(err, errlen, "unknown or ambiguous option '%s'",
					   argv[optind - 1]);
			return -EINVAL;
		default:
			if (!c)
				break;
			snprintf(label, sizeof(label), "--%s", flags.name[o - OPT_KEY]);
			if (apply(c, &keys[o - OPT_KEY], label, optarg, err, errlen) < 0)
				return -EINVAL;
			break;
		}
	}
	if (optind < argc) {
		/* The caller words it: main.c knows whether the word is a command. */
		*ret_operand = optind;
		mm_set_err(err, errlen, "unexpected argument '%s': the daemon takes options only",
			   argv[optind]);
		return -EINVAL;
	}
	return 0;
}

size_t mm_config_restart_changes(const struct mm_config *running, const struct mm_config *next,
				 const char **ret_keys, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < NKEYS; i++) {
		const struct key *k = &keys[i];
		const char *a = (const char *)running + k->offset,
			   *b = (const char *)next + k->offset;

		if (k->reload != RELOAD_RESTART || !key_name(k))
			continue;
		if (k->text ? !strncmp(a, b, k->size) : !memcmp(a, b, k->size))
			continue;
		if (n < max)
			ret_keys[n] = key_name(k);
		n++;
	}
	return n;
}

int mm_config_operand(int argc, char **argv)
{
	enum mm_command cmd = MM_CMD_RUN;
	const char *config = NULL;
	int saved_opterr = opterr, operand = 0;
	char err[256];

	opterr = 0;
	scan(argc, argv, NULL, &config, &cmd, &operand, err, sizeof(err));
	opterr = saved_opterr;
	return operand;
}

int mm_config_from_args(struct mm_config *c, int argc, char **argv, enum mm_command *ret_cmd,
			char *err, size_t errlen)
{
	struct mm_config tmp;
	enum mm_command cmd = MM_CMD_RUN;
	const char *config = NULL;
	int saved_opterr = opterr, operand = 0;
	int r;

	opterr = 0;
	mm_config_defaults(&tmp);
	r = scan(argc, argv, NULL, &config, &cmd, &operand, err, errlen);
	if (r < 0)
		goto out;
	/* --help and --version work whatever state the configuration file is in. */
	if (cmd != MM_CMD_RUN)
		goto done;

	if (config) {
		if (!*config) {
			mm_set_err(err, errlen, "option --config needs a file name");
			r = -EINVAL;
			goto out;
		}
		r = mm_config_load(&tmp, config, err, errlen);
	} else {
		r = mm_config_load(&tmp, MM_DEFAULT_CONFIG, err, errlen);
		if (r == -ENOENT)
			r = 0;
	}
	if (r < 0) {
		r = -EINVAL;
		goto out;
	}

	r = scan(argc, argv, &tmp, &config, &cmd, &operand, err, errlen);
	if (r < 0)
		goto out;
done:
	*c = tmp;
	*ret_cmd = cmd;
	mm_set_err(err, errlen, "%s", "");
	r = 0;
out:
	opterr = saved_opterr;
	return r;
}

static bool listed(const struct mm_config *c, const char *name);

/* Whether collector @name runs cycled (its struct mm_plugin has a cycle). */
static bool cycled(const char *name)
{
	for (const struct mm_plugin *const *p = mm_plugins; name && *p; p++)
		if (!strcmp((*p)->name, name))
			return (*p)->cycle != NULL;
	return false;
}

/* Whether c->collectors names a collector that runs cycled. */
static bool cycled_listed(const struct mm_config *c)
{
	for (const struct mm_plugin *const *p = mm_plugins; *p; p++)
		if ((*p)->cycle && listed(c, (*p)->name))
			return true;
	return false;
}

bool mm_config_collector_enabled(const struct mm_config *c, const char *name)
{
	if (cycled(name))
		return mm_config_duty_pm(c) > 0;
	return listed(c, name);
}

unsigned mm_config_duty_pm(const struct mm_config *c)
{
	if (c->duty_pm >= 0)
		return (unsigned)c->duty_pm;
	if (cycled_listed(c))
		return 1000;
	return cycle() ? cycle()->default_pm : 0;
}

void mm_config_continuous(struct mm_config *c)
{
	c->duty_pm = cycled_listed(c) ? 1000 : 0;
}

static bool listed(const struct mm_config *c, const char *name)
{
	size_t n;

	if (!name || !*name)
		return false;
	if (strcmp(c->collectors, "all") == 0)
		return true;
	n = strlen(name);
	const char *p = c->collectors, *item;
	size_t len;
	while (mm_parse_list_next(&p, &item, &len))
		if (len == n && memcmp(item, name, n) == 0)
			return true;
	return false;
}

/* clang-format would break the literals around STR(). The parts that depend on the collectors
 * (plugin.h) are written by mm_config_usage(). */
/* clang-format off */
static const char usage_head[] =
	"mmlockd - per-process page-fault and mmap_lock contention profiler\n"
	       "\n"
	       "Usage: mmlockd [OPTIONS]\n"
	       "       mmlockd COMMAND [ARGS...]\n"
	       "\n"
	       "Counts page faults, how they were handled (per-VMA lock, retries, mmap_lock\n"
	       "fallback) and mmap_lock waits per process, system-wide, from perf events and\n"
	       "tracepoints. Keeps history in SQLite and serves it over HTTP. Runs as root: it\n"
	       "opens perf events on every CPU and reads tracefs. Without a command, mmlockd\n"
	       "runs as the daemon with the options below.\n"
	       "\n"
	       "Commands (`mmlockd COMMAND --help` for each):\n"
	       "  record   sample the same tracepoints into a recording file, print the table\n"
	       "  replay   run the collectors on a recording, print the table (or --db, --locks)\n"
	       "  report   fault tables per process or unit, --compare of two ranges or\n"
	       "           databases, lock contention, from the database\n"
	       "\n"
	       "Options:\n"
	       "      --config FILE       read settings from FILE\n"
	       "                          (default: " MM_DEFAULT_CONFIG ", if it exists)\n"
	       "      --db PATH           SQLite database for history\n"
	       "                          (default: " MM_DEFAULT_DB ")\n"
	       "      --listen ADDR:PORT  HTTP address; IPv6 as [ADDR]:PORT\n"
	       "                          (default: " MM_DEFAULT_LISTEN ")\n"
	       "                          unix:PATH serves root only (socket mode 0600),\n"
	       "                          unix:PATH:GROUP root and GROUP (0660)\n"
	       "      --interval SECONDS  length of a collection window, 1..3600; the suffixes\n"
	       "                          s, m and h are accepted (default: " STR(DEFAULT_INTERVAL_S) ")\n"
	       "      --retention DAYS    days of history kept, 1..3650; the suffix d is\n"
	       "                          accepted (default: " STR(DEFAULT_RETENTION_DAYS) ")\n"
	       "      --top N             processes with their own /metrics series, 0..10000\n"
	       "                          (default: " STR(DEFAULT_TOP_N) ", opt-in; see --cgroup-top)\n"
	       "      --cgroup-top N      cgroups (units) with their own /metrics series,\n"
	       "                          0..1000; the rest are summed as cgroup=\"other\"\n"
	       "                          (default: " STR(DEFAULT_CGROUP_TOP) ")\n"
	       "      --ring-pages N      perf ring buffer pages per event per CPU, a power of\n"
	       "                          two 8..65536 (default: " STR(DEFAULT_RING_PAGES) ")\n"
	       "      --log-level LEVEL   err, warning, notice, info or debug (default: info)\n";

static const char usage_options[] =
	       "      --fault-latency on|off\n"
	       "                          sample fault latency per outcome (p50/p99 per\n"
	       "                          process) on the BPF source, with a collector whose\n"
	       "                          in-kernel part times faults (%s)\n"
	       "                          (default: off: the minor/major-faults software\n"
	       "                          events it needs cost every fault on the machine\n"
	       "                          up to ~40 ns while open, ~2.5%% of an anonymous fault)\n"
	       "      --btf PATH          kernel BTF the BPF source loads against (default:\n"
	       "                          /sys/kernel/btf/vmlinux)\n"
	       "      --bpf-skip LIST     for benchmarks: BPF programs not loaded (counts wrong)\n"
	       "      --bpf-keep-attached on|off\n"
	       "                          for benchmarks: a cycled collector's BPF programs\n"
	       "                          stay attached between its on-periods (default: off)\n"
	       "      --bpf-refuse on|off for tests: the verifier refuses a BPF program, so the\n"
	       "                          collectors fall back to the perf rings (default: off)\n"
	       "  -h, --help              show this help and exit\n"
	       "  -V, --version           show the version and exit\n"
	       "\n"
	       "Precedence: defaults < configuration file < command-line flags.\n"
	       "\n"
	       "Configuration file:\n"
	       "  One \"key = value\" per line. The keys are the option names with '_' for '-':\n";
static const char usage_tail[] =
	       "  Blank lines are ignored; '#' starts a comment at the start of a line or after\n"
	       "  a blank. A value may be put in double quotes (no escapes). Unknown keys,\n"
	       "  unknown collectors, a key given twice and invalid values are errors that\n"
	       "  name the file and line. Example:\n"
	       "\n"
	       "    # " MM_DEFAULT_CONFIG "\n"
	       "    listen     = 127.0.0.1:9477\n"
	       "    interval   = 10s\n"
	       "    retention  = 30d   # a month of history\n"
	       "    collectors = all\n"
	       "\n"
	       "Files:\n"
	       "  " MM_DEFAULT_CONFIG "            configuration file (see above)\n"
	       "  " MM_DEFAULT_DB "  history database (SQLite)\n"
	       "\n"
	       "HTTP routes (GET and HEAD):\n"
	       "  /                  web page\n"
	       "  /metrics           Prometheus metrics\n"
	       "  /api/v1/status     version, kernel, uptime, collectors, events and lost events\n"
	       "  /api/v1/processes  per-process statistics: current window and since start\n"
	       "  /api/v1/history?pid=&since=&until=&limit=\n"
	       "                     stored per-process history from the database\n"
	       "  /api/v1/locks?pid=&since=&until=&top=\n"
	       "                     stored lock contention rows, summed over the range\n"
	       "  /api/v1/series?since=&until=&points=&pid=&start_time=&cgroup=&fields=&ended=\n"
	       "                     the range in about `points` buckets, summed (the page)\n"
	       "  /api/v1/top?since=&until=&limit=&by=process|cgroup&order=faults|fallbacks\n"
	       "      &pid=&start_time=&cgroup=&fields=&ended=\n"
	       "                     totals over the range per process or per cgroup\n"
	       "  A history route that runs 20 s, or whose client goes, answers 503.\n"
	       "\n"
	       "Signals: SIGHUP reloads the configuration file (and logs each changed setting\n"
	       "that takes effect at restart only); SIGTERM and SIGINT stop.\n"
	       "\n"
	       "Exit status:\n"
	       "  0  stopped by SIGTERM or SIGINT (the open window stored), or --help, --version\n"
	       "  1  a failure at start or while running, logged with its reason (a taken port,\n"
	       "     a database that cannot be opened, collectors that need root, ...)\n"
	       "  2  a bad option or argument, or a configuration file that cannot be read or\n"
	       "     has a bad line, logged as one line\n"
	       "  The commands exit the same way: 0 done, 1 failed, 2 bad usage.\n"
	       "\n"
	       "Documentation: mmlockd(8), and README.md and docs/ (configuration.md,\n"
	       "  metrics.md, fleet.md, ...) in " MM_DOCDIR "\n";
/* clang-format on */

/* The collectors under --collectors, each with its usage lines: @by_default ones or the others. */
/* The lines of @text, the first where the cursor is, the others indented by @indent. */
static void usage_lines(struct mm_buf *b, const char *text, int indent)
{
	for (const char *l = text; l && *l;) {
		size_t n = strcspn(l, "\n");
		mm_buf_printf(b, "%*s%.*s\n", l == text ? 0 : indent, "", (int)n, l);
		l += n + (l[n] == '\n');
	}
}

static void usage_collectors(struct mm_buf *b, bool by_default)
{
	for (const struct mm_plugin *const *p = mm_plugins; *p; p++) {
		if ((*p)->by_default != by_default)
			continue;
		mm_buf_printf(b, "%28s%-10s ", "", (*p)->name);
		usage_lines(b, (*p)->usage, 39);
	}
}

/* The option setting the cycled collector's share, with its help (plugin.h). */
static void usage_cycle(struct mm_buf *b)
{
	const struct mm_plugin_cycle *cy = cycle();
	char flag[40];

	if (!cy)
		return;
	mm_config_flag_name(cy->key, flag, sizeof(flag));
	mm_buf_printf(b, "      --%-18s", strcat(flag, " N%"));
	usage_lines(b, cy->help, 26);
}

/* The collectors that have an in-kernel part, as "a, b and c"; @follows: only those that run
 * on it only beside another (plugin.h). */
static void usage_bpf_collectors(struct mm_buf *b, bool follows)
{
	const char *names[16];
	unsigned n = 0;

	for (const struct mm_plugin *const *p = mm_plugins; *p && n < 16; p++)
		if ((*p)->bpf && (!follows || (*p)->bpf->follows))
			names[n++] = (*p)->name;
	for (unsigned i = 0; i < n; i++)
		mm_buf_printf(b, "%s%s", i == 0 ? "" : i + 1 == n ? " and " : ", ", names[i]);
}

const char *mm_config_usage(void)
{
	static struct mm_buf b = MM_BUF_INIT;

	if (b.len)
		return b.data;
	mm_buf_puts(&b, usage_head);
	mm_buf_printf(
		&b,
		"      --collectors LIST   \"all\" or a comma-separated list of collector names\n"
		"                          (default: %s)\n"
		"                          Default ones cost the workload next to nothing:\n",
		default_collectors());
	usage_collectors(&b, true);
	mm_buf_puts(&b, "                          Opt-in, per-event and costly (docs/cost.md):\n");
	usage_collectors(&b, false);
	mm_buf_puts(&b,
		    "      --source SOURCE     auto, bpf or perf: what counts the collectors with\n"
		    "                          an in-kernel part:\n"
		    "                          ");
	usage_bpf_collectors(&b, false);
	mm_buf_puts(
		&b,
		"\n"
		"                          (default: auto = in-kernel BPF counters where the\n"
		"                          kernel has BTF and allows BPF, else the perf rings;\n"
		"                          a cycled collector's programs attached for its\n"
		"                          on-periods only; ");
	usage_bpf_collectors(&b, true);
	mm_buf_puts(
		&b,
		" alone stays on the\n"
		"                          rings; bpf = in the kernel, or refuse to start).\n"
		"                          /api/v1/status and /metrics say which source each\n"
		"                          collector runs on and why not BPF. `mmlockd record`\n"
		"                          always uses perf.\n");
	usage_cycle(&b);
	char timed[64] = "";
	size_t n = 0;
	for (const struct mm_plugin *const *p = mm_plugins; *p; p++)
		if ((*p)->bpf && (*p)->bpf->latency && n < sizeof(timed))
			n += (size_t)snprintf(timed + n, sizeof(timed) - n, "%s%s", n ? " or " : "",
					      (*p)->name);
	mm_buf_printf(&b, usage_options, timed);
	mm_buf_puts(&b, " ");
	unsigned col = 1;
	for (size_t i = 0; i < NKEYS; i++) {
		const char *k = key_name(&keys[i]);
		if (!k)
			continue;
		if (col + 2 + strlen(k) > 80) {
			mm_buf_puts(&b, "\n ");
			col = 1;
		}
		mm_buf_printf(&b, " %s%s", k, i + 1 < NKEYS ? "," : ".");
		col += 2 + (unsigned)strlen(k);
	}
	mm_buf_puts(&b, "\n");
	mm_buf_puts(&b, usage_tail);
	return mm_buf_failed(&b) ? usage_head : b.data;
}
