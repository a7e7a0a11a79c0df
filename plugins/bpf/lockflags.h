/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * lockflags.h: the flags of lock:contention_begin (include/trace/events/lock.h), once, for the
 * BPF programs (counters.bpf.c) and the collectors (plugins/plugin.h). Plain macros: no types,
 * so it compiles on both sides.
 */
#ifndef MMLOCKD_LOCKFLAGS_H
#define MMLOCKD_LOCKFLAGS_H

#define LCB_F_SPIN   (1U << 0)
#define LCB_F_READ   (1U << 1)
#define LCB_F_WRITE  (1U << 2)
#define LCB_F_RT     (1U << 3)
#define LCB_F_PERCPU (1U << 4)
#define LCB_F_MUTEX  (1U << 5)

#endif
