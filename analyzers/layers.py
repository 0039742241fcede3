"""The threads, links and memory categories of summary.json, from the per-probe figures.

Each function takes `fns` ({category: {what: {calls, time_ns, bytes, wall_ns}}} of one pid)
and the calibrated probe costs, and returns finished categories. Measured times are
corrected for the probe effect with correction.correct(), the one definition every layer
uses: the raw value, the hits behind it and what was subtracted are all kept, a floored value
keeps its flag and an interval, and a correction whose probe cost was not calibrated leaves
the time unknown (None).

Probe costs used (from `jvmos calibrate --probes`). These layers have no windows of their
own: they borrow the io layer's, because their bookkeeping is of the same kind, and every
corrected figure names the window it borrowed in `probe_window_source`:
  pair_hit, pair_window   a uprobe+uretprobe pair with map bookkeeping (jni_copy_time_*)
  sys_hit, sys_window     a syscall tracepoint pair with bookkeeping (io_syscall_*)
  uprobe                  a bare entry uprobe
A span's raw time holds its own window, plus, for every probe nested in it, the part of
that probe's cost that falls outside the nested probe's own window (hit - window).
"""
from typing import Dict, Optional

from jvmos.analyzers.correction import combine, correct, probe_ci, probe_cost, sum_known

PAGE = 4096

PAIR_SOURCE = ("jni_copy_time_window (borrowed: same uprobe+uretprobe pair bookkeeping as "
               "the io layer's JNI copy probes)")
SYS_SOURCE = ("io_syscall_window (borrowed: same tracepoint-pair bookkeeping as the io "
              "layer's syscall probes)")
NESTED_SOURCE = ("; plus, for each probe nested in the span, its hit minus its window "
                 "(jni_copy_time_hit - jni_copy_time_window, io_syscall_hit - "
                 "io_syscall_window; borrowed from the io layer's calibration)")


def probe_costs(probes: Optional[dict]) -> Dict[str, Optional[float]]:
    """The calibrated costs the layers use; None for one that was not calibrated."""
    g = lambda k: probe_cost(probes, k)
    # where the JNI copy probes were USDT probes, probecost.probes_for() replaced the
    # jni_copy_time_* figures with the USDT ones and kept the symbol uprobe pair's under
    # symbol_pair_*: the threads and mem layers' uprobe pairs are symbol uprobes
    sym = lambda k: ("symbol_pair_" + k[len("jni_copy_"):]
                     if probes and ("symbol_pair_" + k[len("jni_copy_"):]) in probes else k)
    c = {"pair_hit": g(sym("jni_copy_time_hit")), "pair_window": g(sym("jni_copy_time_window")),
         "sys_hit": g("io_syscall_hit"), "sys_window": g("io_syscall_window"),
         "uprobe": g("uprobe"), "tracepoint": g("tracepoint")}
    c["pair_ci"], c["sys_ci"] = probe_ci(probes, sym("jni_copy_time_window")), \
        probe_ci(probes, "io_syscall_window")
    return c


def _mul(n, cost):
    return None if cost is None else n * cost


def _add(*xs):
    return sum_known(xs)


def _sub(a, b):
    return None if a is None or b is None else a - b


def _window_part(raw, hits, window, ci, source):
    """A time corrected by hits x one borrowed window."""
    return correct(raw, hits, _mul(hits, window), window_ns=window, window_ci=ci, source=source)


def _get(parts, what, field="calls"):
    return (parts.get(what) or {}).get(field, 0) or 0


# ------------------------------------------------------------------ threads

THREAD_LABELS = ("java", "internal")


# count mode drops the return probes that close the JVM and pthread_create spans
COUNT_MODE_THREADS = ("--mode count: the return probes that close the JVM and pthread_create "
                      "spans are not attached, so this time is partial (calls are exact; use "
                      "--mode time); ")


def thread_categories(fns: dict, incl_ns: int, probes: Optional[dict],
                      mode: str = "time") -> dict:
    c = probe_costs(probes)
    tc, tj = fns.get("thread_create", {}), fns.get("thread_jvm", {})
    tw, sy = fns.get("thread_wait", {}), fns.get("sync", {})
    if not (tc or tj or tw or sy):
        return {}
    out = {}
    nested_sys = _sub(c["sys_hit"], c["sys_window"])
    nested_pair = _sub(c["pair_hit"], c["pair_window"])
    # validate_probes() holds uprobe <= pair hit, so this is never negative
    uret_tail = None if _sub(c["pair_hit"], c["uprobe"]) is None \
        else (c["pair_hit"] - c["uprobe"]) / 2

    parts: Dict[str, dict] = {}

    def part(name, raw_what, per_call, source, extra=0.0, calls_what=None, window=None,
             ci=None):
        src = tc if not name.startswith("jvm") else tj
        raw = _get(src, raw_what, "time_ns")
        calls = _get(src, calls_what or raw_what)
        p = correct(raw, calls, _add(_mul(calls, per_call), extra), window_ns=window,
                    window_ci=ci, source=source)
        p["calls"] = calls
        parts[name] = p
        return p

    # allocator probes (mem layer) nested in the spans: their time is left out in the kernel,
    # the part of their cost outside their own window is taken out here
    na = fns.get("thread_nested_alloc", {})
    creates = {lab: _get(tc, f"pthread_create {lab}") for lab in THREAD_LABELS}
    n_creates = sum(creates.values())
    share_of = {lab: (creates[lab] / n_creates if n_creates else 0.0) for lab in THREAD_LABELS}
    for lab in THREAD_LABELS:
        k_create = _get(tc, f"kernel in create {lab}")
        alloc = _get(na, "libc create") * share_of[lab]
        part(f"libc create {lab}", f"libc create {lab}", c["pair_window"],
             PAIR_SOURCE + NESTED_SOURCE,
             extra=_add(_mul(k_create, nested_sys), _mul(alloc, nested_pair)),
             calls_what=f"pthread_create {lab}", window=c["pair_window"], ci=c["pair_ci"])
        part(f"kernel in create {lab}", f"kernel in create {lab}", c["sys_window"], SYS_SOURCE,
             window=c["sys_window"], ci=c["sys_ci"])
        part(f"kernel in start/exit {lab}", f"kernel in start/exit {lab}", c["sys_window"],
             SYS_SOURCE, window=c["sys_window"], ci=c["sys_ci"])
        part(f"kernel exit {lab}", f"kernel exit {lab}", 0.0,
             "none: the span begins at a tracepoint and ends at a switch-out, no probe window")
        # the start-up span ends at an entry uprobe, part of which precedes its clock read;
        # the exit span begins in a uretprobe, part of which follows it
        part(f"libc start {lab}", f"libc start {lab}", _mul(0.5, c["uprobe"]),
             "uprobe / 2 (the calibrated bare entry uprobe, half taken as before its clock read)")
        part(f"libc exit {lab}", f"libc exit {lab}", uret_tail,
             "(jni_copy_time_hit - uprobe) / 2 (the uretprobe's share of the borrowed pair "
             "cost, half taken as after its clock read)")
        part(f"jvm exit {lab}", f"exit {lab}", c["pair_window"], PAIR_SOURCE,
             window=c["pair_window"], ci=c["pair_ci"])
        # probes nested in start/exit spans: share their cost out by raw time
        nested = _add(_mul(_get(tc, f"kernel in start/exit {lab}"), nested_sys),
                      _mul(_get(na, "start/exit") * share_of[lab], nested_pair))
        spans = [parts[f"libc start {lab}"], parts[f"libc exit {lab}"], parts[f"jvm exit {lab}"]]
        total_raw = sum(p["time_raw_ns"] for p in spans)
        if total_raw and nested != 0:
            for p in spans:
                share = _mul(p["time_raw_ns"] / total_raw, nested)
                src = p["probe_window_source"] + NESTED_SOURCE + " (shared out by raw time)"
                p.update(correct(p["time_raw_ns"], p["time_hits"],
                                 _add(p["correction_ns"], share),
                                 window_ns=p.get("probe_window_ns"),
                                 window_ci=c["pair_ci"] if "probe_window_ns" in p else None,
                                 source=src))
    jstart = _get(tj, "start")
    part("jvm start java", "start", c["pair_window"], PAIR_SOURCE + NESTED_SOURCE,
         extra=_add(_mul(_get(tc, "pthread_create java") + _get(na, "jvm start"), nested_pair),
                    _mul(_get(tc, "kernel in jvm start java")
                         + _get(tw, "futex in JVM_StartThread"), nested_sys)),
         window=c["pair_window"], ci=c["pair_ci"])
    part("kernel in jvm start java", "kernel in jvm start java", c["sys_window"], SYS_SOURCE,
         window=c["sys_window"], ci=c["sys_ci"])

    def layer_sum(names):
        return sum_known(parts[n]["time_ns"] for n in names if n in parts)

    layers = {}
    for lab in THREAD_LABELS:
        layers[lab] = {
            "threads": _get(tc, f"pthread_create {lab}"),
            "libc_ns": layer_sum([f"libc create {lab}", f"libc start {lab}", f"libc exit {lab}"]),
            "kernel_ns": layer_sum([f"kernel in create {lab}", f"kernel in start/exit {lab}",
                                    f"kernel exit {lab}"]
                                   + (["kernel in jvm start java"] if lab == "java" else [])),
            "jvm_ns": layer_sum((["jvm start java"] if lab == "java" else [])
                                + [f"jvm exit {lab}"]),
        }
    native_names = [n for n in parts if not n.startswith("jvm ")]
    clones = sum(v["calls"] for k, v in tc.items() if k in ("clone", "clone3"))
    window_note = ("each part names the calibrated window it borrowed (probe_window_source); "
                   "the threads layer has no window of its own")
    if tc:
        cat = {"calls": _get(tc, "pthread_create java") + _get(tc, "pthread_create internal"),
               "bytes": None}
        cat.update(combine(parts[n] for n in native_names))
        cat.update({
            "method": "measured", "probe_window_source": window_note,
            "clone_calls": clones,
            "abandoned_start_spans": _get(tc, "libc start abandoned"),
            "layers": layers,
            "parts": {n: p for n, p in parts.items() if not n.startswith("jvm ")},
            "basis": "libc: pthread_create, start_thread before thread_native_entry and after "
                     "it returns; kernel: syscalls inside those spans and exit to the last "
                     "switch-out; exclusive of nested spans, syscalls and off-CPU time; minus "
                     "hits x calibrated probe windows"})
        out["thread_create"] = cat
    if tj:
        jnames = [n for n in parts if n.startswith("jvm ")]
        cat = {"calls": jstart, "bytes": None}
        cat.update(combine(parts[n] for n in jnames))
        cat.update({
            "method": "measured", "probe_window_source": window_note,
            "start_inclusive_raw_ns": incl_ns,
            "start_probe_outside_window_ns": _mul(jstart, nested_pair),
            "parts": {n: parts[n] for n in jnames}})
        out["thread_jvm"] = cat
    if tw:
        out["thread_wait"] = {
            "calls": _get(tw, "first run delay"), "bytes": None,
            "time_ns": sum(v.get("time_ns", 0) for v in tw.values()),
            "method": "measured",
            "parts": {k: {"calls": v.get("calls", 0), "time_ns": v.get("time_ns", 0)}
                      for k, v in sorted(tw.items())},
            "basis": "waiting, not work: new thread's delay to first run, futex waits and "
                     "off-CPU time inside thread creation spans; not corrected (the probes' "
                     "cost is not part of a wait)"}
    if sy:
        sparts = {}
        for k, v in sorted(sy.items()):
            sparts[k] = _window_part(v.get("time_ns", 0), v.get("calls", 0), c["sys_window"],
                                     c["sys_ci"], SYS_SOURCE)
            sparts[k]["calls"] = v.get("calls", 0)
        cat = {"calls": sum(p["calls"] for p in sparts.values()), "bytes": None}
        cat.update(combine(sparts.values()))
        cat.update({
            "method": "measured", "probe_window_source": SYS_SOURCE,
            "wait_calls": _get(sy, "futex wait"), "wake_calls": _get(sy, "futex wake"),
            "parts": sparts,
            "basis": "futex syscalls of the traced threads, time includes blocking"})
        out["sync"] = cat
    if mode == "count":
        for name in ("thread_create", "thread_jvm"):
            if name in out:
                out[name]["time_partial"] = True
                out[name]["basis"] = COUNT_MODE_THREADS + out[name].get("basis", "")
    return out


def context_switches(csw: Dict[tuple, int], pid: str, top: int = 10) -> Optional[dict]:
    per = {}
    for (p, tid, kind), n in csw.items():
        if p != pid:
            continue
        per.setdefault(tid, {"voluntary": 0, "involuntary": 0})[kind] += int(n)
    if not per:
        return None
    busiest = sorted(per.items(), key=lambda kv: -(kv[1]["voluntary"] + kv[1]["involuntary"]))
    return {"voluntary": sum(v["voluntary"] for v in per.values()),
            "involuntary": sum(v["involuntary"] for v in per.values()),
            "threads": len(per),
            "busiest_threads": {tid: v for tid, v in busiest[:top]}}


# ------------------------------------------------------------------ links

def link_categories(fns: dict, probes: Optional[dict]) -> dict:
    c = probe_costs(probes)
    out = {}
    for cat in ("link", "file"):
        f = fns.get(cat)
        if not f:
            continue
        sparts = {}
        for k, v in sorted(f.items()):
            if k == "failed":
                continue
            p = _window_part(v.get("time_ns", 0), v.get("calls", 0), c["sys_window"],
                             c["sys_ci"], SYS_SOURCE)
            p.update(calls=v.get("calls", 0), wall_ns=v.get("wall_ns", 0))
            sparts[k] = p
        figure = {"calls": sum(p["calls"] for p in sparts.values()), "bytes": None}
        figure.update(combine(sparts.values()))
        figure.update({
            "wall_ns": sum(p["wall_ns"] for p in sparts.values()),
            "failed_calls": _get(f, "failed"),
            "method": "measured", "probe_window_source": SYS_SOURCE, "syscalls": sparts,
            "basis": "on-CPU time of the syscall (its span minus the time switched out "
                     "waiting for a peer), minus hits x the calibrated tracepoint window; "
                     "wall_ns keeps the whole span"})
        out[cat] = figure
    return out


# ------------------------------------------------------------------ memory

FREE_BASIS = ("free is not probed (mem.bt says why): one free per block allocated by the "
              "probed malloc, calloc and *memalign calls (realloc does not add a block), x "
              "the calibrated cost of one free (workloads/c/memcal); calls and time are both "
              "estimated, never counted as probe hits")


def mem_categories(fns: dict, probes: Optional[dict], costs: dict, mode: str) -> dict:
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
                p = _window_part(v.get("time_ns", 0), calls, c["pair_window"], c["pair_ci"],
                                 PAIR_SOURCE)
                p["method"] = "measured"
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
               "off_cpu_ns": _get(m, "off-CPU", "time_ns"),
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
            hits = _get(timed, k)
            p = _window_part(x.get("time_ns", 0), hits, c["sys_window"], c["sys_ci"],
                             SYS_SOURCE)
            p.update(calls=x.get("calls", 0), bytes=x.get("bytes", 0))
            sc[k] = p
        faults = _get(v, "page_fault_user")
        fault_model = costs.get("page_fault")
        fault_ns = (faults * fault_model["ns_per_call"] if fault_model else None) if faults \
            else 0
        corr = combine(sc.values())
        fig = {"calls": sum(p["calls"] for p in sc.values()),
               "bytes": sum(p["bytes"] for p in sc.values())}
        fig.update(corr)
        fig.update({
            "time_ns": _add(corr["time_ns"], fault_ns),
            "syscalls_time_ns": corr["time_ns"],
            # the syscalls are measured, the page faults' time is an estimate: when there are
            # faults, the sum is both (syscalls_time_ns and page_fault_time_ns keep them apart)
            "method": "measured+estimated" if faults else "measured",
            "probe_window_source": SYS_SOURCE, "syscalls": sc,
            "page_faults": faults, "page_fault_time_ns": fault_ns,
            "page_fault_method": "estimated",
            "off_cpu_ns": _get(v, "off-CPU", "time_ns"),
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
