/*
 * mem.bpf.c - the memory layer of jvmos, compiled: what the native allocator and the kernel's
 * memory services cost a JVM (paper section 3.3, Table 6), kept by BPF programs that the
 * engine (probes/engine) loads and attaches. The analyzers read the figures as
 * @calls/@bytes/@time[pid, category, probe] (category malloc, vm or zlib),
 * @ncalls[pid, "vm", "page_fault_user"], @ntime[pid, "malloc" | "vm", "off-CPU"],
 * @grow_vm/@grow_malloc[pid, quarter-second], @fault_region[pid, 2 MiB region],
 * @missed[pid, what] and @hits[pid, "mem:sched_switch"] (mem.h lists the ids).
 *
 * Run through `jvmos record --engine bpf --layers mem`. Which function each program is
 * attached to comes from the plan (jvmos/enginelayers/mem.py); each uprobe carries its probe
 * id as BPF cookie, and an allocator's cookie also says which argument is the size it asks
 * for (JVMOS_MEM_SIZE_*), so one entry program serves every allocator.
 *
 * What it measures, and why these attach points:
 *  - category malloc (the libc column of Table 6): uprobe + uretprobe on libc's malloc,
 *    calloc, realloc, posix_memalign, aligned_alloc and memalign, the functions HotSpot's
 *    os::malloc and the JDK's native code call. Bytes are the size asked for (calloc:
 *    n x size). Two names at one address (aligned_alloc and memalign in glibc) are probed
 *    once, as the first.
 *  - free is not probed: its first instruction is its free(NULL) test, which the kernel
 *    single-steps for a uprobe at the function's entry (8-32 us per hit measured, 1000 times
 *    free's own cost). jvmos estimates it instead: every block allocated during the run is
 *    taken as freed once, each free at the cost `jvmos calibrate` measured.
 *  - category vm (the kernel column): brk, mmap, munmap, mprotect, madvise. With --scope
 *    process on libc's wrappers mmap, munmap, mprotect, madvise and sbrk, as uprobe pairs in
 *    the traced processes only (an enabled syscall tracepoint slows every syscall on the
 *    host). The break moves through sbrk (malloc's way), whose increment is its bytes and
 *    whose return value is the old break or -1; brk itself is not probed there, because sbrk
 *    calls it and both would count, so a direct brk(2) is not seen at that scope. With
 *    --scope host on the syscall tracepoints (bytes: the length argument; brk: how far the
 *    break moved, from the previous break the process got). User page faults
 *    (exceptions:page_fault_user, a raw BTF tracepoint): calls only, under the name
 *    page_fault_user (a fault has no exit event: jvmos costs it with a calibrated per-fault
 *    time and marks it estimated). Each fault is also counted by the 2 MiB region of its
 *    address (address >> 21), so that the faults in the Java heap, whose range jvmos reads
 *    from the JVM after counting stops, can be told apart from the others (a JVM touches a
 *    few hundred to a few thousand regions, one counts entry each).
 *  - category zlib: the native zlib streams created, counted (no time, no return probe)
 *    by a uprobe on zlib's inflateInit2_, inflateInit_, deflateInit2_ and deflateInit_
 *    (java.util.zip.Inflater and Deflater each create one; its state and window are
 *    malloc'ed there, and freed by end()). The library is the process's libz.so.1, or the
 *    JDK's libzip.so when it carries zlib inside (Temurin: local symbols); which is the
 *    plan's (jvmos/jdk.py libz_of). zlib's inflateInit_ and deflateInit_ are wrappers that
 *    call the *Init2_ function, so a stream made through them is seen at both.
 *  - Time is on-CPU time: sched_switch (tp_btf) notes when a thread inside a timed allocator
 *    call or memory call is switched out (preempted, or blocked on the mmap lock behind
 *    another thread's page fault) and adds the interval until it runs again to its off-CPU
 *    time, which is left out of the call's time and reported as the "off-CPU" name of the
 *    malloc or vm category. A span whose off-CPU time exceeds it (a switch missed) is not
 *    timed: counted as missed, and its call as malloc_untimed.
 *  - Nesting (paper section 5.1): one per-thread depth of allocator calls; only the outermost
 *    is timed. A memory call made inside an allocator call (malloc growing its arena) counts
 *    its calls and bytes but not its time, which the allocator call already holds; so an
 *    allocator span and a timed memory call never overlap and share one off-CPU counter.
 *    Entry programs read the clock last, return programs first.
 *  - Other layers: each allocator entry adds 1 to alloc_totals[tid].hits and each outermost
 *    allocator call its on-CPU time to alloc_totals[tid].ns (common.bpf.h), which threads
 *    reads to leave allocator calls out of its spans; a freed thread's totals are forgotten
 *    (sched_process_free).
 *  - Heap growth: grow_vm / grow_malloc per quarter-second since the start of counting, to
 *    show whether memory is obtained once during ramp-up (the paper's C_mem assumption) or
 *    all along. grow_vm is what the kernel gave: a page (4096) per user page fault and the
 *    break's growth; mmap lengths are left out, being address space, most of it reserved and
 *    never touched. grow_malloc is the bytes asked of the allocator.
 *  - --mode count: allocator calls are counted, not timed (no return probe); at --scope
 *    process the memory calls too (sbrk keeps its return: its bytes are known there). At
 *    --scope host the syscall tracepoints time the memory syscalls in --mode count too, as
 *    the retired bpftrace script did, so that old and new recordings compare.
 *
 * Per-thread state is one struct in an LRU hash keyed by thread id, forgotten when the thread
 * is freed; a full map loses a span, counted as JVMOS_LOST_THREAD_STATE.
 *
 * What breaks when the JDK or kernel changes: glibc's allocator names and their argument
 * order (stable C API), malloc reaching the break through sbrk and mappings through mmap
 * (a libc that calls brk or mmap by inline syscall hides them at --scope process); the
 * syscall tracepoints' layout (struct trace_event_raw_sys_enter/exit: the length is the
 * second argument of mmap, munmap, mprotect and madvise; brk returns the new break); the raw
 * tracepoints sched_switch(preempt, prev, next, prev_state), sched_process_exec,
 * sched_process_free(p) and page_fault_user(address, regs, error_code), checked against
 * the running kernel's BTF at load (a change is a load error, never a wrong figure).
 */
#include "common.bpf.h"
#include "mem.h"

#define MEM_BUCKET_NS	250000000ULL	/* the growth timeline's step: a quarter second */
#define MEM_PAGE	4096		/* what a user page fault gives: one base page */

const volatile __u32 timing = 1;	/* 0 in --mode count: allocator and libc memory calls
					 * are counted, not timed */

struct mem_thread {
	__u32 depth;		/* allocator calls the thread is inside */
	__u32 pad;
	__u64 alloc_start_ns;	/* clock at the entry of the outermost allocator call */
	__u64 vm_start_ns;	/* clock at the entry of a memory call timed on its own; 0: none */
	__u64 offcpu_ns;	/* switched out inside the timed allocator call or memory call */
	__u64 switch_out_ns;	/* when it was last switched out there, until it runs; 0: not */
	__s64 sbrk_increment;	/* the increment of the sbrk call in progress */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, JVMOS_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct mem_thread);
} mem_threads SEC(".maps");

/* the break after a traced process's last brk(2) (--scope host): the next one's growth */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, JVMOS_MAX_PROCS);
	__type(key, __u32);
	__type(value, __u64);
} mem_last_break SEC(".maps");

static __always_inline __u32 current_tid(void)
{
	return (__u32)bpf_get_current_pid_tgid();
}

static __always_inline struct mem_thread *thread_state(void)
{
	__u32 tid = current_tid();
	struct mem_thread *t = bpf_map_lookup_elem(&mem_threads, &tid);

	if (t)
		return t;
	struct mem_thread zero = {};
	bpf_map_update_elem(&mem_threads, &tid, &zero, BPF_NOEXIST);
	t = bpf_map_lookup_elem(&mem_threads, &tid);
	if (!t)
		jvmos_count(0, JVMOS_WHAT_LOST, JVMOS_LOST_THREAD_STATE, 1);
	return t;
}

/* the quarter-second since counting started (the growth timeline's key) */
static __always_inline __u32 bucket(void)
{
	__u32 zero = 0;
	struct jvmos_control *c = bpf_map_lookup_elem(&control, &zero);
	__u64 now = bpf_ktime_get_ns();

	if (!c || now < c->start_ns)
		return 0;
	return (now - c->start_ns) / MEM_BUCKET_NS;
}

/* ---- the allocator ---- */

SEC("uprobe.multi")
int alloc_entry(struct pt_regs *ctx)
{
	__u32 tgid = jvmos_tgid();
	__u32 tid = current_tid();
	struct jvmos_alloc_totals *tot;
	struct jvmos_stat_val *s;
	struct mem_thread *t;
	__u64 cookie, size;

	if (!jvmos_traced(tgid))
		return 0;
	cookie = bpf_get_attach_cookie(ctx);
	switch (JVMOS_COOKIE_VALUE(cookie)) {
	case JVMOS_MEM_SIZE_ARG1:
		size = PT_REGS_PARM2(ctx);
		break;
	case JVMOS_MEM_SIZE_ARG2:
		size = PT_REGS_PARM3(ctx);
		break;
	case JVMOS_MEM_SIZE_PRODUCT:
		size = PT_REGS_PARM1(ctx) * PT_REGS_PARM2(ctx);
		break;
	default:
		size = PT_REGS_PARM1(ctx);
	}
	s = jvmos_stat(tgid, JVMOS_CAT_MALLOC, JVMOS_COOKIE_PROBE(cookie));
	if (s) {
		__sync_fetch_and_add(&s->calls, 1);
		__sync_fetch_and_add(&s->bytes, size);
	}
	jvmos_count_x(tgid, JVMOS_WHAT_GROW_MALLOC, 0, bucket(), size);
	tot = bpf_map_lookup_elem(&alloc_totals, &tid);
	if (tot) {
		tot->hits++;
	} else {
		struct jvmos_alloc_totals first = { .hits = 1 };

		if (bpf_map_update_elem(&alloc_totals, &tid, &first, BPF_NOEXIST))
			jvmos_count(0, JVMOS_WHAT_LOST, JVMOS_LOST_THREAD_STATE, 1);
	}
	if (!timing)
		return 0;
	t = thread_state();
	if (!t)
		return 0;
	t->depth++;
	if (t->depth == 1) {
		t->offcpu_ns = 0;
		t->alloc_start_ns = bpf_ktime_get_ns();	/* the clock is read last */
	}
	return 0;
}

/* the return of every allocator (--mode time only) */
SEC("uretprobe.multi")
int alloc_ret(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();	/* first: what follows is not the call's time */
	__u32 tgid = jvmos_tgid();
	__u32 tid = current_tid();
	struct jvmos_alloc_totals *tot;
	struct jvmos_stat_val *s;
	struct mem_thread *t;
	__u16 probe;
	__u64 span, d;

	if (!jvmos_traced(tgid))
		return 0;
	t = bpf_map_lookup_elem(&mem_threads, &tid);
	if (!t || t->depth == 0) {
		jvmos_count(tgid, JVMOS_WHAT_MISSED, JVMOS_MISSED_MALLOC_NO_ENTRY, 1);
		return 0;
	}
	t->depth--;
	if (t->depth)
		return 0;
	probe = JVMOS_COOKIE_PROBE(bpf_get_attach_cookie(ctx));
	span = now - t->alloc_start_ns;
	if (t->offcpu_ns <= span) {
		d = span - t->offcpu_ns;
		if (t->offcpu_ns) {
			s = jvmos_stat(tgid, JVMOS_CAT_MALLOC, JVMOS_NAMED(JVMOS_NAME_OFF_CPU));
			if (s)
				__sync_fetch_and_add(&s->time_ns, t->offcpu_ns);
		}
		s = jvmos_stat(tgid, JVMOS_CAT_MALLOC, probe);
		if (s)
			__sync_fetch_and_add(&s->time_ns, d);
		/* for the layers whose spans contain this call (threads) */
		tot = bpf_map_lookup_elem(&alloc_totals, &tid);
		if (tot)
			tot->ns += d;
	} else {
		/* a switch event was missed: no time rather than a wrong one */
		jvmos_count(tgid, JVMOS_WHAT_MISSED, JVMOS_MISSED_MALLOC_OFFCPU_EXCEEDS_SPAN, 1);
		s = jvmos_stat(tgid, JVMOS_CAT_MALLOC_UNTIMED, probe);
		if (s)
			__sync_fetch_and_add(&s->calls, 1);
	}
	t->offcpu_ns = 0;
	t->alloc_start_ns = 0;
	return 0;
}

/* ---- zlib streams: counted only ---- */

SEC("uprobe.multi")
int zlib_init(struct pt_regs *ctx)
{
	__u32 tgid = jvmos_tgid();
	struct jvmos_stat_val *s;

	if (!jvmos_traced(tgid))
		return 0;
	s = jvmos_stat(tgid, JVMOS_CAT_ZLIB, JVMOS_COOKIE_PROBE(bpf_get_attach_cookie(ctx)));
	if (s)
		__sync_fetch_and_add(&s->calls, 1);
	return 0;
}

/* ---- memory calls: the bookkeeping shared by libc's wrappers and the syscall tracepoints ---- */

/* a memory call enters: counted, and timed on its own when outside every allocator call */
static __always_inline void vm_enter(__u32 tgid, __u16 probe, __u64 bytes, int timed)
{
	struct jvmos_stat_val *s = jvmos_stat(tgid, JVMOS_CAT_VM, probe);
	struct mem_thread *t;

	if (s) {
		__sync_fetch_and_add(&s->calls, 1);
		__sync_fetch_and_add(&s->bytes, bytes);
	}
	if (!timed)
		return;
	t = thread_state();
	if (!t || t->depth)
		return;
	t->offcpu_ns = 0;
	t->vm_start_ns = bpf_ktime_get_ns();	/* the clock is read last */
}

/* a memory call returns: its on-CPU time when it was timed on its own */
static __always_inline void vm_exit(__u64 now, __u32 tgid, __u16 probe, struct mem_thread *t)
{
	struct jvmos_stat_val *s;
	__u64 span;

	if (!t || !t->vm_start_ns)
		return;
	span = now - t->vm_start_ns;
	if (t->offcpu_ns <= span) {
		s = jvmos_stat(tgid, JVMOS_CAT_VM, probe);
		if (s)
			__sync_fetch_and_add(&s->time_ns, span - t->offcpu_ns);
		if (t->offcpu_ns) {
			s = jvmos_stat(tgid, JVMOS_CAT_VM, JVMOS_NAMED(JVMOS_NAME_OFF_CPU));
			if (s)
				__sync_fetch_and_add(&s->time_ns, t->offcpu_ns);
		}
		s = jvmos_stat(tgid, JVMOS_CAT_VM_TIMED, probe);
		if (s)
			__sync_fetch_and_add(&s->calls, 1);
	} else {
		jvmos_count(tgid, JVMOS_WHAT_MISSED, JVMOS_MISSED_VM_OFFCPU_EXCEEDS_SPAN, 1);
	}
	t->vm_start_ns = 0;
	t->offcpu_ns = 0;
}

/* --scope process: libc's mmap, munmap, mprotect, madvise (the length is arg1) */
SEC("uprobe.multi")
int libc_vm(struct pt_regs *ctx)
{
	__u32 tgid = jvmos_tgid();

	if (jvmos_traced(tgid))
		vm_enter(tgid, JVMOS_COOKIE_PROBE(bpf_get_attach_cookie(ctx)), PT_REGS_PARM2(ctx),
			 timing);
	return 0;
}

/* sbrk(increment): its bytes are known at the return (-1: it failed) */
SEC("uprobe.multi")
int libc_sbrk(struct pt_regs *ctx)
{
	__u32 tgid = jvmos_tgid();
	struct mem_thread *t;

	if (!jvmos_traced(tgid))
		return 0;
	t = thread_state();
	if (t)
		t->sbrk_increment = (__s64)PT_REGS_PARM1(ctx);
	vm_enter(tgid, JVMOS_COOKIE_PROBE(bpf_get_attach_cookie(ctx)), 0, timing);
	return 0;
}

/* the return of mmap, munmap, mprotect, madvise (--mode time only) */
SEC("uretprobe.multi")
int libc_vm_ret(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();	/* first: the bookkeeping is not the call's time */
	__u32 tgid = jvmos_tgid();
	__u32 tid = current_tid();

	if (!jvmos_traced(tgid))
		return 0;
	vm_exit(now, tgid, JVMOS_COOKIE_PROBE(bpf_get_attach_cookie(ctx)),
		bpf_map_lookup_elem(&mem_threads, &tid));
	return 0;
}

/* the return of sbrk, kept in --mode count (its bytes) */
SEC("uretprobe.multi")
int libc_sbrk_ret(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 tgid = jvmos_tgid();
	__u32 tid = current_tid();
	__u16 probe = JVMOS_COOKIE_PROBE(bpf_get_attach_cookie(ctx));
	struct jvmos_stat_val *s;
	struct mem_thread *t;
	__s64 inc;

	if (!jvmos_traced(tgid))
		return 0;
	t = bpf_map_lookup_elem(&mem_threads, &tid);
	if (!t)
		return 0;
	inc = t->sbrk_increment;
	t->sbrk_increment = 0;
	if ((__s64)PT_REGS_RC(ctx) != -1 && inc > 0) {
		s = jvmos_stat(tgid, JVMOS_CAT_VM, probe);
		if (s)
			__sync_fetch_and_add(&s->bytes, inc);
		jvmos_count_x(tgid, JVMOS_WHAT_GROW_VM, 0, bucket(), inc);
	}
	vm_exit(now, tgid, probe, t);
	return 0;
}

/* --scope host: the syscall tracepoints (every process runs them; the untraced return at
 * the first line). Always timed, in --mode count too (see the top). */
SEC("tracepoint")
int sys_vm_enter(struct trace_event_raw_sys_enter *ctx)
{
	__u32 tgid = jvmos_tgid();

	if (jvmos_traced(tgid))
		vm_enter(tgid, JVMOS_COOKIE_PROBE(bpf_get_attach_cookie(ctx)), ctx->args[1], 1);
	return 0;
}

SEC("tracepoint")
int sys_brk_enter(struct trace_event_raw_sys_enter *ctx)
{
	__u32 tgid = jvmos_tgid();

	if (jvmos_traced(tgid))
		vm_enter(tgid, JVMOS_COOKIE_PROBE(bpf_get_attach_cookie(ctx)), 0, 1);
	return 0;
}

SEC("tracepoint")
int sys_vm_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 tgid = jvmos_tgid();
	__u32 tid = current_tid();

	if (!jvmos_traced(tgid))
		return 0;
	vm_exit(now, tgid, JVMOS_COOKIE_PROBE(bpf_get_attach_cookie(ctx)),
		bpf_map_lookup_elem(&mem_threads, &tid));
	return 0;
}

/* brk returns the new break: brk(0) asks for it, a later brk moved it by the difference */
SEC("tracepoint")
int sys_brk_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 tgid = jvmos_tgid();
	__u32 tid = current_tid();
	__u16 probe = JVMOS_COOKIE_PROBE(bpf_get_attach_cookie(ctx));
	__u64 brk = (__u64)ctx->ret;
	struct jvmos_stat_val *s;
	__u64 *last;

	if (!jvmos_traced(tgid))
		return 0;
	last = bpf_map_lookup_elem(&mem_last_break, &tgid);
	if (last) {
		if (*last && brk > *last) {
			s = jvmos_stat(tgid, JVMOS_CAT_VM, probe);
			if (s)
				__sync_fetch_and_add(&s->bytes, brk - *last);
			jvmos_count_x(tgid, JVMOS_WHAT_GROW_VM, 0, bucket(), brk - *last);
		}
		*last = brk;
	} else {
		bpf_map_update_elem(&mem_last_break, &tgid, &brk, BPF_ANY);
	}
	vm_exit(now, tgid, probe, bpf_map_lookup_elem(&mem_threads, &tid));
	return 0;
}

/* ---- the scheduler, the page faults, the ends of programs and threads ---- */

/* preempted or blocked inside an allocator call or a memory call timed on its own: not their
 * work. Every switch out of a traced thread is a hit (the probe effect); the thread switched
 * in is looked up whatever its process: only a traced thread has state here, so for any
 * other the lookup finds nothing. */
static __always_inline void mem_sched_switch(struct task_struct *prev, struct task_struct *next)
{
	__u32 tgid = jvmos_tgid();
	__u32 next_tid = next->pid;
	__u32 prev_tid;
	struct mem_thread *t;
	__u64 now = 0;

	/* counting is on (jvmos_switch checked it): the traced set alone says whether the
	 * task switched out is traced, with this layer on in it */
	if (jvmos_layer_on(tgid)) {
		jvmos_count(tgid, JVMOS_WHAT_HITS, JVMOS_HIT_MEM_SCHED_SWITCH, 1);
		prev_tid = prev->pid;
		t = bpf_map_lookup_elem(&mem_threads, &prev_tid);
		if (t && (t->depth || t->vm_start_ns)) {
			now = bpf_ktime_get_ns();
			t->switch_out_ns = now;
		}
	}
	t = bpf_map_lookup_elem(&mem_threads, &next_tid);
	if (t && t->switch_out_ns) {
		if (!now)
			now = bpf_ktime_get_ns();
		t->offcpu_ns += now - t->switch_out_ns;
		t->switch_out_ns = 0;
	}
}

/* in the scheduler chain (common.bpf.h), never attached itself */
SEC("tp_btf/sched_switch")
int BPF_PROG(chain_mem_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	mem_sched_switch(prev, next);
	jvmos_switch_next(ctx, switch_slot + 1);
	return 0;
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(mem_page_fault_user, unsigned long address, struct pt_regs *regs,
	     unsigned long error_code)
{
	__u32 tgid = jvmos_tgid();
	struct jvmos_stat_val *s;

	if (!jvmos_traced(tgid))
		return 0;
	s = jvmos_stat(tgid, JVMOS_CAT_VM, JVMOS_NAMED(JVMOS_NAME_PAGE_FAULT_USER));
	if (s)
		__sync_fetch_and_add(&s->calls, 1);
	jvmos_count_x(tgid, JVMOS_WHAT_GROW_VM, 0, bucket(), MEM_PAGE);
	/* x: the 2 MiB region (a user address has 47 bits, so its region fits 26) */
	jvmos_count_x(tgid, JVMOS_WHAT_FAULT_REGION, 0,
		      (__u32)(address >> JVMOS_FAULT_REGION_SHIFT), 1);
	return 0;
}

/* a new program has a break of its own: the old one must not be subtracted from it */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(mem_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = jvmos_tgid();

	if (jvmos_layer_on(tgid))
		bpf_map_delete_elem(&mem_last_break, &tgid);
	return 0;
}

/* a thread that is gone: its allocator totals and its state go with it (a new thread that
 * reuses its id starts from nothing) */
SEC("tp_btf/sched_process_free")
int BPF_PROG(mem_thread_free, struct task_struct *p)
{
	__u32 tid = p->pid;	/* every task freed on the host runs this: no helper call */

	bpf_map_delete_elem(&alloc_totals, &tid);
	bpf_map_delete_elem(&mem_threads, &tid);
	return 0;
}
