"""The live view: `jvmos record --pid PID --interval S [--count N]`.

Every S seconds jvmos asks the engine for a snapshot of its maps (a line on the engine's
stdin; the maps come back as numbers, no text is parsed), builds a summary of everything so far with the same
analyzers as the end of the recording (so every time is corrected for the probe effect the
same way), and prints the difference from the previous snapshot: one line per category with
the interval's calls, bytes and time, and the interval's guaranteed overhead beside the
target's CPU time in that interval. The series goes to the run directory's timeline.json,
rewritten after each interval (an interrupted run keeps every interval printed so far).

What an interval's figures are: differences of two cumulative snapshots. Counts are what the
probes saw between the two snapshots; times are the corrected times' difference (the
correction is linear in the hits, so the difference is the interval's corrected time); an
estimated category stays estimated. A snapshot is taken when the engine reads the request and
walks its maps, a few ms after jvmos sends it: the interval's edges carry that jitter (and the
maps are read one after another while the probes keep counting).
"""
import json
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional

from jvmos import JvmosError
from jvmos.analyzers.records import Records
from jvmos.export import write_atomically
from jvmos.analyzers.summary import guaranteed_by_resource
from jvmos.analyzers.tables import fmt_bytes, fmt_count, fmt_ns

SCHEMA = "jvmos.timeline/1"
# how long the engine may take to hand over a snapshot before the live view gives up on it
SNAPSHOT_TIMEOUT_S = 60.0
FIGURES = ("calls", "bytes", "time_ns")


def _diff(cur, prev):
    """cur - prev, None when either is unknown (a category absent before counts 0 then)."""
    if cur is None or prev is None:
        return None
    return cur - prev


def _interval_time(c: dict, p: dict) -> tuple:
    """(time_ns, flags) of one category over an interval. A corrected time is the interval's
    raw time less the interval's correction (both sums grow with the hits), floored at 0 and
    flagged as the summary floors a total; an estimated or sampled time is the difference of
    the two estimates (they grow with the counts). Unknown in either snapshot: unknown."""
    flags = {}
    if c.get("corrected") and c.get("time_raw_ns") is not None and c.get("correction_ns") is not None:
        raw = _diff(c.get("time_raw_ns"), p.get("time_raw_ns", 0) if p else 0)
        corr = _diff(c.get("correction_ns"), p.get("correction_ns", 0) if p else 0)
        if raw is None or corr is None:
            return None, flags
        flags["corrected"] = True
        if corr > 0.5 * raw:
            flags["correction_dominates"] = True
        if raw - corr < 0:
            flags["floored"] = True
            return 0.0, flags
        return raw - corr, flags
    return _diff(c.get("time_ns"), (p or {}).get("time_ns", 0)), flags


def interval_of(prev: dict, cur: dict, cpu_prev: Optional[int], cpu_cur: Optional[int],
                index: int, t_start_s: float, t_end_s: float) -> dict:
    """One interval of the timeline from two cumulative summaries: counts are differences;
    times as _interval_time says; the guaranteed overhead is summed again from the interval's
    categories (unknown, with its known terms apart, when a term's time is unknown)."""
    cats: Dict[str, dict] = {}
    pcats = prev.get("categories") or {}
    for name, c in (cur.get("categories") or {}).items():
        p = pcats.get(name)
        row = {f: _diff(c.get(f), (p or {}).get(f, 0)) for f in ("calls", "bytes")}
        row["time_ns"], flags = _interval_time(c, p)
        row["method"] = c.get("method")
        row.update(flags)
        cats[name] = row
    by_res, unknown = guaranteed_by_resource(cats)
    g_known = sum(by_res.values())
    pt, ct = prev.get("totals") or {}, cur.get("totals") or {}
    cpu = _diff(cpu_cur, cpu_prev)
    probe = _diff(ct.get("probe_overhead_ns"), pt.get("probe_overhead_ns", 0))
    g = None if unknown else g_known
    return {"index": index, "t_start_s": round(t_start_s, 3), "t_end_s": round(t_end_s, 3),
            "categories": cats, "guaranteed_by_resource": by_res,
            "guaranteed_overhead_ns": g, "guaranteed_overhead_known_ns": g_known,
            "guaranteed_overhead_unknown": unknown,
            "probe_overhead_ns": probe,
            "target_cpu_ns": cpu,
            # the CPU the traced processes used in the interval, the probes' own included
            "guaranteed_overhead_pct_of_cpu": (100.0 * g / cpu if g is not None and cpu
                                               else None)}


def format_interval(e: dict, count: Optional[int]) -> List[str]:
    """The lines printed for one interval (BCC's interval tools print a block per interval)."""
    of = f"/{count}" if count else ""
    g, cpu = e["guaranteed_overhead_ns"], e["target_cpu_ns"]
    if g is None:
        gtext = (f"guaranteed overhead unknown (known terms {fmt_ns(e['guaranteed_overhead_known_ns'])}; "
                 f"no time for {', '.join(e['guaranteed_overhead_unknown'])})")
    else:
        gtext = f"guaranteed overhead {fmt_ns(g)}"
    probe = e.get("probe_overhead_ns")
    of_which = ("" if probe is None else
                f", of which the probes' ~{fmt_ns(probe)} (estimated)")
    if cpu is None:
        share = "target's CPU time not read"
    elif g is None or not cpu:
        share = f"target's CPU while traced {fmt_ns(cpu)}{of_which}"
    else:
        share = (f"= {e['guaranteed_overhead_pct_of_cpu']:.2f}% of the target's {fmt_ns(cpu)} "
                 f"CPU while traced{of_which}")
    lines = [f"{time.strftime('%H:%M:%S')}  interval {e['index']}{of} "
             f"({e['t_start_s']:.1f}-{e['t_end_s']:.1f} s)  {gtext} {share}",
             f"  {'CATEGORY':<16}{'CALLS':>12}{'BYTES':>12}{'TIME':>12}  METHOD"]
    shown = 0
    for name, c in sorted(e["categories"].items(),
                          key=lambda kv: -(kv[1].get("time_ns") or 0)):
        if not any(c.get(f) for f in FIGURES):
            continue
        method = (c.get("method") or "?") + (", corrected" if c.get("corrected") else "") + \
                 (", correction dominates" if c.get("correction_dominates") else "") + \
                 (", floored at 0" if c.get("floored") else "")
        lines.append(f"  {name:<16}{fmt_count(c.get('calls')):>12}{fmt_bytes(c.get('bytes')):>12}"
                     f"{fmt_ns(c.get('time_ns')):>12}  {method}")
        shown += 1
    if not shown:
        lines.append("  (no probe fired in this interval)")
    return lines


class LiveView:
    """Drives the intervals of one recording until it ends: each snapshot is the engine's
    maps, asked for over its stdin and turned into the same Records the analyzers read. Works for
    a launched command as for an attached pid."""

    def __init__(self, engine, plan, out: Path, raw_path: Path, interval_s: float,
                 count: Optional[int], summarize: Callable[[Records, int], dict],
                 cpu_now: Callable[[], Optional[int]],
                 metrics: Optional[Callable[[dict], None]] = None, echo=None):
        self.engine, self.plan = engine, plan
        self.out, self.raw_path = out, raw_path
        self.interval_s, self.count = interval_s, count
        self.summarize, self.cpu_now, self.metrics = summarize, cpu_now, metrics
        self.echo = echo or (lambda line: print(line, flush=True))
        self.intervals: List[dict] = []
        self.skipped: List[str] = []
        self.lost_events = 0
        self._lost_before = 0
        self._prev = None        # (summary, cpu_ns, t_s)
        self.t0 = time.monotonic()
        self.ended: Optional[str] = None

    # ---- snapshots
    def snapshot(self, alive: Callable[[], bool]) -> tuple:
        """The engine's maps now: (Records, None), or (None, why there is none)."""
        from jvmos import engine as engine_mod
        if not alive():
            return None, "the engine stopped before handing it over"
        ev = self.engine.snapshot(timeout=SNAPSHOT_TIMEOUT_S)
        if ev is None:
            return None, (f"the engine did not hand it over within {SNAPSHOT_TIMEOUT_S:.0f} s"
                          if alive() else "the engine stopped before handing it over")
        raw = engine_mod.decode(ev, self.plan)
        # the engine's lost-event counters are cumulative
        self.lost_events = sum((getattr(raw, "engine_lost", None) or {}).values())
        return raw, None

    def start(self, alive: Callable[[], bool]) -> None:
        """The first snapshot, when tracing begins: interval 1 is measured from it."""
        self.t0 = time.monotonic()
        self.take(0.0, alive, None)

    def take(self, t_s: float, alive: Callable[[], bool], index: Optional[int]) -> bool:
        """A snapshot at t_s seconds into the recording; with an index, the interval since
        the previous snapshot is printed and kept. False if no snapshot came. An error in
        the interval's figures is kept in `skipped`: it never ends the recording."""
        raw, why = self.snapshot(alive)
        cpu = self.cpu_now()
        if raw is None:
            self.skipped.append(f"no snapshot at {t_s:.1f} s: {why}")
            return False
        try:
            summary = self.summarize(raw, int(t_s * 1e9))
            if index is not None and self._prev is not None:
                psum, pcpu, pt = self._prev
                e = interval_of(psum, summary, pcpu, cpu, index, pt, t_s)
                e["lost_events"] = self.lost_events - self._lost_before
                self.intervals.append(e)
                for line in format_interval(e, self.count):
                    self.echo(line)
                self.write()
                if self.metrics is not None:
                    self.metrics(summary)
        except (OSError, JvmosError, ValueError, KeyError, TypeError) as err:
            self.skipped.append(f"interval {index} at {t_s:.1f} s not kept: {err}")
            return False
        self._prev = (summary, cpu, t_s)
        self._lost_before = self.lost_events
        return True

    def as_dict(self) -> dict:
        return {"schema": SCHEMA, "interval_s": self.interval_s, "count": self.count,
                "what": ("per interval: differences of two cumulative snapshots of the "
                         "probes' maps; counts are what the probes saw; a corrected time is "
                         "the interval's raw time less the interval's correction (floored at "
                         "0, flagged), an estimated one the difference of the estimates; "
                         "target_cpu_ns is the traced processes' CPU time in the interval, the "
                         "probes' own cost included (probe_overhead_ns, estimated)"),
                "intervals": self.intervals, "skipped": self.skipped,
                "ended": self.ended,
                "covered_until_s": self.intervals[-1].get("t_end_s") if self.intervals else 0.0,
                "after_the_last_interval": ("the recording's end: what the probes saw after "
                                            "covered_until_s is in summary.json only"),
                "lost_events": self.lost_events}

    def write(self) -> None:
        write_atomically(self.out / "timeline.json",
                         (json.dumps(self.as_dict(), indent=1) + "\n").encode())

    # ---- the loop
    def run(self, session, root: int, duration: Optional[float], load) -> bool:
        """Intervals until --count, --duration, a signal, the load's end, the engine dying or
        the target exiting (said in `ended`). Returns True when the target exited. The
        caller took the first snapshot (start()) when tracing began."""
        t0 = self.t0
        alive = self.engine.alive
        end = None if duration is None else t0 + duration
        i = 0
        while self.count is None or i < self.count:
            nxt = t0 + (i + 1) * self.interval_s
            stop_at = nxt if end is None else min(nxt, end)
            gone = session.wait_attached(root, max(0.0, stop_at - time.monotonic()), load)
            if gone:
                self.ended = "the target exited"
                return True
            if session.interrupted is not None:
                self.ended = "stopped by a signal"
                return False
            if not alive():
                self.ended = "the engine stopped"
                return False
            if load is not None and not load.is_alive():
                self.ended = "the driven load ended"
                return False
            if time.monotonic() < nxt - 1e-3:
                self.ended = "--duration elapsed"
                return False
            i += 1
            self.take(time.monotonic() - t0, alive, i)
            if end is not None and time.monotonic() >= end:
                self.ended = "--duration elapsed"
                return False
        self.ended = f"--count {self.count} intervals"
        return False
