"""Probe-effect correction, one definition for every layer.

A measured time holds the probes' own cost: the part of each hit that falls inside the span
it times (the calibrated "window"), and for spans with probes nested in them, the part of
the nested probes' cost outside their own window. The corrected time is the raw time minus
that correction. Nothing is clamped silently:

  * a correction larger than the raw time gives 0 with `floored: true`, and an interval
    `time_ci95_ns` that contains the floored value (lower bound 0, upper bound from the
    window's 95% interval when it is known, else the raw time, which holds the true time);
    the interval's ends are not below 0 and its upper end is not above raw - the part of
    the correction outside the window, because neither a time nor a window is negative;
  * a correction that cannot be computed because a probe cost was not calibrated gives
    `time_ns: None` (unknown) with `corrected: false`; the raw time is kept and is an upper
    bound of the true one;
  * a calibrated window or hit cost that is zero, negative or not a number is an error of
    the calibration (validate_probes), never a correction of zero.

Output keys, everywhere: time_ns, time_raw_ns, time_hits, correction_ns, corrected, floored,
correction_dominates; probe_window_ns when one calibrated window per hit applies;
probe_window_source naming the calibrated figure used; time_ci95_ns when an interval is known
(always when floored).
"""
import math
from typing import Dict, Iterable, Optional, Sequence

from jvmos import JvmosError

# the calibrated probe figures (jvmos calibrate --probes) that a correction may use
PROBE_KEYS = ("jni_copy_time_hit", "jni_copy_time_window", "jni_copy_count_hit",
              "io_syscall_hit", "io_syscall_window", "uprobe", "tracepoint")
# a probe's window lies inside its hit: hit - window is the part outside the span it times
WINDOW_OF_HIT = {"jni_copy_time_window": "jni_copy_time_hit",
                 "io_syscall_window": "io_syscall_hit"}


def _num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def validate_probes(probes: Optional[dict]) -> None:
    """Raise JvmosError (one line) when a calibrated probe cost cannot be used: zero,
    negative or not a number (but a window the calibration floored at 0, flagged), a window larger than its hit, or a 95% interval that does not
    hold its mean. Absent figures are allowed (their corrections are then unknown)."""
    if not probes:
        return
    for key in PROBE_KEYS:
        entry = probes.get(key)
        if entry is None:
            continue
        mean = entry.get("mean_ns") if isinstance(entry, dict) else None
        # a window not resolved from 0 is floored there by the calibration, and says so
        floored_window = key.endswith("_window") and isinstance(entry, dict) \
            and entry.get("floored") and mean == 0
        if not _num(mean) or (mean <= 0 and not floored_window):
            raise JvmosError(f"calibration error: probe cost {key} is {mean!r} ns; a calibrated "
                             f"probe cost must be a positive number (re-run jvmos calibrate "
                             f"--probes)")
        ci = entry.get("ci95_ns")
        if ci is not None and not (isinstance(ci, (list, tuple)) and len(ci) == 2
                                   and all(_num(x) for x in ci) and ci[0] <= mean <= ci[1]):
            raise JvmosError(f"calibration error: probe cost {key} has a 95% interval {ci!r} "
                             f"that does not hold its mean {mean} ns (re-run jvmos calibrate "
                             f"--probes)")
    u, h = (probes.get("uprobe") or {}).get("mean_ns"), \
        (probes.get("jni_copy_time_hit") or {}).get("mean_ns")
    if u is not None and h is not None and u > h:
        raise JvmosError(f"calibration error: a bare uprobe ({u} ns) costs more than a "
                         f"uprobe+uretprobe pair (jni_copy_time_hit, {h} ns) (re-run jvmos "
                         f"calibrate --probes)")
    for window, hit in WINDOW_OF_HIT.items():
        w, h = (probes.get(window) or {}).get("mean_ns"), (probes.get(hit) or {}).get("mean_ns")
        if w is not None and h is not None and w > h:
            raise JvmosError(f"calibration error: {window} ({w} ns) is larger than {hit} "
                             f"({h} ns), but the window is part of the hit (re-run jvmos "
                             f"calibrate --probes)")


# cost models read from the platform file: per-call ones must be positive, per-byte ones
# non-negative (a copy can be too fast to measure per byte, never faster than free)
def validate_costs(costs: Optional[dict]) -> None:
    """Raise JvmosError (one line) when a calibrated cost model is zero/negative where it
    divides or multiplies a count (ns_per_call of malloc, free, page faults), or negative or
    not a number anywhere."""
    if not costs:
        return

    def check(name, model, per_call_positive):
        if not isinstance(model, dict):
            raise JvmosError(f"calibration error: cost model {name} is {model!r}, not a model")
        for field in ("ns_per_call", "ns_per_byte"):
            if field not in model:
                continue
            v = model[field]
            if not _num(v) or v < 0 or (field == "ns_per_call" and per_call_positive and v == 0):
                raise JvmosError(f"calibration error: {name}.{field} is {v!r}; re-run jvmos "
                                 f"calibrate")

    for name, model in costs.items():
        if name in ("jni_region", "nio_heap_to_direct"):       # per JDK home
            if not isinstance(model, dict):
                raise JvmosError(f"calibration error: cost model {name} is {model!r}")
            for home, m in model.items():
                check(f"{name}[{home}]", m, False)
        elif isinstance(model, dict) and ("ns_per_call" in model or "ns_per_byte" in model):
            check(name, model, name in ("malloc_call", "free_call", "page_fault"))


def probe_cost(probes: Optional[dict], key: str) -> Optional[float]:
    """A calibrated mean cost in ns, or None when it was not calibrated (never 0 for absent)."""
    v = ((probes or {}).get(key) or {}).get("mean_ns")
    return float(v) if v is not None else None


def probe_ci(probes: Optional[dict], key: str) -> Optional[Sequence[float]]:
    ci = ((probes or {}).get(key) or {}).get("ci95_ns")
    return tuple(ci) if ci else None


def correct(raw_ns: float, hits: int, correction_ns: Optional[float], *,
            window_ns: Optional[float] = None, window_ci=None,
            source: Optional[str] = None) -> dict:
    """The corrected time of one measured figure.

    correction_ns: what the probes added to raw_ns (None: not calibrated, the time is unknown).
    window_ns/window_ci: the per-hit window when the correction is hits x one window (its 95%
    interval then gives time_ci95_ns); source: which calibrated figure the window is."""
    out = {"time_raw_ns": raw_ns, "time_hits": hits}
    if source:
        out["probe_window_source"] = source
    if correction_ns is None:
        out.update(time_ns=None, correction_ns=None, corrected=False, floored=False,
                   correction_dominates=None)
        return out
    val = raw_ns - correction_ns
    floored = val < 0
    out.update(time_ns=max(0.0, val), correction_ns=correction_ns, corrected=True,
               floored=floored, correction_dominates=bool(raw_ns and correction_ns > 0.5 * raw_ns))
    if window_ns is not None:
        out["probe_window_ns"] = window_ns
    if window_ci and hits:
        # the interval the window's own 95% interval implies (the rest of the correction,
        # if any, taken as exact)
        rest = correction_ns - hits * window_ns if window_ns is not None else 0.0
        lo = raw_ns - rest - hits * window_ci[1]
        # a window is never negative (its Student interval may reach below 0): the upper
        # bound is at most the raw time minus the rest of the correction
        hi = raw_ns - rest - hits * max(0.0, window_ci[0])
        out["time_ci95_ns"] = [max(0.0, lo), max(0.0, hi)]
        if floored and out["time_ci95_ns"][1] == 0.0:
            # the whole interval was below zero: the data only say 0 <= time <= raw
            out["time_ci95_ns"] = [0.0, float(raw_ns)]
    elif floored:
        out["time_ci95_ns"] = [0.0, float(raw_ns)]
    return out


def sum_known(values: Iterable[Optional[float]]) -> Optional[float]:
    """Sum, or None when any term is unknown (never a partial sum that looks complete)."""
    total = 0.0
    for v in values:
        if v is None:
            return None
        total += v
    return total


def combine(parts: Iterable[dict]) -> dict:
    """The correction figures of a sum of corrected parts: sums of raw, correction and time
    (unknown if any part is), floored if any part is, an interval that is the sum of the
    parts' intervals (a part without one contributes its value at both ends)."""
    parts = [p for p in parts if p is not None]
    raw = sum(p.get("time_raw_ns") or 0 for p in parts)
    corr = sum_known(p.get("correction_ns") for p in parts if "correction_ns" in p)
    t = sum_known(p.get("time_ns") for p in parts)
    # parts with nothing to correct (an empty sum) count neither way
    flags = [p["corrected"] for p in parts if p.get("corrected") is not None]
    out = {"time_ns": t, "time_raw_ns": raw,
           "time_hits": sum(p.get("time_hits") or 0 for p in parts),
           "correction_ns": corr,
           "corrected": all(flags) if flags else None,
           "floored": any(p.get("floored") for p in parts),
           "correction_dominates": (None if corr is None or not flags
                                    else bool(raw and corr > 0.5 * raw))}
    if t is not None and any("time_ci95_ns" in p for p in parts):
        lo = sum(p["time_ci95_ns"][0] if "time_ci95_ns" in p else p["time_ns"] for p in parts)
        hi = sum(p["time_ci95_ns"][1] if "time_ci95_ns" in p else p["time_ns"] for p in parts)
        out["time_ci95_ns"] = [lo, hi]
    return out


# ---- the probe costs the layers' spans use, and their arithmetic (None: unknown) ----
#
# Probe costs used (from `jvmos calibrate --probes`). The threads, links and mem layers have
# no windows of their own: they borrow the io layer's, because their bookkeeping is of the
# same kind, and every corrected figure names the window it borrowed in `probe_window_source`:
#   pair_hit, pair_window   a uprobe+uretprobe pair with map bookkeeping on a function symbol
#                           (symbol_pair_time_*: the engine's pair on libc's write wrapper;
#                           jni_copy_time_* in a platform file that lacks it)
#   sys_hit, sys_window     a syscall tracepoint pair with bookkeeping (io_syscall_*)
#   uprobe                  a bare entry uprobe
# A span's raw time holds its own window, plus, for every probe nested in it, the part of
# that probe's cost that falls outside the nested probe's own window (hit - window).

PAIR_SOURCE = ("symbol_pair_time_window where calibrated, else jni_copy_time_window (borrowed: "
               "the same uprobe+uretprobe pair bookkeeping as the io layer's probes on a "
               "function symbol)")
SYS_SOURCE = ("io_syscall_window (borrowed: same tracepoint-pair bookkeeping as the io "
              "layer's syscall probes)")
NESTED_SOURCE = ("; plus, for each probe nested in the span, its hit minus its window "
                 "(the symbol pair's hit - window, as above, and io_syscall_hit - "
                 "io_syscall_window; borrowed from the io layer's calibration)")


def probe_costs(probes: Optional[dict]) -> Dict[str, Optional[float]]:
    """The calibrated costs the layers use; None for one that was not calibrated."""
    g = lambda k: probe_cost(probes, k)
    # the threads and mem layers' uprobe pairs are on function symbols: the symbol pair's
    # costs where the platform file has them (the engine's calibration measures them on
    # libc's write wrapper; for a bpftrace-era recording with USDT JNI probes,
    # probecost.probes_for() kept the symbol pair's there), else the JNI copy pair's
    sym = lambda k: ("symbol_pair_" + k[len("jni_copy_"):]
                     if probes and ("symbol_pair_" + k[len("jni_copy_"):]) in probes else k)
    c = {"pair_hit": g(sym("jni_copy_time_hit")), "pair_window": g(sym("jni_copy_time_window")),
         "sys_hit": g("io_syscall_hit"), "sys_window": g("io_syscall_window"),
         "uprobe": g("uprobe"), "tracepoint": g("tracepoint")}
    c["pair_ci"], c["sys_ci"] = probe_ci(probes, sym("jni_copy_time_window")), \
        probe_ci(probes, "io_syscall_window")
    return c


def mul(n, cost):
    return None if cost is None else n * cost


def add(*xs):
    return sum_known(xs)


def sub(a, b):
    return None if a is None or b is None else a - b


def correct_by_window(raw, hits, window, ci, source):
    """A time corrected by hits x one calibrated window (its own or a borrowed one): the one
    helper every per-hit correction goes through."""
    return correct(raw, hits, mul(hits, window), window_ns=window, window_ci=ci, source=source)


def get(parts, what, field="calls"):
    return (parts.get(what) or {}).get(field, 0) or 0
