/*
 * The list of collectors compiled into mmlockd. Adding one: a file in plugins/, its struct here.
 */
#include "plugin.h"

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
