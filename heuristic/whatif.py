"""What-if: the saving one change to an application would bring, predicted from what the probes
counted and this machine's calibrated constants, one term of C_os at a time.

Each change removes uses of one OS service. The prediction is (uses removed) x (the calibrated
cost of one use), and its interval is the count times the ends of that constant's 95%
interval (the count is what the probes saw, exact; the interval is the constant's only).
`jvmos run interventions` makes each change for real, measures the saving, and records in the
platform file whether the measurement fell inside the predicted interval on this machine;
`jvmos predict --from-run RUN --what-if NAME` prints that status beside the prediction.

  thread-pool           C_nt           native threads started (pthread_create)
  keep-alive            C_link         connections accepted (accept, accept4)
  direct-buffers        C_I/Ochunk's   bytes the JDK copies from heap arrays into temporary
                        NIO copy       direct buffers before socket and file I/O (the io
                                       layer's nio_copy estimate: every libnio write or read is
                                       taken as such a copy)
  bigger-chunks         C_I/Ochunk     blocking writes (eq. 4 prices each chunk at C_I/Ochunk)
  file-handles          C_file         files opened (open, openat, openat2)
  pretouch              C_mem, faults  user page faults (first touches), moved out of the run
  reuse-native-buffers  C_mem, malloc  allocator calls (malloc, calloc, realloc, *memalign)
                                       and one free per block, at the calibrated costs of one
                                       malloc and one free
"""
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from jvmos import JvmosError
from jvmos.heuristic import model


@dataclass(frozen=True)
class WhatIf:
    name: str
    term: str                 # the term of C_os it removes
    change: str               # the change, for a user
    count_key: str            # model.counts_from_summary's key (or "nio_copy_bytes")
    count_what: str           # what the count is
    unit: str                 # what one unit of the constant is
    layer: str = ""           # the recording layer that counts it


WHAT_IFS: Dict[str, WhatIf] = {w.name: w for w in (
    WhatIf("thread-pool", "C_nt", "a bounded thread pool instead of a thread per task",
           "threads_created", "native threads started (pthread_create)", "µs per thread",
           "threads"),
    WhatIf("keep-alive", "C_link", "keep-alive connections instead of one per request",
           "accepts", "connections accepted (accept, accept4)", "µs per connection", "links"),
    WhatIf("direct-buffers", "C_I/Ochunk (NIO copy)",
           "I/O from a reused direct ByteBuffer instead of heap arrays",
           "nio_copy_bytes", "bytes copied heap -> temporary direct buffer (io layer's "
           "nio_copy estimate)", "ns per byte + ns per copy", "io"),
    WhatIf("bigger-chunks", "C_I/Ochunk", "fewer, larger writes for the same bytes",
           "io_writes", "blocking writes (write, writev, sendto, sendmsg, pwrite64)",
           "µs per chunk (eq. 4)", "io"),
    WhatIf("file-handles", "C_file", "one file handle kept open instead of open/close per use",
           "files_opened", "files opened (open, openat, openat2)", "µs per open + close",
           "links"),
    WhatIf("pretouch", "C_mem (page faults)",
           "-XX:+AlwaysPreTouch: the heap's first touches at start-up, not in the run",
           "page_faults", "user page faults", "µs per fault (first touch)", "mem"),
    WhatIf("reuse-native-buffers", "C_mem (allocator)",
           "a reused native buffer instead of malloc/free per call",
           "malloc_calls", "allocator calls (malloc, calloc, realloc, *memalign), one free "
           "each", "ns per malloc + free", "mem"),
)}


# the changes that keep some uses (a pool its threads, keep-alive its connections, a cache its
# open files): --keep applies to them only
KEEPS = ("thread-pool", "keep-alive", "file-handles")


def counts(s: dict) -> dict:
    """model.counts_from_summary plus the NIO copy estimate's bytes and copies, the user
    page faults in the Java heap (what AlwaysPreTouch can remove; None when the heap's range
    is unknown or the mem layer did not run), and the zlib inflate and deflate streams
    created, one per Inflater or Deflater (what reusing them removes; None when they could
    not be counted or the mem layer did not run)."""
    c = model.counts_from_summary(s)
    cats = s.get("categories") or {}
    nio = cats.get("nio_copy") or {}
    c["nio_copy_bytes"] = nio.get("bytes") or 0
    c["nio_copy_calls"] = nio.get("calls") or 0
    c["heap_page_faults"] = (cats.get("vm") or {}).get("page_faults_heap")
    zs = (cats.get("malloc") or {}).get("zlib_streams")
    c["zlib_inflaters"] = zs.get("inflate") if zs else None
    c["zlib_deflaters"] = zs.get("deflate") if zs else None
    return c


def _ci(c: Optional[dict], key: str) -> Optional[Tuple[float, float]]:
    v = (c or {}).get(key + "_ci95")
    return (float(v[0]), float(v[1])) if v else None


def constant(name: str, platform: dict, jdk_home: Optional[str] = None) -> dict:
    """The calibrated cost of one use removed by what-if NAME, µs: mean and 95% interval,
    and where it comes from. JvmosError when the platform file lacks it."""
    w = WHAT_IFS[name]
    k = (platform or {}).get("constants") or {}
    cp = (platform or {}).get("copy") or {}
    if w.term in ("C_nt", "C_link", "C_file", "C_I/Ochunk"):
        key = "C_io_chunk" if w.term == "C_I/Ochunk" else w.term
        c = k.get(key)
        if not c:
            raise JvmosError(f"what-if {name}: the platform file has no {key}: run "
                             f"'jvmos calibrate'")
        return {"mean_us": c["mean_us"], "ci95_us": list(c["ci95_us"]),
                "source": f"platform constant {key} ({c.get('what', '')})"}
    if name == "direct-buffers":
        by_jdk = cp.get("nio_heap_to_direct") or {}
        c = by_jdk.get(jdk_home) if jdk_home else None
        if c is None and len(by_jdk) >= 1 and not jdk_home:
            c = next(iter(by_jdk.values()))
        if not c:
            raise JvmosError(f"what-if direct-buffers: no calibrated heap->direct copy cost for "
                             f"{jdk_home or 'any JDK'}: run 'jvmos calibrate'")
        lo, hi = _ci(c, "ns_per_byte") or (c["ns_per_byte"],) * 2
        clo, chi = _ci(c, "ns_per_call") or (c.get("ns_per_call", 0.0),) * 2
        return {"ns_per_byte": c["ns_per_byte"], "ns_per_byte_ci95": [max(0.0, lo), hi],
                "ns_per_call": c.get("ns_per_call", 0.0),
                "ns_per_call_ci95": [max(0.0, clo), chi],
                "source": f"calibrated heap->direct copy of {jdk_home or 'the JDK'} "
                          f"({c.get('what', '')})"}
    if name == "pretouch":
        c = cp.get("page_fault")
        parts = [c]
    else:
        parts = [cp.get("malloc_call"), cp.get("free_call")]
    if not all(parts):
        raise JvmosError(f"what-if {name}: the platform file lacks the calibrated memory costs: "
                         f"run 'jvmos calibrate'")
    mean = sum(p["ns_per_call"] for p in parts)
    los = sum(max(0.0, (_ci(p, "ns_per_call") or (p["ns_per_call"],) * 2)[0]) for p in parts)
    his = sum((_ci(p, "ns_per_call") or (p["ns_per_call"],) * 2)[1] for p in parts)
    return {"mean_us": mean / 1e3, "ci95_us": [los / 1e3, his / 1e3],
            "source": " + ".join(p.get("what", "") for p in parts) + " (calibrated)"}


def predict(name: str, removed: float, platform: dict, jdk_home: Optional[str] = None,
            removed_calls: float = 0.0) -> dict:
    """The saving of removing `removed` uses (for direct-buffers: bytes, with `removed_calls`
    copies), µs, with its interval from the constant's."""
    if name not in WHAT_IFS:
        raise JvmosError(f"unknown what-if '{name}' (known: {', '.join(WHAT_IFS)})")
    k = constant(name, platform, jdk_home)
    if name == "direct-buffers":
        f = lambda b, c: (removed * b + removed_calls * c) / 1e3
        mean = f(k["ns_per_byte"], k["ns_per_call"])
        lo = f(k["ns_per_byte_ci95"][0], k["ns_per_call_ci95"][0])
        hi = f(k["ns_per_byte_ci95"][1], k["ns_per_call_ci95"][1])
    else:
        mean = removed * k["mean_us"]
        lo, hi = removed * k["ci95_us"][0], removed * k["ci95_us"][1]
    if removed < 0:
        lo, hi = hi, lo
    return {"what_if": name, "term": WHAT_IFS[name].term, "removed": removed,
            "removed_calls": removed_calls if name == "direct-buffers" else None,
            "count_what": WHAT_IFS[name].count_what, "predicted_us": mean,
            "predicted_ci95_us": [lo, hi], "constant": k,
            "interval_method": "the count x the ends of the constant's calibrated 95% interval"}


def validation(platform: dict, name: str) -> dict:
    """What `jvmos run interventions` found for this what-if on this machine (stored in the
    platform file), or that it was not run."""
    v = ((platform or {}).get("interventions") or {}).get(name)
    if not v:
        return {"status": "not validated on this machine (run 'jvmos run interventions')"}
    return v


def jvm_of_run(summary: dict, pid: Optional[int] = None) -> Tuple[dict, Optional[str], str]:
    """The part of a recording a what-if reads: one JVM's categories (by_pid), its JDK home
    and its pid. JvmosError when the recording holds several JVMs and no pid picks one, or
    the pid is not in it."""
    by = summary.get("by_pid") or {}
    jvms = {p: v for p, v in by.items() if v.get("jvm")}
    if pid is not None:
        v = by.get(str(pid))
        if v is None:
            raise JvmosError(f"pid {pid} is not in the recording (its processes: "
                             f"{', '.join(sorted(by)) or 'none'})")
        return {"categories": v["categories"], "totals": {}}, v.get("jvm"), str(pid)
    if len(jvms) > 1:
        raise JvmosError(f"the recording holds {len(jvms)} JVMs (pids {', '.join(sorted(jvms))}): "
                         f"give --pid to choose one")
    if len(jvms) == 1:
        p, v = next(iter(jvms.items()))
        return {"categories": v["categories"], "totals": {}}, v["jvm"], p
    return summary, None, "every process of the recording"


# the hooks (syscalls, or the page-fault tracepoint) that count each what-if's uses (what a
# hook-set check compares)
COUNT_SYSCALLS = {"keep-alive": ("accept",), "file-handles": ("open",),
                  "pretouch": ("page_fault",),
                  "thread-pool": ("clone", "pthread_create"),
                  "bigger-chunks": ("write", "sendto", "sendmsg")}

# what each count holds beyond the uses the change can remove
COUNT_CAVEATS = {
    "direct-buffers": "the count is every write and read through libnio: those already made "
                      "from direct buffers are in it too, and no change removes their copy",
    "pretouch": "the count is every user page fault: only first touches of the Java heap are "
                "moved out of the run by -XX:+AlwaysPreTouch (metaspace, code cache and native "
                "memory fault as before)",
}


def outside_regime(mean_bytes: float, theta: dict) -> Optional[str]:
    """Why θ for writes cannot price writes of this mean size (None when it can): a write's
    cost depends on its size, and θ holds only between the write sizes it was fitted on."""
    try:
        sizes = sorted(int(d) for d in theta.get("doses") or {})
    except ValueError:
        return None
    if sizes and not sizes[0] <= mean_bytes <= sizes[-1]:
        return (f"this recording's writes average {mean_bytes:,.0f} bytes, outside the write "
                f"sizes θ was fitted on ({sizes[0]:,}-{sizes[-1]:,} bytes): what a write costs "
                f"depends on its size")
    return None


def count_hooks(manifest: dict, name: str) -> list:
    """The probes of a recording that counted what-if NAME's uses (from its manifest)."""
    keys = COUNT_SYSCALLS.get(name)
    if not keys:
        return []
    attached = ((manifest or {}).get("probes") or {}).get("attached") or []
    # the entry probes only: a return probe times a call, it does not count one
    entry = [p for p in attached if "sys_exit_" not in p and not p.startswith("uretprobe")]
    return sorted(p for p in entry if any(k in p.rsplit(":", 1)[-1] for k in keys))


def from_run(name: str, s: dict, platform: dict, jdk_home: Optional[str], keep: int = 0,
             hooks: Optional[list] = None) -> dict:
    """A user's recording (one JVM's part of it, jvm_of_run): the OS's part of the saving if every
    counted use but `keep` were removed (the count an upper bound: a pool keeps its threads, keep-alive its
    connections, a cache its open files), priced at the OS's part of one use."""
    c = counts(s)
    w = WHAT_IFS[name]
    if name == "direct-buffers":
        removed, calls, keep = c["nio_copy_bytes"], c["nio_copy_calls"], 0
    elif name == "pretouch" and c.get("heap_page_faults") is not None:
        # only the heap's first touches move to start-up: the faults inside its range
        removed, calls, keep = c["heap_page_faults"], 0.0, 0
    else:
        keep = min(keep, c[w.count_key]) if name in KEEPS else 0
        removed, calls = c[w.count_key] - keep, 0.0
    res = predict(name, removed, platform, jdk_home, calls)
    res["counted"] = removed + keep if name == "pretouch" else c[w.count_key]
    res["keep"] = keep
    res["bound"] = ("the OS's part only, not a bound on the change: the count is an upper "
                    "bound (every counted use but --keep taken as removable), but the price "
                    "per use is only the OS's part of a use (jvmos run predictions tests it "
                    "against kernel time); the change also removes the JVM's and the "
                    "library's work around each use, which this figure leaves out")
    v = res["validation"] = dict(validation(platform, name))
    if v.get("jdk") and jdk_home and v["jdk"] != jdk_home:
        v["status"] += f" (on {v['jdk']}, not this recording's {jdk_home})"
    if name == "pretouch" and c.get("heap_page_faults") is not None:
        res["count_caveat"] = (f"the count is the user page faults inside the Java heap's range "
                               f"({c['heap_page_faults']:,} of {c['page_faults']:,}; 2 MiB "
                               f"granularity): metaspace, code cache and native memory fault "
                               f"as before"
                               + ("; some faults were counted without their region (a full "
                                  "map), so the heap's count is a lower bound"
                                  if ((s.get("categories") or {}).get("vm") or {}).get(
                                      "page_faults_unregioned") else ""))
    elif name in COUNT_CAVEATS:
        res["count_caveat"] = COUNT_CAVEATS[name]
    from jvmos.heuristic import theta as th
    t = th.of(platform, name, jdk_home)
    if t:
        why = th.stale(t, jdk_home)
        lo = t["fit"]["ci_with_model_error_ns"][0]
        if not why and lo <= 0:
            why = (f"θ is not resolved from 0: its 95% interval with the model error "
                   f"({t['fit']['model_error_relative']:.0%} beyond noise) reaches "
                   f"{lo / 1e3:,.2f} µs")
        if not why and name == "bigger-chunks" and c["io_writes"]:
            why = outside_regime(c["io_write_bytes"] / c["io_writes"], t)
        # θ's unit: for reused native buffers an Inflater (a zlib inflate stream made), not
        # an allocator call
        theta_removed = removed
        if name == "reuse-native-buffers" and (t.get("unit") == "Inflater"):
            theta_removed = c.get("zlib_inflaters")
            if theta_removed is None and not why:
                why = ("θ prices Inflaters made, and this recording did not count zlib's "
                       "inflate streams (the mem layer found no zlib in the JVM)")
        if not why and name == "pretouch" and c.get("heap_page_faults") is None:
            why = ("θ prices first touches of the Java heap, and this recording did not read "
                   "the heap's range (the JVM had exited, or its collector prints none): "
                   "every user fault is not a heap first touch")
        verdicts = list((t.get("held_out") or {}).values())
        validated = [sorted(v["count_hooks"]) for v in verdicts if v.get("count_hooks")]
        if not why and hooks is not None and verdicts:
            if not validated:
                why = ("θ's held-out verdicts do not name the probes that counted their uses "
                       "(made before that was stored): validate θ again (jvmos run held-out)")
            elif sorted(hooks) not in validated:
                why = (f"this recording counted its uses with other probes "
                       f"({', '.join(hooks) or 'none'}) than θ's held-out tests did "
                       f"({', '.join(validated[0])}): validate θ again (jvmos run held-out)")
        p = th.predict(theta_removed or 0, t["fit"])
        res["theta"] = {
            # a refused θ gives no figure, in the JSON either
            "whole_change_us": None if why else p["predicted_ns"] / 1e3,
            "whole_change_ci_us": None if why else [x / 1e3 for x in p["predicted_ci_ns"]],
            "interval": p["interval"], "ns_per_use": t["fit"]["ns_per_use"],
            "removed": theta_removed, "unit": t.get("unit"),
            "source": {k: t.get(k) for k in ("date", "commit", "jdk_label", "theta_sha256",
                                             "counted_by")},
            "held_out": t.get("held_out") or {}, "refused": why}
    per = v.get("measured_cpu_per_use_us")
    if per is not None:
        # the intervention's measured saving per use removed, applied to this run's count:
        # what the change saved per use in jvmos's own server, not a measurement of this run
        res["scaled_from_intervention_us"] = removed * per
        res["scaled_from_intervention_ci95_us"] = [removed * x for x in
                                                   v["measured_cpu_per_use_ci95_us"]]
    return res
