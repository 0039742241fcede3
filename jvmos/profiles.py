"""Continuous profiles for `jvmos agent --sample`: async-profiler samples each watched JVM's
CPU for --sample-window seconds of every --sample-every, and the agent serves the last window
as pprof at GET /debug/pprof/profile?pid=PID, the way Pyroscope and Parca pull profiles.

  * A window: async-profiler (build/async-profiler, the one `jvmos record --sample` uses) is
    loaded into the JVM with jattach (Debian's package: a native program that speaks HotSpot's
    attach protocol as the JVM's own user and in its mount namespace; no JVM is started per
    command, as jcmd would) with `start,event=cpu,interval=...,jfr,file=...,timeout=W`: it
    stops by itself after W seconds and closes its JFR file, so a window ends even if the
    agent dies in it, and the JVM is left with the profiler idle.
  * pprof: the last finished window's JFR is converted by async-profiler's own converter
    (`jfr-converter.jar -o pb.gz`, a JVM start: about 0.3 s) when the endpoint is first asked
    for it, and the result is kept; a window nobody asks for is never converted. The JFR files
    of older windows are deleted (KEEP windows are kept per JVM).
  * Cost: the sampler runs in the JVM during its windows only (a CPU sample every
    INTERVAL_MS ms of CPU time); its cost is not in the agent's probe-effect estimate, which
    covers the probes (the window's share of the time is what bounds it: 5 s of every 60 s by
    default).
"""
import shutil
import subprocess
import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Deque, Dict, Optional

from jvmos import JvmosError

INTERVAL_MS = 10          # a CPU sample every 10 ms of CPU time, per thread
KEEP = 2                  # finished windows kept per JVM
JATTACH_TIMEOUT_S = 30


@dataclass
class Window:
    start: float          # Unix time
    end: float            # when it stops (Unix time)
    jfr: Path
    pprof: Optional[bytes] = None


@dataclass
class JvmProfiles:
    running: Optional[Window] = None
    done: Deque[Window] = field(default_factory=lambda: deque(maxlen=KEEP))
    windows: int = 0
    failures: int = 0
    last_error: str = ""


def jattach() -> str:
    path = shutil.which("jattach")
    if not path:
        raise JvmosError("--sample needs jattach (apt-get install jattach; make deps installs "
                         "it)")
    return path


def start_window(pid: int, jfr: Path, seconds: float) -> None:
    """async-profiler started in pid for `seconds`, writing JFR to jfr; JvmosError when the
    JVM refused (attach disabled, another profiler running, ...)."""
    from jvmos import sampling
    lib = sampling.lib()
    opts = (f"start,event=cpu,interval={INTERVAL_MS}ms,jfr,file={jfr},"
            f"timeout={max(1, round(seconds))}")
    try:
        r = subprocess.run([jattach(), str(pid), "load", str(lib), "true", opts],
                           capture_output=True, text=True, timeout=JATTACH_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise JvmosError(f"jattach to pid {pid} did not answer in {JATTACH_TIMEOUT_S} s")
    out = (r.stdout + r.stderr).strip()
    if r.returncode != 0 or "return code: 0" not in out:
        last = (out.splitlines() or ["no output"])[-1]
        raise JvmosError(f"async-profiler could not start in pid {pid}: {last}")


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

    def step(self, pid: int, now: float) -> Optional[float]:
        """pid's sampling at time now (Unix): a window that ended is filed, one that is due is
        started. Returns when pid next needs a look."""
        with self.lock:
            p = self.jvms.setdefault(pid, JvmProfiles())
        due = self.next_at.setdefault(pid, now + min(5.0, self.every_s))
        run = p.running
        if run is not None and now >= run.end + 0.5:
            with self.lock:
                p.running = None
                if run.jfr.exists() and run.jfr.stat().st_size > 0:
                    if len(p.done) == p.done.maxlen:
                        p.done[0].jfr.unlink(missing_ok=True)
                    p.done.append(run)
                    p.windows += 1
                else:
                    p.failures += 1
                    p.last_error = f"no JFR written at {run.jfr}"
        if p.running is None and now >= due:
            self.next_at[pid] = now + self.every_s
            jfr = self.dir / f"profile-{pid}-{int(now)}.jfr"
            try:
                start_window(pid, jfr, self.window_s)
            except JvmosError as e:
                with self.lock:
                    p.failures += 1
                    first = not p.last_error
                    p.last_error = str(e)
                if first:
                    self.log(f"pid {pid}: --sample: {e} (tried again every "
                             f"{self.every_s:g} s; counted in jvmos_profile_failures_total)")
            else:
                with self.lock:
                    p.running = Window(start=now, end=now + self.window_s, jfr=jfr)
        p = self.jvms[pid]
        return min(self.next_at[pid], p.running.end + 0.5 if p.running else float("inf"))

    def forget(self, pid: int) -> None:
        with self.lock:
            p = self.jvms.pop(pid, None)
            self.next_at.pop(pid, None)
        if p is not None:
            for w in list(p.done) + ([p.running] if p.running else []):
                w.jfr.unlink(missing_ok=True)

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
                          "last_error": p.last_error}
                    for pid, p in self.jvms.items()}
