/*
 * Subcommand options (see cmdline.h): one getopt_long loop for every command, built from its
 * table, instead of one option array and switch per command.
 */
#include "cmdline.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

#define MAX_OPTS 24

int mm_cmd_parse(const struct mm_cmd *cmd, struct mm_config *cfg, int argc, char **argv)
{
	struct option longs[MAX_OPTS + 2] = {{0}};
	char shorts[3 * MAX_OPTS + 4] = "", err[256];
	size_t n = 0, ns = 0;
	int c, index;

	if (cmd->stop_at_operand)
		shorts[ns++] = '+';
	for (; cmd->opts[n].name && n < MAX_OPTS; n++) {
		const struct mm_cmd_opt *o = &cmd->opts[n];
		longs[n] = (struct option){o->name, o->arg ? required_argument : no_argument, NULL,
					   (int)(256 + n)};
		if (o->short_name) {
			shorts[ns++] = o->short_name;
			if (o->arg)
				shorts[ns++] = ':';
		}
	}
	longs[n] = (struct option){"help", no_argument, NULL, 'h'};
	shorts[ns++] = 'h';
	optind = 0;
	opterr = 0; /* one line of ours below, not getopt's and then the whole usage */
	while ((c = getopt_long(argc, argv, shorts, longs, &index)) != -1) {
		const struct mm_cmd_opt *o = NULL;
		int id = -1;
		if (c == 'h') {
			fputs(cmd->usage, stdout);
			return 0;
		}
		for (size_t i = 0; c >= 0 && i < n && !o; i++)
			if (c == (int)(256 + i) ||
			    (cmd->opts[i].short_name && c == cmd->opts[i].short_name)) {
				o = &cmd->opts[i];
				id = (int)i;
			}
		if (!o) {
			const char *bad = argv[optind - 1];
			if (optopt && optopt < 256 && bad && bad[0] == '-' && bad[1] != '-')
				fprintf(stderr,
					"mmlockd %s: %s '-%c'; 'mmlockd %s --help' lists them\n",
					cmd->name,
					strchr(shorts, optopt) ? "option needs a value"
							       : "unknown option",
					optopt, cmd->name);
			else
				fprintf(stderr,
					"mmlockd %s: %s '%s'; 'mmlockd %s --help' lists them\n",
					cmd->name,
					optopt ? "option needs a value" : "unknown option",
					bad ? bad : "?", cmd->name);
			return -EINVAL;
		}
		if (o->config_key &&
		    mm_config_set(cfg, o->config_key, optarg, err, sizeof(err)) < 0) {
			log_error("mmlockd %s: %s", cmd->name, err);
			return -EINVAL;
		}
		if (o->set)
			*o->set = true;
		if (o->value)
			*o->value = optarg;
		if (cmd->option && cmd->option(cmd->ctx, id, optarg) < 0)
			return -EINVAL;
	}
	return optind;
}
