"""The memory resource (probes/mem.bpf.c; paper section 3.3): the libc allocator (malloc; free
is not probed: free_estimated), the kernel's memory syscalls and user page faults (vm), of
which those in the Java heap (page_faults_heap: by the 2 MiB region of their address, against
the heap's range read at the stop), and each process's growth over time. Measured times are
corrected per hit (correction.correct) with the io layer's windows (borrowed, named in
`probe_window_source`).
"""
from typing import Dict, List, Optional, Tuple

from jvmos.catalogue import ZLIB_STREAM_INITS
from jvmos.analyzers.correction import (PAIR_SOURCE, SYS_SOURCE, add, combine, correct_by_window,
                                       get, probe_costs, sum_known)

# probe kind -> (what one hit is, cost key in --mode time, cost key in --mode count): the
# probes of this layer, as analyzers/overhead.py charges them (cost keys name entries of the
# platform file's "engine_probes" section; "probes" in files made before bpftrace retired)
KINDS = {
    "mem:malloc_pair": ("an allocator call: an entry probe (+ a return probe in --mode "
                        "time)", "malloc_mem_time_hit", "malloc_mem_count_hit"),
    "mem:vm_syscall_pair": ("brk/mmap/munmap/mprotect/madvise: a sys_enter/sys_exit tracepoint pair",
                            "vm_syscall_mem_hit", "vm_syscall_mem_hit"),
    "mem:vm_syscall_upair": ("mmap/munmap/mprotect/madvise/sbrk (--scope process): a "
                             "uprobe/uretprobe pair on libc's wrapper (--mode count: the "
                             "entry probe; sbrk keeps its return, not charged)", "uprobe_pair",
                             "uprobe"),
    "mem:zlib_init": ("a zlib stream created: the zlib_init uprobe on inflateInit2_, "
                      "inflateInit_, deflateInit2_ or deflateInit_ (counted only; cost "
                      "borrowed from the minimal uprobe)", "uprobe", "uprobe"),
    "mem:page_fault": ("a user page fault: the page_fault_user program",
                       "page_fault_mem_hit", "page_fault_mem_hit"),
    "mem:sched_switch": ("a switch out of a traced thread: the mem layer's sched_switch program",
                         "sched_switch_mem_hit", "sched_switch_mem_hit"),
}


def probe_hits(raw, scope: str) -> List[Tuple[str, Dict[str, int]]]:
    """[(kind, {pid: hits})]; at --scope process the memory calls were probed on libc's
    wrappers (uprobe pairs), not syscall tracepoints."""
    sum_ = raw.sum_by_pid
    up = scope == "process"
    return [("mem:malloc_pair", sum_("calls", lambda k: k[0] == "malloc")),
            ("mem:vm_syscall_upair" if up else "mem:vm_syscall_pair",
             sum_("calls", lambda k: k[0] == "vm")),
            ("mem:page_fault", sum_("ncalls", lambda k: k == ("vm", "page_fault_user"))),
            ("mem:zlib_init", sum_("calls", lambda k: k[0] == "zlib"))]


def adjust_hits(per: Dict[str, Dict[str, int]]) -> None:
    """An exec also runs the mem layer's exec program when that layer is loaded (it always
    has switches to count): one more program run per exec than the common count says."""
    if any("mem:sched_switch" in k for k in per.values()):
        for k in per.values():
            if "common:sched_process_exec" in k:
                k["common:sched_process_exec"] *= 2


FREE_BASIS = ("free is not probed (its first instruction is single-stepped; probes/mem.bpf.c): one free per block allocated by the "
              "probed malloc, calloc and *memalign calls (realloc does not add a block), x "
              "the calibrated cost of one free (workloads/c/memcal); calls and time are both "
              "estimated, never counted as probe hits")


def categories(fns: dict, probes: Optional[dict], costs: dict, mode: str) -> dict:
    c = probe_costs(probes)
    out = {}
    m = fns.get("malloc")
    if m:
        funcs = {}
        malloc_model, free_model = costs.get("malloc_call"), costs.get("free_call")
        for k, v in sorted(m.items()):
            if k == "off-CPU":
                continue
            calls = v.get("calls", 0)
            if k == "free" or mode != "time":
                # counted, not timed: calls x the calibrated cost of one call
                model = free_model if k == "free" else malloc_model
                p = {"time_ns": calls * model["ns_per_call"] if model else None,
                     "method": "estimated"}
            else:
                # a call whose span went untimed (the mem layer's rule: its off-CPU time exceeded it) added
                # no time, so no window is subtracted for it
                untimed = get(fns.get("malloc_untimed", {}), k)
                p = correct_by_window(v.get("time_ns", 0), calls - untimed, c["pair_window"],
                                      c["pair_ci"], PAIR_SOURCE)
                p["method"] = "measured"
                if untimed:
                    p["untimed_calls"] = untimed
            p.update(calls=calls, bytes=v.get("bytes", 0))
            funcs[k] = p
        timed = [p for p in funcs.values() if p["method"] == "measured"]
        cat = {"calls": sum(p["calls"] for p in funcs.values()),
               "calls_method": "probed",
               "bytes": sum(p["bytes"] for p in funcs.values()),
               "time_ns": sum_known(p["time_ns"] for p in funcs.values()),
               "method": "measured" if timed and len(timed) == len(funcs) else "estimated",
               "functions": funcs,
               "timed_calls": sum(p["calls"] for p in timed),
               "off_cpu_ns": get(m, "off-CPU", "time_ns"),
               "basis": "the allocator calls the probes saw (malloc, calloc, realloc, "
                        "*memalign): on-CPU time between entry and return probes minus hits x "
                        "the calibrated probe window (--mode count: calls x the calibrated "
                        "cost of one malloc, estimated); free is apart, in free_estimated"
                        + ("" if (malloc_model or mode == "time") else
                           "; --mode count without a calibrated malloc cost: time unknown")}
        if timed:
            corr = combine(timed)
            cat.update({k: corr[k] for k in ("time_raw_ns", "time_hits", "correction_ns",
                                              "corrected", "floored", "correction_dominates")})
            if "time_ci95_ns" in corr and len(timed) == len(funcs):
                cat["time_ci95_ns"] = corr["time_ci95_ns"]
            cat["probe_window_ns"] = c["pair_window"]
            cat["probe_window_source"] = PAIR_SOURCE
        out["malloc"] = cat
        # free is not probed: every block allocated is taken as freed once
        allocs = sum(p["calls"] for k, p in funcs.items() if k not in ("realloc", "free"))
        if "free" not in funcs and allocs:
            out["free_estimated"] = {
                "calls": allocs, "calls_method": "estimated", "bytes": None,
                "time_ns": allocs * free_model["ns_per_call"] if free_model else None,
                "method": "estimated",
                "basis": FREE_BASIS + ("" if free_model else "; free not calibrated: time "
                                                             "unknown")}
    v = fns.get("vm")
    if v:
        sc = {}
        timed = fns.get("vm_timed", {})
        for k, x in sorted(v.items()):
            if k in ("page_fault_user", "off-CPU"):
                continue
            hits = get(timed, k)
            p = correct_by_window(x.get("time_ns", 0), hits, c["sys_window"], c["sys_ci"],
                             SYS_SOURCE)
            p.update(calls=x.get("calls", 0), bytes=x.get("bytes", 0))
            sc[k] = p
        faults = get(v, "page_fault_user")
        fault_model = costs.get("page_fault")
        fault_ns = (faults * fault_model["ns_per_call"] if fault_model else None) if faults \
            else 0
        corr = combine(sc.values())
        fig = {"calls": sum(p["calls"] for p in sc.values()),
               "bytes": sum(p["bytes"] for p in sc.values())}
        fig.update(corr)
        fig.update({
            "time_ns": add(corr["time_ns"], fault_ns),
            "syscalls_time_ns": corr["time_ns"],
            # the syscalls are measured, the page faults' time is an estimate: when there are
            # faults, the sum is both (syscalls_time_ns and page_fault_time_ns keep them apart)
            "method": "measured+estimated" if faults else "measured",
            "probe_window_source": SYS_SOURCE, "syscalls": sc,
            "page_faults": faults, "page_fault_time_ns": fault_ns,
            "page_fault_method": "estimated",
            "off_cpu_ns": get(v, "off-CPU", "time_ns"),
            "basis": "memory syscalls timed at their tracepoints, on-CPU (the time switched "
                     "out inside them is off_cpu_ns), not when nested in an allocator call, "
                     "whose time already holds them; minus hits x the calibrated window; user "
                     "page faults x a calibrated per-fault cost (first touch of an anonymous "
                     "page), estimated"
                     + ("" if fault_model or not faults
                        else "; page faults not calibrated: time unknown")})
        if "time_ci95_ns" in fig and fault_ns is not None:
            fig["time_ci95_ns"] = [x + fault_ns for x in fig["time_ci95_ns"]]
        out["vm"] = fig
    return out


def growth(raw_grow: Dict[tuple, int], pid: str, bucket_s: float = 0.25) -> Optional[list]:
    """[[t_seconds, bytes], ...] of one pid, in time order."""
    pts = sorted((int(b), int(v)) for (p, b), v in raw_grow.items() if p == pid)
    return [[round(b * bucket_s, 3), v] for b, v in pts] or None


def process_figures(entry: dict, raw, pid: str, heap: Optional[dict]) -> None:
    """One process's memory figures beside its categories (entry: its by_pid entry): the
    page faults in the Java heap in its vm category (heap_faults), its growth timelines."""
    vm = entry["categories"].get("vm")
    if vm is not None:
        heap_faults(vm, raw.keyed("fault_region"), pid, heap)
    grow = {k: growth(raw.keyed(m), pid) for k, m in
            (("vm_bytes", "grow_vm"), ("malloc_bytes", "grow_malloc"))}
    if any(grow.values()):
        entry["memory_growth"] = dict(grow, bucket_s=0.25)


REGION_SHIFT = 21           # @fault_region[pid, region]: region = the fault's address >> 21
HEAP_FAULTS_METHOD = (
    "user page faults counted by the 2 MiB region of their address (address >> 21) while "
    "counting ran; a region that overlaps the Java heap's range (the manifest's java_heap, read "
    "from the JVM with jcmd GC.heap_info after counting stopped) counts whole, so the figure "
    "can include faults up to 2 MiB outside either end of the heap, none when both ends are "
    "2 MiB aligned (the heap is reserved at its collector's alignment, G1's region size of 1 MiB "
    "or more; the ends read from OpenJDK 17 and 25 with G1, Parallel and Serial were 2 MiB "
    "aligned); the range is the one at the stop, the whole reserved heap")


def heap_faults(vm: dict, regions: Dict[tuple, int], pid: str, heap: Optional[dict]) -> None:
    """Adds page_faults_heap to one process's vm category: its faults whose 2 MiB region
    overlaps the Java heap's [start, end) (heap: the manifest's java_heap, None when the
    recording did not read it). None, with page_faults_heap_unknown saying why, when the
    range is unknown; the keys are left out for a process other than the JVM whose heap was
    read. page_faults_unregioned: faults counted but not by region (a full counts map; the
    heap figure is then a lower bound)."""
    if heap is not None and str(heap.get("pid")) != pid:
        return
    mine = {int(r): int(n) for (p, r), n in regions.items() if p == pid}
    faults = vm.get("page_faults") or 0
    why = None
    if heap is None:
        why = "the recording did not read the Java heap's address range"
    elif heap.get("start") is None or heap.get("end") is None:
        why = heap.get("unknown") or "the Java heap's address range is unknown"
    elif faults and not mine:
        why = ("the probes' output has no faults by region (@fault_region: objects built "
               "before the mem layer counted them)")
    if why is not None:
        vm.update(page_faults_heap=None, page_faults_heap_unknown=why)
        return
    first, last = heap["start"] >> REGION_SHIFT, (heap["end"] - 1) >> REGION_SHIFT
    vm["page_faults_heap"] = sum(n for r, n in mine.items() if first <= r <= last)
    vm["page_faults_heap_method"] = HEAP_FAULTS_METHOD
    unregioned = faults - sum(mine.values())
    if unregioned > 0:
        vm["page_faults_unregioned"] = unregioned


ZLIB_METHOD = ("counted by uprobes on zlib's inflateInit2_, inflateInit_, deflateInit2_ and "
               "deflateInit_ (count only; libz.so.1, or the JDK's libzip.so when zlib is "
               "inside it); a stream is counted at its inflateInit2_ or deflateInit2_ call, "
               "which inflateInit_ and deflateInit_ make (functions: the calls of each)")


def zlib_figures(entry: dict, calls: Dict[str, dict], state: Optional[dict]) -> None:
    """Adds zlib_streams to one process's malloc category: the native zlib streams it created
    ({"calls", "inflate", "deflate", "functions"}), one per java.util.zip.Inflater or Deflater.
    None with zlib_streams_unknown saying why when they could not be counted (no zlib library
    probed: state["unknown"]). state: the manifest's probes.zlib; None (the mem layer did not
    run, or a recording made before jvmos counted them) or a process without a malloc
    category: nothing is added. calls: the process's "zlib" figures by function."""
    malloc = entry["categories"].get("malloc")
    if state is None or malloc is None:     # a stream's init mallocs: no malloc, no stream
        return
    if state.get("unknown"):
        malloc.update(zlib_streams=None, zlib_streams_unknown=state["unknown"])
        return
    funcs = {k: int(v.get("calls", 0)) for k, v in sorted(calls.items())}
    kinds = {kind: funcs.get(sym, 0) for kind, sym in ZLIB_STREAM_INITS.items()}
    malloc["zlib_streams"] = {"calls": sum(kinds.values()), **kinds, "functions": funcs,
                              "method": ZLIB_METHOD}
