/*
 * mem.h - the mem layer's ids (mem.bpf.c; mirrored by jvmos/enginelayers/mem.py).
 */
#ifndef JVMOS_MEM_H
#define JVMOS_MEM_H

#include "jvmos.h"

/* stats: category. malloc_untimed and vm_timed count calls only, keyed by the probe of the
 * malloc / vm figure they qualify, read as @calls[pid, "malloc_untimed" | "vm_timed", probe]:
 * the outermost allocator calls whose span went untimed (a switch missed), and the memory
 * calls timed on their own (outside allocator calls). The analyzers subtract one probe
 * window per timed call, so they need to know how many calls were timed. */
#define JVMOS_CAT_MALLOC		(JVMOS_BASE_MEM + 1)
#define JVMOS_CAT_MALLOC_UNTIMED	(JVMOS_BASE_MEM + 2)
#define JVMOS_CAT_VM			(JVMOS_BASE_MEM + 3)
#define JVMOS_CAT_VM_TIMED		(JVMOS_BASE_MEM + 4)
/* zlib stream creations: calls only, read as @calls[pid, "zlib", probe] (one probe per
 * inflateInit2_, inflateInit_, deflateInit2_, deflateInit_ of each zlib library) */
#define JVMOS_CAT_ZLIB			(JVMOS_BASE_MEM + 5)

/* stats: names (JVMOS_NAMED(id)): @ncalls[pid, "vm", "page_fault_user"] and
 * @ntime[pid, "malloc" | "vm", "off-CPU"] */
#define JVMOS_NAME_PAGE_FAULT_USER	(JVMOS_BASE_MEM + 1)
#define JVMOS_NAME_OFF_CPU		(JVMOS_BASE_MEM + 2)

/* counts: what (sub 0, x: the quarter-second since the start of counting) */
#define JVMOS_WHAT_GROW_VM		(JVMOS_BASE_MEM + 1)
#define JVMOS_WHAT_GROW_MALLOC		(JVMOS_BASE_MEM + 2)
/* counts: user page faults by the 2 MiB region of their address (sub 0, x: address >> 21),
 * read as @fault_region[pid, region] */
#define JVMOS_WHAT_FAULT_REGION		(JVMOS_BASE_MEM + 3)
#define JVMOS_FAULT_REGION_SHIFT	21

/* missed (sub of JVMOS_WHAT_MISSED) */
#define JVMOS_MISSED_MALLOC_OFFCPU_EXCEEDS_SPAN	(JVMOS_BASE_MEM + 1)
#define JVMOS_MISSED_MALLOC_NO_ENTRY		(JVMOS_BASE_MEM + 2)
#define JVMOS_MISSED_VM_OFFCPU_EXCEEDS_SPAN	(JVMOS_BASE_MEM + 3)

/* hits (sub of JVMOS_WHAT_HITS) */
#define JVMOS_HIT_MEM_SCHED_SWITCH	(JVMOS_BASE_MEM + 1)

/* an allocator probe's cookie value (JVMOS_COOKIE_VALUE): where its requested size is */
#define JVMOS_MEM_SIZE_ARG0		0	/* malloc(size) */
#define JVMOS_MEM_SIZE_ARG1		1	/* realloc(ptr, size), aligned_alloc/memalign(al, size) */
#define JVMOS_MEM_SIZE_ARG2		2	/* posix_memalign(&ptr, align, size) */
#define JVMOS_MEM_SIZE_PRODUCT		3	/* calloc(n, size): n x size */

#endif
