"""The threads, links and memory categories of summary.json, from the per-probe figures.

Each function takes `fns` ({category: {what: {calls, time_ns, bytes, wall_ns}}} of one pid)
and the calibrated probe costs, and returns finished categories. Measured times are
corrected for the probe effect the way summary.correct() does for the I/O layer: the raw
value, the hits behind it and what was subtracted are all kept.

Probe costs used (from `jvmos calibrate --probes`; the layers' bookkeeping is of the same
kind as io.bt's, so the same calibrated costs apply):
  pair_hit, pair_window   a uprobe+uretprobe pair with map bookkeeping (jni_copy_time_*)
  sys_hit, sys_window     a syscall tracepoint pair with bookkeeping (io_syscall_*)
  uprobe                  a bare entry uprobe
A span's raw time holds its own window, plus, for every probe nested in it, the part of
that probe's cost that falls outside the nested probe's own window (hit - window).
"""
from typing import Dict, Optional

PAGE = 4096


def probe_costs(probes: Optional[dict]) -> Dict[str, float]:
    g = lambda k: ((probes or {}).get(k) or {}).get("mean_ns") or 0.0
    return {"pair_hit": g("jni_copy_time_hit"), "pair_window": g("jni_copy_time_window"),
            "sys_hit": g("io_syscall_hit"), "sys_window": g("io_syscall_window"),
            "uprobe": g("uprobe"), "tracepoint": g("tracepoint"),
            "calibrated": bool(probes)}


def corrected(raw: float, correction: float, hits: int) -> dict:
    val = raw - correction
    return {"time_ns": max(0.0, val), "time_raw_ns": raw, "time_hits": hits,
            "correction_ns": correction, "corrected": True, "floored": val < 0,
            "correction_dominates": bool(raw and correction > 0.5 * raw)}


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
    nested_sys = c["sys_hit"] - c["sys_window"]
    nested_pair = c["pair_hit"] - c["pair_window"]
    uret_tail = max(c["pair_hit"] - c["uprobe"], 0.0) / 2

    parts: Dict[str, dict] = {}

    def part(name, raw_what, correction_per_call, extra=0.0, calls_what=None):
        raw = _get(tc if not name.startswith("jvm") else tj, raw_what, "time_ns")
        calls = _get(tc if not name.startswith("jvm") else tj, calls_what or raw_what)
        p = corrected(raw, calls * correction_per_call + extra, calls)
        p["calls"] = calls
        parts[name] = p
        return p

    # allocator probes (mem layer) nested in the spans: their time is left out in the kernel,
    # the part of their cost outside their own window is taken out here
    na = fns.get("thread_nested_alloc", {})
    creates = {lab: _get(tc, f"pthread_create {lab}") for lab in THREAD_LABELS}
    n_creates = sum(creates.values()) or 1
    for lab in THREAD_LABELS:
        k_create = _get(tc, f"kernel in create {lab}")
        alloc = _get(na, "libc create") * creates[lab] / n_creates
        part(f"libc create {lab}", f"libc create {lab}", c["pair_window"],
             extra=k_create * nested_sys + alloc * nested_pair,
             calls_what=f"pthread_create {lab}")
        part(f"kernel in create {lab}", f"kernel in create {lab}", c["sys_window"])
        part(f"kernel in start/exit {lab}", f"kernel in start/exit {lab}", c["sys_window"])
        part(f"kernel exit {lab}", f"kernel exit {lab}", 0.0)
        # the start-up span ends at an entry uprobe, part of which precedes its clock read;
        # the exit span begins in a uretprobe, part of which follows it
        part(f"libc start {lab}", f"libc start {lab}", c["uprobe"] / 2)
        part(f"libc exit {lab}", f"libc exit {lab}", uret_tail)
        part(f"jvm exit {lab}", f"exit {lab}", c["pair_window"])
        # probes nested in start/exit spans: share their cost out by raw time
        nested = _get(tc, f"kernel in start/exit {lab}") * nested_sys
        nested += _get(na, "start/exit") * nested_pair * creates[lab] / n_creates
        spans = [parts[f"libc start {lab}"], parts[f"libc exit {lab}"], parts[f"jvm exit {lab}"]]
        total_raw = sum(p["time_raw_ns"] for p in spans)
        if total_raw and nested:
            for p in spans:
                share = nested * p["time_raw_ns"] / total_raw
                p.update(corrected(p["time_raw_ns"], p["correction_ns"] + share, p["time_hits"]))
    jstart = _get(tj, "start")
    part("jvm start java", "start", c["pair_window"],
         extra=((_get(tc, "pthread_create java") + _get(na, "jvm start")) * nested_pair
                + (_get(tc, "kernel in jvm start java") + _get(tw, "futex in JVM_StartThread"))
                * nested_sys))
    part("kernel in jvm start java", "kernel in jvm start java", c["sys_window"])

    def layer_sum(names):
        return sum(parts[n]["time_ns"] for n in names if n in parts)

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
    if tc:
        out["thread_create"] = {
            "calls": _get(tc, "pthread_create java") + _get(tc, "pthread_create internal"),
            "bytes": None,
            "time_ns": layer_sum(native_names),
            "time_raw_ns": sum(parts[n]["time_raw_ns"] for n in native_names),
            "method": "measured", "corrected": c["calibrated"],
            "clone_calls": clones,
            "abandoned_start_spans": _get(tc, "libc start abandoned"),
            "layers": layers,
            "parts": {n: p for n, p in parts.items() if not n.startswith("jvm ")},
            "basis": "libc: pthread_create, start_thread before thread_native_entry and after "
                     "it returns; kernel: syscalls inside those spans and exit to the last "
                     "switch-out; exclusive of nested spans, syscalls and off-CPU time; minus "
                     "hits x calibrated probe windows"}
    if tj:
        jnames = [n for n in parts if n.startswith("jvm ")]
        out["thread_jvm"] = {
            "calls": jstart, "bytes": None, "time_ns": layer_sum(jnames),
            "time_raw_ns": sum(parts[n]["time_raw_ns"] for n in jnames),
            "method": "measured", "corrected": c["calibrated"],
            "start_inclusive_raw_ns": incl_ns,
            "start_probe_outside_window_ns": jstart * nested_pair,
            "parts": {n: parts[n] for n in jnames}}
    if tw:
        out["thread_wait"] = {
            "calls": _get(tw, "first run delay"), "bytes": None,
            "time_ns": sum(v.get("time_ns", 0) for v in tw.values()),
            "method": "measured",
            "parts": {k: {"calls": v.get("calls", 0), "time_ns": v.get("time_ns", 0)}
                      for k, v in sorted(tw.items())},
            "basis": "waiting, not work: new thread's delay to first run, futex waits and "
                     "off-CPU time inside thread creation spans"}
    if sy:
        sparts = {}
        for k, v in sorted(sy.items()):
            sparts[k] = corrected(v.get("time_ns", 0), v.get("calls", 0) * c["sys_window"],
                                  v.get("calls", 0))
            sparts[k]["calls"] = v.get("calls", 0)
        out["sync"] = {
            "calls": sum(p["calls"] for p in sparts.values()), "bytes": None,
            "time_ns": sum(p["time_ns"] for p in sparts.values()),
            "time_raw_ns": sum(p["time_raw_ns"] for p in sparts.values()),
            "method": "measured", "corrected": c["calibrated"],
            "wait_calls": _get(sy, "futex wait"), "wake_calls": _get(sy, "futex wake"),
            "parts": sparts,
            "basis": "futex syscalls of the traced threads, time includes blocking"}
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
            p = corrected(v.get("time_ns", 0), v.get("calls", 0) * c["sys_window"],
                          v.get("calls", 0))
            p.update(calls=v.get("calls", 0), wall_ns=v.get("wall_ns", 0))
            sparts[k] = p
        out[cat] = {
            "calls": sum(p["calls"] for p in sparts.values()), "bytes": None,
            "time_ns": sum(p["time_ns"] for p in sparts.values()),
            "time_raw_ns": sum(p["time_raw_ns"] for p in sparts.values()),
            "wall_ns": sum(p["wall_ns"] for p in sparts.values()),
            "failed_calls": _get(f, "failed"),
            "method": "measured", "corrected": c["calibrated"], "syscalls": sparts,
            "basis": "on-CPU time of the syscall (its span minus the time switched out "
                     "waiting for a peer), minus hits x the calibrated tracepoint window; "
                     "wall_ns keeps the whole span"}
    return out


# ------------------------------------------------------------------ memory

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
                p = corrected(v.get("time_ns", 0), calls * c["pair_window"], calls)
                p["method"] = "measured"
            p.update(calls=calls, bytes=v.get("bytes", 0))
            funcs[k] = p
        # free is not probed (mem.bt says why): every block allocated is taken as freed once
        allocs = sum(p["calls"] for k, p in funcs.items() if k != "realloc")
        if "free" not in funcs and allocs:
            funcs["free"] = {"time_ns": allocs * free_model["ns_per_call"] if free_model else None,
                             "method": "estimated", "calls": allocs, "bytes": 0,
                             "calls_estimated": True}
        timed = [p for p in funcs.values() if p["method"] == "measured"]
        est = [p for p in funcs.values() if p["method"] == "estimated"]
        cat = {"calls": sum(p["calls"] for p in funcs.values()),
               "bytes": sum(p["bytes"] for p in funcs.values()),
               "time_ns": (sum(p["time_ns"] for p in timed)
                           + sum(p["time_ns"] or 0 for p in est)),
               "method": "measured" if timed else "estimated", "functions": funcs,
               "timed_calls": sum(p["calls"] for p in timed),
               "estimated_calls": sum(p["calls"] for p in est),
               "estimated_time_ns": sum(p["time_ns"] or 0 for p in est),
               "off_cpu_ns": _get(m, "off-CPU", "time_ns"),
               "basis": "malloc, calloc, realloc, *memalign: on-CPU time between entry and "
                        "return probes minus hits x the calibrated probe window (--mode count: "
                        "calls x the calibrated cost of one malloc); free is not probed: one "
                        "free per block allocated, x the calibrated cost of one free "
                        "(workloads/c/memcal), estimated"
                        + ("" if (malloc_model and free_model) else "; not calibrated")}
        if timed:
            cat["time_raw_ns"] = sum(p["time_raw_ns"] for p in timed)
            cat["corrected"] = c["calibrated"]
            measured = sum(p["time_ns"] for p in timed)
            cat["correction_dominates"] = bool(
                cat["time_raw_ns"] and cat["time_raw_ns"] - measured > 0.5 * cat["time_raw_ns"])
        out["malloc"] = cat
    v = fns.get("vm")
    if v:
        sc = {}
        timed = fns.get("vm_timed", {})
        for k, x in sorted(v.items()):
            if k in ("page_fault_user", "off-CPU"):
                continue
            hits = _get(timed, k)
            p = corrected(x.get("time_ns", 0), hits * c["sys_window"], hits)
            p.update(calls=x.get("calls", 0), bytes=x.get("bytes", 0))
            sc[k] = p
        faults = _get(v, "page_fault_user")
        fault_model = costs.get("page_fault")
        fault_ns = faults * fault_model["ns_per_call"] if fault_model else None
        out["vm"] = {
            "calls": sum(p["calls"] for p in sc.values()),
            "bytes": sum(p["bytes"] for p in sc.values()),
            "time_ns": sum(p["time_ns"] for p in sc.values()) + (fault_ns or 0),
            "time_raw_ns": sum(p["time_raw_ns"] for p in sc.values()),
            "method": "measured", "corrected": c["calibrated"], "syscalls": sc,
            "page_faults": faults, "page_fault_time_ns": fault_ns,
            "page_fault_method": "estimated",
            "off_cpu_ns": _get(v, "off-CPU", "time_ns"),
            "basis": "memory syscalls timed at their tracepoints, on-CPU (the time switched "
                     "out inside them is off_cpu_ns), not when nested in an allocator call, "
                     "whose time already holds them; minus hits x the calibrated window; user "
                     "page faults x a calibrated per-fault cost (first touch of an anonymous "
                     "page), estimated"
                     + ("" if fault_model else "; page faults not calibrated")}
    return out


def growth(raw_grow: Dict[tuple, int], pid: str, bucket_s: float = 0.25) -> Optional[list]:
    """[[t_seconds, bytes], ...] of one pid, in time order."""
    pts = sorted((int(b), int(v)) for (p, b), v in raw_grow.items() if p == pid)
    return [[round(b * bucket_s, 3), v] for b, v in pts] or None
