/*
 * daemon/log.c: every log line is one line of printable text whatever it quotes. Control bytes
 * become \xNN (\t, \n, \r by name), bytes outside valid UTF-8 (lone continuation bytes, overlong
 * forms, surrogates, above U+10FFFF) become \xNN, valid UTF-8 stays; nothing is cut in the middle
 * of an escape or a character. The log functions escape, so a newline in a quoted value cannot
 * forge a second entry with its own priority.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "log.h"

static const char *esc(const char *s)
{
	static char out[256];
	mm_escape(out, sizeof(out), s);
	return out;
}

static void test_control_bytes_are_escaped(void)
{
	CHECK_STR(esc("a\tb\nc\rd"), "a\\tb\\nc\\rd");
	CHECK_STR(esc("\x1b[31mred\x01\x7f"), "\\x1b[31mred\\x01\\x7f");
	CHECK_STR(esc("plain text, 100% ascii"), "plain text, 100% ascii");
}

static void test_invalid_utf8_is_escaped_valid_kept(void)
{
	CHECK_STR(esc("d\xc3\xa9j\xc3\xa0 vu \xe2\x82\xac \xf0\x9f\x90\xa7"),
		  "d\xc3\xa9j\xc3\xa0 vu \xe2\x82\xac \xf0\x9f\x90\xa7");
	CHECK_STR(esc("\x80"), "\\x80");			    /* lone continuation byte */
	CHECK_STR(esc("\xc0\xaf"), "\\xc0\\xaf");		    /* overlong '/' */
	CHECK_STR(esc("\xed\xa0\x80"), "\\xed\\xa0\\x80");	    /* surrogate U+D800 */
	CHECK_STR(esc("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80"); /* above U+10FFFF */
	CHECK_STR(esc("\xe2\x82"), "\\xe2\\x82");		    /* truncated sequence */
	CHECK_STR(esc("\xff\xfe"), "\\xff\\xfe");
}

static void test_output_is_never_cut_inside_an_escape_or_character(void)
{
	char out[6];

	CHECK_U64(mm_escape(out, sizeof(out), "abcd\x01"), 4);
	CHECK_STR(out, "abcd");
	CHECK_U64(mm_escape(out, sizeof(out), "abc\xc3\xa9z"), 5);
	CHECK_STR(out, "abc\xc3\xa9");
	CHECK_U64(mm_escape(out, sizeof(out), "abcd\xc3\xa9"), 4);
	CHECK_STR(out, "abcd");
}

static void test_log_lines_are_escaped(void)
{
	char path[] = "/tmp/mmlockd-test-log.XXXXXX", line[512];
	int fd = mkstemp(path), saved = dup(STDERR_FILENO);
	FILE *f;
	int n = 0;

	CHECK(fd >= 0 && saved >= 0);
	if (fd < 0 || saved < 0)
		return;
	fflush(stderr);
	dup2(fd, STDERR_FILENO);
	log_error("unknown key '%s'", "x\n<0>forged\x1b");
	mm_log_errno(LOG_WARNING, 2, "path %s: %%m", "\xff");
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	f = fdopen(fd, "r");
	rewind(f);
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (n == 1)
			CHECK_STR(line, "<3>unknown key 'x\\n<0>forged\\x1b'\n");
		if (n == 2)
			CHECK_STR(line, "<4>path \\xff: %m\n");
	}
	CHECK_U64(n, 2);
	fclose(f);
	unlink(path);
}

int main(void)
{
	RUN(test_control_bytes_are_escaped);
	RUN(test_invalid_utf8_is_escaped_valid_kept);
	RUN(test_output_is_never_cut_inside_an_escape_or_character);
	RUN(test_log_lines_are_escaped);
	return check_summary();
}
