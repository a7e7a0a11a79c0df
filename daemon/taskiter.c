/*
 * The task iterator (see taskiter.h): a BPF iter/task program attached once; each read creates
 * an iterator fd from its link (BPF_ITER_CREATE: no capability needed, so it works after the
 * daemon dropped its privileges) and reads fixed-size records until the end.
 */
#include "taskiter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

#ifdef MM_HAVE_BPF
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>

#include "tasks.h"
#include "tasks.skel.h"

#define BATCH 1024 /* records per read() */

struct mm_taskiter {
	struct mm_tasks *skel;
	struct mm_bpf_task buf[BATCH];
};

static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return 0;
}

struct mm_taskiter *mm_taskiter_open(const struct mm_config *cfg)
{
	if (!strcmp(cfg->source, "perf"))
		return NULL;
	struct mm_taskiter *it = calloc(1, sizeof(*it));
	if (!it)
		return NULL;
	libbpf_print_fn_t was = libbpf_set_print(quiet);
	LIBBPF_OPTS(bpf_object_open_opts, opts, .btf_custom_path = cfg->btf[0] ? cfg->btf : NULL);
	int r = 0;
	it->skel = mm_tasks__open_opts(&opts);
	if (!it->skel)
		r = -errno;
	else if ((r = mm_tasks__load(it->skel)) == 0)
		r = mm_tasks__attach(it->skel);
	libbpf_set_print(was);
	if (r < 0) {
		log_debug("task iterator: not loaded (%s): collectors read every /proc/PID/stat",
			  strerror(-r));
		mm_taskiter_free(it);
		return NULL;
	}
	return it;
}

int mm_taskiter_read(void *ctx_it, mm_task_fn fn, void *ctx)
{
	struct mm_taskiter *it = ctx_it;
	int fd = bpf_iter_create(bpf_link__fd(it->skel->links.dump_tasks));
	if (fd < 0)
		return -errno;
	size_t have = 0; /* bytes of a record split across reads */
	int r = 0;
	for (;;) {
		ssize_t n = read(fd, (char *)it->buf + have, sizeof(it->buf) - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		if (n == 0)
			break;
		have += (size_t)n;
		size_t whole = have / sizeof(it->buf[0]);
		for (size_t i = 0; i < whole; i++) {
			const struct mm_bpf_task *b = &it->buf[i];
			struct mm_task_run t = {
				.tgid = b->tgid,
				.runtime_ns = b->runtime_ns + b->sig_runtime_ns,
				.start_boottime_ns = b->start_boottime_ns,
				.on_cpu = b->flags & MM_TASK_ON_CPU,
				.leader = b->flags & MM_TASK_LEADER,
				.kthread = b->flags & MM_TASK_KTHREAD,
			};
			fn(ctx, &t);
		}
		have -= whole * sizeof(it->buf[0]);
		memmove(it->buf, (char *)it->buf + whole * sizeof(it->buf[0]), have);
	}
	close(fd);
	return r;
}

void mm_taskiter_free(struct mm_taskiter *it)
{
	if (!it)
		return;
	mm_tasks__destroy(it->skel);
	free(it);
}

#else /* !MM_HAVE_BPF */

struct mm_taskiter *mm_taskiter_open(const struct mm_config *cfg)
{
	return NULL;
}

int mm_taskiter_read(void *it, mm_task_fn fn, void *ctx)
{
	return -ENOTSUP;
}

void mm_taskiter_free(struct mm_taskiter *it)
{
}

#endif
