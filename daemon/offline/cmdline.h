/*
 * Options of the subcommands (record, replay, report), parsed one way: a table of options, each
 * either a configuration key (applied by mm_config_set(), so `--log-level` or `--interval` is
 * validated exactly as the daemon's flag and config file key) or the command's own: stored by the
 * parser (.set, .value) or handed to the command's callback. --help prints the command's usage.
 * In the style of perf's and git's parse-options: the table is the one place an option is
 * declared. Pure code.
 */
#ifndef MM_CMDLINE_H
#define MM_CMDLINE_H

#include <stdbool.h>

#include "config.h"

/* An option with @set or @value needs no code in the callback: the parser stores what it got, as
 * git's OPT_BOOL and OPT_STRING do. Such a table points into the command's state, so it lives in
 * the function that parses. */
struct mm_cmd_opt {
	const char *name;	/* the long name, "--name" */
	char short_name;	/* -c, or 0 */
	bool arg;		/* takes a value */
	const char *config_key; /* set through mm_config_set(), or NULL: the command's own */
	bool *set;		/* made true when the option is given, or NULL */
	const char **value;	/* gets the option's value (argv's string, not copied), or NULL */
};

struct mm_cmd {
	const char *name;  /* "record": messages say "mmlockd record: ..." */
	const char *usage; /* printed by --help (stdout) and after a usage error (stderr) */
	const struct mm_cmd_opt *opts; /* ends with a NULL name; at most 24 */
	bool stop_at_operand;	       /* options end at the first operand (record's COMMAND) */
	/* Called for every option after a config key was applied and @set/@value stored, with
	 * @id the option's index in @opts (@arg NULL without a value); returns 0 or -EINVAL after
	 * printing why. May be NULL. */
	int (*option)(void *ctx, int id, const char *arg);
	void *ctx;
};

/* Parses @argv (argv[0] is the command's name) into @cfg and the command's callback. Returns the
 * index of the first operand, 0 after --help (usage printed), or -EINVAL after printing why. */
int mm_cmd_parse(const struct mm_cmd *cmd, struct mm_config *cfg, int argc, char **argv);

#endif
