/*
 * The list of collectors compiled into mmlockd. Adding one: a file in plugins/, its struct here.
 * And what the table of collectors tells about their counters (mm_plugin_silent_fields).
 */
#include "plugin.h"

#include <string.h>

extern const struct mm_plugin mm_plugin_mmaplock;
extern const struct mm_plugin mm_plugin_faults;
extern const struct mm_plugin mm_plugin_vmstat;
extern const struct mm_plugin mm_plugin_contention;
extern const struct mm_plugin mm_plugin_totals;
extern const struct mm_plugin mm_plugin_fallbacks;
extern const struct mm_plugin mm_plugin_cgroups;

const struct mm_plugin *const mm_plugins[] = {
	&mm_plugin_totals,   &mm_plugin_fallbacks, &mm_plugin_vmstat,	  &mm_plugin_cgroups,
	&mm_plugin_mmaplock, &mm_plugin_faults,	   &mm_plugin_contention, NULL,
};

void mm_plugin_silent_fields(const struct mm_plugin *p, uint64_t *silent)
{
	memset(silent, 0, MM_PROC_FIELDS_MAX / 8);
	if (!p->bpf || !p->bpf->fields)
		return;
	for (size_t i = 0; i < mm_proc_nfields; i++) {
		const struct mm_field *f = &mm_proc_fields[i];
		bool counted = false;
		if (strcmp(f->collector, p->name) != 0)
			continue;
		/* The split's own fields (split_*) are filled in user space at each window by the
		 * duty cycle's estimate (plugins/split.c), on either source. */
		if (!strncmp(f->name, "split_", 6))
			continue;
		/* A field's offset is in struct mm_proc_counts, the first member of
		 * struct mm_proc_stats, where the in-kernel fields land. */
		for (const struct mm_bpf_field *b = p->bpf->fields; b->n && !counted; b++)
			counted = f->offset >= b->field && f->offset < b->field + b->n * 8;
		if (!counted)
			silent[i / 64] |= 1ull << (i % 64);
	}
}
