/*
 * jni.bpf.c - the JNI census layer of jvmos, compiled (paper Table 2): how often a JVM calls
 * into the JNI at all, per JNI function. One BPF program, which the engine attaches itself
 * (probes/engine), keeps the one figure, read by the analyzers as @calls[pid, "jni_call",
 * probe].
 *
 * Run through `jvmos record --engine bpf --layers jni`. The plan (jvmos/enginelayers/jni.py)
 * decides the attach points; each carries its probe id as the BPF cookie, the key of the sum:
 *  - an entry uprobe on every JNI entry point of libjvm.so: the CamelCase jni_* functions
 *    (jni_GetVersion, jni_FindClass, ..., about 240; lower-case jni_* are HotSpot helpers,
 *    not entry points). With uprobe_multi they are one link per library for the traced pid.
 *  - where the symbol is missing (a stripped libjvm.so), HotSpot's USDT probe of the same
 *    function instead, hotspot_jni:<Function>__entry: its site is a nop in the function's
 *    body that runs once per call, and the notes that find it survive `strip`. Counting
 *    needs none of its arguments. A function with neither (GetModule and IsVirtualThread have
 *    no USDT probe) is not counted on a stripped libjvm; the manifest lists what was
 *    attached, and how.
 *  - when the io layer is loaded too, the copy functions (Get/Set<T>ArrayRegion, ...) are
 *    left to io.bpf.c, which times them, so that no function carries two probes; the
 *    analyzer (analyzers/census.py) adds io's calls to the census.
 * The invocation API (JNI_CreateJavaVM, ...) is not part of the census.
 *
 * Cost: one entry uprobe per JNI call (filter, one per-CPU sum), no return probe, in both
 * modes; the census is counted, never timed.
 *
 * What breaks when the JDK changes: HotSpot's naming of its JNI functions (jni_<Function>,
 * stable since JDK 1.2) and of its USDT probes (provider hotspot_jni, <Function>__entry); a
 * JDK built without DTrace probes and stripped has neither, and its census is empty (the
 * plan names every entry point missing).
 */
#include "common.bpf.h"
#include "jni.h"

SEC("uprobe.multi")
int jni_entry(struct pt_regs *ctx)
{
	__u32 tgid = jvmos_tgid();
	struct jvmos_stat_val *s;

	if (!jvmos_traced(tgid))
		return 0;
	s = jvmos_stat(tgid, JVMOS_CAT_JNI_CALL, JVMOS_COOKIE_PROBE(bpf_get_attach_cookie(ctx)));
	if (s)
		__sync_fetch_and_add(&s->calls, 1);
	return 0;
}
