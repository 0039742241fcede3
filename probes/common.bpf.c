/*
 * common.bpf.c - the part of every compiled recording that decides which processes are traced
 * and what is known of them.
 *
 * Loaded first by the engine (probes/engine); its maps (common.bpf.h) are shared with every
 * layer object. The engine puts the root process in `traced` (launch mode: the command held
 * at jvmos's gate; attach mode: the JVM) and sets control.counting.
 *
 * Attach points (BTF-enabled tracepoints, tp_btf: typed arguments, read through CO-RE):
 *   sched_process_fork  a traced process that forks a process (not a thread: the child's
 *                       tgid differs from the parent's) makes the child traced, and tells the
 *                       engine, which opens the child's uprobes (uprobe_multi links are per
 *                       process: the breakpoints a child inherits do not run its programs)
 *   sched_process_exec  what a traced process ran (proc.exec). A traced child other than the
 *                       root that starts a new program is stopped here (SIGSTOP, before its
 *                       first instruction) until the engine has opened its uprobes and sent
 *                       SIGCONT; a short-lived child (a JVM started by a shell script) is then
 *                       not over before it is probed. Never after the stop, never the root.
 *   task_newtask        counted per traced process (a hit, for the probe-effect estimate)
 *   sched_process_exit  when a traced process ended (proc.exit_ns), and a hit per thread
 *   sched_switch        the scheduler chain (common.bpf.h): the one program every context
 *                       switch on the host runs, attached only when a layer has a handler
 *
 * What breaks when the kernel changes: the argument lists of these four raw tracepoints
 * (the BTF of the running kernel is checked at load, so a change is a load error, never a
 * wrong figure), and task_struct's tgid/pid and linux_binprm's filename (CO-RE relocations).
 */
#include "common.bpf.h"

#define SIGSTOP 19

const volatile __u32 root_tgid = 0;	/* the root of the traced tree: never held */
const volatile __u32 hold_exec = 0;	/* 1: stop a traced child at exec until probed */
const volatile __u32 follow = 0;	/* 1: trace the children, report forks and execs */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, JVMOS_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct jvmos_proc);
} proc SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} proc_events SEC(".maps");

/* The ring buffer's record and its kinds appear in no map declaration: these unused globals
 * put them in the object's BTF, from which bpf2go generates the engine's Go types. */
const struct jvmos_proc_event *unused_proc_event __attribute__((unused));
const enum jvmos_ev_kind unused_ev_kind __attribute__((unused));

static __always_inline struct jvmos_proc *proc_of(__u32 tgid)
{
	struct jvmos_proc *p = bpf_map_lookup_elem(&proc, &tgid);

	if (p)
		return p;
	struct jvmos_proc zero = {};
	bpf_map_update_elem(&proc, &tgid, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&proc, &tgid);
}

static __always_inline int counting(void)
{
	__u32 zero = 0;
	struct jvmos_control *c = bpf_map_lookup_elem(&control, &zero);

	return c && c->counting;
}

static __always_inline int stopped(void)
{
	__u32 zero = 0;
	struct jvmos_control *c = bpf_map_lookup_elem(&control, &zero);

	return !c || c->stopped;
}

static __always_inline int report(__u32 kind, __u32 tgid, __u32 parent, __u32 held)
{
	struct jvmos_proc_event *e = bpf_ringbuf_reserve(&proc_events, sizeof(*e), 0);

	if (!e) {
		jvmos_count(0, JVMOS_WHAT_LOST, JVMOS_LOST_PROC_EVENT, 1);
		return 0;
	}
	e->kind = kind;
	e->tgid = tgid;
	e->parent = parent;
	e->held = held;
	e->ns = bpf_ktime_get_ns();
	bpf_ringbuf_submit(e, 0);
	return 1;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(proc_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	__u8 *pbits, bits;

	/* without follow (the agent's engine: each JVM is added on its own) a child is not
	 * traced: nothing would ever drop it from the map */
	if (ctgid == ptgid || !follow)
		return 0;
	pbits = bpf_map_lookup_elem(&traced, &ptgid);
	if (!pbits)
		return 0;
	bits = *pbits;		/* the child counts in the layers its parent counts in */
	bpf_map_update_elem(&traced, &ctgid, &bits, BPF_ANY);
	if (follow && !stopped())
		report(JVMOS_EV_FORK, ctgid, ptgid, 0);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(proc_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = jvmos_tgid();
	struct jvmos_proc *info;
	const char *filename;

	if (!bpf_map_lookup_elem(&traced, &tgid))
		return 0;
	info = proc_of(tgid);
	if (info) {
		filename = BPF_CORE_READ(bprm, filename);
		bpf_probe_read_kernel_str(info->exec, sizeof(info->exec), filename);
		info->exec_ns = bpf_ktime_get_ns();
	}
	if (counting())
		jvmos_count(tgid, JVMOS_WHAT_HITS, JVMOS_HIT_PROCESS_EXEC, 1);
	if (!follow || tgid == root_tgid || stopped())
		return 0;
	/* held only when the engine will hear of it: a lost event must not leave it stopped */
	if (hold_exec && report(JVMOS_EV_EXEC, tgid, 0, 1)) {
		if (info)
			info->held = 1;
		bpf_send_signal(SIGSTOP);
	} else if (!hold_exec) {
		report(JVMOS_EV_EXEC, tgid, 0, 0);
	}
	return 0;
}

SEC("tp_btf/task_newtask")
int BPF_PROG(proc_newtask, struct task_struct *task, __u64 clone_flags)
{
	__u32 tgid = jvmos_tgid();

	if (jvmos_traced(tgid))
		jvmos_count(tgid, JVMOS_WHAT_HITS, JVMOS_HIT_TASK_NEWTASK, 1);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(proc_exit, struct task_struct *p)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct jvmos_proc *info;

	if (!bpf_map_lookup_elem(&traced, &tgid))
		return 0;
	if (counting())
		jvmos_count(tgid, JVMOS_WHAT_HITS, JVMOS_HIT_PROCESS_EXIT, 1);
	if ((__u32)id == tgid) {
		info = proc_of(tgid);
		if (info)
			info->exit_ns = bpf_ktime_get_ns();
	}
	return 0;
}

/* the scheduler chain's filter (common.bpf.h). The tasks' tgids are read straight through
 * the BTF-typed arguments, not with BPF_CORE_READ's bpf_probe_read_kernel: in an exploratory
 * A/B on a bystander's pipe ping-pong, the helper call read about 3 points of its round trip
 * (results/overhead/scheduler-chain/NOTE.md; the two intervals overlap). */
SEC("tp_btf/sched_switch")
int BPF_PROG(jvmos_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u32 prev_tgid = prev->tgid;
	__u32 next_tgid;

	if (!counting())
		return 0;
	if (!bpf_map_lookup_elem(&traced, &prev_tgid)) {
		next_tgid = next->tgid;
		if (!bpf_map_lookup_elem(&traced, &next_tgid))
			return 0;
	}
	jvmos_switch_next(ctx, 0);
	return 0;
}
