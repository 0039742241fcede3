"""The mem layer, compiled (probes/mem.bpf.c, probes/mem.h): the libc allocator, the kernel's
memory calls, user page faults and the off-CPU time inside them, and the zlib streams
created, under the map names and keys the analyzers read (probes/mem.bpf.c lists them)."""
from jvmos.catalogue import (MEM_ALLOCATOR, MEM_LIBC_WRAPPERS, MEM_SYSCALLS, ZLIB_INITS,
                             ZLIB_STREAM_INITS)
from jvmos.enginecalib import Calibration

NAME = OBJECT = "mem"
HEADER = "mem.h"
BASE = 192

CATEGORIES = {"malloc": BASE + 1, "malloc_untimed": BASE + 2, "vm": BASE + 3,
              "vm_timed": BASE + 4, "zlib": BASE + 5}
NAMES = {BASE + 1: ("page_fault_user", "ncalls", None),
         BASE + 2: ("off-CPU", None, "ntime")}
# @grow_vm / @grow_malloc[pid, quarter-second]: the bucket is the entry's x;
# @fault_region[pid, region]: user page faults by the 2 MiB region of their address
# (address >> FAULT_REGION_SHIFT), the entry's x
WHATS = {BASE + 1: ("grow_vm", lambda sub, x: (str(x),) if sub == 0 else None),
         BASE + 2: ("grow_malloc", lambda sub, x: (str(x),) if sub == 0 else None),
         BASE + 3: ("fault_region", lambda sub, x: (str(x),) if sub == 0 else None)}
FAULT_REGION_SHIFT = 21
MISSED = {"malloc_offcpu_exceeds_span": BASE + 1, "malloc_no_entry": BASE + 2,
          "vm_offcpu_exceeds_span": BASE + 3}
HITS = {"mem:sched_switch": BASE + 1}

# an allocator probe's cookie value: which argument is the size it asks for
SIZE_ARG0, SIZE_ARG1, SIZE_ARG2, SIZE_PRODUCT = 0, 1, 2, 3
SIZE_OF = {"malloc": SIZE_ARG0, "calloc": SIZE_PRODUCT, "realloc": SIZE_ARG1,
           "aligned_alloc": SIZE_ARG1, "memalign": SIZE_ARG1, "posix_memalign": SIZE_ARG2}
assert set(SIZE_OF) == set(MEM_ALLOCATOR)

# what the header calls each id, for the catalogue test
HEADER_NAMES = {
    **{f"CAT_{k.upper()}": v for k, v in CATEGORIES.items()},
    "NAME_PAGE_FAULT_USER": BASE + 1, "NAME_OFF_CPU": BASE + 2,
    "WHAT_GROW_VM": BASE + 1, "WHAT_GROW_MALLOC": BASE + 2, "WHAT_FAULT_REGION": BASE + 3,
    "FAULT_REGION_SHIFT": FAULT_REGION_SHIFT,
    **{f"MISSED_{k.upper()}": v for k, v in MISSED.items()},
    "HIT_MEM_SCHED_SWITCH": BASE + 1,
    "MEM_SIZE_ARG0": SIZE_ARG0, "MEM_SIZE_ARG1": SIZE_ARG1, "MEM_SIZE_ARG2": SIZE_ARG2,
    "MEM_SIZE_PRODUCT": SIZE_PRODUCT,
}

# the raw BTF tracepoints of mem.bpf.c (the engine attaches every tp_btf program it loads)
TP_BTF = ("sched_switch", "page_fault_user", "sched_process_exec", "sched_process_free")

# The costs of this layer's probe kinds (analyzers/mem.py KINDS), measured with these
# programs on probecal. probecal's jvmos_probe_target stands in for malloc (no side
# effects, one argument). mem:vm_syscall_upair is charged with the minimal uprobe pair
# (borrowed), mem:zlib_init with the minimal uprobe (borrowed: analyzers/mem.py KINDS).
CALIBRATIONS = [
    Calibration("malloc_mem_time_hit", "call", 200_000, ("mem",), ("mem:malloc_pair",),
                "mem.bpf.c's alloc_entry + alloc_ret on probecal's function (as malloc)",
                run_mode="time", target_as=(("LIBC", ("malloc",)),)),
    Calibration("malloc_mem_count_hit", "call", 200_000, ("mem",), ("mem:malloc_pair",),
                "mem.bpf.c's alloc_entry on probecal's function (as malloc), --mode count",
                run_mode="count", target_as=(("LIBC", ("malloc",)),)),
    Calibration("vm_syscall_mem_hit", "madvise", 200_000, ("mem",), ("mem:vm_syscall_pair",),
                "mem.bpf.c's sys_vm_enter + sys_vm_exit on madvise(MADV_NORMAL) (--scope host)",
                scope="host"),
    Calibration("page_fault_mem_hit", "fault", 200_000, ("mem",), ("mem:page_fault",),
                "mem.bpf.c's page_fault_user program on first touches of fresh anonymous "
                "pages: its in-kernel run time per traced fault (BPF statistics, every run), "
                "an upper bound of the program's own cost; the tracepoint's dispatch is not "
                "in it", kernel_stats=("mem:mem_page_fault_user",)),
    Calibration("sched_switch_mem_hit", "yield", 100_000, ("mem",), ("mem:sched_switch",),
                "mem.bpf.c's sched_switch program on two threads yielding to each other on "
                "one CPU", per_switch=True),
]


def constants(ctx) -> dict:
    return {"timing": 1 if ctx.mode == "time" else 0}


def plan(ctx) -> None:
    timed = ctx.mode == "time"
    for sym in MEM_ALLOCATOR:
        ctx.uprobe("LIBC", sym, "alloc_entry", "alloc_ret" if timed else None, SIZE_OF[sym],
                   has_bytes=True)
    # zlib's stream inits: counted in both modes (no return probe), in every zlib library
    # the plan found (LIBZ: libz.so.1, or a libzip.so with zlib inside)
    for sym in ZLIB_INITS:
        ctx.uprobe("LIBZ", sym, "zlib_init")
    if ctx.scope == "process":
        for sym in MEM_LIBC_WRAPPERS:
            if sym == "sbrk":       # its bytes are known at its return: kept in --mode count
                ctx.uprobe("LIBC", sym, "libc_sbrk", "libc_sbrk_ret", has_bytes=True)
            else:
                ctx.uprobe("LIBC", sym, "libc_vm", "libc_vm_ret" if timed else None,
                           has_bytes=True)
    else:
        # both ends get a probe id: each figure is keyed by the tracepoint that records it,
        # calls and bytes by the enter one (brk's bytes by its exit), time and vm_timed by
        # the exit
        for sc in MEM_SYSCALLS:
            brk = sc == "brk"
            ctx.tracepoint("syscalls", f"sys_enter_{sc}",
                           "sys_brk_enter" if brk else "sys_vm_enter", named=True,
                           has_bytes=not brk)
            ctx.tracepoint("syscalls", f"sys_exit_{sc}", "sys_brk_exit" if brk else "sys_vm_exit",
                           named=True, has_bytes=brk)
    for t in TP_BTF:
        ctx.script.kinds[f"tp_btf:{t}"] = "tp_btf"


def zlib_state(libs, why, attached) -> dict:
    """The manifest's probes.zlib: the zlib libraries probed and, when the streams a process
    creates cannot be counted, why (the summary then says unknown, not 0). libs, why: what
    jdk.libz_of found; attached: the plan's attach points ("uprobe:PATH:SYMBOL")."""
    paths = [str(p) for p in libs]
    seen = {tuple(a.split(":", 1)[1].rsplit(":", 1)) for a in attached
            if a.startswith("uprobe:") and a.count(":") >= 2}
    lacking = [f"{p}:{sym}" for p in paths for sym in ZLIB_STREAM_INITS.values()
               if (p, sym) not in seen]
    unknown = None
    if not paths:
        unknown = f"no zlib library found ({why or 'none mapped or needed'})"
    elif lacking:
        unknown = f"zlib's stream inits not found: {', '.join(lacking)}"
    return {"libraries": paths, "unknown": unknown}
