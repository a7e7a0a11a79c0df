/*
 * libFuzzer target: `mmlockd replay FILE` as a whole (daemon/replay.c): the recording reader, the
 * tracepoint formats (libtraceevent), the host, every collector and the tally, on the recorded
 * clock. Input: a recording (seeds: cut-down tests/data recordings). Whatever the file holds, the
 * replay must end (libFuzzer's -timeout catches a loop that does not: run.sh sets 10 s), without a
 * sanitizer report or a leak, and exit 0 or 1, never 2 (usage). The table goes to /dev/null, the
 * log is silenced by --log-level emerg (an error per corrupt input would be most of the time).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzz.h"
#include "replay.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

	if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0)
		abort();
	close(fd);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64], *argv[] = {"replay", path, "--log-level", "emerg", NULL};

	snprintf(path, sizeof(path), "%s", fuzz_file(data, size));
	int rc = mm_cmd_replay(4, argv);
	if (rc != 0 && rc != 1)
		abort();
	return 0;
}
