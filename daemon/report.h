/*
 * `mmlockd report`: tables from the SQLite history, for people at a terminal. The daemon keeps
 * what `perf lock contention` prints once; this prints it again for any process and time range,
 * in perf's layout or seed 004's, so a before/after comparison is two commands.
 */
#ifndef MM_REPORT_H
#define MM_REPORT_H

/* Runs `mmlockd report ...` with argv[0] == "report":
 *   mmlockd report --locks [--db PATH] [--since T] [--until T] [--pid N] [--top N]
 *                  [--seed-table | --detail]
 * T is unix seconds, "now", a duration before now ("90s", "15m", "2h", "7d") or a local time
 * "YYYY-MM-DD[ HH:MM[:SS]]". Default: the whole history of the default database. Returns the
 * process exit status: 0, 1 when the database cannot be read, 2 on a usage error. */
int mm_cmd_report(int argc, char **argv);

#endif
