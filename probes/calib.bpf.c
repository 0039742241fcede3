/*
 * calib.bpf.c - the floor: the least a compiled probe can do at a probe point. Used only by
 * `jvmos calibrate --engine bpf` (jvmos/enginecost.py), never by a recording.
 *
 * Each program is the filter every layer's programs begin with (jvmos_traced: the tgid in the
 * traced set, counting on) and one per-CPU count, keyed by the probe id in the attach cookie:
 *   min_uprobe     an entry uprobe (uprobe_multi link)
 *   min_uretprobe  a return uprobe
 *   min_tp         a tracepoint
 *   min_time_entry, min_time_ret   the least a timed span needs: the clock at the entry,
 *                  the difference summed at the return (the floor of --mode time)
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

/* the minimal timing pair: the clock at the entry, the span summed at the return (a per-thread
 * hash, as every timed span of the layers) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u64);
} calib_t0 SEC(".maps");

SEC("uprobe.multi")
int min_time_entry(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 now;

	if (!jvmos_traced(jvmos_tgid()))
		return 0;
	now = bpf_ktime_get_ns();
	bpf_map_update_elem(&calib_t0, &tid, &now, BPF_ANY);
	return 0;
}

SEC("uretprobe.multi")
int min_time_ret(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u32 tgid = jvmos_tgid();
	__u64 *t0;

	if (!jvmos_traced(tgid))
		return 0;
	t0 = bpf_map_lookup_elem(&calib_t0, &tid);
	if (!t0)
		return 0;
	jvmos_count(tgid, JVMOS_WHAT_CALIB, JVMOS_COOKIE_PROBE(bpf_get_attach_cookie(ctx)),
		    now - *t0);
	bpf_map_delete_elem(&calib_t0, &tid);
	return 0;
}
