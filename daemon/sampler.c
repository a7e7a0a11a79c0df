/*
 * Live sampling through libperf (see sampler.h).
 *
 * Each stream is a libperf evlist holding one evsel opened on every online CPU with pid -1
 * (system-wide). Events are sampled with period 1 (every hit), PERF_SAMPLE_TID|TIME|CPU|RAW
 * (+CALLCHAIN on request, kernel frames only), timestamps from CLOCK_MONOTONIC so rings of
 * different CPUs share one clock that the loop can also read (CLOCK_BOOTTIME would match /proc
 * start times, but perf refuses it for tracepoints: it is not NMI-safe). Rings wake the loop at a
 * quarter full (watermark) instead of per event, keeping wakeups rare at high event rates.
 */
#include "sampler.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <perf/core.h>
#include <perf/cpumap.h>
#include <perf/evlist.h>
#include <perf/event.h>
#include <perf/evsel.h>
#include <perf/mmap.h>
#include <perf/threadmap.h>
/* perf_evsel__apply_filter() is exported by libperf but declared only in its internal header. */
#include <internal/evsel.h>
#include <internal/mmap.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "order.h"
#include "sample.h"

struct stream {
	unsigned index;
	struct perf_evlist *evlist;
	struct perf_evsel *evsel; /* owned by evlist */
	uint64_t sample_type;
	bool held; /* kept off while sampling runs (mm_sampler_hold) */
};

struct mm_sampler {
	unsigned ring_pages;
	struct perf_cpu_map *cpus;
	struct perf_thread_map *threads;
	struct stream *streams;
	unsigned nstreams;
	bool running; /* between mm_sampler_enable() and mm_sampler_disable() */
};

static int libperf_print(enum libperf_print_level level, const char *fmt, va_list ap)
{
	if (level > LIBPERF_ERR)
		return 0;
	char line[512];
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	return mm_log(LOG_DEBUG, "libperf: %s", line);
}

/* perf_evlist__delete() frees the evlist and its evsels, but libperf (6.12) does not drop the
 * references to the CPU and thread maps that perf_evlist__set_maps() gave each evsel (perf's own
 * evsel__exit() does), so every stream leaked its maps (LeakSanitizer, in the ASan build's
 * integration suite). Drops them, then deletes. Accepts NULL. */
static void delete_evlist(struct perf_evlist *el)
{
	struct perf_evsel *ev;

	if (!el)
		return;
	perf_evlist__for_each_evsel (el, ev) {
		perf_cpu_map__put(ev->cpus);
		perf_cpu_map__put(ev->own_cpus);
		perf_thread_map__put(ev->threads);
		ev->cpus = ev->own_cpus = NULL;
		ev->threads = NULL;
	}
	perf_evlist__delete(el);
}

int mm_sampler_new(unsigned ring_pages, struct mm_sampler **ret)
{
	if (!ring_pages || (ring_pages & (ring_pages - 1)))
		return -EINVAL;
	libperf_init(libperf_print);
	struct mm_sampler *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->ring_pages = ring_pages;
	s->cpus = perf_cpu_map__new_online_cpus();
	s->threads = perf_thread_map__new_dummy(); /* pid -1: every task */
	if (!s->cpus || !s->threads) {
		mm_sampler_free(s);
		return -ENOMEM;
	}
	*ret = s;
	return 0;
}

void mm_sampler_free(struct mm_sampler *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < s->nstreams; i++) {
		struct perf_evlist *el = s->streams[i].evlist;
		perf_evlist__disable(el);
		perf_evlist__munmap(el);
		perf_evlist__close(el);
		delete_evlist(el);
	}
	free(s->streams);
	perf_cpu_map__put(s->cpus);
	perf_thread_map__put(s->threads);
	free(s);
}

static const char *open_error(int err)
{
	switch (-err) {
	case EACCES:
	case EPERM:
		return "permission denied (run as root, or lower kernel.perf_event_paranoid and "
		       "grant "
		       "CAP_PERFMON)";
	case ENOENT:
	case ENODEV:
	case EOPNOTSUPP:
		return "the kernel cannot sample this event";
	case EMFILE:
		return "too many open files (raise LimitNOFILE)";
	case ENOMEM:
		return "out of memory";
	default:
		return NULL;
	}
}

static int add(struct mm_sampler *s, unsigned stream, struct perf_event_attr *attr,
	       const char *filter, unsigned ring_pages, uint64_t *ret_sample_type, char *err,
	       size_t errlen)
{
	if (!ring_pages || ring_pages > s->ring_pages)
		ring_pages = s->ring_pages;
	struct stream *n = realloc(s->streams, (s->nstreams + 1) * sizeof(*n));
	if (!n) {
		mm_set_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->streams = n;

	attr->size = sizeof(*attr);
	attr->disabled = 1;
	attr->sample_id_all = 1;
	attr->use_clockid = 1;
	attr->clockid = CLOCK_MONOTONIC;
	attr->watermark = 1;
	attr->wakeup_watermark = (uint32_t)(ring_pages * (size_t)sysconf(_SC_PAGESIZE) / 4);

	struct perf_evlist *el = perf_evlist__new();
	struct perf_evsel *ev = el ? perf_evsel__new(attr) : NULL;
	if (!ev) {
		delete_evlist(el);
		mm_set_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	perf_evlist__add(el, ev);
	perf_evlist__set_maps(el, s->cpus, s->threads);
	int r = perf_evlist__open(el);
	if (r < 0) {
		const char *why = open_error(r);
		mm_set_err(err, errlen, "perf_event_open failed: %s", why ? why : strerror(-r));
		delete_evlist(el);
		return r;
	}
	if (filter && (r = perf_evsel__apply_filter(ev, filter)) < 0) {
		mm_set_err(err, errlen, "the kernel refused the filter \"%s\": %s", filter,
			   strerror(r == -1 ? errno : -r));
		perf_evlist__close(el);
		delete_evlist(el);
		return r == -1 ? -errno : r;
	}
	r = perf_evlist__mmap(el, (int)ring_pages);
	if (r < 0) {
		mm_set_err(err, errlen,
			   "mapping %u-page rings failed: %s (lower ring_pages or raise "
			   "kernel.perf_event_mlock_kb)",
			   ring_pages, strerror(-r));
		perf_evlist__close(el);
		delete_evlist(el);
		return r;
	}
	/* Touch every ring page now, before sampling starts: the ring's VMA has no ->map_pages,
	 * so on some kernels each first touch is a fault that falls back to mmap_lock, which
	 * mmlockd would otherwise count against itself while collecting (the kernel lab saw
	 * ~20k of them per run on 6.12). */
	struct perf_mmap *map;
	perf_evlist__for_each_mmap (el, map, false) {
		const volatile char *base = map->base;
		size_t len = perf_mmap__mmap_len(map), step = (size_t)sysconf(_SC_PAGESIZE);
		for (size_t off = 0; off < len; off += step)
			(void)base[off];
	}

	s->streams[s->nstreams++] = (struct stream){
		.index = stream, .evlist = el, .evsel = ev, .sample_type = attr->sample_type};
	*ret_sample_type = attr->sample_type;
	return 0;
}

int mm_sampler_add_tp(struct mm_sampler *s, unsigned stream, int tp_id, bool callchain,
		      const char *filter, unsigned ring_pages, uint64_t *ret_sample_type, char *err,
		      size_t errlen)
{
	struct perf_event_attr attr = {0};
	attr.type = PERF_TYPE_TRACEPOINT;
	attr.config = (uint64_t)tp_id;
	attr.sample_period = 1;
	/* IP: the code that fired the tracepoint, which names the caller where the kernel
	 * inlines the trace call (e.g. lock_mm_and_find_vma on recent kernels): a free
	 * alternative to a callchain. */
	attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			   PERF_SAMPLE_RAW;
	if (callchain) {
		attr.sample_type |= PERF_SAMPLE_CALLCHAIN;
		attr.exclude_callchain_user = 1;
		/* Collectors look at the innermost frames only (the lock's caller, the fault path);
		 * a shorter walk is most of the cost of a callchain. */
		attr.sample_max_stack = MM_CALLCHAIN_FRAMES;
	}
	return add(s, stream, &attr, filter, ring_pages, ret_sample_type, err, errlen);
}

int mm_sampler_add_task(struct mm_sampler *s, unsigned stream, uint64_t *ret_sample_type, char *err,
			size_t errlen)
{
	struct perf_event_attr attr = {0};
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.sample_period = 1;
	attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
	attr.comm = 1;
	attr.comm_exec = 1;
	attr.task = 1;
	return add(s, stream, &attr, NULL, 0, ret_sample_type, err, errlen);
}

void mm_sampler_enable(struct mm_sampler *s)
{
	s->running = true;
	for (unsigned i = 0; i < s->nstreams; i++)
		if (!s->streams[i].held)
			perf_evlist__enable(s->streams[i].evlist);
}

void mm_sampler_disable(struct mm_sampler *s)
{
	s->running = false;
	for (unsigned i = 0; i < s->nstreams; i++)
		perf_evlist__disable(s->streams[i].evlist);
}

void mm_sampler_hold(struct mm_sampler *s, unsigned stream, bool held)
{
	for (unsigned i = 0; i < s->nstreams; i++) {
		struct stream *st = &s->streams[i];
		if (st->index != stream || st->held == held)
			continue;
		st->held = held;
		if (!s->running)
			continue;
		if (held)
			perf_evlist__disable(st->evlist);
		else
			perf_evlist__enable(st->evlist);
	}
}

int mm_sampler_watch(struct mm_sampler *s, int epfd, uint64_t tag)
{
	for (unsigned i = 0; i < s->nstreams; i++) {
		struct perf_mmap *map;
		perf_evlist__for_each_mmap (s->streams[i].evlist, map, false) {
			struct epoll_event e = {.events = EPOLLIN, .data.u64 = tag};
			if (epoll_ctl(epfd, EPOLL_CTL_ADD, map->fd, &e) < 0)
				return -errno;
		}
	}
	return 0;
}

long mm_sampler_drain(struct mm_sampler *s, struct mm_order *order)
{
	long n = 0;
	for (unsigned i = 0; i < s->nstreams; i++) {
		struct stream *st = &s->streams[i];
		struct perf_mmap *map;
		perf_evlist__for_each_mmap (st->evlist, map, false) {
			if (perf_mmap__read_init(map) < 0)
				continue;
			union perf_event *ev;
			while ((ev = perf_mmap__read_event(map)) != NULL) {
				const struct perf_event_header *hdr = &ev->header;
				uint64_t t = mm_record_time(hdr, st->sample_type);
				if (mm_order_push(order, st->index, t, hdr) < 0) {
					perf_mmap__read_done(map);
					return -ENOMEM;
				}
				perf_mmap__consume(map);
				n++;
			}
			perf_mmap__read_done(map);
		}
	}
	return n;
}
