/*
 * `mmlockd record`: the daemon's live pipeline without HTTP and SQLite, with the recorder
 * (recording.h) as a tap on the record stream and the run tally (tally.h) as the sink; prints
 * the per-process table at the end.
 */
#ifndef MM_RECORD_H
#define MM_RECORD_H

/* `mmlockd record ARGS` (argv[0] is "record"). Returns the exit code: 0, 1 on failure, 2 on a
 * usage error. */
int mm_cmd_record(int argc, char **argv);

#endif
