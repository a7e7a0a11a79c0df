/*
 * libFuzzer target: the configuration parser (daemon/config.c). The input is a configuration file
 * for mm_config_load_stream(); its first line is also tried as a command-line flag value through
 * mm_config_set(), for the key its length picks. A file is either taken whole or refused with a
 * message; the message must be one printable line (binary junk is escaped, never echoed raw), and a
 * refused file must leave the configuration untouched.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

static const char *const keys[] = {"db",  "listen",	"interval",  "retention",
				   "top", "ring_pages", "log_level", "collectors"};

/* The message names a place and a reason on one line of printable text. */
static void check_message(const char *err)
{
	for (const unsigned char *p = (const unsigned char *)err; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mm_config c, before;
	char err[512], value[256];

	mm_config_defaults(&c);
	before = c;
	/* From memory: mm_config_load() is fopen() around the same function. */
	FILE *f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;
	if (mm_config_load_stream(&c, f, "fuzz.conf", err, sizeof(err)) < 0) {
		check_message(err);
		if (memcmp(&c, &before, sizeof(c)) != 0)
			abort();
	}
	fclose(f);

	size_t n = 0;
	while (n < size && n < sizeof(value) - 1 && data[n] != '\n')
		n++;
	memcpy(value, data, n);
	value[n] = '\0';
	/* One key per input, picked by the line's length, so every key sees every kind of value
	 * over the run at an eighth of the cost per input. */
	mm_config_defaults(&c);
	if (mm_config_set(&c, keys[n % (sizeof(keys) / sizeof(keys[0]))], value, err, sizeof(err)) <
	    0)
		check_message(err);
	return 0;
}
