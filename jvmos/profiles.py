"""Continuous profiles for `jvmos agent --sample`: async-profiler samples each watched JVM's
CPU for --sample-window seconds of every --sample-every, and the agent serves the last window
as pprof at GET /debug/pprof/profile?pid=PID, the way Pyroscope and Parca pull profiles.

  * A window: async-profiler (build/async-profiler, the one `jvmos record --sample` uses) is
    loaded into the JVM with jattach (Debian's package: a native program that speaks HotSpot's
    attach protocol as the JVM's own user and in its mount namespace; no JVM is started per
    command, as jcmd would) with `start,event=itimer,interval=...,jfr,file=...,timeout=W` (the
    event: jvmos.samplercost.EVENT, which says why): it
    stops by itself after W seconds and closes its JFR file, so a window ends even if the
    agent dies in it, and the JVM is left with the profiler idle. The JVM writes the file in
    its own /tmp (a JVM of another user, or in a container, could not write into the agent's
    state directory), and the agent moves it into its state directory through
    /proc/PID/root once the window is over. jattach runs in a thread of its own: a JVM slow
    to answer never holds up the agent's loop (its windows, its snapshots).
  * pprof: the last finished window's JFR is converted by async-profiler's own converter
    (`jfr-converter.jar -o pb.gz`, a JVM start: about 0.3 s) when the endpoint is first asked
    for it, and the result is kept; a window nobody asks for is never converted. The JFR files
    of older windows are deleted (KEEP windows are kept per JVM).
  * Cost, within --max-overhead: the sampler runs in the JVM during its windows only, a CPU
    sample every `interval` of the process's CPU time. Before a window starts, the agent's
    plan (Agent.sampler_plan, dutycycle.sampler_window) picks that interval and the window's
    length from the calibrated cost of a window and of a sample (jvmos calibrate --sampler)
    and the JVM's CPU in its last interval: INTERVAL_MS and --sample-window when that keeps
    the window within its share of the budget; else the shortest longer window (at most half
    of --sample-every) that keeps it there, else the longest at a longer interval; no window
    at all (counted as skipped, with the reason) when none does. The probes' windows are
    sized with what a running (or starting, or due) profile window is estimated to take.
    After a window, its cost is estimated from the JVM's CPU during it (the process clock,
    read at its start and end): samples = CPU / interval,
    cost = ns_per_window + ns_per_window_s x its seconds + ns_per_sample x samples; an
    estimate, exported as one.
"""
import math
import shutil
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Deque, Dict, Optional, Tuple

from jvmos import JvmosError

INTERVAL_MS = 10          # a CPU sample every 10 ms of the process's CPU time (itimer)
KEEP = 2                  # finished windows kept per JVM
FILE_AFTER_S = 1.0        # a window's JFR is taken this long after it stopped by itself
JATTACH_TIMEOUT_S = 30
WAIT_S = 1.0              # a window the plan cannot size yet is looked at again this soon


@dataclass
class Window:
    start: float          # Unix time: when jattach came back with the profiler started
    end: float            # start + its timeout (whole seconds): when it stops by itself
    jfr: Path             # where the agent keeps it (moved from the JVM's /tmp)
    in_jvm: str = ""      # the file's path as the JVM sees it
    same_ns: bool = False  # the JVM sees the agent's file system: in_jvm is the agent's too
    pprof: Optional[bytes] = None
    interval_ns: int = INTERVAL_MS * 1_000_000
    cpu_start: Optional[int] = None   # the JVM's process CPU (ns) when the window started
    cpu_end: Optional[int] = None     # ... and when it ended (read at its end)


@dataclass
class JvmProfiles:
    running: Optional[Window] = None
    starting: bool = False            # jattach under way (in its thread)
    done: Deque[Window] = field(default_factory=lambda: deque(maxlen=KEEP))
    windows: int = 0
    failures: int = 0
    last_error: str = ""
    skipped: int = 0                  # windows not started: over the budget (plan's reason)
    last_skip: str = ""
    interval_ns: Optional[int] = None  # the last window's sampling interval
    seconds: Optional[int] = None     # the last window's length (s)
    cost_ns: float = 0.0              # finished windows' estimated cost (model x CPU)
    cost_known: bool = True           # every finished window had a model to estimate it by
    last_cost_ratio: Optional[float] = None   # the last window's estimated cost / its CPU


def jattach() -> str:
    path = shutil.which("jattach")
    if not path:
        raise JvmosError("--sample needs jattach (apt-get install jattach; make deps installs "
                         "it)")
    return path


def start_window(pid: int, jfr: str, seconds: int, interval_ns: int) -> None:
    """async-profiler started in pid for `seconds`, a sample per interval_ns of the process's
    CPU, writing JFR to jfr (a path in the JVM's own mount namespace); JvmosError when the JVM
    refused (attach disabled, another profiler running, ...)."""
    from jvmos import sampling
    from jvmos.samplercost import EVENT
    opts = f"start,event={EVENT},interval={interval_ns},jfr,file={jfr},timeout={seconds}"
    sampling.jattach_load(jattach(), pid, opts, JATTACH_TIMEOUT_S,
                          "async-profiler could not start")


def run_seconds(window_s: float) -> int:
    """The length a --sample-window runs (async-profiler's timeout is whole seconds)."""
    return max(1, round(window_s))


def _process_cpu(pid: int) -> Optional[int]:
    from jvmos.cputime import cpu_or_none
    return cpu_or_none(pid)


def window_cost(model: Optional[dict], run: Window) -> Optional[Tuple[float, float]]:
    """A finished window's estimated cost (CPU ns) and its share of the JVM's CPU during the
    window: the calibrated cost of a window, and of a sample times the samples its interval
    gives for that CPU (a sample per interval of CPU). None without a model or the CPU."""
    if not model or run.cpu_start is None or run.cpu_end is None:
        return None
    from jvmos.samplercost import cost_ns
    cpu = max(run.cpu_end - run.cpu_start, 0)
    ns = cost_ns(model, cpu / run.interval_ns, run.end - run.start)
    return ns, (ns / cpu if cpu > 0 else math.inf)


def same_mount_ns(pid: int) -> bool:
    import os
    try:
        return os.readlink(f"/proc/{pid}/ns/mnt") == os.readlink("/proc/self/ns/mnt")
    except OSError:
        return False


def to_pprof(jfr: Path) -> bytes:
    """A window's JFR as gzipped pprof, by async-profiler's converter."""
    from jvmos import sampling
    java = sampling._converter_java()
    if not sampling.CONVERTER.exists() or not java:
        raise JvmosError(f"no converter ({sampling.CONVERTER}) or no java to run it")
    target = jfr.with_suffix(".pb.gz")
    r = subprocess.run([java, "-jar", str(sampling.CONVERTER), "--cpu", "-o", "pb.gz",
                        str(jfr), str(target)], capture_output=True, text=True, timeout=300)
    if r.returncode != 0 or not target.exists():
        raise JvmosError("the converter failed: "
                         + (r.stderr.strip().splitlines() or ["no output"])[-1])
    data = target.read_bytes()
    target.unlink(missing_ok=True)
    return data


class Profiles:
    """Every watched JVM's windows: started and finished by the agent's loop, read by the HTTP
    thread (under lock)."""

    def __init__(self, state_dir: Path, window_s: float, every_s: float, log):
        self.dir = state_dir
        self.window_s, self.every_s, self.log = window_s, every_s, log
        self.lock = threading.Lock()
        self.jvms: Dict[int, JvmProfiles] = {}
        self.next_at: Dict[int, float] = {}
        self.converting = threading.Lock()
        self.clock = time.time                                # Unix time (a test's own)
        self.root_of = lambda pid: Path(f"/proc/{pid}/root")   # the JVM's file system
        # before a window: (interval_ns, seconds, "") to start it with, (None, seconds, why it
        # is skipped), or (None, seconds, None): not yet (nothing to size it by)
        self.plan: Callable[[int], Tuple[Optional[int], int, Optional[str]]] = \
            lambda pid: (INTERVAL_MS * 1_000_000, run_seconds(self.window_s), "")
        # the sampler's cost model (platform file "sampler"; None: costs not estimated)
        self.model: Optional[dict] = None
        self.cpu_of: Callable[[int], Optional[int]] = _process_cpu

    def step(self, pid: int, now: float) -> Optional[float]:
        """pid's sampling at time now (Unix): a window that ended is filed, one that is due is
        planned (its interval, or skipped) and started. Returns when pid next needs a look."""
        with self.lock:
            p = self.jvms.setdefault(pid, JvmProfiles())
        due = self.next_at.setdefault(pid, now + min(5.0, self.every_s))
        run = p.running
        if run is not None and run.cpu_end is None and now >= run.end:
            run.cpu_end = self.cpu_of(pid)
        if run is not None and now >= run.end + FILE_AFTER_S:
            self.file(pid, p, run)
        if p.running is None and not p.starting and now >= due:
            self.next_at[pid] = now + self.every_s
            interval, seconds, why = self.plan(pid)
            if interval is None and why is None:
                # nothing to size it by yet (the JVM's first interval): looked at again soon
                self.next_at[pid] = now + WAIT_S
            elif interval is None:
                with self.lock:
                    p.skipped += 1
                    new = why != p.last_skip
                    p.last_skip = why
                if new:
                    self.log(f"pid {pid}: --sample: window skipped: {why} (tried again every "
                             f"{self.every_s:g} s; counted in jvmos_profile_skipped_total)")
            else:
                with self.lock:
                    p.starting = True
                    p.interval_ns, p.seconds = interval, seconds
                threading.Thread(target=self._start, args=(pid, p, int(now), interval, seconds),
                                 daemon=True, name=f"jvmos-sample-{pid}").start()
        run = p.running
        if run is None:
            return self.next_at[pid]
        return min(self.next_at[pid], run.end if run.cpu_end is None
                   else run.end + FILE_AFTER_S)

    def _start(self, pid: int, p: "JvmProfiles", t: int, interval_ns: int,
               seconds: int) -> None:
        in_jvm = f"/tmp/jvmos-profile-{pid}-{t}.jfr"
        cpu0 = self.cpu_of(pid)
        try:
            start_window(pid, in_jvm, seconds, interval_ns)
        except JvmosError as e:
            with self.lock:
                p.starting = False
                p.failures += 1
                first = not p.last_error
                p.last_error = str(e)
            if first:
                self.log(f"pid {pid}: --sample: {e} (tried again every {self.every_s:g} s; "
                         "counted in jvmos_profile_failures_total)")
            return
        start = self.clock()
        run = Window(start=start, end=start + seconds, jfr=self.dir / f"profile-{pid}-{t}.jfr",
                     in_jvm=in_jvm, same_ns=same_mount_ns(pid), interval_ns=interval_ns,
                     cpu_start=cpu0)
        with self.lock:
            # running before starting is cleared: the loop reads both without the lock
            p.running = run
            p.starting = False

    def window_plan(self, pid: int, until: float):
        """pid's window the probes' windows must leave room for before `until` (Unix time):
        (interval_ns, seconds) of one that runs or is starting, "due" for one due by then
        (not planned yet), None for none."""
        with self.lock:
            p = self.jvms.get(pid)
            if p is None:
                return None
            if p.running is not None:
                r = p.running
                return r.interval_ns, max(r.end - r.start, 1.0)
            if p.starting:
                return p.interval_ns, p.seconds
            if self.next_at.get(pid, math.inf) <= until:
                return "due"
        return None

    def file(self, pid: int, p: "JvmProfiles", run: Window) -> None:
        """A window that is over: its JFR moved from the JVM's /tmp into the state directory
        and kept (the oldest beyond KEEP deleted), or counted as a failure."""
        src = self.root_of(pid) / run.in_jvm.lstrip("/") if run.in_jvm else run.jfr
        ok = False
        try:
            if src != run.jfr:
                shutil.move(str(src), str(run.jfr))
            ok = run.jfr.stat().st_size > 0
        except OSError:
            ok = False
        cost = window_cost(self.model, run)
        with self.lock:
            p.running = None
            if ok:
                if len(p.done) == p.done.maxlen:
                    p.done[0].jfr.unlink(missing_ok=True)
                p.done.append(run)
                p.windows += 1
                if cost is None:
                    p.cost_known = False
                else:
                    p.cost_ns += cost[0]
                    p.last_cost_ratio = cost[1]
            else:
                p.failures += 1
                p.last_error = f"no JFR written at {run.in_jvm or run.jfr} in pid {pid}"

    def forget(self, pid: int) -> None:
        """pid is no longer watched (or is gone): its files deleted, the one of a window it
        was in too (through its /proc/PID/root while it lives, or directly when it shared
        the agent's file system)."""
        with self.lock:
            p = self.jvms.pop(pid, None)
            self.next_at.pop(pid, None)
        if p is None:
            return
        for w in list(p.done):
            w.jfr.unlink(missing_ok=True)
        w = p.running
        if w is not None:
            for f in ([self.root_of(pid) / w.in_jvm.lstrip("/")]
                      + ([Path(w.in_jvm)] if w.same_ns else [])):
                try:
                    f.unlink(missing_ok=True)
                except OSError:
                    pass

    def pprof(self, pid: int) -> Window:
        """The last finished window of pid with its pprof (converted once, here)."""
        with self.lock:
            p = self.jvms.get(pid)
            w = p.done[-1] if p is not None and p.done else None
        if w is None:
            raise LookupError(f"no finished profile window of pid {pid} yet"
                              if p is not None else f"pid {pid} is not sampled by this agent")
        with self.converting:               # one conversion at a time
            if w.pprof is None:
                w.pprof = to_pprof(w.jfr)
        return w

    def exposed(self) -> Dict[int, dict]:
        with self.lock:
            return {pid: {"windows": p.windows, "failures": p.failures,
                          "last_end": p.done[-1].end if p.done else None,
                          "last_error": p.last_error, "skipped": p.skipped,
                          "last_skip": p.last_skip,
                          "interval_s": p.interval_ns / 1e9 if p.interval_ns else None,
                          "window_s": p.seconds,
                          "estimated_cost_s": (p.cost_ns / 1e9 if p.cost_known
                                               and self.model else None),
                          "last_estimated_cost_ratio": p.last_cost_ratio}
                    for pid, p in self.jvms.items()}
