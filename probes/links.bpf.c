/*
 * links.bpf.c - the links layer of jvmos, compiled: what it costs a JVM to establish an I/O
 * link (paper section 4: C_link for a network connection, C_file for a file), kept by BPF
 * programs that the engine loads and attaches itself (probes/engine). The analyzers read the
 * figures as @calls/@time/@wall/@untimed[pid, category, probe], @ncalls[pid, category,
 * "failed"], @missed[pid, what] and @hits[pid, "links:sched_switch"] (links.h lists the ids).
 *
 * Run through `jvmos record --engine bpf --layers links`. Which syscall or function each
 * program is attached to comes from the engine's plan (jvmos/enginelayers/links.py); every
 * exit program carries a BPF cookie, the probe id its figures are keyed by (the engine's
 * ready line says which tracepoint or function an id is).
 *
 * What it measures:
 *   category link: accept, accept4 (server side) and connect (client side)
 *   category file: open, openat, openat2 and close (every descriptor: the kernel's close
 *                  does not say whether it closes a file or a socket)
 * Calls and time. A blocking accept (Tomcat's acceptor thread blocks in accept) or connect
 * waits for its peer, and waiting is not a cost of the link: the time is on-CPU time, the
 * span from entry to exit minus the intervals the thread spent switched out inside it
 * (sched_switch out to sched_switch in); the whole span is kept as wall_ns (@wall). A call
 * with an error return (EAGAIN on a non-blocking socket, ENOENT, EBADF) is counted apart as
 * @ncalls[pid, cat, "failed"] and never timed, so the link and file times are those of calls
 * that made a link or opened or closed a descriptor; connect's -EINPROGRESS (a non-blocking
 * connect under way) is a link, not a failure.
 *
 * Attach points, and why:
 *  - libc's functions that make these syscalls, as uprobe pairs (libc_enter + libc_*_ret),
 *    opened in the traced processes only: the default (--scope process), so that no syscall
 *    tracepoint is enabled and no other process on the host pays. They include glibc's
 *    internal __open_nocancel and __close_nocancel (fopen, fclose, opendir, NSS, sysconf).
 *    They do not see the dynamic loader's own open/close (dlopen), openat2 (no wrapper) or a
 *    raw syscall(2), and libc's -1 does not tell connect's EINPROGRESS from a failure (errno
 *    is not read): counted as failed. The manifest names these blind spots.
 *  - the syscall tracepoints syscalls:sys_enter_X / sys_exit_X (--scope host): they see every
 *    call the kernel serves, whatever made it, and the kernel's return value tells
 *    -EINPROGRESS from a failure. Every process on the host runs these programs (those not
 *    traced return at the first line, one hash lookup), and an enabled syscall tracepoint
 *    sends every syscall of the host through the slow path.
 *  - sched_switch (tp_btf: prev and next task_struct as arguments): counts every switch out
 *    of a traced thread (@hits "links:sched_switch", the probe effect), notes when a thread
 *    inside a link call is switched out, and adds the interval when it runs again.
 * One thread is inside at most one of these calls at a time (syscalls do not nest, and none
 * of the probed wrappers calls another), so one span per thread.
 *
 * Per-thread state is one struct in an LRU hash keyed by thread id (a thread that ends
 * mid-call leaves an entry that the LRU reclaims; the next entry on that thread resets it).
 * A full map loses a span, counted as JVMOS_LOST_THREAD_STATE. An exit whose entry was not
 * seen (the call was in progress when counting began) is counted, untimed, and in @missed.
 *
 * What breaks when the kernel or the JDK changes: the syscall tracepoints' layout (struct
 * trace_event_raw_sys_exit: ret after the syscall number), sched_switch's argument list
 * (checked against the running kernel's BTF at load: a change is a load error, not a wrong
 * figure), task_struct's pid (CO-RE). A JDK that made these calls another way (io_uring, a
 * raw syscall(2)) is still seen by the tracepoints, not by the libc route.
 */
#include "common.bpf.h"
#include "links.h"

#define EINPROGRESS 115

struct links_thread {
	__u64 start_ns;		/* clock at the entry of the call in progress, 0 when none */
	__u64 offcpu_ns;	/* time switched out since the entry */
	__u64 out_ns;		/* clock when it was switched out inside the call, 0 if running */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, JVMOS_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct links_thread);
} links_threads SEC(".maps");

static __always_inline int link_enter(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct links_thread *t;

	if (!jvmos_traced(jvmos_tgid()))	/* the filter first: the untraced pay only it */
		return 0;
	t = bpf_map_lookup_elem(&links_threads, &tid);
	if (!t) {
		struct links_thread zero = {};

		bpf_map_update_elem(&links_threads, &tid, &zero, BPF_NOEXIST);
		t = bpf_map_lookup_elem(&links_threads, &tid);
		if (!t) {
			jvmos_count(0, JVMOS_WHAT_LOST, JVMOS_LOST_THREAD_STATE, 1);
			return 0;
		}
	}
	t->offcpu_ns = 0;
	t->out_ns = 0;
	t->start_ns = bpf_ktime_get_ns();	/* the clock last: the probe's own work stays out */
	return 0;
}

/* the end of a call: ok says whether it made a link / opened or closed a descriptor */
static __always_inline int link_exit(__u64 now, __u16 cat, __u16 probe, int ok)
{
	__u32 tgid = jvmos_tgid();
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct links_thread *t;
	struct jvmos_stat_val *s;
	__u64 start = 0, off = 0, span;

	if (!jvmos_traced(tgid))
		return 0;
	t = bpf_map_lookup_elem(&links_threads, &tid);
	if (t) {
		start = t->start_ns;
		off = t->offcpu_ns;
		t->start_ns = 0;	/* the span is over: sched_switch stops timing it */
		t->out_ns = 0;
	}
	if (!start)
		jvmos_count(tgid, JVMOS_WHAT_MISSED, cat == JVMOS_CAT_LINK ?
			    JVMOS_MISSED_LINK_NO_ENTRY : JVMOS_MISSED_FILE_NO_ENTRY, 1);
	if (!ok) {
		/* failed calls are counted, never timed (see the top), with or without an entry */
		s = jvmos_stat(tgid, cat, JVMOS_NAMED(JVMOS_NAME_FAILED));
		if (s)
			__sync_fetch_and_add(&s->calls, 1);
		return 0;
	}
	s = jvmos_stat(tgid, cat, probe);
	if (!s)
		return 0;
	if (!start) {
		s->untimed++;	/* made now, so counted; its time is not known */
		return 0;
	}
	span = now - start;
	__sync_fetch_and_add(&s->calls, 1);
	__sync_fetch_and_add(&s->wall_ns, span);
	if (off > span) {
		/* a switch back in was missed: no on-CPU time for this call, and it is said */
		s->untimed++;
		s->calls--;
		jvmos_count(tgid, JVMOS_WHAT_MISSED, cat == JVMOS_CAT_LINK ?
			    JVMOS_MISSED_LINK_OFFCPU_EXCEEDS_SPAN :
			    JVMOS_MISSED_FILE_OFFCPU_EXCEEDS_SPAN, 1);
		return 0;
	}
	__sync_fetch_and_add(&s->time_ns, span - off);
	return 0;
}

/* ---- off-CPU intervals inside a call: waiting for a peer, not work ---- */
static __always_inline void links_switch(struct task_struct *next)
{
	/* the clock is read only where a span needs it: most switches into or out of a traced
	 * process are of no thread inside a call */
	__u64 now = 0;
	__u32 prev_tid = (__u32)bpf_get_current_pid_tgid();	/* prev is the current task */
	__u32 next_tid = next->pid;
	__u32 tgid = jvmos_tgid();
	struct links_thread *t;

	/* counting is on (jvmos_switch checked it): the traced set alone says whether the
	 * task switched out is traced, with this layer on in it */
	if (jvmos_layer_on(tgid)) {
		jvmos_count(tgid, JVMOS_WHAT_HITS, JVMOS_HIT_LINKS_SCHED_SWITCH, 1);
		t = bpf_map_lookup_elem(&links_threads, &prev_tid);
		if (t && t->start_ns)
			t->out_ns = now = bpf_ktime_get_ns();
	}
	/* the thread switched in: not filtered by tgid (one lookup either way) */
	t = bpf_map_lookup_elem(&links_threads, &next_tid);
	if (t && t->out_ns) {
		if (!now)
			now = bpf_ktime_get_ns();
		t->offcpu_ns += now - t->out_ns;
		t->out_ns = 0;
	}
}

/* in the scheduler chain (common.bpf.h), never attached itself */
SEC("tp_btf/sched_switch")
int BPF_PROG(chain_links_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	links_switch(next);
	jvmos_switch_next(ctx, switch_slot + 1);
	return 0;
}

/* ---- the syscall tracepoints (every process runs them; the untraced return at once) ---- */
SEC("tracepoint")
int sys_link_enter(struct trace_event_raw_sys_enter *ctx)
{
	return link_enter();
}

SEC("tracepoint")
int sys_link_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u64 now = bpf_ktime_get_ns();	/* the clock first */
	long ret = ctx->ret;

	return link_exit(now, JVMOS_CAT_LINK, JVMOS_COOKIE_PROBE(bpf_get_attach_cookie(ctx)),
			 ret >= 0 || ret == -EINPROGRESS);
}

SEC("tracepoint")
int sys_file_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u64 now = bpf_ktime_get_ns();

	return link_exit(now, JVMOS_CAT_FILE, JVMOS_COOKIE_PROBE(bpf_get_attach_cookie(ctx)),
			 ctx->ret >= 0);
}

/* ---- libc's wrappers, in the traced processes only (the libc route; see above). They
 * return int, -1 on an error with the cause in errno, which is not read here: a
 * non-blocking connect's EINPROGRESS counts as failed on this route ---- */
SEC("uprobe.multi")
int libc_enter(struct pt_regs *ctx)
{
	return link_enter();
}

SEC("uretprobe.multi")
int libc_link_ret(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();

	return link_exit(now, JVMOS_CAT_LINK, JVMOS_COOKIE_PROBE(bpf_get_attach_cookie(ctx)),
			 (__s32)PT_REGS_RC(ctx) >= 0);
}

SEC("uretprobe.multi")
int libc_file_ret(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();

	return link_exit(now, JVMOS_CAT_FILE, JVMOS_COOKIE_PROBE(bpf_get_attach_cookie(ctx)),
			 (__s32)PT_REGS_RC(ctx) >= 0);
}
