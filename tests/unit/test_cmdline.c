/*
 * Subcommand options (cmdline.h): configuration keys go through mm_config_set() with its
 * validation, the command's own options reach its callback or are stored (.set, .value), --help and
 * usage errors are told apart, and record's COMMAND ends the options.
 */
#include <errno.h>
#include <stdio.h>

#include "check.h"
#include "cmdline.h"

struct seen {
	const char *out, *name;
	int flags;
	bool quiet;
};

enum { O_OUT, O_FLAG };

static int option(void *ctx, int id, const char *arg)
{
	struct seen *s = ctx;
	if (id == O_OUT)
		s->out = arg;
	if (id == O_FLAG)
		s->flags++;
	return 0;
}

static int parse(struct seen *s, struct mm_config *cfg, bool stop, int argc, char **argv)
{
	const struct mm_cmd_opt opts[] = {
		[O_OUT] = {"output", 'o', true, NULL, .set = NULL},
		[O_FLAG] = {"flag", 0, false, NULL, .set = NULL},
		{"interval", 0, true, "interval", .set = NULL},
		{"quiet", 'q', false, NULL, .set = &s->quiet},
		{"name", 0, true, NULL, .value = &s->name},
		{0},
	};
	const struct mm_cmd cmd = {"test", "Usage: test\n", opts, stop, option, s};
	FILE *saved = stdout;
	mm_config_defaults(cfg);
	stdout = fopen("/dev/null", "w"); /* --help's usage */
	int r = mm_cmd_parse(&cmd, cfg, argc, argv);
	fclose(stdout);
	stdout = saved;
	return r;
}

static void test_config_keys_and_own_options_are_parsed(void)
{
	char *argv[] = {"test",	  "-o",	  "x.rec",  "--interval", "2m",
			"--flag", "FILE", "--flag", NULL};
	struct seen s = {0};
	struct mm_config cfg;

	CHECK_U64(parse(&s, &cfg, false, 8, argv), 7); /* getopt moved FILE last */
	CHECK_STR(s.out, "x.rec");
	CHECK_U64(s.flags, 2);
	CHECK_U64(cfg.interval_s, 120);
}

/* Options with .set or .value are stored by the parser; the callback still sees their index. */
static void test_set_and_value_options_are_stored_by_the_parser(void)
{
	char *argv[] = {"test", "--name", "a", "-q", "--name", "b", NULL};
	struct seen s = {0};
	struct mm_config cfg;

	CHECK_U64(parse(&s, &cfg, false, 6, argv), 6);
	CHECK(s.quiet);
	CHECK_STR(s.name, "b"); /* the last one given */
	CHECK(s.out == NULL);

	char *none[] = {"test", NULL};
	struct seen t = {0};
	CHECK_U64(parse(&t, &cfg, false, 1, none), 1);
	CHECK(!t.quiet);
	CHECK(t.name == NULL);
}

static void test_a_bad_config_value_is_a_usage_error(void)
{
	char *argv[] = {"test", "--interval", "0", NULL};
	struct seen s = {0};
	struct mm_config cfg;

	FILE *saved = stderr;
	stderr = fopen("/dev/null", "w");
	int r = parse(&s, &cfg, false, 3, argv);
	fclose(stderr);
	stderr = saved;
	CHECK(r == -EINVAL);
}

static void test_help_returns_zero(void)
{
	char *argv[] = {"test", "--output", "a", "--help", NULL};
	struct seen s = {0};
	struct mm_config cfg;

	CHECK(parse(&s, &cfg, false, 4, argv) == 0);
}

static void test_the_first_operand_ends_the_options_when_asked(void)
{
	char *argv[] = {"test", "-o", "a", "sh", "-c", "--flag", NULL};
	struct seen s = {0};
	struct mm_config cfg;

	CHECK_U64(parse(&s, &cfg, true, 6, argv), 3);
	CHECK_U64(s.flags, 0);
	CHECK_STR(argv[3], "sh");
}

int main(void)
{
	RUN(test_config_keys_and_own_options_are_parsed);
	RUN(test_set_and_value_options_are_stored_by_the_parser);
	RUN(test_a_bad_config_value_is_a_usage_error);
	RUN(test_help_returns_zero);
	RUN(test_the_first_operand_ends_the_options_when_asked);
	return check_summary();
}
