/*
 * JSON bodies of /api/v1/status and /api/v1/processes, built from a snapshot. Pure code.
 * Process objects use the same keys as the process_stats view (pid, comm, start_time, cgroup and
 * every name of mm_proc_fields[]), under "window" and "total".
 */
#ifndef MM_API_H
#define MM_API_H

#include "buf.h"
#include "snapshot.h"

void mm_api_status(const struct mm_snapshot *s, struct mm_buf *out);
void mm_api_processes(const struct mm_snapshot *s, struct mm_buf *out);

#endif
