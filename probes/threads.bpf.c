/*
 * threads.bpf.c - the threads layer of jvmos, compiled: what the native threading stack costs
 * a JVM (paper section 3.2.1, Tables 4 and 5), plus native synchronization and context
 * switches (sections 3.2.2 and 3.4.1), kept by BPF programs that the engine loads and
 * attaches itself (probes/engine). The analyzers read almost every figure by name, as
 * @ncalls/@ntime[pid, category, what] (threads.h); the others are @calls[pid,
 * "thread_create", probe] (the clone syscalls), @nhits[pid, "thread_nested_alloc", span]
 * (the allocator probe hits inside each kind of span, for the probe-effect correction),
 * @thr_incl[pid], @csw[pid, tid, kind], @missed[pid, what] and @hits[pid, "threads:..."].
 *
 * Run through `jvmos record --engine bpf --layers threads`. Which function each uprobe is on
 * comes from the engine's plan (jvmos/enginelayers/threads.py): libjvm's JVM_StartThread,
 * thread_native_entry and JavaThread::exit, and libc's pthread_create, each an entry and (in
 * --mode time) a return program. The syscall tracepoints are attached as the plan lists them;
 * the sched_* programs are BTF raw tracepoints (tp_btf), attached with the object.
 *
 * The layers of one Java thread's creation, and where each is entered:
 *   Java    Thread.<init> and Thread.start() up to the start0 native: not probed. The workload
 *           times it, and jvmos subtracts what the JVM part took: JVM_StartThread's inclusive
 *           time, @thr_incl[pid]
 *   jvm     JVM_StartThread (start0's native: the JavaThread's allocation, os::create_thread):
 *           entry to return, on the creating thread
 *   libc    pthread_create (the stack, cached or mmap'ed, TLS/TCB set-up, clone3): entry to
 *           return, on the creating thread
 *   kernel  the syscalls made inside those spans (clone, clone3, mmap, munmap, mprotect,
 *           madvise, rseq, set_robust_list, rt_sigprocmask, prctl, sched_getaffinity,
 *           gettid): their on-CPU time. The time a syscall spends switched out (mmap waiting
 *           for the mmap lock while other threads fault pages in, say) is waiting, reported
 *           as thread_wait
 * and of the new thread:
 *   libc    start_thread's prologue, from the thread's first switch-in (after
 *           sched_wakeup_new) to thread_native_entry. A thread that does not start through
 *           thread_native_entry (the launcher's main thread, a native library's thread)
 *           would keep this span open for life, so one that ran 1 ms on the CPU (or is
 *           100 ms old) is dropped, and counted, at the thread's next span syscall or
 *           switch-in ("libc start abandoned"); and its
 *           epilogue, from thread_native_entry's return to the exit syscall
 *   jvm     JavaThread::exit (the JVM's teardown of the thread), entry to return
 *   kernel  the syscalls inside those spans, and exit: sys_enter_exit to each switch-out after
 *           it (do_exit and the final schedule), counted once the task is freed
 *           (sched_process_free)
 * Each span's time is exclusive (paper section 5.1: no thread is counted in two probes at
 * once) and on-CPU: it leaves out the spans, span syscalls, futex calls and allocator calls
 * (alloc_totals, written by the mem layer; zero without it) nested in it, and the time its
 * thread was switched out (reported as thread_wait "off-CPU in a span"). A futex inside a
 * span is waiting for another thread (inside JVM_StartThread, the parent waiting for the
 * child to initialize): it is reported as thread_wait, as is the new thread's delay to its
 * first run (sched_wakeup_new to its first switch-in), not as work of any layer. Spans are
 * "java" for a thread cloned inside JVM_StartThread (a java.lang.Thread), "internal" for the
 * JVM's own threads (GC, compiler, ...).
 *
 * Off-CPU time (either mode): from each switch-out of a traced thread to its next switch-in,
 * by the syscall it was switched out in (syscall_of) and whether it blocked or was preempted:
 * counts[tgid, JVMOS_WHAT_OFFCPU_NS/_N, kind, nr + 1] (@offcpu_ns, @offcpu_n; 0: not in a
 * syscall). Waiting, not work: the analyzers keep it apart from the guaranteed overhead.
 *
 * Also: every futex syscall of a traced thread at --scope host, glibc's futex waits at
 * --scope process (category sync: wait, wake, other; inside a
 * span also thread_wait), every switch out of a traced thread (@csw[pid, tid, voluntary or
 * involuntary]: voluntary when it blocked, involuntary when it was preempted; csw_voluntary()
 * below), and in --mode time the run-queue wait of a traced thread (category runq): from its
 * wakeup or preemption to its next switch-in, the time it was runnable but not running
 * (scheduler latency).
 *
 * Cost: four uprobe pairs per Java thread; at --scope host a tracepoint pair per
 * thread-related syscall and per futex of the traced JVM (futex is frequent under contention),
 * at --scope process a uprobe pair per clone, mmap (--mode time) and glibc futex wait (the
 * end of this file); and the sched_switch,
 * sched_wakeup and sched_wakeup_new programs for every task on the machine (a few map
 * lookups for a task that is not traced; a wakeup of a traced thread is a hit of this layer).
 *
 * --mode count: the spans are not timed (timing = 0), their return uprobes are not attached
 * (the plan), and sched_wakeup and the run-queue wait return at once. What stays: the calls
 * of JVM_StartThread and pthread_create, the clone calls, futex calls and time, the context
 * switches, the first-run delay and the kernel exit. With no JVM_StartThread span open, every
 * pthread_create is labelled internal and no thread is marked java. These are the figures
 * the retired bpftrace script kept in --mode count, so that old and new recordings compare.
 *
 * Per-thread state is one struct in a hash keyed by thread id, created for a traced thread,
 * or for the new task a traced thread wakes. All of it is deleted when the kernel frees the
 * task (not at its exit: the kernel-exit span runs to the task's last switch-out), so a later
 * thread that reuses the id starts from nothing. A full map loses a span, counted as
 * JVMOS_LOST_THREAD_STATE; a return whose entry was not seen (the call was in progress when
 * counting began) is counted as JVMOS_MISSED_THREAD_SPAN_NO_ENTRY. Sums are atomic adds.
 *
 * What breaks when the JDK or kernel changes: the symbols thread_native_entry(Thread*) (a
 * static function of os_linux.cpp: its mangled name, in libjvm's full symbol table) and
 * JavaThread::exit(bool, ExitType); thread exit through the exit syscall (glibc's
 * start_thread); sched_switch's raw arguments (preempt, prev, next, prev_state: 5.18+) and the
 * way the kernel formats prev_state for the tracepoint (__trace_sched_switch_state, copied in
 * csw_voluntary() below, with the TASK_* bits of 6.x); task_struct's pid, tgid and exit_state
 * and pt_regs' orig_ax and ax (CO-RE: vmlinux.h's types preserve their access index, so the
 * direct loads through the BTF-typed pointers are relocated like BPF_CORE_READ's, without
 * its helper call, which the scheduler programs paid on every switch); the syscall
 * tracepoints' layout (nr, six 8-byte arguments / ret).
 */
#include "common.bpf.h"
#include "threads.h"

const volatile __u32 timing = 1;	/* 0 in --mode count: the spans are not timed */
/* 1 at --scope process: a thread's exit is seen by sched_process_exit (thr_proc_exit), not
 * by the exit syscall's tracepoint, which is not attached */
const volatile __u32 exit_by_sched = 0;

/* A start-up span that has run this long on the CPU is not a JVM start (start_thread's prologue
 * takes microseconds); one open this long by the wall clock, running or not, is dropped too, so
 * that a native thread that never makes a span syscall does not keep it open for life. A Java
 * thread preempted in its prologue for longer than 1 ms (a loaded machine) is kept. */
#define ABANDON_NS	1000000ULL
#define ABANDON_WALL_NS	100000000ULL

/* task states, as 6.x's include/linux/sched.h defines them (for csw_voluntary) */
#define THR_TASK_REPORT		0x7f
#define THR_TASK_IDLE		0x402	/* TASK_UNINTERRUPTIBLE | TASK_NOLOAD */
#define THR_TASK_RTLOCK_WAIT	0x1000
#define THR_TASK_FROZEN		0x8000
#define THR_TASK_STOPPED	0x4	/* __TASK_STOPPED */
#define THR_TASK_TRACED		0x8	/* __TASK_TRACED */

#define FUTEX_WAIT_OP		1
#define FUTEX_WAKE_OP		2
#define FUTEX_OTHER_OP		3

#define RUNQ_WOKEN		1
#define RUNQ_PREEMPTED		2

/* a thread's state between its events; 0 is "not set" (a span is open while its start time
 * is set) */
struct thr_state {
	__u64 jvm_start_ns;		/* JVM_StartThread's entry */
	__u64 libc_create_ns;		/* pthread_create's entry */
	__u64 libc_start_ns;		/* the new thread's first run */
	__u64 jvm_exit_ns;		/* JavaThread::exit's entry */
	__u64 libc_exit_ns;		/* thread_native_entry's return */
	__u64 kernel_exit_ns;		/* the exit syscall, then each switch-in after it (0
					 * while switched out: that is waiting, not exit work) */
	__u64 jvm_start_nested_ns;	/* what each span leaves out of its time */
	__u64 libc_create_nested_ns;
	__u64 own_span_nested_ns;	/* the new thread's own spans: one open at a time */
	__u64 jvm_start_alloc_ns;	/* alloc_totals as each span began */
	__u64 jvm_start_alloc_hits;
	__u64 libc_create_alloc_ns;
	__u64 libc_create_alloc_hits;
	__u64 own_alloc_ns;
	__u64 own_alloc_hits;
	__u64 span_syscall_ns;		/* the entry of a syscall made inside a span */
	__u64 span_syscall_offcpu_ns;	/* and the time switched out inside it */
	__u64 futex_start_ns;		/* the futex in progress */
	__u64 span_switch_out_ns;	/* switched out inside a span */
	__u64 wakeup_new_ns;		/* woken for its first run */
	__u64 runq_ns;			/* runnable since (--mode time) */
	__u64 off_since_ns;		/* switched out at (off-CPU time) */
	__s32 off_nr;			/* the syscall it was in then, -1 none */
	__u32 kernel_exit_pid;		/* the process of each of the events above: read where */
	__u32 span_switch_out_pid;	/* the current task is another one (sched_switch) */
	__u32 wakeup_new_pid;		/* the process that created the thread */
	__u32 traced_tid;		/* the thread's process, once seen switching out */
	__u8 java_thread;		/* cloned inside JVM_StartThread */
	__u8 futex_op;			/* FUTEX_*_OP */
	__u8 runq_why;			/* RUNQ_* */
	__u8 off_kind;			/* JVMOS_OFF_*: blocked, preempted or stopped */
	__u8 exiting;			/* past its exit syscall */
	__u8 futex_depth;		/* glibc futex waits open (--scope process) */
	__u8 pad[2];
};

/* A plain hash, not an LRU: an entry goes when the kernel frees its task (thr_free), and an
 * insert into a full map fails and is counted, where an LRU would evict a thread in the
 * middle of its span without a word. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, JVMOS_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct thr_state);
} threads_state SEC(".maps");

static __always_inline __u32 cur_tid(void)
{
	return (__u32)bpf_get_current_pid_tgid();
}

static __always_inline struct thr_state *state_of(__u32 tid)
{
	return bpf_map_lookup_elem(&threads_state, &tid);
}

static __always_inline struct thr_state *state_new(__u32 tid)
{
	struct thr_state *t = bpf_map_lookup_elem(&threads_state, &tid);

	if (t)
		return t;
	struct thr_state zero = {};
	bpf_map_update_elem(&threads_state, &tid, &zero, BPF_NOEXIST);
	t = bpf_map_lookup_elem(&threads_state, &tid);
	if (!t)
		jvmos_count(0, JVMOS_WHAT_LOST, JVMOS_LOST_THREAD_STATE, 1);
	return t;
}

static __always_inline int counting(void)
{
	__u32 zero = 0;
	struct jvmos_control *c = bpf_map_lookup_elem(&control, &zero);

	return c && c->counting;
}

static __always_inline int span_open(struct thr_state *t)
{
	return t->jvm_start_ns || t->libc_create_ns || t->libc_start_ns || t->libc_exit_ns ||
	       t->jvm_exit_ns;
}

/* alloc_totals[tid] (mem layer), zeros without it */
static __always_inline void alloc_now(__u32 tid, __u64 *ns, __u64 *hits)
{
	struct jvmos_alloc_totals *a = bpf_map_lookup_elem(&alloc_totals, &tid);

	*ns = a ? a->ns : 0;
	*hits = a ? a->hits : 0;
}

/* @ncalls[pid, cat, name] += calls; @ntime[pid, cat, name] += ns (a signed amount: a sum
 * that comes out negative is read back as negative, and the summary drops it) */
static __always_inline void named(__u32 tgid, __u16 cat, __u16 name, __u64 calls, __s64 ns)
{
	struct jvmos_stat_val *s = jvmos_stat(tgid, cat, JVMOS_NAMED(name));

	/* atomic: uprobe programs run with migration, not preemption, disabled, so two threads
	 * can meet on one CPU's copy */
	if (s) {
		if (calls)
			__sync_fetch_and_add(&s->calls, calls);
		if (ns)
			__sync_fetch_and_add(&s->time_ns, (__u64)ns);
	}
}

/* @nhits[pid, "thread_nested_alloc", name] += the allocator hits a span saw */
static __always_inline void nested_alloc_hits(__u32 tgid, __u16 name, __u64 hits)
{
	if (hits)
		named(tgid, JVMOS_CAT_THREAD_NESTED_ALLOC, name, hits, 0);
}

static __always_inline void hit(__u32 tgid, __u16 what)
{
	jvmos_count(tgid, JVMOS_WHAT_HITS, what, 1);
}

/* the new thread's own spans (libc start, JVM exit, libc exit) begin */
static __always_inline void own_span_begin(struct thr_state *t, __u32 tid)
{
	t->own_span_nested_ns = 0;
	alloc_now(tid, &t->own_alloc_ns, &t->own_alloc_hits);
}

/* the start-up span, abandoned: counted as such, never silently lost */
static __always_inline void start_abandon(struct thr_state *t, __u32 tgid)
{
	t->libc_start_ns = 0;
	named(tgid, JVMOS_CAT_THREAD_CREATE, JVMOS_NAME_LIBC_START_ABANDONED, 1, 0);
}

/* the exclusive time of an own span that began at `start` and ends at `now` (and the
 * allocator hits inside it, reported) */
static __always_inline __s64 own_span_end(struct thr_state *t, __u32 tid, __u32 tgid,
					  __u64 start, __u64 now)
{
	__u64 ans, ahits;

	alloc_now(tid, &ans, &ahits);
	nested_alloc_hits(tgid, JVMOS_NAME_NESTED_START_EXIT, ahits - t->own_alloc_hits);
	return (__s64)(now - start - t->own_span_nested_ns - (ans - t->own_alloc_ns));
}

/* ---- the JVM layer, creating side: Thread.start0 -> JVM_StartThread ---- */

SEC("uprobe.multi")
int thr_jvm_start(struct pt_regs *ctx)
{
	__u32 tgid = jvmos_tgid(), tid = cur_tid();
	struct thr_state *t;

	if (!jvmos_traced(tgid))
		return 0;
	named(tgid, JVMOS_CAT_THREAD_JVM, JVMOS_NAME_START, 1, 0);
	if (!timing || !(t = state_new(tid)))
		return 0;
	t->jvm_start_nested_ns = 0;
	alloc_now(tid, &t->jvm_start_alloc_ns, &t->jvm_start_alloc_hits);
	t->jvm_start_ns = bpf_ktime_get_ns();	/* the clock is read last */
	return 0;
}

SEC("uretprobe.multi")
int thr_jvm_start_ret(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();		/* first: the bookkeeping is not the span's */
	__u32 tgid = jvmos_tgid(), tid = cur_tid();
	struct thr_state *t;
	__u64 d, ans, ahits;

	if (!jvmos_traced(tgid))
		return 0;
	hit(tgid, JVMOS_HIT_THREADS_URETPROBE);
	t = state_of(tid);
	if (!t || !t->jvm_start_ns) {
		jvmos_count(tgid, JVMOS_WHAT_MISSED, JVMOS_MISSED_THREAD_SPAN_NO_ENTRY, 1);
		return 0;
	}
	d = now - t->jvm_start_ns;
	jvmos_count(tgid, JVMOS_WHAT_THR_INCL, 0, d);
	alloc_now(tid, &ans, &ahits);
	/* allocator calls made here (mem layer) are the malloc category's, not the JVM's */
	named(tgid, JVMOS_CAT_THREAD_JVM, JVMOS_NAME_START, 0,
	      (__s64)(d - t->jvm_start_nested_ns - (ans - t->jvm_start_alloc_ns)));
	nested_alloc_hits(tgid, JVMOS_NAME_NESTED_JVM_START, ahits - t->jvm_start_alloc_hits);
	t->jvm_start_ns = 0;
	t->jvm_start_nested_ns = 0;
	return 0;
}

/* ---- the libc layer, creating side ---- */

SEC("uprobe.multi")
int thr_pthread_create(struct pt_regs *ctx)
{
	__u32 tgid = jvmos_tgid(), tid = cur_tid();
	struct thr_state *t;
	int java;

	if (!jvmos_traced(tgid))
		return 0;
	t = timing ? state_new(tid) : state_of(tid);
	java = t && t->jvm_start_ns;
	named(tgid, JVMOS_CAT_THREAD_CREATE, JVMOS_NAME_PTHREAD_CREATE_JAVA + !java, 1, 0);
	if (!timing || !t)
		return 0;
	t->libc_create_nested_ns = 0;
	alloc_now(tid, &t->libc_create_alloc_ns, &t->libc_create_alloc_hits);
	t->libc_create_ns = bpf_ktime_get_ns();
	return 0;
}

SEC("uretprobe.multi")
int thr_pthread_create_ret(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 tgid = jvmos_tgid(), tid = cur_tid();
	struct thr_state *t;
	__u64 d, m, ans, ahits, h;
	int java;

	if (!jvmos_traced(tgid))
		return 0;
	hit(tgid, JVMOS_HIT_THREADS_URETPROBE);
	t = state_of(tid);
	if (!t || !t->libc_create_ns) {
		jvmos_count(tgid, JVMOS_WHAT_MISSED, JVMOS_MISSED_THREAD_SPAN_NO_ENTRY, 1);
		return 0;
	}
	java = t->jvm_start_ns != 0;
	d = now - t->libc_create_ns;
	alloc_now(tid, &ans, &ahits);
	m = ans - t->libc_create_alloc_ns;
	h = ahits - t->libc_create_alloc_hits;
	named(tgid, JVMOS_CAT_THREAD_CREATE, JVMOS_NAME_LIBC_CREATE_JAVA + !java, 0,
	      (__s64)(d - t->libc_create_nested_ns - m));
	nested_alloc_hits(tgid, JVMOS_NAME_NESTED_LIBC_CREATE, h);
	if (java) {
		t->jvm_start_nested_ns += d;
		/* the enclosing JVM span already leaves out all of this call, allocations
		 * included */
		t->jvm_start_alloc_ns += m;
		t->jvm_start_alloc_hits += h;
	}
	t->libc_create_ns = 0;
	t->libc_create_nested_ns = 0;
	return 0;
}

/* ---- the new thread: its first run (sched_switch below), then start_thread's prologue up
 * to thread_native_entry ---- */

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(thr_wakeup_new, struct task_struct *p)
{
	__u32 tgid = jvmos_tgid();
	struct thr_state *t, *parent;

	if (!jvmos_traced(tgid))
		return 0;
	hit(tgid, JVMOS_HIT_THREADS_SCHED_WAKEUP_NEW);
	t = state_new(p->pid);
	if (!t)
		return 0;
	t->wakeup_new_pid = tgid;
	/* a thread cloned inside JVM_StartThread is a java.lang.Thread. Marked here, in its
	 * creator's context before it can run: marked only at clone's return (below), a child
	 * that reached thread_native_entry first on the other CPU was counted internal */
	parent = state_of(cur_tid());
	if (parent && parent->jvm_start_ns)
		t->java_thread = 1;
	t->wakeup_new_ns = bpf_ktime_get_ns();
	return 0;
}

SEC("uprobe.multi")
int thr_native_entry(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();		/* this entry ends the start-up span */
	__u32 tgid = jvmos_tgid(), tid = cur_tid();
	struct thr_state *t;
	__s64 ns;

	if (!jvmos_traced(tgid))
		return 0;
	hit(tgid, JVMOS_HIT_THREADS_UPROBE);
	t = state_of(tid);
	if (!t || !t->libc_start_ns)
		return 0;
	ns = own_span_end(t, tid, tgid, t->libc_start_ns, now);
	named(tgid, JVMOS_CAT_THREAD_CREATE, JVMOS_NAME_LIBC_START_JAVA + !t->java_thread, 1, ns);
	t->libc_start_ns = 0;
	return 0;
}

/* ---- the JVM layer, exiting side ---- */

SEC("uprobe.multi")
int thr_jvm_exit(struct pt_regs *ctx)
{
	__u32 tgid = jvmos_tgid(), tid = cur_tid();
	struct thr_state *t;

	if (!jvmos_traced(tgid))
		return 0;
	hit(tgid, JVMOS_HIT_THREADS_UPROBE);
	if (!timing || !(t = state_new(tid)))
		return 0;
	own_span_begin(t, tid);
	t->jvm_exit_ns = bpf_ktime_get_ns();
	return 0;
}

SEC("uretprobe.multi")
int thr_jvm_exit_ret(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 tgid = jvmos_tgid(), tid = cur_tid();
	struct thr_state *t;
	__s64 ns;

	if (!jvmos_traced(tgid))
		return 0;
	hit(tgid, JVMOS_HIT_THREADS_URETPROBE);
	t = state_of(tid);
	if (!t || !t->jvm_exit_ns) {
		jvmos_count(tgid, JVMOS_WHAT_MISSED, JVMOS_MISSED_THREAD_SPAN_NO_ENTRY, 1);
		return 0;
	}
	ns = own_span_end(t, tid, tgid, t->jvm_exit_ns, now);
	named(tgid, JVMOS_CAT_THREAD_JVM, JVMOS_NAME_EXIT_JAVA + !t->java_thread, 1, ns);
	t->jvm_exit_ns = 0;
	return 0;
}

/* ---- start_thread's epilogue: the thread function returned, until the exit syscall ---- */

SEC("uretprobe.multi")
int thr_native_entry_ret(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();		/* first, as in every return program, though a
						 * span begins here */
	__u32 tgid = jvmos_tgid(), tid = cur_tid();
	struct thr_state *t;

	if (!jvmos_traced(tgid))
		return 0;
	hit(tgid, JVMOS_HIT_THREADS_URETPROBE);
	if (!(t = state_new(tid)))
		return 0;
	t->libc_exit_ns = now;
	own_span_begin(t, tid);
	return 0;
}

/* a traced thread enters its exit: the libc exit span ends, the kernel exit begins */
static __always_inline void thread_exit_begins(__u32 tgid, __u32 tid, __u16 hit_kind)
{
	struct thr_state *t;
	__s64 ns;

	hit(tgid, hit_kind);
	if (!(t = state_new(tid)))
		return;
	if (t->libc_exit_ns) {
		ns = own_span_end(t, tid, tgid, t->libc_exit_ns, bpf_ktime_get_ns());
		named(tgid, JVMOS_CAT_THREAD_CREATE, JVMOS_NAME_LIBC_EXIT_JAVA + !t->java_thread,
		      1, ns);
		t->libc_exit_ns = 0;
	}
	t->kernel_exit_pid = tgid;
	t->exiting = 1;
	t->kernel_exit_ns = bpf_ktime_get_ns();
}

/* --scope host: the exit syscall's entry */
SEC("tracepoint")
int thr_sys_exit(struct trace_event_raw_sys_enter *ctx)
{
	__u32 tgid = jvmos_tgid();

	if (jvmos_traced(tgid))
		thread_exit_begins(tgid, cur_tid(), JVMOS_HIT_THREADS_SYS_ENTER_EXIT);
	return 0;
}

/* kernel exit: counted when the task is freed (its time is summed at each switch-out, in
 * sched_switch below); the task's state goes with it */
SEC("tp_btf/sched_process_free")
int BPF_PROG(thr_free, struct task_struct *p)
{
	__u32 tid = p->pid;
	struct thr_state *t = state_of(tid);

	if (!t)
		return 0;
	if (t->exiting && counting())
		named(t->kernel_exit_pid, JVMOS_CAT_THREAD_CREATE,
		      JVMOS_NAME_KERNEL_EXIT_JAVA + !t->java_thread, 1, 0);
	bpf_map_delete_elem(&threads_state, &tid);
	return 0;
}

/* ---- syscalls inside a span: kernel time of that layer ---- */

static __always_inline void span_syscall_enter(__u32 tid)
{
	struct thr_state *t = state_of(tid);

	/* no state: no span open */
	if (t && span_open(t))
		t->span_syscall_ns = bpf_ktime_get_ns();
}

static __always_inline void span_syscall_exit(__u64 now, __u32 tgid, struct thr_state *t,
					      __u16 hit_kind)
{
	__u64 d, on;

	/* every one of these syscalls runs this layer's entry and exit programs: counted */
	hit(tgid, hit_kind);
	if (!t || !t->span_syscall_ns)
		return;
	d = now - t->span_syscall_ns;
	on = d - t->span_syscall_offcpu_ns;	/* kernel work: the syscall's on-CPU time */
	t->span_syscall_offcpu_ns = 0;
	/* a thread that does not start through thread_native_entry would keep its start-up span
	 * open for life: one that ran 1 ms on the CPU before this syscall (or is 100 ms old) is
	 * abandoned, and this syscall is not counted */
	if (t->libc_start_ns &&
	    (t->span_syscall_ns - t->libc_start_ns - t->own_span_nested_ns > ABANDON_NS ||
	     now - t->libc_start_ns > ABANDON_WALL_NS)) {
		start_abandon(t, tgid);
		t->span_syscall_ns = 0;
		return;
	}
	if (t->libc_create_ns) {
		t->libc_create_nested_ns += d;
		named(tgid, JVMOS_CAT_THREAD_CREATE,
		      JVMOS_NAME_KERNEL_IN_CREATE_JAVA + !t->jvm_start_ns, 1, (__s64)on);
	} else if (t->jvm_start_ns) {
		t->jvm_start_nested_ns += d;
		named(tgid, JVMOS_CAT_THREAD_CREATE, JVMOS_NAME_KERNEL_IN_JVM_START_JAVA, 1,
		      (__s64)on);
	} else {
		t->own_span_nested_ns += d;
		named(tgid, JVMOS_CAT_THREAD_CREATE,
		      JVMOS_NAME_KERNEL_IN_START_EXIT_JAVA + !t->java_thread, 1, (__s64)on);
	}
	t->span_syscall_ns = 0;
}

/* clone, clone3: counted always (@calls keyed by the tracepoint: its probe id is the
 * cookie), and a span syscall */
static __always_inline void clone_called(__u32 tgid, __u64 cookie)
{
	struct jvmos_stat_val *s = jvmos_stat(tgid, JVMOS_CAT_THREAD_CREATE,
					      JVMOS_COOKIE_PROBE(cookie));

	if (s)
		__sync_fetch_and_add(&s->calls, 1);
	span_syscall_enter(cur_tid());
}

SEC("tracepoint")
int thr_clone_enter(struct trace_event_raw_sys_enter *ctx)
{
	__u32 tgid = jvmos_tgid();

	if (jvmos_traced(tgid))
		clone_called(tgid, bpf_get_attach_cookie(ctx));
	return 0;
}

/* a child cloned inside JVM_StartThread is a Java thread */
SEC("tracepoint")
int thr_clone_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 tgid = jvmos_tgid();
	struct thr_state *t, *c;

	if (!jvmos_traced(tgid))
		return 0;
	t = state_of(cur_tid());
	/* the child's state is there: sched_wakeup_new made it, before clone returned */
	if (ctx->ret > 0 && t && t->jvm_start_ns && (c = state_of((__u32)ctx->ret)))
		c->java_thread = 1;
	span_syscall_exit(now, tgid, t, JVMOS_HIT_THREADS_SPAN_SYSCALL);
	return 0;
}

SEC("tracepoint")
int thr_span_enter(struct trace_event_raw_sys_enter *ctx)
{
	if (jvmos_traced(jvmos_tgid()))
		span_syscall_enter(cur_tid());
	return 0;
}

SEC("tracepoint")
int thr_span_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 tgid = jvmos_tgid();

	if (jvmos_traced(tgid))
		span_syscall_exit(now, tgid, state_of(cur_tid()), JVMOS_HIT_THREADS_SPAN_SYSCALL);
	return 0;
}

/* ---- futex: native synchronization of every traced thread ---- */

SEC("tracepoint")
int thr_futex_enter(struct trace_event_raw_sys_enter *ctx)
{
	__u32 op = ctx->args[1] & 0x7f;		/* without FUTEX_PRIVATE_FLAG/CLOCK_REALTIME */
	struct thr_state *t;

	if (!jvmos_traced(jvmos_tgid()) || !(t = state_new(cur_tid())))
		return 0;
	/* FUTEX_WAIT 0, FUTEX_WAIT_BITSET 9; FUTEX_WAKE 1, FUTEX_WAKE_BITSET 10 */
	t->futex_op = (op == 0 || op == 9) ? FUTEX_WAIT_OP :
		      (op == 1 || op == 10) ? FUTEX_WAKE_OP : FUTEX_OTHER_OP;
	t->futex_start_ns = bpf_ktime_get_ns();
	return 0;
}

/* a futex wait or wake of a traced thread ends: counted in sync, and inside a span as
 * waiting (thread_wait) */
static __always_inline void futex_end(__u64 now, __u32 tgid)
{
	struct thr_state *t = state_of(cur_tid());
	__u64 d;
	int jvm;

	if (!t || !t->futex_start_ns)
		return;
	d = now - t->futex_start_ns;
	named(tgid, JVMOS_CAT_SYNC, JVMOS_NAME_FUTEX_WAIT + (t->futex_op - FUTEX_WAIT_OP), 1,
	      (__s64)d);
	/* inside a span the futex is waiting for another thread, not that layer's work */
	if (span_open(t)) {
		jvm = t->jvm_start_ns != 0;
		named(tgid, JVMOS_CAT_THREAD_WAIT,
		      jvm ? JVMOS_NAME_FUTEX_IN_JVM_START : JVMOS_NAME_FUTEX_IN_SETUP_EXIT, 1,
		      (__s64)d);
		if (t->libc_create_ns)
			t->libc_create_nested_ns += d;
		else if (jvm)
			t->jvm_start_nested_ns += d;
		else
			t->own_span_nested_ns += d;
	}
	t->futex_start_ns = 0;
	t->futex_op = 0;
}

SEC("tracepoint")
int thr_futex_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 tgid = jvmos_tgid();

	if (jvmos_traced(tgid))
		futex_end(now, tgid);
	return 0;
}

/* ---- sched_switch: every rule of this layer that a switch triggers, in one program (the
 * steps below, in this order) ---- */

/* Whether a switch is voluntary: the rule @csw has always used is that the sched_switch
 * tracepoint's formatted prev_state, & 0xff, is not 0. The raw tracepoint passes the state
 * unformatted, so this redoes the kernel's formatting (__trace_sched_switch_state): a
 * preempted task is reported as TASK_REPORT_MAX (0x100), any other as
 * 1 << (fls(state) - 1) of its reportable state, 0 for a running one. */
static __always_inline int csw_voluntary(bool preempt, struct task_struct *prev,
					 unsigned int prev_state)
{
	unsigned int state;

	if (preempt)
		return 0;
	state = (prev_state | (unsigned int)prev->exit_state) & THR_TASK_REPORT;
	if ((prev_state & THR_TASK_IDLE) == THR_TASK_IDLE)
		return 1;		/* TASK_REPORT_IDLE */
	if (prev_state & (THR_TASK_RTLOCK_WAIT | THR_TASK_FROZEN))
		return 1;		/* reported as uninterruptible */
	return state != 0;
}

/* The syscall a task being switched out is in, or -1. x86-64 keeps the syscall number in
 * pt_regs->orig_ax (interrupts and, since 5.8, exceptions leave -1 there) and ax = -ENOSYS
 * until the syscall stores its result: a task switched out after that (in the syscall-exit
 * work) is taken as outside a syscall. The numbers are x86-64's: a 32-bit task's syscalls
 * would be named wrongly; an x32 one (>= 1024) is outside. */
static __always_inline __s32 syscall_of(struct task_struct *task)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	long nr, ax;

	if (!regs)
		return -1;
	nr = regs->orig_ax;
	ax = regs->ax;
	return nr >= 0 && nr < 1024 && ax == -38 /* -ENOSYS */ ? (__s32)nr : -1;
}

static __always_inline int thr_switch(bool preempt, struct task_struct *prev,
				      struct task_struct *next, unsigned int prev_state)
{
	__u32 prev_tid, next_tid, prev_tgid;
	struct thr_state *tp, *tn;
	int vol, prev_traced;
	__u64 now, d;

	/* counting is on: only common.bpf.c's jvmos_switch, which checked it, reaches here */
	prev_tid = prev->pid;
	next_tid = next->pid;
	tp = state_of(prev_tid);
	tn = state_of(next_tid);
	prev_tgid = prev->tgid;
	prev_traced = jvmos_layer_on(prev_tgid);
	/* a switch between tasks this layer knows nothing of (most of the host's): no clock
	 * read, which costs more than the lookups here */
	if (!tp && !tn && !prev_traced)
		return 0;
	now = bpf_ktime_get_ns();

	/* a new thread's first run: its delay since sched_wakeup_new is waiting; its start-up
	 * span (libc start) begins */
	if (tn && tn->wakeup_new_ns) {
		named(tn->wakeup_new_pid, JVMOS_CAT_THREAD_WAIT, JVMOS_NAME_FIRST_RUN_DELAY, 1,
		      (__s64)(now - tn->wakeup_new_ns));
		if (timing) {
			tn->libc_start_ns = now;
			own_span_begin(tn, next_tid);
		}
		tn->wakeup_new_ns = 0;
		tn->wakeup_new_pid = 0;
	}
	/* kernel exit: from the exit syscall (then from each switch-in) to this switch-out; the
	 * time switched out in between is waiting, not exit work */
	if (tp && tp->exiting && tp->kernel_exit_ns) {
		named(tp->kernel_exit_pid, JVMOS_CAT_THREAD_CREATE,
		      JVMOS_NAME_KERNEL_EXIT_JAVA + !tp->java_thread, 0,
		      (__s64)(now - tp->kernel_exit_ns));
		tp->kernel_exit_ns = 0;
	}
	if (tn && tn->exiting)
		tn->kernel_exit_ns = now;
	/* off-CPU inside a span (outside a futex, which is subtracted whole): from here */
	if (tp && span_open(tp) && !tp->futex_start_ns) {
		tp->span_switch_out_ns = now;
		tp->span_switch_out_pid = jvmos_tgid();
	}
	/* ... to the switch-in: not the layer's work, left out like a nested syscall */
	if (tn && tn->span_switch_out_ns) {
		d = now - tn->span_switch_out_ns;
		/* not a thread_native_entry start: its on-CPU age (up to its switch-out) or its
		 * age by the wall clock says so */
		if (tn->libc_start_ns && !tn->span_syscall_ns &&
		    (tn->span_switch_out_ns - tn->libc_start_ns - tn->own_span_nested_ns >
		     ABANDON_NS || now - tn->libc_start_ns > ABANDON_WALL_NS)) {
			start_abandon(tn, tn->span_switch_out_pid);
			if (!span_open(tn)) {	/* its off-CPU time was no span's */
				tn->span_switch_out_ns = 0;
				tn->span_switch_out_pid = 0;
				goto switches;
			}
		}
		if (tn->span_syscall_ns)
			/* inside a span syscall: its kernel time leaves it out; the span
			 * subtracts the whole syscall anyway */
			tn->span_syscall_offcpu_ns += d;
		else if (tn->libc_create_ns)
			tn->libc_create_nested_ns += d;
		else if (tn->jvm_start_ns)
			tn->jvm_start_nested_ns += d;
		else
			tn->own_span_nested_ns += d;
		named(tn->span_switch_out_pid, JVMOS_CAT_THREAD_WAIT, JVMOS_NAME_OFFCPU_IN_SPAN, 1,
		      (__s64)d);
		tn->span_switch_out_ns = 0;
		tn->span_switch_out_pid = 0;
	}
switches:
	/* the context switches of traced threads, and where their run-queue waits begin */
	if (prev_traced) {
		vol = csw_voluntary(preempt, prev, prev_state);
		jvmos_count_x(prev_tgid, JVMOS_WHAT_CSW,
			      vol ? JVMOS_CSW_VOLUNTARY : JVMOS_CSW_INVOLUNTARY, prev_tid, 1);
		/* off-CPU time, by the syscall the thread is switched out in (either mode) */
		if (!tp)
			tp = state_new(prev_tid);
		if (tp) {
			tp->traced_tid = prev_tgid;
			tp->off_nr = syscall_of(prev);
			/* stopped (SIGSTOP, ptrace; jvmos's own hold of an exec'd child until its
			 * probes attach) apart from blocked */
			tp->off_kind = !vol ? JVMOS_OFF_PREEMPTED :
				       (!preempt && (prev_state & (THR_TASK_STOPPED | THR_TASK_TRACED)))
				       ? JVMOS_OFF_STOPPED : JVMOS_OFF_BLOCKED;
			tp->off_since_ns = now;
		}
		if (timing && tp) {
			/* preempted: runnable, it waits in the run queue from now (a wakeup that
			 * came while it ran is stale); blocked: no wait until its wakeup */
			if (!vol) {
				tp->runq_ns = now;
				tp->runq_why = RUNQ_PREEMPTED;
			} else {
				tp->runq_ns = 0;
				tp->runq_why = 0;
			}
		}
	}
	/* off-CPU time: from the switch-out above to this switch-in, by syscall and kind */
	if (tn && tn->off_since_ns) {
		jvmos_count_x(tn->traced_tid, JVMOS_WHAT_OFFCPU_NS, tn->off_kind,
			      (__u32)(tn->off_nr + 1), now - tn->off_since_ns);
		jvmos_count_x(tn->traced_tid, JVMOS_WHAT_OFFCPU_N, tn->off_kind,
			      (__u32)(tn->off_nr + 1), 1);
		tn->off_since_ns = 0;
	}
	/* run-queue wait (--mode time): runnable since its wakeup or preemption, until now */
	if (timing && tn && tn->runq_ns) {
		named(tn->traced_tid, JVMOS_CAT_RUNQ,
		      tn->runq_why == RUNQ_WOKEN ? JVMOS_NAME_AFTER_WAKEUP :
						   JVMOS_NAME_AFTER_PREEMPTION,
		      1, (__s64)(now - tn->runq_ns));
		tn->runq_ns = 0;
		tn->runq_why = 0;
	}
	return 0;
}

/* in the scheduler chain (common.bpf.h): run by common.bpf.c's jvmos_switch for a switch
 * out of or into a traced process, never attached itself */
SEC("tp_btf/sched_switch")
int BPF_PROG(chain_thr_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	thr_switch(preempt, prev, next, prev_state);
	jvmos_switch_next(ctx, switch_slot + 1);
	return 0;
}

/* ---- run-queue wait (--mode time): a traced thread seen switching out before is woken.
 * A lower bound: a thread's waits count from its first switch-out in the recording, and a
 * wakeup that comes while its thread still runs is dropped at the thread's next switch-out.
 * The hit costs the waker's CPU (often another traced thread, sometimes the load generator
 * or a softirq) but is charged to the woken thread's process. ---- */
SEC("tp_btf/sched_wakeup")
int BPF_PROG(thr_wakeup, struct task_struct *p)
{
	__u32 tid;
	struct thr_state *t;

	if (!timing)
		return 0;
	/* straight through the BTF-typed argument: every wakeup on the host runs this */
	tid = p->pid;
	t = state_of(tid);
	if (!t || !t->traced_tid || !counting())
		return 0;
	hit(t->traced_tid, JVMOS_HIT_THREADS_SCHED_WAKEUP);
	/* a thread already waiting (preempted, or woken twice) keeps its first start */
	if (!t->runq_ns) {
		t->runq_ns = bpf_ktime_get_ns();
		t->runq_why = RUNQ_WOKEN;
	}
	return 0;
}

/* ---- --scope process: the same figures from libc's functions, with no syscall tracepoint
 * (the plan: jvmos/enginelayers/threads.py, catalogue.THREAD_LIBC_CLONE, _SPAN, _FUTEX) ----
 *
 * clone: glibc's __clone3 and clone (pthread_create reaches the first through
 * __clone_internal; __clone3 is local, named only in libc6-dbg's debug file), counted at
 * entry as the clone tracepoints were, and in --mode time timed as a span syscall. The child
 * returns from neither (it runs the thread function from the wrapper), so the return program
 * runs in the parent only.
 * span syscalls: libc's mmap (pthread_create's new stacks). The other wrappers of the span
 * syscalls would be single-stepped (about 10 us a hit, inside the timed span) and are not
 * probed; rseq, set_robust_list and rt_sigprocmask are inline syscalls. Their kernel time
 * stays in the libc span around them (the manifest's blind spots).
 * futex: glibc's __futex_abstimed_wait_common (condition variables, semaphores, join: one
 * futex wait syscall a call) and __lll_lock_wait_private (its internal locks, until taken),
 * all waits (the cookie's value is the FUTEX_*_OP). No wake is seen. A wait begun inside
 * another (a signal handler's sem_wait while its thread waits on a condition variable) is
 * part of the outer one: futex_depth counts the open waits, and the outermost is timed. */

SEC("uprobe.multi")
int thr_clone_libc(struct pt_regs *ctx)
{
	__u32 tgid = jvmos_tgid();

	if (jvmos_traced(tgid))
		clone_called(tgid, bpf_get_attach_cookie(ctx));
	return 0;
}

SEC("uprobe.multi")
int thr_span_libc(struct pt_regs *ctx)
{
	if (jvmos_traced(jvmos_tgid()))
		span_syscall_enter(cur_tid());
	return 0;
}

SEC("uretprobe.multi")
int thr_span_libc_ret(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 tgid = jvmos_tgid();

	if (jvmos_traced(tgid))
		span_syscall_exit(now, tgid, state_of(cur_tid()), JVMOS_HIT_THREADS_SPAN_LIBC);
	return 0;
}

SEC("uprobe.multi")
int thr_futex_libc(struct pt_regs *ctx)
{
	__u32 op = JVMOS_COOKIE_VALUE(bpf_get_attach_cookie(ctx));
	struct thr_state *t;

	if (!jvmos_traced(jvmos_tgid()) || !(t = state_new(cur_tid())))
		return 0;
	if (t->futex_depth && t->futex_start_ns) {
		if (t->futex_depth < 255)
			t->futex_depth++;
		return 0;		/* nested in an open wait: part of it */
	}
	t->futex_depth = 1;
	t->futex_op = (op == FUTEX_WAIT_OP || op == FUTEX_WAKE_OP) ? op : FUTEX_OTHER_OP;
	t->futex_start_ns = bpf_ktime_get_ns();
	return 0;
}

SEC("uretprobe.multi")
int thr_futex_libc_ret(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 tgid = jvmos_tgid();
	struct thr_state *t;

	if (!jvmos_traced(tgid) || !(t = state_of(cur_tid())))
		return 0;
	if (t->futex_depth > 1) {
		t->futex_depth--;
		return 0;		/* an inner wait ended; the outer one goes on */
	}
	t->futex_depth = 0;
	futex_end(now, tgid);
	return 0;
}

/* a thread's exit: the exit syscall (x86-64's 60) when do_exit reports it. Threads that a
 * group exit takes down are not in that syscall and are left out, as the exit tracepoint
 * leaves them out. The part of do_exit before this event (exit_signals, exit_mm) falls in
 * the libc exit span instead of the kernel exit. Attached with the object at every scope;
 * returns at once unless the plan asked for it.
 * A futex wait in progress ends here: a thread blocked in it when its process exits never
 * returns to glibc's function, while the syscall's exit tracepoint (--scope host) does see
 * it end (interrupted); so the wait is counted as the tracepoint would have counted it. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(thr_proc_exit, struct task_struct *p)
{
	__u64 now = bpf_ktime_get_ns();
	struct thr_state *t;
	__u32 tgid;

	if (!exit_by_sched)
		return 0;
	tgid = jvmos_tgid();
	if (!jvmos_traced(tgid))
		return 0;
	futex_end(now, tgid);
	t = state_of(cur_tid());
	if (t)
		t->futex_depth = 0;
	if (syscall_of(p) != 60)
		return 0;
	thread_exit_begins(tgid, cur_tid(), JVMOS_HIT_THREADS_SCHED_PROCESS_EXIT);
	return 0;
}
