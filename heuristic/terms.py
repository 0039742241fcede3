"""Table 7 term by term: each term of equation 1 (and of the paper's equation 6) predicted from
the counts and the calibrated constants, beside what the probes measured of the same resource,
so that errors which cancel in the total show.

What a recording holds of each term (summary.json categories):
  threads  measured: thread_create (libc + kernel time of creating and ending native threads)
  links    measured: link (accept, connect) + file (open, openat, close: a socket's close is
           one), the counterpart of accepts x C_link + files x C_file
  io       measured: jni_copy (the JNI array copies, timed in --mode time)
           estimated: nio_copy and kernel_copy (bytes x calibrated per-byte costs: made of the
           very constants C_I/Ochunk is made of, so kept out of the comparison). The I/O
           syscalls' own time is not part of the guaranteed overhead (the paper's I/O cost is
           the copies), so a JDK whose socket I/O copies through NIO leaves this term almost
           wholly estimated: `jvmos run interventions` measures it instead
  mem      measured: malloc (the probed allocator calls' time) + the memory syscalls' time
           estimated: free_estimated and the page faults (counts x calibrated costs)
Only the measured parts enter a term's error; the estimated parts are shown beside it.
"""
import statistics
from pathlib import Path
from typing import Dict, List, Optional

from jvmos.heuristic import model

TERMS = ("threads", "links", "io", "mem")


def _t(c: dict, key: str) -> float:
    return float((c.get(key) or {}).get("time_ns") or 0.0)


def parts_of(s: dict) -> Dict[str, dict]:
    """Per term: measured and estimated ns of one recording (the whole recording)."""
    c = s.get("categories") or {}
    vm = c.get("vm") or {}
    return {
        "threads": {"measured_ns": _t(c, "thread_create"), "estimated_ns": 0.0},
        "links": {"measured_ns": _t(c, "link") + _t(c, "file"), "estimated_ns": 0.0},
        "io": {"measured_ns": _t(c, "jni_copy"),
               "estimated_ns": _t(c, "nio_copy") + _t(c, "kernel_copy")},
        "mem": {"measured_ns": _t(c, "malloc") + float(vm.get("syscalls_time_ns") or 0.0),
                "estimated_ns": _t(c, "free_estimated")
                + float(vm.get("page_fault_time_ns") or 0.0)},
    }


def level_parts(run_dirs: List[Path]) -> Optional[Dict[str, dict]]:
    """The per-term parts of a level: the median over its recordings, part by part (as the
    level's resources are), or None when a recording's summary is not there."""
    import json
    per = []
    for d in run_dirs:
        try:
            per.append(parts_of(json.loads((Path(d) / "summary.json").read_text())))
        except (OSError, ValueError):
            return None
    return {t: {k: statistics.median(p[t][k] for p in per) for k in ("measured_ns",
                                                                      "estimated_ns")}
            for t in TERMS}


def predicted_terms(k: model.Constants, counts: dict, mem_us: float) -> Dict[str, float]:
    """Equation 1's terms from the counts, µs (the same workload rule as Table 7's)."""
    w = model.workload_from_counts(counts, mem_us=mem_us, mem_source="the other levels")
    return {"threads": model.c_thr(k, w),
            "links": w.connections * k.C_link + w.files * k.C_file,
            "io": model.c_io(k, w) - w.connections * k.C_link - w.files * k.C_file,
            "mem": w.mem_us}


def paper_terms(k: model.Constants, counts: dict) -> Dict[str, float]:
    """Equation 6's terms as the paper applied it (a thread per connection, C_mem = 0), µs."""
    w = model.workload_from_counts(counts)
    return {"threads": w.connections * k.C_nt, "links": w.connections * k.C_link,
            "io": w.connections * w.chunks * k.C_io_chunk, "mem": 0.0}


def compare(pred_us: Dict[str, float], parts: Dict[str, dict]) -> Dict[str, dict]:
    """Per term: predicted, measured, estimated (µs) and (measured - predicted) / measured."""
    out = {}
    for t in TERMS:
        m = parts[t]["measured_ns"] / 1e3
        p = pred_us[t]
        e = parts[t]["estimated_ns"] / 1e3
        out[t] = {"predicted_us": p, "measured_us": m, "estimated_us": e,
                  # nothing measured, only estimated: labelled, and out of every error
                  "estimated_only": m == 0 and e > 0,
                  "diff_pct": 100.0 * (m - p) / m if m else None}
    return out


def totals(cmp: Dict[str, dict]) -> dict:
    """The sum of the terms that hold a measurement (an estimated-only term is left out of
    both sides), and its (measured - predicted) / measured."""
    keep = [t for t, x in cmp.items() if not x["estimated_only"]]
    m = sum(cmp[t]["measured_us"] for t in keep)
    p = sum(cmp[t]["predicted_us"] for t in keep)
    return {"terms": keep, "measured_us": m, "predicted_us": p,
            "diff_pct": 100.0 * (m - p) / m if m else None}
