/*
 * Which cgroup a process's faults are counted in: the cgroup the kernel charges its memory to.
 * A unit (a systemd service, a container) is a cgroup, and what mmlockd counts per unit is memory
 * work (faults, mmap_lock), so the hierarchy that matters is the memory controller's:
 *
 *   - on a cgroup v2 host, and on a hybrid host whose memory controller is on the unified
 *     hierarchy, the unified ("0::") path;
 *   - on a v1 host, and on a hybrid host that mounts the v1 memory controller (this is what
 *     Debian with systemd.unified_cgroup_hierarchy=0, older container hosts and this project's
 *     development machine do), the v1 memory controller's path: there the unified path is "/"
 *     for every process (no controller is on it), so units taken from it all collapse into "/".
 *
 * /proc/PID/cgroup says which applies by itself: the memory controller appears on a v1 line
 * exactly when it is bound to a v1 hierarchy. One trap decides the rest: on a v1 hierarchy the
 * kernel shows an exiting task (PF_EXITING, including a zombie not reaped yet) in "/"
 * (kernel/cgroup/cgroup.c, proc_cgroup_show()), while on the unified one it keeps showing its
 * cgroup (with " (deleted)" once that cgroup is removed). Records reach mmlockd ~0.1 s after the
 * fact, so a short-lived process is often read in that state: its v1 path is then unknown, never
 * "/". The caller reads /proc/PID/cgroup before /proc/PID/stat and passes whether stat showed the
 * task exiting: PF_EXITING is never cleared, so a task not exiting after the read was not exiting
 * during it.
 *
 * Paths are as the reader's cgroup namespace shows them (the daemon runs in the root one).
 */
#ifndef MM_CGPATH_H
#define MM_CGPATH_H

#include <stdbool.h>
#include <stddef.h>

/* The accounting cgroup in @text, the contents of /proc/PID/cgroup (NUL-terminated), of a task
 * that was @exiting (PF_EXITING or a zombie) when @text was read, or may have been. Copies the
 * path into @ret (@size bytes, cut to fit, NUL-terminated) and returns 0; returns -ENODATA (and
 * sets @ret to "") when the text does not say: the task exiting on a v1 memory hierarchy, or no
 * memory line and no unified line (a v1 host without the memory controller). */
int mm_cgpath_parse(const char *text, bool exiting, char *ret, size_t size);

/* The hierarchy mm_cgpath_parse() takes its path from in @text (any process's /proc/PID/cgroup
 * on the host): the id of the v1 hierarchy that lists memory (the line's first field), else 0
 * (the unified hierarchy) when there is a "0::" line; -ENODATA when neither. A move reported by
 * the kernel (cgroup:cgroup_attach_task's dst_root) changes the accounting cgroup exactly when
 * it is into that hierarchy. */
int mm_cgpath_hierarchy(const char *text);

#endif
