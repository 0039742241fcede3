/*
 * calib.bpf.c - the floor: the least a compiled probe can do at a probe point. Used only by
 * `jvmos calibrate --engine bpf` (jvmos/enginecost.py), never by a recording.
 *
 * Each program is the filter every layer's programs begin with (jvmos_traced: the tgid in the
 * traced set, counting on) and one per-CPU count, keyed by the probe id in the attach cookie:
 *   min_uprobe     an entry uprobe (uprobe_multi link)
 *   min_uretprobe  a return uprobe
 *   min_tp         a tracepoint
 * Measured on probecal's function and on getpid(2), they give the cost per hit of a minimal
 * compiled counter at the same probe points the layers use, the floor the layers' own costs
 * are compared with (`jvmos run overhead`).
 */
#include "common.bpf.h"

static __always_inline int hit(void *ctx)
{
	__u32 tgid = jvmos_tgid();

	if (jvmos_traced(tgid))
		jvmos_count(tgid, JVMOS_WHAT_CALIB, JVMOS_COOKIE_PROBE(bpf_get_attach_cookie(ctx)), 1);
	return 0;
}

SEC("uprobe.multi")
int min_uprobe(struct pt_regs *ctx)
{
	return hit(ctx);
}

SEC("uretprobe.multi")
int min_uretprobe(struct pt_regs *ctx)
{
	return hit(ctx);
}

SEC("tracepoint")
int min_tp(void *ctx)
{
	return hit(ctx);
}
