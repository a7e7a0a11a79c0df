/*
 * Prometheus text exposition format 0.0.4 for a snapshot (see prom.h). Pure code.
 *
 * The per-process counters are not named here: the exporter walks mm_proc_fields[] and groups rows
 * by their Prometheus family, so a family shared by several fields (mmap_lock_acquisitions_total
 * with mode="read" and mode="write") gets one # HELP and one # TYPE followed by one sample per
 * field. Every family name is claimed in a small table before anything is written; a global
 * counter whose family would collide with a built-in one is renamed (mmlockd_global_<family>_total)
 * or, failing that, skipped, so the output never carries a family twice and never fails a scrape.
 *
 * Values stay exact: counters are printed as integers, nanoseconds as decimal seconds computed with
 * integer arithmetic (no rounding through double). Label values are escaped per the format
 * (backslash, double quote, newline) and invalid UTF-8 (a comm is 16 arbitrary bytes) is replaced
 * by U+FFFD, because Prometheus rejects label values that are not UTF-8.
 *
 * Three states: a family whose collector does not run is absent (unknown, not 0); with the fault
 * split in bursts (plugins/split.h) the fields stats.c marks MM_CYCLE_ESTIMATED (the outcomes) are
 * exported under their estimate's own family (page_faults_estimated_total), with
 * outcome="kernel_mode" and outcome="not_sampled" beside them (the faults taken in kernel mode, and
 * those of windows no burst covered: the outcomes then add up to page_faults_accounted_total), and
 * those marked MM_CYCLE_BLIND (mmap_lock_acquisitions_by_source_total,
 * page_fault_mmap_lock_wait_seconds_total, ...: plugins/split.c zeroes them, having no exact
 * total to scale them to) are left out rather than exported as 0; with the split continuous,
 * those marked MM_CYCLE_SAMPLE (page_fault_split_*, the bursts' sample and error) are left out
 * for the same reason. No family is named here for it.
 * mmap_lock_waits_total and mmap_lock_wait_seconds_total are the wait histogram's _count and _sum,
 * so they are exported only per cgroup, where there is no histogram (under OpenMetrics the
 * counter family mmap_lock_wait_seconds would clash with the histogram's name). Per cgroup and
 * per process a labelled series that is 0 is left out (a process meets a few of the 17 sources
 * and holder operations): zeros that say nothing were three quarters of the series with every
 * collector on; machine-wide every label is written, except a counter the collector's source
 * never fills (mm_snap_collector.silent: the faults collector on BPF counts no system call's
 * mmap_lock acquisitions by source, those need callchains).
 *
 * The mmap_lock wait histogram is kept in log2 buckets (stats.h: bucket i counts waits in
 * [2^i, 2^(i+1)) ns). It is exported with a cumulative bucket at every second power of two from
 * 2^10 ns (~1 us) to 2^34 ns (~17 s), plus +Inf. Prometheus buckets are "<= le" while ours are
 * "< 2^(i+1)": a wait of exactly 2^k ns lands one bucket higher, which is immaterial at this
 * resolution.
 */
#include "prom.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PREFIX	      "mmlockd_"
#define PROC_PREFIX   "mmlockd_process_"
#define CG_PREFIX     "mmlockd_cgroup_"
#define WAIT_HIST     "mmap_lock_wait_seconds"
#define FAULT_LAT     "page_fault_latency_seconds"
#define LOCK_CONT     "lock_contended_total"
#define LOCK_WAIT     "lock_wait_seconds_total"
#define HIST_MIN_EXP  10 /* first finite bucket: 2^10 ns */
#define HIST_MAX_EXP  34 /* last finite bucket: 2^34 ns */
#define HIST_EXP_STEP 2
#define NAME_MAX_LEN  128

/* Names of the families written so far (or reserved), so none is written twice. */
struct names {
	char (*v)[NAME_MAX_LEN];
	size_t n, cap;
};

static bool names_has(const struct names *ns, const char *name)
{
	for (size_t i = 0; i < ns->n; i++)
		if (strcmp(ns->v[i], name) == 0)
			return true;
	return false;
}

/* Records @name; false when it is already there, too long, or memory ran out (the caller then
 * skips the family, and an allocation failure marks @out failed). */
static bool names_claim(struct names *ns, const char *name, struct mm_buf *out)
{
	if (strlen(name) >= NAME_MAX_LEN || names_has(ns, name))
		return false;
	if (mm_grow((void **)&ns->v, &ns->cap, ns->n + 1, sizeof(*ns->v), 32) < 0) {
		out->failed = true;
		return false;
	}
	strcpy(ns->v[ns->n++], name);
	return true;
}

/* Appends @s as the inside of a quoted label value. */
static void put_label_value(struct mm_buf *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		size_t n;
		if (*p == '\\') {
			mm_buf_puts(out, "\\\\");
			n = 1;
		} else if (*p == '"') {
			mm_buf_puts(out, "\\\"");
			n = 1;
		} else if (*p == '\n') {
			mm_buf_puts(out, "\\n");
			n = 1;
		} else if ((n = mm_utf8_len(p)) != 0) {
			mm_buf_append(out, (const char *)p, n);
		} else {
			mm_buf_puts(out, "\xef\xbf\xbd"); /* U+FFFD */
			n = 1;
		}
		p += n;
	}
}

static void put_label(struct mm_buf *out, const char *key, const char *value)
{
	mm_buf_printf(out, "%s=\"", key);
	put_label_value(out, value);
	mm_buf_puts(out, "\"");
}

/* Writes "name{k1="v1",k2="v2"} ": @labels holds key, value, key, value, ..., NULL. The caller
 * writes the value and the newline. */
static void put_series(struct mm_buf *out, const char *name, const char *const *labels)
{
	mm_buf_printf(out, "%s{", name);
	for (size_t i = 0; labels[i]; i += 2) {
		if (i)
			mm_buf_puts(out, ",");
		put_label(out, labels[i], labels[i + 1]);
	}
	mm_buf_puts(out, "} ");
}

/* HELP text escapes only backslash and newline. */
static void put_help(struct mm_buf *out, const char *name, const char *help, const char *type)
{
	mm_buf_printf(out, "# HELP %s ", name);
	for (const char *p = help; *p; p++) {
		if (*p == '\\')
			mm_buf_puts(out, "\\\\");
		else if (*p == '\n')
			mm_buf_puts(out, "\\n");
		else
			mm_buf_append(out, p, 1);
	}
	mm_buf_printf(out, "\n# TYPE %s %s\n", name, type);
}

/* Starts family @name (its HELP and TYPE lines) unless a family of that name was already written
 * (or reserved, see reserve_fixed). Returns whether it was started: only then may series follow. */
static bool begin_family(struct mm_buf *out, struct names *ns, const char *name, const char *help,
			 const char *type)
{
	if (!names_claim(ns, name, out))
		return false;
	put_help(out, name, help, type);
	return true;
}

/* Exact decimal @v / 10^@digits, trailing fractional zeros dropped ("1.5", "0.000000001", "3"). */
static void put_fixed(struct mm_buf *out, uint64_t v, unsigned digits)
{
	uint64_t scale = 1;
	for (unsigned i = 0; i < digits; i++)
		scale *= 10;
	uint64_t frac = v % scale;
	mm_buf_printf(out, "%" PRIu64, v / scale);
	if (!frac)
		return;
	char tmp[24];
	int n = snprintf(tmp, sizeof(tmp), "%0*" PRIu64, (int)digits, frac);
	while (n > 0 && tmp[n - 1] == '0')
		n--;
	mm_buf_append(out, ".", 1);
	mm_buf_append(out, tmp, (size_t)n);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

static const char *field_type(const struct mm_field *f)
{
	return ends_with(f->prom, "_total") ? "counter" : "gauge";
}

/* Whether field @i is the first of its family in mm_proc_fields[]. */
static bool family_first(size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (strcmp(mm_proc_fields[j].prom, mm_proc_fields[i].prom) == 0)
			return false;
	return true;
}

/* The processes that get their own series: the first @top_n of s->procs, skipping a later entry
 * with the pid of an earlier one (an exited process and its pid's new owner), which would
 * otherwise produce two series with identical labels. Returns the count; *ret is malloc'ed. */
static size_t pick_procs(const struct mm_snapshot *s, unsigned top_n, size_t **ret,
			 struct mm_buf *out)
{
	size_t want = s->nprocs < top_n ? s->nprocs : top_n, n = 0;
	*ret = NULL;
	if (!want)
		return 0;
	size_t *idx = malloc(want * sizeof(*idx));
	if (!idx) {
		out->failed = true;
		return 0;
	}
	for (size_t i = 0; i < s->nprocs && n < want; i++) {
		bool dup = false;
		for (size_t j = 0; j < n && !dup; j++)
			dup = s->procs[idx[j]].pid == s->procs[i].pid;
		if (!dup)
			idx[n++] = i;
	}
	*ret = idx;
	return n;
}

/* Whether collector @name runs: a disabled or failed collector's families are not exported at
 * all (node_exporter's rule), so a dashboard can tell "not measured" from "none happened";
 * mmlockd_collector_up says why a family is missing. */
static bool collector_running(const struct mm_snapshot *s, const char *name)
{
	for (size_t i = 0; i < s->ncollectors; i++)
		if (!strcmp(s->collectors[i].name, name))
			return s->collectors[i].state == MM_COLLECTOR_RUNNING;
	return false;
}

static void put_proc_labels(struct mm_buf *out, const struct mm_snap_proc *p)
{
	mm_buf_printf(out, "pid=\"%" PRId32 "\",", p->pid);
	put_label(out, "comm", p->comm);
	mm_buf_puts(out, ",");
	put_label(out, "cgroup", p->cgroup);
}

/* Who a series of put_fields() is about: the whole machine, one process or one cgroup. */
enum breakdown { BY_NONE, BY_PROCESS, BY_CGROUP };

static const char *const breakdown_prefix[] = {PREFIX, PROC_PREFIX, CG_PREFIX};

/* Series k of a breakdown: its statistics, and its labels written by put_series_labels(). */
static const struct mm_proc_counts *series_stats(const struct mm_snapshot *s, enum breakdown by,
						 const size_t *procs, size_t k)
{
	if (by == BY_PROCESS)
		return s->procs[procs[k]].total;
	if (by == BY_CGROUP)
		return mm_stats_counts_c(&s->cgroups[k].total);
	return mm_stats_counts_c(&s->all_total);
}

static void put_series_labels(struct mm_buf *out, const struct mm_snapshot *s, enum breakdown by,
			      const size_t *procs, size_t k)
{
	if (by == BY_PROCESS)
		put_proc_labels(out, &s->procs[procs[k]]);
	else if (by == BY_CGROUP)
		put_label(out, "cgroup", s->cgroups[k].cgroup);
}

/* Whether the fault split runs in bursts, its outcome counts estimates (snapshot.h). */
static bool split_bursts(const struct mm_snapshot *s)
{
	return !strcmp(s->split.mode, "bursts");
}

/* Whether counter mm_proc_fields[@i] stays 0 on its collector's source (mm_snap_collector.silent:
 * an in-kernel part that does not count it): not exported, rather than as a constant 0. */
static bool field_silent(const struct mm_snapshot *s, size_t i)
{
	for (size_t c = 0; c < s->ncollectors; c++)
		if (!strcmp(s->collectors[c].name, mm_proc_fields[i].collector))
			return s->collectors[c].silent[i / 64] & (1ull << (i % 64));
	return false;
}

/* Whether family @fam is a duplicate of the mmap_lock wait histogram exported for the same
 * breakdown (its _sum and _count): machine-wide and per process, not per cgroup (no histogram). */
static bool histogram_duplicate(const struct mm_field *fam, enum breakdown by)
{
	return by != BY_CGROUP && (!strcmp(fam->prom, "mmap_lock_wait_seconds_total") ||
				   !strcmp(fam->prom, "mmap_lock_waits_total"));
}

/* Whether family @fam is exported at all: its collector runs, and it is not one the split's mode
 * makes constant (MM_CYCLE_SAMPLE: the bursts' sample, 0 with the split continuous) or blind
 * (MM_CYCLE_BLIND: see the header), nor a histogram's duplicate. */
static bool family_exported(const struct mm_snapshot *s, const struct mm_field *fam,
			    enum breakdown by)
{
	bool bursts = split_bursts(s);
	if (!collector_running(s, fam->collector) || histogram_duplicate(fam, by))
		return false;
	if (fam->cycle == MM_CYCLE_SAMPLE)
		return bursts;
	return !(bursts && fam->cycle == MM_CYCLE_BLIND);
}

/* Whether a series of value @v is written: machine-wide every one (a dashboard finds each label
 * it knows); per process and per cgroup, a labelled series only when it is not 0 (of the 17
 * sources and operations a process sees a few, and ~75% of the series were constant zeros). */
static bool series_wanted(enum breakdown by, const char *label, uint64_t v)
{
	return by == BY_NONE || !label || v;
}

/* One series of field @f for series @k of the breakdown, named @name. */
static void put_field_series(struct mm_buf *out, const struct mm_snapshot *s, const char *name,
			     enum breakdown by, const size_t *procs, size_t k, const char *label,
			     uint64_t v, bool ns)
{
	mm_buf_puts(out, name);
	if (by != BY_NONE || label) {
		mm_buf_puts(out, "{");
		put_series_labels(out, s, by, procs, k);
		if (by != BY_NONE && label)
			mm_buf_puts(out, ",");
		if (label)
			mm_buf_puts(out, label);
		mm_buf_puts(out, "}");
	}
	mm_buf_puts(out, " ");
	if (ns)
		put_fixed(out, v, 9);
	else
		mm_buf_printf(out, "%" PRIu64, v);
	mm_buf_puts(out, "\n");
}

/* The estimated family's two outcomes beside the five (with @write, written): kernel_mode (faults
 * taken in kernel mode, estimated with the split: they take mmap_lock without a VMA-lock attempt)
 * and not_sampled. Returns how many. */
static size_t extra_outcomes(struct mm_buf *out, const struct mm_snapshot *s, const char *name,
			     enum breakdown by, const size_t *procs, size_t k,
			     const struct mm_proc_counts *st, bool write)
{
	const struct {
		const char *label;
		uint64_t v;
	} x[] = {{"outcome=\"kernel_mode\"", st->kernel_mode_faults},
		 {"outcome=\"not_sampled\"", mm_counts_not_sampled(st)}};
	size_t n = 0;
	for (size_t i = 0; i < sizeof(x) / sizeof(x[0]); i++) {
		if (!series_wanted(by, "outcome", x[i].v))
			continue;
		n++;
		if (write)
			put_field_series(out, s, name, by, procs, k, x[i].label, x[i].v, false);
	}
	return n;
}

/* Writes (with @write) or counts the series of family @i (first field of its family) for every
 * series of the breakdown; @not_sampled adds the estimate's not_sampled outcome. */
static size_t family_series(struct mm_buf *out, const struct mm_snapshot *s, const char *name,
			    size_t i, const size_t *procs, size_t nseries, enum breakdown by,
			    bool not_sampled_too, bool write)
{
	const struct mm_field *fam = &mm_proc_fields[i];
	size_t n = 0;
	for (size_t k = 0; k < nseries; k++) {
		const struct mm_proc_counts *st = series_stats(s, by, procs, k);
		for (size_t j = i; j < mm_proc_nfields; j++) {
			const struct mm_field *f = &mm_proc_fields[j];
			uint64_t v = mm_field_get(st, f);
			if (strcmp(f->prom, fam->prom) != 0 || field_silent(s, j) ||
			    !series_wanted(by, f->prom_label, v))
				continue;
			n++;
			if (write)
				put_field_series(out, s, name, by, procs, k, f->prom_label, v,
						 f->kind == MM_FIELD_NS);
		}
		if (not_sampled_too)
			n += extra_outcomes(out, s, name, by, procs, k, st, write);
	}
	return n;
}

/* Every family of mm_proc_fields[] that family_exported(), with its series for the @nseries of
 * the breakdown; a family none of whose series is wanted is left out. */
static void put_fields(struct mm_buf *out, const struct mm_snapshot *s, const size_t *procs,
		       size_t nseries, enum breakdown by, struct names *ns)
{
	char name[NAME_MAX_LEN];
	/* not_sampled needs the exact totals: minflt's collector. */
	const char *exact_totals = "";
	for (size_t i = 0; i < mm_proc_nfields; i++)
		if (!strcmp(mm_proc_fields[i].name, "minflt"))
			exact_totals = mm_proc_fields[i].collector;

	for (size_t i = 0; i < mm_proc_nfields; i++) {
		const struct mm_field *fam = &mm_proc_fields[i];
		if (!family_first(i) || !family_exported(s, fam, by))
			continue;
		bool estimated = split_bursts(s) && fam->cycle == MM_CYCLE_ESTIMATED;
		bool with_not_sampled = estimated && collector_running(s, exact_totals);
		snprintf(name, sizeof(name), "%s%s", breakdown_prefix[by],
			 estimated ? fam->prom_estimated : fam->prom);
		if (!family_series(out, s, name, i, procs, nseries, by, with_not_sampled, false) ||
		    !begin_family(out, ns, name, estimated ? fam->help_estimated : fam->help,
				  field_type(fam)))
			continue;
		family_series(out, s, name, i, procs, nseries, by, with_not_sampled, true);
	}
}

/* How many processes of each cgroup with its own series mmlockd counted something for and that
 * still run (the "other" bucket too). */
static void put_cgroup_processes(struct mm_buf *out, const struct mm_snapshot *s, struct names *ns)
{
	const char *name = CG_PREFIX "processes";
	if (!s->ncgroups || !begin_family(out, ns, name,
					  "Running processes of the cgroup with activity seen "
					  "(cgroup=\"other\": of every cgroup without its own "
					  "series).",
					  "gauge"))
		return;
	for (size_t k = 0; k < s->ncgroups; k++) {
		put_series(out, name, (const char *[]){"cgroup", s->cgroups[k].cgroup, NULL});
		mm_buf_printf(out, "%" PRIu64 "\n", s->cgroups[k].processes);
	}
}

static const struct mm_field *wait_ns_field(void)
{
	for (size_t i = 0; i < mm_proc_nfields; i++)
		if (strcmp(mm_proc_fields[i].name, "mmap_lock_wait_ns") == 0)
			return &mm_proc_fields[i];
	return NULL;
}

/* Labels of a histogram series: the process's (or none) and @extra ("key=\"value\"", or NULL),
 * each followed by a comma when @trailing (the le label comes next). Returns whether any. */
static bool put_hist_labels(struct mm_buf *out, const struct mm_snap_proc *p, const char *extra,
			    bool trailing)
{
	if (p) {
		put_proc_labels(out, p);
		if (extra || trailing)
			mm_buf_puts(out, ",");
	}
	if (extra) {
		mm_buf_puts(out, extra);
		if (trailing)
			mm_buf_puts(out, ",");
	}
	return p || extra;
}

/* The series of log2 histogram @h as a Prometheus histogram @name: labels of @p and @extra, and
 * _sum @sum_ns. Without @has_sum no _sum is written (the log2 buckets do not give one, and a
 * guessed sum would read as a measured one). */
static void put_hist_series(struct mm_buf *out, const char *name, const struct mm_snap_proc *p,
			    const char *extra, const struct mm_hist *h, bool has_sum,
			    uint64_t sum_ns)
{
	uint64_t cum = 0;
	unsigned i = 0;

	for (unsigned e = HIST_MIN_EXP; e <= HIST_MAX_EXP; e += HIST_EXP_STEP) {
		/* le = 2^e ns is the upper bound of bucket e - 1. */
		for (; i < e && i < MM_HIST_BUCKETS; i++)
			cum += h->bucket[i];
		mm_buf_printf(out, "%s_bucket{", name);
		put_hist_labels(out, p, extra, true);
		mm_buf_puts(out, "le=\"");
		put_fixed(out, 1ull << e, 9);
		mm_buf_printf(out, "\"} %" PRIu64 "\n", cum);
	}
	for (; i < MM_HIST_BUCKETS; i++)
		cum += h->bucket[i];
	mm_buf_printf(out, "%s_bucket{", name);
	put_hist_labels(out, p, extra, true);
	mm_buf_printf(out, "le=\"+Inf\"} %" PRIu64 "\n", cum);

	for (int k = has_sum ? 0 : 1; k < 2; k++) {
		mm_buf_printf(out, "%s_%s", name, k ? "count" : "sum");
		if (p || extra) {
			mm_buf_puts(out, "{");
			put_hist_labels(out, p, extra, false);
			mm_buf_puts(out, "}");
		}
		mm_buf_puts(out, " ");
		if (k)
			mm_buf_printf(out, "%" PRIu64, cum);
		else
			put_fixed(out, sum_ns, 9);
		mm_buf_puts(out, "\n");
	}
}

/* Fault latency (--fault-latency on, BPF source), machine-wide: page_fault_user to the fault's
 * completion, a sample of completed faults, by whether the fault fell back to mmap_lock. Absent
 * while it is not sampled. */
static void put_fault_latency(struct mm_buf *out, const struct mm_snapshot *s, struct names *ns)
{
	const char *name = PREFIX FAULT_LAT;
	if (!strcmp(s->latency.mode, "off") || !s->latency.mode[0] ||
	    !begin_family(out, ns, name,
			  "Latency of sampled user page faults (page_fault_user to completion, "
			  "--fault-latency on), by whether they fell back to mmap_lock (path). "
			  "From log2 buckets, so no _sum.",
			  "histogram"))
		return;
	put_hist_series(out, name, NULL, "path=\"vma\"", &s->all_total.fault_ns_vma_hist, false, 0);
	put_hist_series(out, name, NULL, "path=\"mmap_lock\"", &s->all_total.fault_ns_mmap_hist,
			false, 0);
}

static void put_hists(struct mm_buf *out, const struct mm_snapshot *s, const size_t *procs,
		      size_t nprocs, bool per_process, struct names *ns)
{
	const char *name = per_process ? PROC_PREFIX WAIT_HIST : PREFIX WAIT_HIST;
	const struct mm_field *sum_f = wait_ns_field();
	if (!sum_f || !collector_running(s, sum_f->collector) ||
	    !begin_family(out, ns, name,
			  per_process ? "Distribution of mmap_lock waits of the busiest processes."
				      : "Distribution of mmap_lock waits (start_locking to "
					"acquire_returned).",
			  "histogram"))
		return;
	if (!per_process) {
		put_hist_series(out, name, NULL, NULL, &s->all_total.mmap_lock_wait_hist, true,
				mm_field_get(&s->all_total, sum_f));
		return;
	}
	for (size_t k = 0; k < nprocs; k++)
		put_hist_series(out, name, &s->procs[procs[k]], NULL,
				mm_snap_proc_hist(&s->procs[procs[k]], true,
						  MM_HIST_INDEX(mmap_lock_wait_hist)),
				true, mm_field_get(s->procs[procs[k]].total, sum_f));
}

static void put_events(struct mm_buf *out, const struct mm_snapshot *s, struct names *ns)
{
	static const struct {
		const char *name, *help, *type;
	} fams[] = {
		{PREFIX "events_total", "Samples received per tracepoint since start.", "counter"},
		{PREFIX "events_lost_total", "Samples lost (ring buffer overflow) per tracepoint.",
		 "counter"},
		{PREFIX "tracepoint_up", "Whether the tracepoint is being sampled (1) or not (0).",
		 "gauge"},
	};

	if (!s->nevents)
		return;
	for (size_t k = 0; k < sizeof(fams) / sizeof(fams[0]); k++) {
		if (!begin_family(out, ns, fams[k].name, fams[k].help, fams[k].type))
			continue;
		for (size_t i = 0; i < s->nevents; i++) {
			const struct mm_snap_event *e = &s->events[i];
			uint64_t v = k == 0 ? e->samples : k == 1 ? e->lost : e->open;
			put_series(out, fams[k].name, (const char *[]){"event", e->name, NULL});
			mm_buf_printf(out, "%" PRIu64 "\n", v);
		}
	}
}

static void put_collectors(struct mm_buf *out, const struct mm_snapshot *s, struct names *ns)
{
	const char *name = PREFIX "collector_up";
	if (!s->ncollectors ||
	    !begin_family(out, ns, name,
			  "Whether the collector is running (1) or not (0), with its state.",
			  "gauge"))
		return;
	for (size_t i = 0; i < s->ncollectors; i++) {
		const struct mm_snap_collector *c = &s->collectors[i];
		put_series(out, name,
			   (const char *[]){"collector", c->name, "state",
					    mm_collector_state_name(c->state), NULL});
		mm_buf_printf(out, "%d\n", c->state == MM_COLLECTOR_RUNNING);
	}
	name = PREFIX "collector_source";
	if (!begin_family(out, ns, name,
			  "What feeds each collector (perf rings, bpf in-kernel counters, procfs); "
			  "why_not_bpf says why BPF is not used, empty where it is (or where BPF "
			  "has nothing to offer, procfs). Always 1.",
			  "gauge"))
		return;
	for (size_t i = 0; i < s->ncollectors; i++) {
		const struct mm_snap_collector *c = &s->collectors[i];
		/* A collector on BPF may carry a note about what that source lacks: it is not
		 * a reason for not using BPF (GET /api/v1/status has it as source_note). */
		bool on_bpf = !strcmp(c->source, "bpf") || !strcmp(c->source, "procfs");
		put_series(out, name,
			   (const char *[]){"collector", c->name, "source", c->source,
					    "why_not_bpf", on_bpf ? "" : c->source_note, NULL});
		mm_buf_puts(out, "1\n");
	}
}

/* Metric name of a global family: mmlockd_<family>_total with every character outside
 * [a-zA-Z0-9_] made '_' (a family already ending in _total keeps one). */
static void global_name(char *dst, size_t len, const char *family, bool renamed)
{
	snprintf(dst, len, "%s%s", renamed ? PREFIX "global_" : PREFIX, family);
	for (size_t i = strlen(PREFIX); dst[i]; i++) {
		char c = dst[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
			dst[i] = '_';
	}
	if (!ends_with(dst, "_total"))
		strncat(dst, "_total", len - strlen(dst) - 1);
}

static void put_globals(struct mm_buf *out, const struct mm_snapshot *s, struct names *ns)
{
	char name[NAME_MAX_LEN], help[200];

	for (size_t i = 0; i < s->nglobals; i++) {
		const struct mm_snap_global *g = &s->globals[i];
		bool first = true;
		for (size_t j = 0; j < i && first; j++)
			first = strcmp(s->globals[j].family, g->family) != 0;
		if (!first || !g->family[0] ||
		    (g->collector[0] && !collector_running(s, g->collector)))
			continue;
		global_name(name, sizeof(name), g->family, false);
		if (!names_claim(ns, name, out)) {
			global_name(name, sizeof(name), g->family, true);
			if (!names_claim(ns, name, out))
				continue;
		}
		if (g->help[0])
			put_help(out, name, g->help, "counter");
		else {
			snprintf(help, sizeof(help), "Counters of %s, by name.", g->family);
			put_help(out, name, help, "counter");
		}
		for (size_t j = i; j < s->nglobals; j++) {
			const struct mm_snap_global *h = &s->globals[j];
			bool dup = false;
			if (strcmp(h->family, g->family) != 0)
				continue;
			for (size_t k = i; k < j && !dup; k++)
				dup = strcmp(s->globals[k].family, g->family) == 0 &&
				      strcmp(s->globals[k].name, h->name) == 0;
			if (dup)
				continue;
			put_series(out, name, (const char *[]){"name", h->name, NULL});
			mm_buf_printf(out, "%" PRIu64 "\n", h->total);
		}
	}
}

static void put_simple(struct mm_buf *out, struct names *ns, const char *name, const char *help,
		       const char *type, uint64_t v)
{
	if (!begin_family(out, ns, name, help, type))
		return;
	mm_buf_printf(out, "%s %" PRIu64 "\n", name, v);
}

/* The max(@top_n, MM_PROM_LOCK_CALLERS) call sites with the longest total lock wait since start
 * (s->lock_callers is sorted that way): contentions and wait, labelled by lock type and caller.
 * Nothing without a collector of lock rows. A (type, caller) pair already written is skipped, so
 * labels never repeat. */
static void put_lock_callers(struct mm_buf *out, const struct mm_snapshot *s, unsigned top_n,
			     struct names *ns)
{
	static const struct {
		const char *name, *help;
	} fams[] = {
		{PREFIX LOCK_CONT,
		 "Lock contentions (lock:contention_begin to contention_end) since "
		 "start, at the call sites with the longest total wait; caller as "
		 "perf lock contention --stack-skip 0 names it."},
		{PREFIX LOCK_WAIT, "Time waited in those lock contentions since start."},
	};
	/* Not tied to the per-pid series, which are off by default. */
	unsigned want = top_n > MM_PROM_LOCK_CALLERS ? top_n : MM_PROM_LOCK_CALLERS;
	size_t n = s->nlock_callers < want ? s->nlock_callers : want;

	if (!n)
		return;
	for (size_t k = 0; k < 2; k++) {
		if (!begin_family(out, ns, fams[k].name, fams[k].help, "counter"))
			continue;
		for (size_t i = 0; i < n; i++) {
			const struct mm_snap_lock *l = &s->lock_callers[i];
			bool dup = false;
			for (size_t j = 0; j < i && !dup; j++)
				dup = !strcmp(s->lock_callers[j].type, l->type) &&
				      !strcmp(s->lock_callers[j].caller, l->caller);
			if (dup)
				continue;
			put_series(out, fams[k].name,
				   (const char *[]){"type", l->type, "caller", l->caller, NULL});
			if (k)
				put_fixed(out, l->wait_ns, 9);
			else
				mm_buf_printf(out, "%" PRIu64, l->contended);
			mm_buf_puts(out, "\n");
		}
	}
}

/* Every family with a fixed name, claimed before globals so a global cannot take one. */
static void reserve_fixed(struct names *ns, struct mm_buf *out)
{
	static const char *const fixed[] = {
		PREFIX "build_info",
		PREFIX "uptime_seconds",
		PREFIX "processes_tracked",
		PREFIX "windows_stored_total",
		PREFIX "store_errors_total",
		PREFIX "windows_lost_total",
		PREFIX "collector_up",
		PREFIX "events_total",
		PREFIX "events_lost_total",
		PREFIX "tracepoint_up",
		PREFIX WAIT_HIST,
		PROC_PREFIX WAIT_HIST,
		CG_PREFIX "processes",
		PREFIX "collector_source",
		PREFIX FAULT_LAT,
	};
	char name[NAME_MAX_LEN];

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		names_claim(ns, fixed[i], out);
	names_claim(ns, PREFIX LOCK_CONT, out);
	names_claim(ns, PREFIX LOCK_WAIT, out);
	for (size_t i = 0; i < mm_proc_nfields; i++) {
		const char *est = mm_proc_fields[i].prom_estimated;
		for (size_t by = 0;
		     est && by < sizeof(breakdown_prefix) / sizeof(*breakdown_prefix); by++) {
			snprintf(name, sizeof(name), "%s%s", breakdown_prefix[by], est);
			names_claim(ns, name, out);
		}
		snprintf(name, sizeof(name), "%s%s", PREFIX, mm_proc_fields[i].prom);
		names_claim(ns, name, out);
		snprintf(name, sizeof(name), "%s%s", PROC_PREFIX, mm_proc_fields[i].prom);
		names_claim(ns, name, out);
		snprintf(name, sizeof(name), "%s%s", CG_PREFIX, mm_proc_fields[i].prom);
		names_claim(ns, name, out);
	}
}

void mm_prom_format(const struct mm_snapshot *s, unsigned top_n, struct mm_buf *out)
{
	struct names reserved = {0}, written = {0};
	size_t *procs = NULL;
	size_t nprocs = pick_procs(s, top_n, &procs, out);

	reserve_fixed(&reserved, out);

	if (begin_family(out, &written, PREFIX "build_info",
			 "mmlockd version and running kernel; always 1.", "gauge")) {
		put_series(out, PREFIX "build_info",
			   (const char *[]){"version", s->version, "kernel", s->kernel, NULL});
		mm_buf_puts(out, "1\n");
	}
	if (begin_family(out, &written, PREFIX "uptime_seconds", "Seconds since mmlockd started.",
			 "gauge")) {
		mm_buf_puts(out, PREFIX "uptime_seconds ");
		put_fixed(out, s->taken_ms > s->started_ms ? s->taken_ms - s->started_ms : 0, 3);
		mm_buf_puts(out, "\n");
	}
	put_simple(out, &written, PREFIX "processes_tracked", "Processes in the process table now.",
		   "gauge", s->procs_tracked);
	put_simple(out, &written, PREFIX "windows_stored_total",
		   "Windows committed to the SQLite history since start.", "counter",
		   s->windows_stored);
	put_simple(out, &written, PREFIX "store_errors_total",
		   "Windows that could not be stored in the SQLite history.", "counter",
		   s->store_errors);
	put_simple(
		out, &written, PREFIX "windows_lost_total",
		"Windows never stored in the SQLite history: dropped from the writer's full queue "
		"during an outage, or given up at stop.",
		"counter", s->windows_lost);
	put_collectors(out, s, &written);
	put_events(out, s, &written);

	put_fields(out, s, NULL, 1, BY_NONE, &written);
	put_hists(out, s, NULL, 0, false, &written);
	put_fault_latency(out, s, &written);
	if (s->ncgroups) {
		put_cgroup_processes(out, s, &written);
		put_fields(out, s, NULL, s->ncgroups, BY_CGROUP, &written);
	}
	if (nprocs) {
		put_fields(out, s, procs, nprocs, BY_PROCESS, &written);
		put_hists(out, s, procs, nprocs, true, &written);
	}
	put_lock_callers(out, s, top_n, &written);

	/* Every name written above is in reserved too. */
	put_globals(out, s, &reserved);

	free(procs);
	free(reserved.v);
	free(written.v);
}
