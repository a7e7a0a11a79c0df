/*
 * `mmlockd replay FILE`: runs the collectors on a recording (recording.h) exactly as the live
 * daemon ran them, and prints the per-process table, or fills a database with the windows.
 */
#ifndef MM_REPLAY_H
#define MM_REPLAY_H

/* argv[0] is "replay". Returns the process exit status (0, 1 on failure, 2 on bad usage). */
int mm_cmd_replay(int argc, char **argv);

#endif
