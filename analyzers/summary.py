"""raw probe maps (Records: jvmos.engine.decode) + platform constants -> summary.json (schema jvmos.summary/1).

Each category carries `method`: "measured" (counted or timed by a probe), "estimated"
(bytes x a calibrated cost, because the thing itself cannot be probed) or "sampled".
`calls` counts what the probes saw; a count that was not probed is a category of its own
(free_estimated, calls_method "estimated").

Measured times are corrected for the probe effect per process (analyzers/correction.py);
the totals are the sums of the per-process figures, so calls, bytes, time_ns and the
guaranteed overhead by resource of by_pid add up to the totals, and a process whose time was
floored at 0 leaves the total floored. A time that needs a calibration that is missing is
null, named in `warnings` and in totals.guaranteed_overhead_unknown.
"""
from collections import defaultdict
from typing import Dict, Optional

from jvmos.analyzers import census, io, links, mem, threads
from jvmos.analyzers.correction import combine, validate_costs, validate_probes
from jvmos.analyzers.overhead import probe_overhead
from jvmos.analyzers.records import Records
from jvmos.catalogue import CATEGORIES, GUARANTEED, GUARANTEED_IO
from jvmos.catalogue import IO_SYSCALL_OF_WRAPPER, SPAN_CATEGORIES
from jvmos.probelist import symbol_of_probe

SCHEMA = "jvmos.summary/1"


def _blank():
    return {"calls": 0, "bytes": 0, "time_ns": 0}


def _per_pid(raw: Records, addresses: Dict[str, str], dropped: list):
    """{pid: {cat: {symbol: {calls, bytes, time_ns}}}} from @calls/@bytes/@time. A time sum
    that came out negative (raw.negative: a span's bookkeeping went wrong in the probes) is
    not added: it goes to `dropped` as (map, pid, category, symbol, ns), and the summary says
    so."""
    out = defaultdict(lambda: defaultdict(lambda: defaultdict(_blank)))
    # @ncalls/@ntime are keyed by a name rather than the probe (bpftrace cannot mix the two
    # key types in one map); @wall is the whole span of a time that excludes off-CPU waits
    for field, mapname in (("calls", "calls"), ("bytes", "bytes"), ("time_ns", "time"),
                           ("calls", "ncalls"), ("time_ns", "ntime"), ("wall_ns", "wall"),
                           ("calls", "nhits"), ("untimed_calls", "untimed"),
                           ("untimed_calls", "in_progress")):
        for (pid, cat, probe), v in raw.keyed(mapname).items():
            sym = symbol_of_probe(probe, addresses)
            if sym.startswith("jni_"):
                sym = sym[4:]
            if int(v) < 0:
                dropped.append((mapname, pid, cat, sym, int(v)))
                continue
            f = out[pid][cat][sym]
            f[field] = f.get(field, 0) + int(v)
    return out


def _categories(fns, paths, confirmed: int, costs: dict, jvm_key: Optional[str], mode: str,
                probes: Optional[dict] = None, thr_incl: int = 0, scope: str = "host") -> dict:
    """One process's categories, each resource's from its own analyzer."""
    cats = {}
    cats.update(threads.categories(fns, thr_incl, probes, mode, scope))
    cats.update(links.categories(fns, probes, scope))
    cats.update(mem.categories(fns, probes, costs, mode))
    cats.update(io.categories(fns, paths, confirmed, costs, jvm_key, mode))
    cats.update(census.categories(fns))
    return cats


def missed_note(what: str, n: int) -> str:
    """What n @missed events of one kind mean: a return seen without its entry (the call was
    in progress when tracing began), or a span whose off-CPU time came out longer than the
    span (a context-switch event the probes missed). Their calls are counted, their time is
    in no figure."""
    if what == "usdt_args":
        return (f"{n:,} JNI copy call(s) counted through a USDT probe whose length or buffer "
                "argument could not be read: counted, their bytes not")
    if what.endswith("_offcpu_exceeds_span"):
        return (f"{n:,} {what[:-len('_offcpu_exceeds_span')]} span(s) whose off-CPU time came "
                "out longer than the span (a context-switch event the probes missed): counted, "
                "their time not measured")
    return (f"{n:,} {what.replace('_', ' ')} event(s): a call was in progress when tracing "
            "began (counted, its time not measured)")


def build(raw: Records, *, wall_ns: int, status: str, addresses: Dict[str, str],
          costs: dict, jvms_by_pid: Dict[str, str], exit_code=None,
          probes: Optional[dict] = None, mode: str = "time", scope: str = "host",
          java_heap: Optional[dict] = None, zlib: Optional[dict] = None) -> dict:
    """jvms_by_pid: pid -> JDK home of the libjvm that pid mapped (for per-JDK constants).
    java_heap: the manifest's (the heap's range, or why not); None: the recording has none.
    zlib: the manifest's probes.zlib (the zlib libraries probed, or why none: mem.zlib_figures);
    None: no zlib_streams figure."""
    validate_probes(probes)
    validate_costs(costs)
    warnings = []
    dropped = []
    fns = _per_pid(raw, addresses, dropped)
    pathmap = defaultdict(lambda: defaultdict(lambda: {"calls": 0, "bytes": 0}))
    for (pid, p, d), v in raw.keyed("path_bytes").items():
        pathmap[pid][(p, d)]["bytes"] += int(v)
    for (pid, p, d), v in raw.keyed("path_calls").items():
        pathmap[pid][(p, d)]["calls"] += int(v)
    confirmed = {k[0]: int(v) for k, v in raw.keyed("nio_confirmed").items()}
    execs = {k[0]: v for k, v in raw.keyed("exec").items()}
    incl = {k[0]: v for k, v in raw.keyed("thr_incl").items()}

    by_pid = {}
    offcpu_ns, offcpu_n = raw.keyed("offcpu_ns"), raw.keyed("offcpu_n")
    pids = sorted(set(fns) | set(pathmap) | set(execs) | {k[0] for k in offcpu_n},
                  key=lambda p: int(p))
    for pid in pids:
        cats = _categories(fns.get(pid, {}), pathmap.get(pid, {}), confirmed.get(pid, 0),
                           costs, jvms_by_pid.get(pid), mode, probes, int(incl.get(pid, 0)),
                           scope)
        io_bytes = cats.get("io_syscall", {}).get("bytes", 0)
        by_pid[pid] = {"exec": execs.get(pid), "jvm": jvms_by_pid.get(pid),
                       "categories": cats, "paths": io.paths(pathmap.get(pid, {}), io_bytes)}
        csw = threads.context_switches(raw.keyed("csw"), pid)
        if csw:
            by_pid[pid]["context_switches"] = csw
        off = threads.off_cpu(offcpu_ns, offcpu_n, pid)
        if off:
            by_pid[pid]["off_cpu"] = off
        mem.process_figures(by_pid[pid], raw, pid, java_heap)
        mem.zlib_figures(by_pid[pid], fns.get(pid, {}).get("zlib", {}), zlib)

    # each process's measured times are corrected on its own figures; the totals are then
    # the sums of the per-process corrected figures (a floored process stays floored in the
    # total, and calls, bytes and times of the processes add up to the totals)
    for pid in pids:
        io.correct_times(by_pid[pid]["categories"], probes, mode, scope)
    unknown_negative(dropped, by_pid, warnings)
    for pid in pids:
        split_spans(by_pid[pid]["categories"], by_pid[pid].get("off_cpu"))
    cats_total: Dict[str, dict] = {}
    for name in CATEGORIES:
        per = [(pid, by_pid[pid]["categories"][name]) for pid in pids
               if name in by_pid[pid]["categories"]]
        if per:
            cats_total[name] = merge_figures([c for _, c in per])
            unknown = [pid for pid, c in per if c.get("time_ns") is None]
            if unknown and cats_total[name].get("time_ns") is not None:
                cats_total[name]["time_unknown_pids"] = unknown
                warnings.append(f"{name}: time unknown for process(es) {', '.join(unknown)}; "
                                f"its total time_ns is the sum over the other processes only")
    if "jni_call" in cats_total:
        census.finish_total(cats_total["jni_call"])
    paths_total = {"jni": {"calls": 0, "bytes": 0}, "nio": {"calls": 0, "bytes": 0},
                   "other": {"bytes": 0}}
    for pid in pids:
        for p, v in by_pid[pid]["paths"].items():
            for k, x in v.items():
                if isinstance(x, bool):
                    paths_total[p][k] = paths_total[p].get(k, False) or x
                else:
                    paths_total[p][k] = paths_total[p].get(k, 0) + x
    uncorrected = [n for n, c in cats_total.items()
                   if c.get("corrected") is False and c.get("time_ns") is None
                   and c.get("time_raw_ns") is not None]
    if uncorrected:
        warnings.append("probe costs not calibrated (jvmos calibrate --probes): the corrected "
                        "times of " + ", ".join(uncorrected) + " are unknown (null); "
                        "time_raw_ns keeps what the probes measured, an upper bound")

    # the probes' cost is CPU time of the traced threads: the slowdown it makes is set beside
    # the target's CPU time by the recorder, which measured that (cputime.overhead_totals)
    overhead = probe_overhead(raw, probes, mode, scope)

    gtot, gwarn = guaranteed_totals(cats_total, by_pid, wall_ns)
    warnings += gwarn
    if overhead.get("probe_overhead_warning"):
        warnings.append(overhead["probe_overhead_warning"])
    sw = [by_pid[p]["context_switches"] for p in pids if "context_switches" in by_pid[p]]
    missed = defaultdict(int)
    for (pid, what), v in raw.keyed("missed").items():
        missed[what] += int(v)
    return {
        "schema": SCHEMA,
        "status": status,
        "exit_code": exit_code,
        "totals": {"wall_ns": wall_ns,
                   **gtot,
                   "context_switches": ({"voluntary": sum(x["voluntary"] for x in sw),
                                         "involuntary": sum(x["involuntary"] for x in sw),
                                         "threads": sum(x["threads"] for x in sw)}
                                        if sw else None),
                   "off_cpu": threads.off_cpu_total({p: by_pid[p].get("off_cpu")
                                                     for p in pids}),
                   "processes": len(pids),
                   "lost_events": raw.lost_events,
                   "missed_events": dict(missed),
                   **({"negative_sums_dropped": [{"map": m, "key": f"{p},{c},{f}", "value": v}
                                                 for m, p, c, f, v in dropped]}
                      if dropped else {}),
                   "mode": mode,
                   **overhead},
        "categories": {c: cats_total[c] for c in CATEGORIES if c in cats_total},
        "paths": paths_total,
        "by_pid": by_pid,
        "constants": costs,
        "probe_costs": probes,
        "warnings": warnings,
    }


def build_sampled(samp: Optional[dict], *, wall_ns: int, status: str, exit_code=None,
                  warnings=None) -> dict:
    """summary.json of a --mode sample recording (no probe): each sampled category's time is
    samples x interval with its 95% error (jvmos.sampling), calls and bytes unknown (null);
    the guaranteed overhead is the sum of the sampled copy categories, unknown (null) when no
    sample fell in any of them."""
    cats = {}
    for name, c in ((samp or {}).get("categories") or {}).items():
        cats[name] = {"calls": None, "bytes": None, "time_ns": c["time_ns"],
                      "time_err95_ns": c["time_err95_ns"], "samples": c["samples"],
                      "share_pct": c["share_pct"], "method": "sampled"}
    # the copy categories a sample can stand for: the guaranteed overhead of I/O
    present = [c for c in GUARANTEED_IO if c in cats]
    # no sample in any copy category: below the sampler's resolution, not 0 ns
    g = sum(cats[c]["time_ns"] for c in present) if present else None
    return {"schema": SCHEMA, "status": status, "exit_code": exit_code,
            "totals": {"wall_ns": wall_ns, "mode": "sample",
                       "guaranteed_overhead_ns": g,
                       "guaranteed_overhead_categories": present,
                       "probe_overhead_ns": None, "slowdown_pct": None,
                       "processes": len((samp or {}).get("by_pid", {})),
                       "guaranteed_overhead_pct": (100.0 * g / wall_ns
                                                   if wall_ns and g is not None else None)},
            "categories": cats, "paths": {}, "by_pid": {}, "sampling": samp,
            "warnings": (warnings if warnings is not None else []) + (
                [] if present or not cats else
                ["no sample fell in a copy category (jni_copy, nio_copy, kernel_copy): the "
                 "guaranteed overhead is below the sampler's resolution, unknown (null), not "
                 "0 ns"])}


def guaranteed_totals(cats_total: dict, by_pid: dict, wall_ns) -> tuple:
    """The guaranteed overhead of a set of categories, as the totals carry it, and the warning
    an unknown term gives; each process of by_pid gets its own guaranteed_by_resource. A sum
    with an unknown term is unknown: the known part is kept apart under its own name, and every
    term is named with its method (probed and estimated apart, e.g. malloc, free_estimated)."""
    by_resource, unknown_terms = guaranteed_by_resource(cats_total)
    for p in by_pid.values():
        p["guaranteed_by_resource"] = guaranteed_by_resource(p["categories"])[0]
    g_known = sum(by_resource.values())
    g = None if unknown_terms else g_known
    warnings = []
    if unknown_terms:
        warnings.append("guaranteed overhead unknown: the time of " + ", ".join(unknown_terms)
                        + " is unknown (not calibrated); "
                        "guaranteed_overhead_known_ns sums the other terms, a lower bound")
    return {"guaranteed_overhead_ns": g,
            "guaranteed_overhead_known_ns": g_known,
            "guaranteed_overhead_pct": (100.0 * g / wall_ns
                                        if wall_ns and g is not None else None),
            "guaranteed_overhead_categories": [c for names in GUARANTEED.values()
                                               for c in names if c in cats_total],
            "guaranteed_by_resource": by_resource,
            "guaranteed_overhead_terms": {
                r: [{"category": c, "method": cats_total[c]["method"],
                     "time_ns": cats_total[c].get("time_ns")}
                    for c in names if c in cats_total]
                for r, names in GUARANTEED.items()},
            "guaranteed_overhead_unknown": unknown_terms}, warnings


def guaranteed_by_resource(cats: dict):
    """({resource: ns}, [categories of unknown time]) of one set of categories: the sum of
    the known times of each resource's categories."""
    by, unknown = {}, []
    for resource, names in GUARANTEED.items():
        present = [c for c in names if c in cats]
        unknown += [c for c in present if cats[c].get("time_ns") is None]
        ts = [cats[c]["time_ns"] for c in present if cats[c].get("time_ns") is not None]
        if ts:
            by[resource] = sum(ts)
    return by, unknown


# keys of a figure that are the same for every process, not summed
_SHARED = ("probe_window_ns",)
# keys recomputed from the summed figures
_CORRECTION_KEYS = ("time_ns", "time_raw_ns", "time_hits", "correction_ns", "corrected",
                    "floored", "correction_dominates", "time_ci95_ns")


def unknown_negative(dropped: list, by_pid: dict, warnings: list) -> None:
    """A time that summed negative is no time: its category's time is unknown (null) in that
    process, and a warning says so."""
    for mapname, pid, cat, sym, v in dropped:
        warnings.append(f"{mapname}[{pid},{cat},{sym}] summed to {v / 1e6:,.3f} ms, a negative "
                        "figure (the probes' bookkeeping of a span went wrong): that category's "
                        "time in that process is unknown (null); its calls are counted")
        c = (by_pid.get(pid) or {}).get("categories", {}).get(cat)
        if c is not None:
            c["time_ns"] = None
            c["time_unknown_reason"] = (f"{mapname} summed to {v} ns (negative: the probes' "
                                        "bookkeeping of a span went wrong)")


SPAN_BASIS = ("estimated: the span (corrected) less the time the threads layer saw its "
              "threads off the CPU in the same syscalls, blocked or preempted (sched_switch with "
              "the syscall in progress); that off-CPU time covers every call of those syscalls, "
              "the ones the span did not time too (made without libc's wrappers, or in "
              "progress at the start), so the on-CPU part is, if anything, low; floored at 0 "
              "(on_cpu_floored)")


def split_spans(cats: dict, off: Optional[dict]) -> None:
    """A span category's time (io_syscall, sync: entry to return, blocking included) split
    into the part blocked in those syscalls, from the off-CPU section (the threads layer's
    sched_switch, by syscall), and the rest, on-CPU (an estimate, labelled). Without an
    off-CPU section (no threads layer) nothing is split: the span stays a span."""
    by = (off or {}).get("by_syscall") or {}
    if not by:
        return
    for name in SPAN_CATEGORIES:
        c = cats.get(name)
        if not c or c.get("time_ns") is None:
            continue
        if name == "sync":
            names = {"futex"}
        else:
            names = {IO_SYSCALL_OF_WRAPPER.get(k, k) for k in (c.get("syscalls") or {})}
        blocked = sum((by.get(n) or {}).get("blocked_ns", 0) for n in names)
        preempted = sum((by.get(n) or {}).get("preempted_ns", 0) for n in names)
        c["blocked_ns"] = blocked
        c["preempted_in_it_ns"] = preempted
        c["on_cpu_ns"] = max(0, c["time_ns"] - blocked - preempted)
        if c["time_ns"] - blocked - preempted < 0:
            c["on_cpu_floored"] = True
        c["on_cpu_basis"] = SPAN_BASIS


def merge_figures(figs: list) -> dict:
    """The sum over processes of one figure (a category, a function, a part): numbers add
    (None only when every process has None), flags are true if any process's is, texts are
    taken as they are; a corrected figure's correction keys are recombined (combine()), so a
    floored process keeps the total floored and the intervals add up."""
    out = {}
    keys = []
    for f in figs:
        keys += [k for k in f if k not in keys]
    for k in keys:
        vals = [f[k] for f in figs if k in f]
        if k == "time_ci95_ns":
            continue
        if all(isinstance(v, dict) for v in vals):
            out[k] = merge_figures(vals)
        elif k in _SHARED or all(isinstance(v, str) for v in vals):
            out[k] = vals[0]
        elif all(isinstance(v, bool) for v in vals):
            out[k] = any(vals)
        elif all(v is None or isinstance(v, (int, float)) for v in vals):
            known = [v for v in vals if v is not None]
            out[k] = sum(known) if known else None
        else:
            out[k] = vals[0]
    if "time_raw_ns" in out and "corrected" in out:
        done = combine([f for f in figs if "time_raw_ns" in f])
        out.update({k: done[k] for k in _CORRECTION_KEYS if k in done})
    return out

