/* Parsing of /proc/vmstat for the vmstat collector, exposed for unit tests. */
#ifndef MM_VMSTAT_H
#define MM_VMSTAT_H

#include <stdint.h>

/* Calls @fn for every "name value" line of @text. Returns the number of lines parsed; malformed
 * lines are skipped. */
int mm_vmstat_parse(const char *text, void (*fn)(void *ctx, const char *name, uint64_t value),
		    void *ctx);

/* Whether the collector exports counter @name: pgfault, pgmajfault and every vma_lock_*. */
int mm_vmstat_wanted(const char *name);

#endif
