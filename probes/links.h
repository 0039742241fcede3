/*
 * links.h - the links layer's ids (links.bpf.c; mirrored by jvmos/enginelayers/links.py).
 */
#ifndef JVMOS_LINKS_H
#define JVMOS_LINKS_H

#include "jvmos.h"

/* stats: category */
#define JVMOS_CAT_LINK			(JVMOS_BASE_LINKS + 1)	/* accept, accept4, connect */
#define JVMOS_CAT_FILE			(JVMOS_BASE_LINKS + 2)	/* open, openat, openat2, close */

/* stats: names (JVMOS_NAMED(id)): calls with an error return, @ncalls[pid, cat, "failed"] */
#define JVMOS_NAME_FAILED		(JVMOS_BASE_LINKS + 1)

/* missed (sub of JVMOS_WHAT_MISSED): an exit whose entry was not seen (the call was in
 * progress when counting began), and a span whose off-CPU time came out longer than the
 * span (a switch event missed) */
#define JVMOS_MISSED_LINK_NO_ENTRY		(JVMOS_BASE_LINKS + 1)
#define JVMOS_MISSED_FILE_NO_ENTRY		(JVMOS_BASE_LINKS + 2)
#define JVMOS_MISSED_LINK_OFFCPU_EXCEEDS_SPAN	(JVMOS_BASE_LINKS + 3)
#define JVMOS_MISSED_FILE_OFFCPU_EXCEEDS_SPAN	(JVMOS_BASE_LINKS + 4)

/* hits (sub of JVMOS_WHAT_HITS) */
#define JVMOS_HIT_LINKS_SCHED_SWITCH	(JVMOS_BASE_LINKS + 1)	/* a switch out of a traced thread */

#endif
