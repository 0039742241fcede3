"""The threads layer, compiled (probes/threads.bpf.c, probes/threads.h): native thread creation
and exit split into libc, kernel and the JVM's part (thread_create, thread_jvm), the waiting
around it (thread_wait), futex (sync), run-queue wait (runq) and context switches (@csw).

Attach points at both scopes: uprobes on libjvm's JVM_StartThread, thread_native_entry and
JavaThread::exit and libc's pthread_create (their return probes in --mode time only);
sched_switch, sched_wakeup, sched_wakeup_new, sched_process_exit and sched_process_free as BTF
raw tracepoints (attached with the object, not listed in the plan).

--scope process (the default): no syscall tracepoint. libc's clone wrappers (__clone3, clone)
are counted, and timed in --mode time; the stack syscalls' functions (mmap, mprotect, ...) are
timed inside the spans in --mode time; glibc's futex wait functions are timed in both modes;
a thread's exit is seen at sched_process_exit. What these cannot see is
catalogue.THREAD_BLIND_SPOTS, written into the manifest. __clone3 and the futex functions are
local to glibc: found in libc6-dbg's debug file (jdk.symbols) and attached by file offset.

--scope host: the tracepoints of the syscalls made while a thread is created, starts and
exits (catalogue.THREAD_SPAN_SYSCALLS) and of futex, with the host-wide cost of an enabled
syscall tracepoint. Only clone's and clone3's enter tracepoints key a figure
(@calls[pid, "thread_create", probe]), so only they get a probe id.
"""
from jvmos.catalogue import (THREAD_LIBC_CLONE, THREAD_LIBC_FUTEX, THREAD_LIBC_SPAN,
                             THREAD_SPAN_SYSCALLS, THREAD_SYMBOLS)
from jvmos.enginecalib import Calibration

NAME = OBJECT = "threads"
HEADER = "threads.h"
BASE = 256

CATEGORIES = {"thread_create": BASE + 1, "thread_jvm": BASE + 2, "thread_wait": BASE + 3,
              "sync": BASE + 4, "runq": BASE + 5, "thread_nested_alloc": BASE + 6}

# name id -> (the "what" key of the analyzers' maps, the map its calls go to, the map its time
# goes to); the header's JVMOS_NAME_* of each, for the catalogue test
_CT = ("ncalls", "ntime")
_NAMES = [
    ("START", "start", _CT),                                    # thread_jvm
    ("EXIT_JAVA", "exit java", _CT),
    ("EXIT_INTERNAL", "exit internal", _CT),
    ("PTHREAD_CREATE_JAVA", "pthread_create java", ("ncalls", None)),  # thread_create
    ("PTHREAD_CREATE_INTERNAL", "pthread_create internal", ("ncalls", None)),
    ("LIBC_CREATE_JAVA", "libc create java", (None, "ntime")),
    ("LIBC_CREATE_INTERNAL", "libc create internal", (None, "ntime")),
    ("LIBC_START_JAVA", "libc start java", _CT),
    ("LIBC_START_INTERNAL", "libc start internal", _CT),
    ("LIBC_EXIT_JAVA", "libc exit java", _CT),
    ("LIBC_EXIT_INTERNAL", "libc exit internal", _CT),
    ("KERNEL_EXIT_JAVA", "kernel exit java", _CT),
    ("KERNEL_EXIT_INTERNAL", "kernel exit internal", _CT),
    ("KERNEL_IN_CREATE_JAVA", "kernel in create java", _CT),
    ("KERNEL_IN_CREATE_INTERNAL", "kernel in create internal", _CT),
    ("KERNEL_IN_START_EXIT_JAVA", "kernel in start/exit java", _CT),
    ("KERNEL_IN_START_EXIT_INTERNAL", "kernel in start/exit internal", _CT),
    ("KERNEL_IN_JVM_START_JAVA", "kernel in jvm start java", _CT),
    ("LIBC_START_ABANDONED", "libc start abandoned", ("ncalls", None)),
    ("FIRST_RUN_DELAY", "first run delay", _CT),                # thread_wait
    ("FUTEX_IN_JVM_START", "futex in JVM_StartThread", _CT),
    ("FUTEX_IN_SETUP_EXIT", "futex in thread set-up/exit", _CT),
    ("OFFCPU_IN_SPAN", "off-CPU in a span", _CT),
    ("FUTEX_WAIT", "futex wait", _CT),                          # sync
    ("FUTEX_WAKE", "futex wake", _CT),
    ("FUTEX_OTHER", "futex other", _CT),
    ("AFTER_WAKEUP", "after wakeup", _CT),                      # runq
    ("AFTER_PREEMPTION", "after preemption", _CT),
    ("NESTED_JVM_START", "jvm start", ("nhits", None)),        # thread_nested_alloc
    ("NESTED_LIBC_CREATE", "libc create", ("nhits", None)),
    ("NESTED_START_EXIT", "start/exit", ("nhits", None)),
]
NAMES = {BASE + 1 + i: (what, maps[0], maps[1]) for i, (_, what, maps) in enumerate(_NAMES)}

CSW = {1: "voluntary", 2: "involuntary"}
OFF = {1: "blocked", 2: "preempted", 3: "stopped"}
WHATS = {BASE + 1: ("thr_incl", lambda sub, x: () if sub == 0 else None),
         BASE + 2: ("csw", lambda sub, x: (str(x), CSW[sub]) if sub in CSW else None),
         # off-CPU time and switches by the syscall switched out in (x = nr + 1, 0: none)
         BASE + 3: ("offcpu_ns", lambda sub, x: (str(x), OFF[sub]) if sub in OFF else None),
         BASE + 4: ("offcpu_n", lambda sub, x: (str(x), OFF[sub]) if sub in OFF else None)}
MISSED = {"thread_span_no_entry": BASE + 1}
HITS = {"threads:uprobe": BASE + 1, "threads:uretprobe": BASE + 2,
        "threads:sched_wakeup_new": BASE + 3, "threads:sys_enter_exit": BASE + 4,
        "threads:span_syscall": BASE + 5, "threads:sched_wakeup": BASE + 6,
        "threads:span_libc": BASE + 7, "threads:sched_process_exit": BASE + 8}
HEADER_NAMES = {
    **{f"CAT_{k.upper()}": v for k, v in CATEGORIES.items()},
    **{f"NAME_{h}": BASE + 1 + i for i, (h, _, _) in enumerate(_NAMES)},
    "WHAT_THR_INCL": BASE + 1, "WHAT_CSW": BASE + 2, "WHAT_OFFCPU_NS": BASE + 3,
    "WHAT_OFFCPU_N": BASE + 4, "OFF_BLOCKED": 1, "OFF_PREEMPTED": 2, "OFF_STOPPED": 3,
    "CSW_VOLUNTARY": 1, "CSW_INVOLUNTARY": 2,
    **{f"MISSED_{k.upper()}": v for k, v in MISSED.items()},
    **{"HIT_" + k.replace(":", "_").upper(): v for k, v in HITS.items()},
}

# the costs of the kinds analyzers/threads.py names (KINDS): its own programs on probecal's
# loops. threads:uprobe, threads:uretprobe and the tracepoint kinds borrow the engine's
# minimal uprobe, uprobe_pair and tracepoint (enginecost.KEYS).
CALIBRATIONS = [
    Calibration("sched_switch_threads_hit", "yield", 100_000, ("threads",),
                ("threads:sched_switch",),
                "threads.bpf.c's thr_switch (with thr_wakeup), per switch out of a traced "
                "thread (two threads yielding to each other on one CPU)", per_switch=True),
    # the tracepoint pairs are the --scope host route, the libc pairs the --scope process one
    Calibration("futex_threads_hit", "futex", 200_000, ("threads",), ("threads:futex_pair",),
                "threads.bpf.c's thr_futex_enter + thr_futex_exit on FUTEX_WAKE with no waiter",
                scope="host"),
    Calibration("span_syscall_threads_hit", "madvise", 200_000, ("threads",),
                ("threads:span_syscall",),
                "threads.bpf.c's thr_span_enter + thr_span_exit on madvise(MADV_NORMAL) "
                "outside any span", scope="host"),
    Calibration("futex_libc_threads_hit", "lockwait", 200_000, ("threads",),
                ("threads:futex_libc",),
                "threads.bpf.c's thr_futex_libc + thr_futex_libc_ret on glibc's "
                "__lll_lock_wait_private taking a free lock (no syscall), as placed",
                scope="process"),
    Calibration("span_libc_threads_hit", "mmap", 100_000, ("threads",),
                ("threads:span_libc",),
                "threads.bpf.c's thr_span_libc + thr_span_libc_ret on libc's mmap of one "
                "page (each unmapped at once) outside any span, as placed", scope="process"),
]

UPROBES = (("LIBJVM", "JVM_StartThread", "thr_jvm_start", "thr_jvm_start_ret"),
           ("LIBC", "pthread_create", "thr_pthread_create", "thr_pthread_create_ret"),
           ("LIBJVM", "_ZL19thread_native_entryP6Thread", "thr_native_entry",
            "thr_native_entry_ret"),
           ("LIBJVM", "_ZN10JavaThread4exitEbNS_8ExitTypeE", "thr_jvm_exit", "thr_jvm_exit_ret"))
# the plan probes exactly the catalogue's THREAD_SYMBOLS (kept in step with it)
assert {s for ph, s, _, _ in UPROBES} == {s for syms in THREAD_SYMBOLS.values() for s in syms}
assert len(set(THREAD_LIBC_CLONE) | set(THREAD_LIBC_SPAN) | set(THREAD_LIBC_FUTEX)) == \
    len(THREAD_LIBC_CLONE) + len(THREAD_LIBC_SPAN) + len(THREAD_LIBC_FUTEX)


def constants(ctx) -> dict:
    return {"timing": 1 if ctx.mode == "time" else 0,
            "exit_by_sched": 1 if ctx.scope == "process" else 0}


def idle_programs(ctx) -> list:
    """sched_wakeup starts a run-queue wait, timed in --mode time only: in --mode count its
    program would run on every wakeup on the host for nothing"""
    return [] if ctx.mode == "time" else ["thr_wakeup"]


def plan(ctx) -> None:
    timed = ctx.mode == "time"
    for ph, sym, prog, ret in UPROBES:
        ctx.uprobe(ph, sym, prog, ret if timed else None)
    if ctx.scope == "process":
        _plan_libc(ctx, timed)
        return
    for sc in THREAD_SPAN_SYSCALLS:
        if sc == "exit":
            ctx.tracepoint("syscalls", "sys_enter_exit", "thr_sys_exit")
        elif sc in ("clone", "clone3"):
            ctx.tracepoint("syscalls", f"sys_enter_{sc}", "thr_clone_enter", named=True)
            ctx.tracepoint("syscalls", f"sys_exit_{sc}", "thr_clone_exit")
        else:
            ctx.tracepoint("syscalls", f"sys_enter_{sc}", "thr_span_enter")
            ctx.tracepoint("syscalls", f"sys_exit_{sc}", "thr_span_exit")
    ctx.tracepoint("syscalls", "sys_enter_futex", "thr_futex_enter")
    ctx.tracepoint("syscalls", "sys_exit_futex", "thr_futex_exit")


def _plan_libc(ctx, timed: bool) -> None:
    """--scope process: libc's functions instead of the syscall tracepoints (the exit by
    sched_process_exit, a BTF tracepoint attached with the object): clone's wrappers counted
    (and timed in --mode time), mmap timed in --mode time only (in --mode count no span is
    open, so it would only cost), glibc's futex waits timed in both modes, as the futex
    tracepoints were."""
    for sym in THREAD_LIBC_CLONE:
        ctx.uprobe("LIBC", sym, "thr_clone_libc", "thr_span_libc_ret" if timed else None)
    if timed:
        for sym in THREAD_LIBC_SPAN:
            ctx.uprobe("LIBC", sym, "thr_span_libc", "thr_span_libc_ret")
    for sym, op in THREAD_LIBC_FUTEX.items():
        ctx.uprobe("LIBC", sym, "thr_futex_libc", "thr_futex_libc_ret", value=op)
