/*
 * Shared by the libFuzzer targets of tests/fuzz/: the input as a file, for parsers whose interface
 * is a path (the configuration file, a recording). One memfd per process, rewritten for every
 * input; /proc/self/fd/N opens it afresh at offset 0, so the code under test runs unchanged, with
 * its own fopen(), as it would on a real file.
 */
#ifndef MM_FUZZ_H
#define MM_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* Replaces the file's contents with @data and returns its path (static storage). Aborts when the
 * memfd cannot be made or written: the target could not test anything. */
static inline const char *fuzz_file(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];

	if (fd < 0) {
		fd = memfd_create("fuzz-input", MFD_CLOEXEC);
		if (fd < 0) {
			perror("memfd_create");
			abort();
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) < 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size)) {
		perror("writing the fuzz input");
		abort();
	}
	return path;
}

#endif
