/*
 * tracefs: where tracepoint formats and ids live. Finds the mount (mounting it at
 * /sys/kernel/tracing when nothing is mounted and we may), and parses a tracepoint's format file
 * into libtraceevent so collectors read fields by name with the running kernel's layout.
 */
#ifndef MM_TRACEFS_H
#define MM_TRACEFS_H

#include <stddef.h>

struct tep_handle;
struct tep_event;

/* Finds tracefs and copies its path to @ret_path. Returns 0, or -errno after writing a one-line
 * reason to @err (not mounted and cannot mount, no permission). */
int mm_tracefs_find(char *ret_path, size_t size, char *err, size_t errlen);

/* Parses the format of tracepoint @system:@name under @tracefs into @tep. Returns 0 with *ret_ev
 * (owned by @tep), *ret_id (the perf config id) and, when @ret_format is not NULL, the format
 * file's text (malloc'd, the caller frees); or -errno with a one-line reason in @err (-ENOENT:
 * the kernel has no such tracepoint). */
int mm_tracefs_event(const char *tracefs, struct tep_handle *tep, const char *system,
		     const char *name, struct tep_event **ret_ev, int *ret_id, char **ret_format,
		     char *err, size_t errlen);

#endif
