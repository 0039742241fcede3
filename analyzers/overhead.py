"""The probe effect: what jvmos's own probes cost the traced processes.

Every probe that runs in a traced process is a "kind" here (a layer's blocks on one attach
point, or a pair of them): its hits are counted exactly by the scripts, either in a map that
already counts those events (@calls, @ncalls, @csw) or in @hits[pid, kind], which the scripts
keep for the probes no other map counts. Each kind has a cost per hit that `jvmos calibrate
--probes` measured (the compiled engine's, jvmos/enginecost.py; a recording made with bpftrace
keeps the bpftrace costs of its time, jvmos/probecost.py), and the estimate is the sum of hits
x cost.

A kind whose cost was not calibrated is reported as unknown: its hits are listed, the total
is then null (`probe_overhead_ns`) and only the part that is known is given, under a name
that says so (`probe_overhead_known_ns`). Nothing is taken as 0 ns.

Not charged to the traced processes: sched_process_free (it runs when the kernel frees a task
that has already exited, in whatever context frees it) and the getsid probe that ends a
recording (it fires in jvmos's own process). Probes that fire in other processes (sched_switch
and syscall tracepoints see every task; the mem layer's libc uprobes run in every process
that maps that libc) are not counted either: they slow the machine, not the traced process.
"""
from collections import defaultdict
from typing import Dict, Iterable, Optional, Tuple

from jvmos.analyzers import census, io, links, mem, threads

# kind -> (what one hit is, cost key in --mode time, cost key in --mode count), each layer's
# own in its analyzer (io.KINDS, ...), the common programs' here. A cost key names an entry of the
# platform file's "engine_probes" section (or "probes", bpftrace's); "uretprobe" is derived (uprobe_pair - uprobe). Keys marked
# borrowed are the cost of a minimal probe of the same shape (one map update), not of that
# kind's own blocks: the estimate says so per kind.
COMMON_KINDS = {
    "common:task_newtask": ("a task created by a traced process (thread or process)",
                            "thread_common_hit", "thread_common_hit"),
    "common:sched_process_exit": ("a traced thread exiting", "thread_common_hit",
                                  "thread_common_hit"),
    "common:sched_process_exec": ("an exec in a traced process (the common program, and the mem "
                                  "layer's when loaded)", "tracepoint", "tracepoint"),
}
# the analyzers in the order they count hits: each counts its own layer's probes
ANALYZERS = (io, census, links, threads, mem)
KINDS: Dict[str, Tuple[str, str, str]] = {k: v for a in ANALYZERS for k, v in a.KINDS.items()}
KINDS.update(COMMON_KINDS)

# where each cost key came from in a platform file calibrated with the retired bpftrace scripts
# (the engine's calibration carries its own measured_with per key: jvmos/enginecost.py)
MEASURED_WITH = {
    "jni_copy_time_hit": "io.bt's JNI copy blocks on probecal's copy function (--mode time)",
    "jni_copy_count_hit": "io.bt's JNI copy entry block on probecal's copy function",
    "io_syscall_hit": "io.bt's syscall blocks on write(2) to /dev/null",
    "link_syscall_hit": "links.bt's blocks on close(-1)",
    "sched_switch_links_hit": "links.bt on two threads yielding to each other on one CPU",
    "sched_switch_threads_hit": "threads.bt on two threads yielding to each other on one CPU",
    "sched_switch_mem_hit": "mem.bt on two threads yielding to each other on one CPU",
    "futex_threads_hit": "threads.bt's futex blocks on FUTEX_WAKE with no waiter",
    "span_syscall_threads_hit": "threads.bt's span-syscall blocks on madvise(MADV_NORMAL) "
                                "outside any span",
    "thread_common_hit": "common.bt on pthread_create+join: (probed - bare) / (task_newtask + "
                         "sched_process_exit hits)",
    "malloc_mem_time_hit": "mem.bt's allocator blocks (--mode time) on probecal's function",
    "malloc_mem_count_hit": "mem.bt's allocator entry block on probecal's function",
    "vm_syscall_mem_hit": "mem.bt's syscall blocks on madvise(MADV_NORMAL)",
    "page_fault_mem_hit": "mem.bt on first touches of fresh anonymous pages",
}
# kinds whose cost is another kind's calibration: what it was measured on
BORROWED_KIND = {
    "io:syscall_upair": "borrowed: io.bt's JNI copy blocks (a uprobe+uretprobe pair with the "
                        "same bookkeeping) on probecal's copy function, --mode time",
    "mem:vm_syscall_upair": "borrowed: a minimal uprobe (+uretprobe in --mode time) on "
                            "probecal's function",
    "mem:zlib_init": "borrowed: a minimal uprobe (filter + one count) on probecal's function "
                     "(zlib_init's own work is one stats update; a zlib init is rare: no "
                     "calibration of its own)",
}
BORROWED = {
    "uprobe_pair": "borrowed: a minimal uprobe+uretprobe pair on probecal's function",
    "uprobe": "borrowed: a minimal uprobe (one count()) on probecal's function",
    "tracepoint": "borrowed: a minimal tracepoint (one count()) on getpid",
    "uretprobe": "borrowed: minimal uprobe+uretprobe pair minus a minimal uprobe",
}


def hits_by_pid(raw, scope: str = "host") -> Dict[str, Dict[str, int]]:
    """{pid: {kind: hits}} for every kind that fired in a traced process. scope process: the
    I/O and memory calls were probed on libc's wrappers (uprobe pairs), not tracepoints."""
    per = defaultdict(lambda: defaultdict(int))

    def add(kind, counts: Dict[str, int]):
        for pid, n in counts.items():
            if n:
                per[pid][kind] += n

    for analyzer in ANALYZERS:
        for kind, counts in analyzer.probe_hits(raw, scope):
            add(kind, counts)
    # the probes no other map counts: the common programs and the layers' extra ones
    for (pid, kind), n in raw.keyed("hits").items():
        if n:
            per[pid][kind] += int(n)
    mem.adjust_hits(per)
    return {pid: dict(k) for pid, k in per.items()}


def cost_of(key: str, probes: Optional[dict]) -> Tuple[Optional[dict], str]:
    """({"ns", "ci95_ns", "source"}, "") for a cost key, or (None, why) when there is no
    usable calibration: none at all, or a mean that is not positive (a probe cannot make its
    target faster: the calibration did not resolve the cost from the noise)."""
    p = probes or {}
    if key == "uretprobe":
        a, b = (p.get("uprobe_pair") or {}), (p.get("uprobe") or {})
        if a.get("mean_ns") is None or b.get("mean_ns") is None:
            return None, "not calibrated (jvmos calibrate --probes)"
        ci = None
        if a.get("ci95_ns") and b.get("ci95_ns"):
            ci = [a["ci95_ns"][0] - b["ci95_ns"][1], a["ci95_ns"][1] - b["ci95_ns"][0]]
        c = {"ns": a["mean_ns"] - b["mean_ns"], "ci95_ns": ci, "source": BORROWED[key]}
    else:
        e = p.get(key) or {}
        if e.get("mean_ns") is None:
            return None, "not calibrated (jvmos calibrate --probes)"
        # a calibration that says what it measured (the compiled engine's) is its own source
        c = {"ns": e["mean_ns"], "ci95_ns": e.get("ci95_ns"),
             "source": ((f"borrowed: {e['measured_with']}" if e.get("borrowed") else
                         f"measured: {e['measured_with']}") if e.get("measured_with") else
                        BORROWED.get(key) or f"measured: {MEASURED_WITH.get(key, key)}"),
             "calibration_key": key}
    if c["ns"] <= 0:
        ci = c.get("ci95_ns")
        return None, (f"calibration did not resolve it: {key} mean {c['ns']:.0f} ns"
                      + (f", 95% interval [{ci[0]:.0f}, {ci[1]:.0f}] ns" if ci else "")
                      + " (recalibrate on a quieter machine, or with more --trials)")
    return c, ""


def estimate(hits: Dict[str, int], probes: Optional[dict], mode: str) -> dict:
    """hits x cost per kind. Unknown kinds (no calibration, or a kind this module does not
    know) are listed and make the total null; the known part is kept apart."""
    costs, unknown = {}, {}
    known_ns, lo_ns, hi_ns, ci_ok = 0.0, 0.0, 0.0, True
    own = set((probes or {}).get("own_kinds") or ())
    for kind, n in sorted(hits.items()):
        spec = KINDS.get(kind)
        # a calibration may measure a kind on its own programs under a key of its own (the
        # compiled engine's io:uprobe): that key, else the kind's usual one
        key = ((probes or {}).get("kind_keys") or {}).get(kind) or (
            spec and (spec[1] if mode == "time" else spec[2]))
        c, why = (cost_of(key, probes) if spec else (None, "kind not known to jvmos"))
        if c is None:
            unknown[kind] = n
            costs[kind] = {"ns": None, "source": "unknown: " + why}
            continue
        costs[kind] = dict(c, what=spec[0], total_ns=n * c["ns"])
        if kind in BORROWED_KIND and kind not in own:
            costs[kind]["source"] = BORROWED_KIND[kind]
        elif own and kind not in own and not costs[kind]["source"].startswith("borrowed"):
            # a calibration that names its own kinds: any other kind's cost was measured on
            # other programs (a minimal probe of the same shape), so it is borrowed
            costs[kind]["source"] = "borrowed: " + costs[kind]["source"].removeprefix(
                "measured: ")
        known_ns += n * c["ns"]
        if c.get("ci95_ns"):
            lo_ns += n * c["ci95_ns"][0]
            hi_ns += n * c["ci95_ns"][1]
        else:
            ci_ok = False
    total = known_ns if not unknown else None
    out = {"probe_overhead_ns": total,
           "probe_overhead_known_ns": known_ns,
           "probe_overhead_ci95_ns": [lo_ns, hi_ns] if (ci_ok and total is not None) else None,
           "probe_hits": dict(sorted(hits.items())),
           "probe_cost_per_hit_ns": costs,
           "probe_overhead_unknown_kinds": unknown}
    if unknown:
        out["probe_overhead_warning"] = (
            f"{len(unknown)} probe kind(s) have no usable calibrated cost per hit "
            f"({', '.join(sorted(unknown))}: {sum(unknown.values()):,} hits): the probe effect is "
            "unknown; probe_overhead_known_ns covers the other kinds only")
    return out


def probe_overhead(raw, probes: Optional[dict], mode: str, scope: str = "host") -> dict:
    """Totals over the traced processes, and each pid's own estimate."""
    per = hits_by_pid(raw, scope)
    total: Dict[str, int] = defaultdict(int)
    for k in per.values():
        for kind, n in k.items():
            total[kind] += n
    if not probes:
        return {"probe_overhead_ns": None, "slowdown_pct": None,
                "probe_hits": dict(sorted(total.items())),
                "probe_hits_by_pid": {pid: dict(sorted(per[pid].items()))
                                      for pid in sorted(per, key=int)},
                "probe_overhead_warning": "no probe calibration: the probe effect is unknown "
                                          "(jvmos calibrate --probes)"}
    out = estimate(dict(total), probes, mode)
    order = sorted(per, key=int)
    out["probe_hits_by_pid"] = {pid: dict(sorted(per[pid].items())) for pid in order}
    out["probe_overhead_by_pid"] = {pid: estimate(per[pid], probes, mode)["probe_overhead_ns"]
                                    for pid in order}
    return out


def kinds_of(hits: Iterable[str]) -> Dict[str, str]:
    """What one hit of each kind is (for reports)."""
    return {k: KINDS[k][0] if k in KINDS else "unknown kind" for k in hits}
