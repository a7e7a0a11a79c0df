/*
 * `mmlockd report`: tables from the SQLite history, for people at a terminal. The fault table per
 * process or per unit for any range (what otherwise takes SQL on process_stats/cgroup_stats), the
 * comparison of two ranges or two databases (a vanilla and a patched kernel) in the grid of the
 * seeds' tables, and the lock contention `perf lock contention` prints once, again for any process
 * and time range, in perf's layout or seed 004's.
 */
#ifndef MM_REPORT_H
#define MM_REPORT_H

/* Runs `mmlockd report ...` with argv[0] == "report":
 *   mmlockd report [--units] [--sort KEYS] [-x SEP | --json] [FILTERS]
 *   mmlockd report --compare A B [--labels L1,L2] [--throughput X,Y] [FILTERS]
 *   mmlockd report --locks [--seed-table | --detail] [FILTERS]
 * FILTERS: --db PATH, --since T, --until T, --pid N, --cgroup PATH, --comm NAME, --top N; A and B
 * are database files or ranges SINCE..UNTIL of --db.
 * T is unix seconds, "now", a duration before now ("90s", "15m", "2h", "7d") or a local time
 * "YYYY-MM-DD[ HH:MM[:SS]]". Default: the whole history of the default database. Returns the
 * process exit status: 0, 1 when the database cannot be read, 2 on a usage error. */
int mm_cmd_report(int argc, char **argv);

#endif
