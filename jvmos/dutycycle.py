"""Duty cycling for `jvmos agent`: a busy JVM's layer is counted for a window of every period
instead of all the time, so that the estimated probe effect stays under --max-overhead and the
layer is never blind for longer than a period.

The engine closes a layer's uprobe links and opens them again on command (probes/engine/
windows.go: opening takes a few ms, closing tens of ms) and measures each layer's on-time with
the clock of its snapshots, so the counts of a period are exact for the windows, and a rate is
extrapolated from them: the counts divided by the on-time. This module holds the arithmetic:

  * size_windows: each layer's window for the next period, from the last period's probe cost
    per second of on-time (hits x the calibrated cost per hit), the JVM's CPU and the limit.
    The budget (the limit x TARGET of the JVM's CPU, less what the probes that are always on
    cost) is shared by water-filling: a layer cheaper than an equal share is on all the time,
    the rest split what is left. A window grows at most GROWTH times from one period to the
    next (a JVM idle in one period may be busy in the next). A layer whose window would be
    shorter than MIN_WINDOW_S gets MIN_WINDOW_S when that still fits the whole limit, and is
    shed (returned as None) only when even MIN_WINDOW_S would exceed it.
  * rate_interval: a rate over the last windows with its 95% interval (the method and n
    named): Student's t on the ratio estimator across windows, from 3 windows on.
  * window_start: where in the period the window opens: at random (a load with a period of its
    own would otherwise be sampled at the same phase each time), but never more than a period
    after the last window closed.

Only layers whose counts all come from uprobes are windowed (WINDOWED_LAYERS): io and jni. The
threads, links and mem layers also count through BTF tracepoints (the scheduler chain, page
faults, thread exits), which the engine does not close per window; they stay on, and are shed
when over the limit, as before.
"""
import math
import random
from typing import Dict, List, Optional, Sequence, Tuple

# layers counted only through uprobes: their windows cover every count they make
WINDOWED_LAYERS = ("io", "jni")
# the category each windowed layer counts (a category's coverage is its layer's)
CATEGORY_LAYER = {"jni_copy": "io", "nio_copy": "io", "io_syscall": "io", "kernel_copy": "io",
                  "jni_call": "jni"}
# the shortest window: opening a layer's links took 7-15 ms here and closing them 60-90 ms
# (the engine's edge_ns; a window is taken from the middle of its opening to the moment its
# closing begins)
MIN_WINDOW_S = 0.1
# the first window of a layer whose cost is not known yet: the shortest, so that a layer whose
# probes cost 15% of the JVM's CPU while on costs 1.5% of the agent's first (1 s) interval
FIRST_WINDOW_S = 0.1
# a window grows at most this many times from one period to the next
GROWTH = 4.0
# windows are sized for this share of --max-overhead: the rest is headroom for a load that
# grows between two periods
TARGET = 0.8
# the windows a rate's interval is computed over (a minute at the default 5 s period)
HISTORY = 12
# the end of a window is kept this far before the period's end (the snapshot comes after it)
END_MARGIN_S = 0.05


def size_windows(cost_per_on_s: Dict[str, Optional[float]], cpu_per_s: float,
                 fixed_per_s: float, limit_pct: float, period_s: float,
                 prev: Dict[str, Optional[float]]) -> Dict[str, Optional[float]]:
    """Each windowed layer's window (seconds) for the next period; period_s means on all the
    time, None shed. cost_per_on_s: the layer's estimated probe cost (ns) per second its
    probes were on in the last period (None: never measured); cpu_per_s: the JVM's CPU (ns)
    per second of the last period; fixed_per_s: probe cost (ns per second) of what stays on
    (the common probes, the layers that are not windowed); prev: the last windows."""
    limit = limit_pct / 100.0 * cpu_per_s            # ns of probes per second the limit allows
    budget = TARGET * limit - fixed_per_s
    out: Dict[str, Optional[float]] = {}
    known = {layer: r for layer, r in cost_per_on_s.items() if r is not None}
    for layer, r in cost_per_on_s.items():
        if r is None:
            out[layer] = min(FIRST_WINDOW_S, period_s)
    left, k = budget, len(known)
    for layer, r in sorted(known.items(), key=lambda kv: (kv[1], kv[0])):
        share = max(left, 0.0) / k
        # what this layer may have of the whole limit (the target's headroom included)
        whole = max(left + (1.0 - TARGET) * limit, 0.0) / k
        k -= 1
        duty = 1.0 if r <= share else share / r
        w: Optional[float] = min(duty * period_s,
                                 max(prev.get(layer) or 0.0, FIRST_WINDOW_S) * GROWTH,
                                 period_s)
        if w < MIN_WINDOW_S:
            # the shortest window: kept when its cost still fits the limit itself (not only
            # the target), else the layer is shed
            w = MIN_WINDOW_S if r * MIN_WINDOW_S <= whole * period_s else None
        left -= r * (w or 0.0) / period_s
        out[layer] = w
    return out


def window_start(now: float, period_s: float, window_s: float,
                 last_off: Optional[float] = None, rng: random.Random = random) -> float:
    """When a window of window_s opens in the period [now, now + period_s): at random (a load
    with a period of its own would otherwise be sampled at the same phase each time), so that
    it closes END_MARGIN_S before the period ends, and no later than one period after the
    last window closed (last_off): the layer is never off for longer than a period."""
    latest = now + max(period_s - window_s - END_MARGIN_S, 0.0)
    if last_off is not None:
        latest = min(latest, last_off + period_s)
    return rng.uniform(now, latest) if latest > now else now


# Student's t 0.975 quantiles for 2..HISTORY-1 degrees of freedom (tests/unit/test_dutycycle.py
# checks them against scipy.stats.t.ppf): the agent does not import scipy, whose stats module
# alone added 73 MB to its resident memory here (23 MB before it)
T975 = {2: 4.302653, 3: 3.182446, 4: 2.776445, 5: 2.570582, 6: 2.446912, 7: 2.364624,
        8: 2.306004, 9: 2.262157, 10: 2.228139, 11: 2.200985}


def rate_interval(windows: Sequence[Tuple[float, float]]) -> Optional[dict]:
    """A rate per second from windows [(count, on-time in s)]: the ratio estimator sum(count) /
    sum(on-time), and, from 3 windows on, its 95% interval: Student's t over the windows'
    residuals (the spread between windows, which holds the count's own noise too). Fewer
    windows give the estimate without an interval (lower95 and upper95 None). None without
    on-time."""
    ws = [(c, t) for c, t in windows if t > 0][-HISTORY:]
    T = sum(t for _, t in ws)
    if not ws or T <= 0:
        return None
    C = sum(c for c, _ in ws)
    r = C / T
    n = len(ws)
    lo = hi = None
    method = f"no interval below 3 windows ({n})"
    if n >= 3:
        tbar = T / n
        s2 = sum((c - r * t) ** 2 for c, t in ws) / (n - 1)
        se = math.sqrt(s2 / n) / tbar
        q = T975[n - 1]
        lo, hi, method = max(r - q * se, 0.0), r + q * se, f"t over {n} windows"
    return {"rate": r, "lower95": lo, "upper95": hi, "n": n, "count": C, "on_s": T,
            "method": method}


def layer_of(category: str) -> Optional[str]:
    """The windowed layer a category's counts come from (None: a layer that is not windowed)."""
    return CATEGORY_LAYER.get(category)


def windowed(layers: Sequence[str]) -> List[str]:
    return [layer for layer in layers if layer in WINDOWED_LAYERS]


def unwindowed(layers: Sequence[str]) -> List[str]:
    return [layer for layer in layers if layer not in WINDOWED_LAYERS]


# --sample within the same budget: while a profile window runs, the sampler may take at most
# this share of the windows' budget (TARGET x --max-overhead of the JVM's CPU); the probes'
# windows are sized with what it is estimated to take
SAMPLER_SHARE = 0.5
# the coarsest sampling a window is still run at: a sample per second of the process's CPU
MAX_SAMPLER_INTERVAL_NS = 1_000_000_000


def sampler_window(ns_per_sample: float, ns_per_window: float, ns_per_window_s: float,
                   cpu_per_s: float, window_s: int, max_window_s: int, limit_pct: float,
                   base_interval_ns: int) -> Tuple[Optional[int], int, str]:
    """A profile window's sampling interval and length (whole seconds: async-profiler's
    timeout), so that its estimated cost (jvmos calibrate --sampler: ns_per_window for its
    start and stop, ns_per_window_s for each second it is open, ns_per_sample per sample)
    stays within SAMPLER_SHARE of the budget (TARGET x limit_pct of the JVM's CPU, cpu_per_s
    ns per second) over the window. The itimer engine takes a sample per interval of the
    process's CPU: cpu_per_s / interval samples per second.

    window_s at base_interval_ns when that fits; else, when the samples fit at that interval
    but the start and stop do not in window_s, the shortest longer window (up to
    max_window_s) they fit in; else window_s, or if nothing is left for its samples
    max_window_s, at the interval the samples need. (None, length, why) when even that
    leaves nothing for the samples, the interval would pass MAX_SAMPLER_INTERVAL_NS, or the
    JVM used no CPU."""
    share_pct = 100.0 * SAMPLER_SHARE * TARGET * limit_pct / 100.0
    share = f"{share_pct:.3g}% of the JVM's CPU"
    if cpu_per_s <= 0:
        return None, window_s, "the JVM used no CPU in its last interval: nothing to sample"
    allowed = share_pct / 100.0 * cpu_per_s                           # ns per second
    c, f, g = max(ns_per_sample, 0.0), max(ns_per_window, 0.0), max(ns_per_window_s, 0.0)
    # what the start and stop may take per second when the samples run at the base interval
    room = allowed - g - c * cpu_per_s / base_interval_ns
    if room > 0:
        length = window_s if f <= room * window_s else math.ceil(f / room)
        if length <= max_window_s:
            return int(base_interval_ns), length, ""
    length = window_s
    if allowed - g - f / length <= 0:
        length = max(window_s, max_window_s)
    left = allowed - g - f / length
    if left <= 0:
        return None, length, (f"a {length} s window without a sample ({f / 1e6:.1f} ms of CPU "
                              f"to start and stop, {g / 1e6:.1f} ms a second open) would pass "
                              f"the sampler's share of --max-overhead {limit_pct:g}% ({share}; "
                              f"the JVM used {cpu_per_s / 1e7:.2g}% of a core)")
    interval = max(float(base_interval_ns), c * cpu_per_s / left)
    if interval > MAX_SAMPLER_INTERVAL_NS:
        return None, length, (f"a {length} s window would need a sample per "
                              f"{interval / 1e9:.2f} s of CPU to stay within the sampler's "
                              f"share of --max-overhead {limit_pct:g}% ({share})")
    return int(math.ceil(interval)), length, ""


def sampler_cost_per_s(ns_per_sample: float, ns_per_window: float, ns_per_window_s: float,
                       cpu_per_s: float, window_s: float, interval_ns: float) -> float:
    """What a running profile window is estimated to cost the JVM per second (ns/s): its
    samples (cpu_per_s / interval_ns per second), its cost per second open, and its start and
    stop spread over it."""
    return (max(ns_per_sample, 0.0) * cpu_per_s / interval_ns + max(ns_per_window_s, 0.0)
            + max(ns_per_window, 0.0) / window_s)
