"""`jvmos run server`: the guaranteed overhead of any server under growing load (the paper's
Figures 1 and 2 are this experiment on a chat server and on a shop).

A server is started once, warmed up, and loaded at each level twice: once while jvmos is
attached to it (the io, threads, links and mem layers by default), once bare. The recording
gives the overhead by resource; the bare load gives the server's CPU time (its process CPU
clock, every thread), of which Java execution is the part left after the overhead. The
recorded load's CPU time beside the bare one is the probe effect, and a warm pair (a second
recorded load between two bare ones) measures it on the warmed server.

What is shared here: a `Target` (a started server: its pid, its CPU clock, a load at a level),
`measure_level` (recorded, bare, warm pair), the table and the stacked-bar figure. The shop
(`jvmos run tomcat`) and the chat server (`jvmos run chat`) are uses of it; `CommandServer`
runs a user's own server and load commands.
"""
import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import textwrap
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional

from jvmos import JvmosError
from jvmos import cputime
from jvmos import record as rec
from jvmos.analyzers import figures
from jvmos.analyzers.tables import Table
from jvmos.catalogue import GUARANTEED, LAYERS as KNOWN_LAYERS
from jvmos.cputime import cpu_split
from jvmos.heuristic import model
from jvmos.jdk import jvm_of_pid
from jvmos.experiments.common import (PROBE_EFFECT_HEADERS, headline, jdk_label, last_json,
                                      load_finished, log, out_dir, parse_list, probe_effect, probe_effect_cells,
                                      progress_over,
                                      probe_effect_median, probe_totals, write_outputs)

# the layers attached to the server: the paper's four resources
LAYERS = ("io", "threads", "links", "mem")
RESOURCES = (("io", "I/O (JNI/NIO and kernel copies)", "#d95f02"),
             ("mem", "memory (libc allocator, kernel)", "#1b9e77"),
             ("threads", "threads (native creation)", "#7570b3"),
             ("links", "links (accept, open/close)", "#e7298a"))
LEVEL_TOKEN = re.compile(r"^[A-Za-z0-9_.:+-]+$")


def add_level_options(p: argparse.ArgumentParser):
    """The options every server experiment shares: --layers and --no-warm-pair."""
    p.add_argument("--layers", default=",".join(LAYERS),
                   help=f"layers attached to the server (default {','.join(LAYERS)})")
    p.add_argument("--no-warm-pair", dest="warm_pair", action="store_false",
                   help="skip the probe-effect pair (a second recorded load between two bare "
                        "ones at each level: doubles the experiment's time)")
    add_repeats_option(p)


def parse_layers(text: str) -> List[str]:
    """'io,threads' -> ['io', 'threads']; JvmosError on a layer the catalogue does not know."""
    return parse_list(text, KNOWN_LAYERS, "layer(s)")


def parse_level_tokens(text: Optional[str], what: str = "level") -> List[str]:
    """'5,10,20' -> ['5', '10', '20']: non-empty tokens of letters, digits and _.:+-
    (they are put into a command line). JvmosError on anything else."""
    if not text or not text.strip():
        raise JvmosError(f"no {what}s given: write them comma-separated, e.g. 5,10,20,40")
    out = []
    for part in text.split(","):
        tok = part.strip()
        if not LEVEL_TOKEN.match(tok):
            raise JvmosError(f"bad {what} '{part}' in '{text}': each {what} is a non-empty word "
                             "of letters, digits and _.:+- (comma-separated, e.g. 5,10,20,40)")
        out.append(tok)
    if len(set(out)) != len(out):
        raise JvmosError(f"a {what} is given twice in '{text}'")
    return out


def parse_positive_levels(text: Optional[str], what: str) -> List[int]:
    """'5,10,20,40' -> [5, 10, 20, 40]: positive integers, no repeats."""
    out = []
    for tok in parse_level_tokens(text, what):
        try:
            n = int(tok)
        except ValueError:
            n = 0
        if n <= 0 or str(n) != tok.lstrip("+"):
            raise JvmosError(f"bad {what} '{tok}' in '{text}': a positive whole number")
        out.append(n)
    return out


# ------------------------------------------------------------------- a user's own server

def descendants(pid: int) -> List[int]:
    """pid's live descendants, parents before children (cputime.children_of, a generation at
    a time)."""
    out: List[int] = []
    level = {pid}
    while level:
        level = cputime.children_of(level) - set(out) - {pid}
        out += sorted(level)
    return out


def listening_ports(pid: int) -> List[int]:
    """TCP ports a process listens on (its socket inodes matched in /proc/PID/net/tcp{,6})."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    except OSError:
        return []
    ports = set()
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{table}") as f:
                next(f)
                for line in f:
                    cols = line.split()
                    if len(cols) > 9 and cols[3] == "0A" and cols[9] in inodes:
                        ports.add(int(cols[1].rsplit(":", 1)[1], 16))
        except (OSError, StopIteration):
            continue
    return sorted(ports)


def check_commands(server_cmd: str, load_cmd: str) -> List[str]:
    """The server command's argv; JvmosError when either command does not parse or the load
    command has no {level}."""
    try:
        argv = shlex.split(server_cmd)
    except ValueError as e:
        raise JvmosError(f"--server-cmd does not parse: {e}")
    if not argv:
        raise JvmosError("--server-cmd is empty")
    if "{level}" not in load_cmd:
        raise JvmosError("--load-cmd has no {level}: write where the level goes, e.g. "
                         "\"./load --port {port} --clients {level}\"")
    try:
        shlex.split(load_cmd)
    except ValueError as e:
        raise JvmosError(f"--load-cmd does not parse: {e}")
    return argv


class CommandServer:
    """A user's server command, started in its own session: the JVM found among the process
    and its descendants (the one that maps libjvm.so, so a wrapper script works), ready once
    that JVM listens on a TCP port (or on --port), loaded by a command in which {level} and
    {port} are replaced."""

    def __init__(self, server_cmd: str, load_cmd: str, run_dir: Path, port: Optional[int] = None,
                 ready_timeout: float = 180, load_timeout: float = 900,
                 rate_key: Optional[str] = None):
        self.argv = check_commands(server_cmd, load_cmd)
        self.load_cmd, self.dir, self.want_port = load_cmd, run_dir, port
        self.ready_timeout, self.load_timeout, self.rate_key = ready_timeout, load_timeout, rate_key
        self.proc: Optional[subprocess.Popen] = None
        self.pid: Optional[int] = None
        self.port: Optional[int] = None
        self.jvm = None

    def __enter__(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        err = self.dir / "server-stderr.txt"
        try:
            with open(self.dir / "server-stdout.txt", "wb") as o, open(err, "wb") as e:
                self.proc = subprocess.Popen(self.argv, stdout=o, stderr=e,
                                             stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as e:
            raise JvmosError(f"--server-cmd cannot start: {self.argv[0]}: {e.strerror}")
        try:
            self._await_ready(err)
        except BaseException:
            self.__exit__()
            raise
        return self

    def _find_jvm(self):
        for p in [self.proc.pid] + descendants(self.proc.pid):
            try:
                j = jvm_of_pid(p)
            except JvmosError:
                j = None
            if j:
                self.pid, self.jvm = p, j
                return

    def _await_ready(self, err: Path):
        """Until the server's JVM listens: on --port, or on one port (a JVM that listens on
        several, e.g. a JMX or debug port beside the application's, needs --port), the set
        of ports unchanged for a second. A JVM that exits (a launcher, `java -version` in a
        script) is forgotten and the search goes on."""
        t0 = time.monotonic()
        seen, since = None, None
        while True:
            if self.proc.poll() is not None:
                tail = (err.read_text(errors="replace").strip().splitlines() or ["no output"])[-1]
                raise JvmosError(f"the server command exited ({self.proc.returncode}) "
                                 f"{time.monotonic() - t0:.1f} s after it started, before "
                                 f"listening: {tail} (see {err})")
            if self.pid is not None and cputime.cpu_or_none(self.pid) is None:
                self.pid, self.jvm, seen = None, None, None
            if self.pid is None:
                self._find_jvm()
            if self.pid is not None:
                ports = listening_ports(self.pid)
                if self.want_port:
                    if self.want_port in ports:
                        self.port = self.want_port
                        return
                elif ports:
                    if ports != seen:
                        seen, since = ports, time.monotonic()
                    elif time.monotonic() - since >= 1.0:
                        if len(ports) > 1:
                            raise JvmosError(
                                f"the server's JVM (pid {self.pid}) listens on ports "
                                f"{', '.join(map(str, ports))}: say which one the load is for "
                                "with --port")
                        self.port = ports[0]
                        return
            if time.monotonic() - t0 > self.ready_timeout:
                what = ("no JVM among the command and its children" if self.pid is None else
                        f"JVM pid {self.pid} does not listen on "
                        + (f"port {self.want_port}" if self.want_port else "any TCP port"))
                raise JvmosError(f"the server was not ready within {self.ready_timeout:.0f} s: "
                                 f"{what}")
            time.sleep(0.1)

    def __exit__(self, *exc):
        """The whole session is stopped (a wrapper that has exited may have left the JVM
        behind): SIGTERM to the group, then SIGKILL after 60 s; the JVM's end is awaited."""
        if not self.proc:
            return
        group = self.proc.pid

        def gone():
            return self.proc.poll() is not None and (
                self.pid is None or cputime.cpu_or_none(self.pid) is None)

        for sig, grace in ((signal.SIGTERM, 60), (signal.SIGKILL, 30)):
            if gone():
                break
            try:
                os.killpg(group, sig)
            except ProcessLookupError:
                pass
            t0 = time.monotonic()
            while not gone() and time.monotonic() - t0 < grace:
                time.sleep(0.1)

    def load_argv(self, level: str) -> List[str]:
        text = self.load_cmd.replace("{level}", level).replace("{port}", str(self.port))
        return shlex.split(text)

    def load(self, level: str) -> dict:
        """One load at a level: its last JSON line, plus load_wall_s and (with a rate key)
        rate. The load runs in its own session, stopped whole on timeout."""
        argv = self.load_argv(level)
        t0 = time.monotonic_ns()
        try:
            child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, text=True,
                                     start_new_session=True)
        except OSError as e:
            raise JvmosError(f"the load command cannot start: {argv[0]}: {e.strerror}")
        try:
            stdout, stderr = child.communicate(timeout=self.load_timeout)
        except subprocess.TimeoutExpired:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(child.pid, sig)
                except ProcessLookupError:
                    pass
                try:
                    child.communicate(timeout=10)
                    break
                except subprocess.TimeoutExpired:
                    continue
            raise JvmosError(f"the load command ran over {self.load_timeout:.0f} s at level "
                             f"{level} and was stopped: {' '.join(argv)}")
        wall = time.monotonic_ns() - t0
        if child.returncode != 0:
            tail = (stderr.strip().splitlines() or stdout.strip().splitlines()
                    or ["no output"])[-1]
            raise JvmosError(f"the load command failed at level {level} (exit "
                             f"{child.returncode}): {tail}")
        res = last_json(stdout)
        res["load_wall_s"] = wall / 1e9
        if self.rate_key:
            v = res.get(self.rate_key)
            res["rate"] = v if isinstance(v, (int, float)) else None
            if res["rate"] is None:
                log(f"warning: level {level}: the load's last JSON line has no number "
                    f"'{self.rate_key}' (--rate-key): its rate is unknown")
        return res

    def cpu_ns(self) -> int:
        try:
            return cputime.process_cpu_ns(self.pid)
        except cputime.ProcessGone as e:
            raise JvmosError(f"the server's CPU time cannot be read: {e} (did it exit? "
                             f"see {self.dir}/server-stderr.txt)")


# ------------------------------------------------------------ one level, recorded and bare

def _recorded_load(target, load: Callable[[], dict], layers, run_dir: Path, name: str,
                   mode: str = "time"):
    """One load with jvmos attached to the server: (recording, load result, server CPU ns)."""
    box = {}

    def drive():
        s0 = _sys_ns(target)
        box["cpu0"] = target.cpu_ns()
        box["load"] = load()
        box["cpu1"] = target.cpu_ns()
        # the server's kernel-mode share of it (ticks), beside the CPU clock's total
        box["load"]["server_sys_ns"] = _minus(_sys_ns(target), s0)

    # a bare load follows: the engine has closed every link when record returns (its stop
    # awaits it), so no probe of this recording traps in it
    res = rec.record(rec.Options(pid=target.pid, layers=list(layers), out=run_dir, mode=mode,
                                 workload=drive, log=lambda m: log(f"  [{name}] {m}")))
    if res.status != "complete":
        raise JvmosError(f"recording of {name} ended {res.status}")
    return res, box["load"], box["cpu1"] - box["cpu0"]


def _sys_ns(target) -> Optional[int]:
    """The server's kernel-mode CPU so far (/proc's stime, ticks); None when unreadable."""
    try:
        return cputime.stat_sys_ns(target.pid)
    except cputime.ProcessGone:
        return None


def _minus(a: Optional[int], b: Optional[int]) -> Optional[int]:
    return None if a is None or b is None else a - b


def _bare_load(target, load: Callable[[], dict]) -> dict:
    s0 = _sys_ns(target)
    c0 = target.cpu_ns()
    bare = load()
    bare["server_cpu_ns"] = target.cpu_ns() - c0
    bare["server_sys_ns"] = _minus(_sys_ns(target), s0)
    return bare


def warm_pair(target, load: Callable[[], dict], layers, out: Path, name: str,
              bare_before: dict, rate_key: str) -> dict:
    """The probe effect measured on a server in one state: the level's first recorded load
    may grow the server's pools and touch heap pages for the first time (first-touch page
    faults that a later bare load does not pay), so recorded minus that bare load is not the
    probes' cost. Here a second recorded load runs between two bare loads, all three on the
    warmed server: observed = recorded - mean(bare before, bare after), beside jvmos's
    estimate for that same recording."""
    log(f"[{name}] probe effect: a second recorded load between two bare ones")
    res, rec_load, cpu = _recorded_load(target, load, layers, out / "runs" / f"{name}-warm",
                                        f"{name}-warm")
    after = _bare_load(target, load)
    bares = [bare_before["server_cpu_ns"], after["server_cpu_ns"]]
    return {"run_dir": str(res.run_dir.relative_to(out)), "server_cpu_ns": cpu,
            "bare_cpu_ns": bares, "bare_mean_cpu_ns": sum(bares) / 2,
            rate_key: rec_load.get(rate_key),
            f"bare_after_{rate_key}": after.get(rate_key),
            "probe_totals": probe_totals(res.summary["totals"])}


def measure_level(target, load: Callable[[], dict], out: Path, name: str, describe: str,
                  layers=LAYERS, pair: bool = False, rate_key: str = "rate") -> dict:
    """One load level: recorded (jvmos attached to the server for the load), then bare.
    Recorded first, so that the threads a server's pool starts for a load it has not seen yet
    are created while jvmos watches. pair: the probe effect is measured on a warm pair too.
    target: .pid, .cpu_ns(); load: runs one load, returns its result (a dict)."""
    log(f"[{name}] {describe}, recorded ({','.join(layers)})")
    res, loaded, cpu = _recorded_load(target, load, layers, out / "runs" / name, name)
    log(f"[{name}] {describe}, bare")
    bare = _bare_load(target, load)
    bare_cpu = bare["server_cpu_ns"]
    warm = None
    if pair:
        try:
            warm = warm_pair(target, load, layers, out, name, bare, rate_key)
        except JvmosError as e:     # the level's figures stand; its probe effect is the cold one
            log(f"warning: [{name}] the warm pair failed ({e}): the probe effect is the first "
                "recorded load's, warm-up included")
            warm = {"error": str(e)}
    s = res.summary
    t = s["totals"]
    by = t.get("guaranteed_by_resource") or {}
    overhead = sum(by.values())
    if t.get("guaranteed_overhead_unknown"):
        log(f"warning: {name}: the overhead leaves out "
            f"{', '.join(t['guaranteed_overhead_unknown'])} (time unknown): a lower bound")
    return {
        "bare": bare, "recorded": loaded, "run_dir": str(res.run_dir.relative_to(out)),
        "server_cpu_ns": cpu, "bare_cpu_ns": bare_cpu,
        "cpu_clock": "the server's process CPU clock (clock_gettime, ns, every thread)",
        "wall_ns": t["wall_ns"],
        "guaranteed_ns": overhead, "by_resource": by,
        "overhead_unknown": t.get("guaranteed_overhead_unknown") or [],
        **cpu_split(bare_cpu, cpu, overhead),
        **same_load_split(cpu, t.get("probe_overhead_ns"), overhead),
        "counts": model.counts_from_summary(s),
        "resource_methods": resource_methods(s),
        "waits": waits_from_summary(s),
        "mem_parts": model.mem_parts_from_summary(s),
        "probe_overhead_ns": t.get("probe_overhead_ns"),
        "probe_totals": probe_totals(t),
        **({"warm_pair": warm} if warm else {}),
    }


def resource_methods(s: dict) -> Dict[str, Dict[str, str]]:
    """How each resource's figure was obtained in a recording: {resource: {category: method}}
    for the categories the summary has (measured, estimated, measured+estimated)."""
    cats = s["categories"]
    return {res: {c: cats[c].get("method") or "unknown" for c in names if c in cats}
            for res, names in GUARANTEED.items()}


RESOURCE_LABELS = {"io": "I/O", "mem": "memory", "threads": "threads", "links": "links"}


def resource_header(levels: Dict[str, dict], res: str) -> str:
    """A resource's column header, saying whether its figures are measured or estimated
    (from the recordings' category methods; the bare name for results made before they were
    kept)."""
    methods = set()
    for L in levels.values():
        for m in (L.get("resource_methods") or {}).get(res, {}).values():
            methods.update(m.split("+"))
    name = RESOURCE_LABELS[res]
    if not methods:
        return name
    if methods == {"estimated"}:
        return f"{name} (estimated)"
    if methods == {"measured"}:
        return f"{name} (measured)"
    return f"{name} (measured + estimated)"


def waits_from_summary(s: dict) -> dict:
    """What the threads layer saw of the server's waiting, not work: futex calls and time
    (time includes blocking), and run-queue wait (runnable, not running; --mode time), by
    part. Absent categories (the threads layer off) are None, never 0."""
    cats = s["categories"]
    sync, runq = cats.get("sync"), cats.get("runq")
    return {"futex_calls": sync.get("calls") if sync else None,
            "futex_wait_calls": sync.get("wait_calls") if sync else None,
            "futex_wake_calls": sync.get("wake_calls") if sync else None,
            "futex_ns": sync.get("time_ns") if sync else None,
            "runq_waits": runq.get("calls") if runq else None,
            "runq_ns": runq.get("time_ns") if runq else None,
            "runq_parts": runq.get("parts") if runq else None}


def warm_of(L: dict) -> Optional[dict]:
    """A level's (or repeat's) warm pair, when it ran and did not fail."""
    w = L.get("warm_pair")
    return w if w and "error" not in w else None


def level_probe_effect(L: dict) -> dict:
    """Estimated probe effect beside the observed one: the server's CPU time recorded minus
    bare at the same load (the median over repeats when a level has several); from the warm
    pair when the level has one (warm_pair: the first recorded load pays the server's
    warm-up, which is not the probes' cost)."""
    reps = L.get("repeats") or [L]
    effects = []
    for r in reps:
        w = warm_of(r)
        if w:
            effects.append(probe_effect(w["probe_totals"], w["server_cpu_ns"],
                                        w["bare_mean_cpu_ns"],
                                        "server CPU time, warm: a second recorded load minus "
                                        "the mean of the bare loads before and after it"))
        else:
            effects.append(probe_effect(
                r.get("probe_totals") or {"probe_overhead_ns": r.get("probe_overhead_ns")},
                r.get("server_cpu_ns"), (r.get("bare") or {}).get("server_cpu_ns"),
                "server CPU time"))
    return probe_effect_median(effects)


# ------------------------------------------------------------------- the table and figure

def ms(ns):
    return "—" if ns is None else f"{ns / 1e6:,.1f}"


def pct(v):
    return "—" if v is None else f"{v:.1f}%"


def rate(v):
    if not isinstance(v, (int, float)):
        return "—"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def same_load_split(recorded_cpu_ns: Optional[float], probe_estimate_ns: Optional[float],
                    overhead_ns: float) -> dict:
    """The overhead's share of the load it was measured on: the recorded load's CPU time less
    jvmos's estimate of its own probe effect (probes that fired x calibrated cost per hit), so
    that segments and denominator come from one load. The estimate explains part of the
    observed probe effect only (REPRODUCTION.md): the rest stays in this denominator, as Java
    execution. None when either figure is unknown or the difference is not positive."""
    if recorded_cpu_ns is None or probe_estimate_ns is None:
        return {"same_load_cpu_ns": None, "overhead_pct_of_same_load": None,
                "java_exec_same_load_ns": None}
    d = recorded_cpu_ns - probe_estimate_ns
    return {"same_load_cpu_ns": d,
            "overhead_pct_of_same_load": 100.0 * overhead_ns / d if d > 0 else None,
            "java_exec_same_load_ns": d - overhead_ns}


def _mean(vals: List[Optional[float]]) -> Optional[float]:
    return None if not vals or any(v is None for v in vals) else sum(vals) / len(vals)


def _span(vals: List[Optional[float]]) -> Optional[List[float]]:
    return None if not vals or any(v is None for v in vals) else [min(vals), max(vals)]


# the figures of a level that --repeats averages (the rest is the first repeat's)
_MEAN_KEYS = ("guaranteed_ns", "bare_cpu_ns", "server_cpu_ns", "probe_overhead_ns", "wall_ns")


def combine_repeats(reps: List[dict], layers, rate_key: str) -> dict:
    """A level measured REPEATS times (each a recorded and a bare load on the same server):
    the figure's numbers are the repeats' means (each resource, the CPU times, the rates), the
    shares are those of the means, and `spread` gives each share's and the overhead's min and
    max over the repeats. Counts, waits and the run directory are the first repeat's
    (`first_repeat_only` names them); every repeat is kept in `repeats`."""
    if len(reps) == 1:
        return reps[0]
    L = dict(reps[0])
    L["repeats"] = reps
    for k in _MEAN_KEYS:
        L[k] = _mean([r.get(k) for r in reps])
    per = [resource_times(r, layers) for r in reps]
    L["by_resource"] = {res: _mean([p.get(res) for p in per])
                        for res in sorted({k for p in per for k in p})}
    L["by_resource"] = {k: v for k, v in L["by_resource"].items() if v is not None}
    L["overhead_unknown"] = sorted({u for r in reps for u in r.get("overhead_unknown") or []})
    L.update(cpu_split(L["bare_cpu_ns"], L["server_cpu_ns"], L["guaranteed_ns"]))
    L.update(same_load_split(L["server_cpu_ns"], L["probe_overhead_ns"], L["guaranteed_ns"]))
    for run in ("bare", "recorded"):
        L[run] = dict(reps[0][run])
        L[run][rate_key] = _mean([r[run].get(rate_key) for r in reps])
        L[run]["server_cpu_ns"] = _mean([r[run].get("server_cpu_ns") for r in reps])
    L["spread"] = {"n": len(reps), "what": "min and max over the repeats",
                   **{k: _span([r.get(k) for r in reps])
                      for k in ("overhead_pct_of_bare_cpu", "overhead_pct_of_same_load",
                                "guaranteed_ns", "bare_cpu_ns", "same_load_cpu_ns")}}
    L["first_repeat_only"] = ["counts", "waits", "mem_parts", "resource_methods", "run_dir"]
    return L


def measure_repeated(target, load: Callable[[], dict], out: Path, name: str, describe: str,
                     repeats: int, layers=LAYERS, pair: bool = False,
                     rate_key: str = "rate") -> dict:
    """measure_level REPEATS times on the same server, combined (combine_repeats). With
    repeats >= 2 there is no warm pair: the repeats after the first are recorded on a server
    the level has warmed, and the probe effect is their median."""
    if repeats == 1:
        return measure_level(target, load, out, name, describe, layers=layers, pair=pair,
                             rate_key=rate_key)
    reps = [measure_level(target, load, out, f"{name}-r{i + 1}", f"{describe}, repeat {i + 1}",
                          layers=layers, pair=False, rate_key=rate_key)
            for i in range(repeats)]
    return combine_repeats(reps, layers, rate_key)


def add_repeats_option(p: argparse.ArgumentParser, default: int = 1):
    p.add_argument("--repeats", type=int, default=default, metavar="N",
                   help="measure each level N times (a recorded and a bare load each) on the "
                        "same server: the figure shows the means with the repeats' range as "
                        f"error bars (default {default}; at least 3 for committed figures)")


def check_repeats(a, p: argparse.ArgumentParser):
    if a.repeats < 1:
        p.error("--repeats must be at least 1")
    if a.repeats > 1:
        a.warm_pair = False


def recorded_cpu_text(L) -> str:
    """'recorded CPU (+difference, ratio x)' of a level, in ms."""
    rec_ns, d, r = L.get("server_cpu_ns"), L.get("probe_effect_cpu_ns"), L.get("recorded_over_bare_cpu")
    if rec_ns is None:
        return "—"
    if d is None or r is None:
        return ms(rec_ns)
    return f"{ms(rec_ns)} ({'+' if d >= 0 else '-'}{abs(d) / 1e6:,.1f}, {r:.2f}x)"


def resource_times(L: dict, layers) -> Dict[str, Optional[float]]:
    """A level's overhead by resource, ns: a resource whose layer was attached but saw no
    call of its categories is 0 (the summary leaves it out); one whose layer was off, or whose
    time is unknown, stays None."""
    by = dict(L["by_resource"])
    unknown = set(L.get("overhead_unknown") or [])
    for res, cats in GUARANTEED.items():
        if by.get(res) is None and res in layers and not unknown & set(cats):
            by[res] = 0.0
    return by


def overhead_table(title: str, levels: Dict[str, dict], level_header: str,
                   rate_key: str, rate_label: str, extra: List[tuple] = (),
                   layers=LAYERS) -> Table:
    """The figure's numbers: per level, the overhead by resource beside the bare CPU time,
    the throughput bare and recorded, and the probe effect. extra: (header, fn(L) -> (cell,
    value)) columns put after the level's name. A resource whose layer was off is '—'."""
    t = Table(title, [level_header] + [h for h, _ in extra]
              + [f"{rate_label} (bare)", f"{rate_label} (recorded)"]
              + [resource_header(levels, r) for r in ("io", "mem", "threads", "links")]
              + ["Java execution (bare CPU - overhead)", "overhead / bare CPU",
                 "overhead / same-load CPU (recorded CPU - estimated probe effect)",
                 "repeats: overhead / bare CPU, min-max", "bare CPU",
                 "recorded CPU (recorded - bare, warm-up included)"]
              + PROBE_EFFECT_HEADERS)
    for name, L in levels.items():
        by = resource_times(L, layers)
        ex = [fn(L) for _, fn in extra]
        row = [name] + [c for c, _ in ex] + [
            rate(L["bare"].get(rate_key)), rate(L["recorded"].get(rate_key)),
            ms(by.get("io")), ms(by.get("mem")), ms(by.get("threads")), ms(by.get("links")),
            ms(L["java_exec_ns"]) + (" (overhead > bare CPU)"
                                      if L.get("overhead_exceeds_bare_cpu") else ""),
            pct(L["overhead_pct_of_bare_cpu"])
            + (" (lower bound: " + ", ".join(L["overhead_unknown"]) + " unknown)"
               if L.get("overhead_unknown") else ""),
            pct(L.get("overhead_pct_of_same_load")), spread_text(L),
            ms(L.get("bare_cpu_ns")), recorded_cpu_text(L)]
        L["probe_effect"] = level_probe_effect(L)
        pe, pv = probe_effect_cells(L["probe_effect"])
        t.add(row + pe, [name] + [v for _, v in ex]
              + [L["bare"].get(rate_key), L["recorded"].get(rate_key), by.get("io"),
                 by.get("mem"), by.get("threads"), by.get("links"), L["java_exec_ns"],
                 L["overhead_pct_of_bare_cpu"], L.get("overhead_pct_of_same_load"),
                 (L.get("spread") or {}).get("overhead_pct_of_bare_cpu"),
                 L.get("bare_cpu_ns"), L.get("server_cpu_ns")]
              + pv)
    return t


def spread_text(L) -> str:
    sp = (L.get("spread") or {}).get("overhead_pct_of_bare_cpu")
    if not sp:
        return "— (1 run)"
    return f"{sp[0]:.1f}-{sp[1]:.1f}% (n = {L['spread']['n']})"


def methods_note(levels: Dict[str, dict]) -> List[str]:
    """Which categories of each resource were measured and which estimated, as the
    recordings say (none for results made before they were kept)."""
    seen: Dict[str, Dict[str, set]] = {}
    for L in levels.values():
        for res, cats in (L.get("resource_methods") or {}).items():
            for c, m in cats.items():
                seen.setdefault(res, {}).setdefault(c, set()).add(m)
    if not seen:
        return []
    parts = []
    for res in ("io", "mem", "threads", "links"):
        cats = seen.get(res)
        if cats:
            parts.append(f"{RESOURCE_LABELS[res]}: " + ", ".join(
                f"{c} {'/'.join(sorted(ms))}" for c, ms in sorted(cats.items())))
    return ["How each resource's figure was obtained (the recordings' category methods; "
            "estimated = counts x calibrated costs: nio_copy and kernel_copy are bytes x "
            "per-byte costs, free_estimated is frees x the cost of one, vm's page faults are "
            "faults x the cost of one; measured = probe-timed, corrected for the probes): "
            + "; ".join(parts) + "."]


def method_notes(levels: Dict[str, dict], rate_label: str) -> List[str]:
    return ["Each resource is the guaranteed overhead its layer saw, corrected for the "
            "probe effect: I/O = jni_copy + nio_copy + kernel_copy, memory = malloc + "
            "free_estimated + vm, threads = thread_create, links = link + file (on-CPU). bare "
            "CPU = the server's CPU time during the bare load (its process CPU clock read in ns "
            "before and after the load: every thread, those that exited during the load "
            "included). Java execution = bare CPU minus the overhead; overhead = the sum / bare "
            "CPU. recorded CPU = the same clock over the recorded load; in brackets the probe "
            "effect: recorded - bare, and recorded / bare. The overhead comes from the "
            "recorded load and the bare CPU from another load: 'overhead / same-load CPU' "
            "divides it by the recorded load's CPU less jvmos's probe-effect estimate, both "
            "from one load (the figure's bars use it when every level has it); the part of the "
            "observed probe effect the estimate misses stays in that denominator.",
            f"{rate_label} bare and recorded are from the same invocation (recorded first, so "
            "that threads and pools the server grows for a new load are created while jvmos "
            "watches; the bare run then finds them grown); the difference is the probe effect "
            "on the server, and that growth.",
            "probe effect: estimated = the probes that fired x their calibrated cost per hit; "
            "observed = server CPU time recorded - bare. "
            + ("Each level's figure is from its warm pair: a second recorded load run between "
               "two bare ones once the first recorded load has warmed the server up, so that "
               "the observed difference is not the server's warm-up (observed = that "
               "recording's CPU - the mean of the two bare loads)."
               if any(warm_of(L) for L in levels.values()) else
               "Each level was measured several times (--repeats) on one server: the probe "
               "effect's figures are the medians over the repeats (the first repeat pays the "
               "server's warm-up, the later ones find it warm), and the recorded CPU column's "
               "difference is that of the repeats' means."
               if any(L.get("repeats") for L in levels.values()) else
               "The first recorded load pays the server's warm-up (pool growth, first-touch "
               "page faults of the heap) that the bare load after it does not: the observed "
               "difference overstates the probes' cost (run without --no-warm-pair to "
               "measure it on a warm server).")] + methods_note(levels)


def stacked_figure(levels: Dict[str, dict], stem: Path, title: str, xlabel: str,
                   paper_band: Optional[tuple] = None) -> list:
    """Stacked bars per level: the overhead by resource under the Java execution time. The
    bar's height is the same load's CPU time (the recorded load's, less jvmos's estimate of
    its probe effect) when every level has it, else the bare load's (results made before
    the same-load figures were kept); the label is the overhead's share of that height. With
    repeats, the bars are the means, the error bars the repeats' min-max (of the overhead and
    of the bar's height) and each repeat's overhead is a dot."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = list(levels)
    same = all(levels[n].get("same_load_cpu_ns") is not None for n in names)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    bottoms = [0.0] * len(names)
    for key, label, colour in RESOURCES:
        vals = [(levels[n]["by_resource"].get(key) or 0.0) / 1e6 for n in names]
        ax.bar(names, vals, bottom=bottoms, color=colour, label=label)
        bottoms = [b + v for b, v in zip(bottoms, vals)]
    java = [((levels[n]["java_exec_same_load_ns"] if same else levels[n]["java_exec_ns"])
             or 0.0) / 1e6 for n in names]
    ax.bar(names, java, bottom=bottoms, color="#bdbdbd", label="Java execution time")
    for i, n in enumerate(names):
        L = levels[n]
        sp = L.get("spread") or {}
        if sp.get("guaranteed_ns"):
            lo, hi = (v / 1e6 for v in sp["guaranteed_ns"])
            ax.errorbar(i, bottoms[i], yerr=[[bottoms[i] - lo], [hi - bottoms[i]]], fmt="none",
                        ecolor="black", capsize=3, linewidth=1)
            ax.plot([i] * len(L["repeats"]), [r["guaranteed_ns"] / 1e6 for r in L["repeats"]],
                    "k.", markersize=3)
        top = bottoms[i] + max(java[i], 0.0)
        key = "same_load_cpu_ns" if same else "bare_cpu_ns"
        if sp.get(key):
            lo, hi = (v / 1e6 for v in sp[key])
            ax.errorbar(i, top, yerr=[[max(top - lo, 0.0)], [max(hi - top, 0.0)]], fmt="none",
                        ecolor="#555555", capsize=3, linewidth=1)
        share = L["overhead_pct_of_same_load" if same else "overhead_pct_of_bare_cpu"]
        rng = sp.get("overhead_pct_of_same_load" if same else "overhead_pct_of_bare_cpu")
        if share is not None:
            text = f"{share:.1f}%" + (f"\n({rng[0]:.1f}-{rng[1]:.1f})" if rng else "")
            ax.text(i, max(top, (sp.get(key) or [0, 0])[1] / 1e6), text, ha="center",
                    va="bottom", fontsize=7)
    reps = max(((levels[n].get("spread") or {}).get("n") or 1) for n in names)
    xlabel += (f"; bars: mean of {reps} repeats, error bars min-max, dots: each repeat"
               if reps > 1 else "; one run per level")
    if paper_band:
        xlabel += f"; paper: {paper_band[0]}-{paper_band[1]}%"
    ax.set_xlabel("\n".join(textwrap.wrap(xlabel, 120)), fontsize=8)
    ax.set_ylabel("server CPU time during the recorded load,\nless jvmos's probe-effect "
                  "estimate (ms)" if same else "server CPU time during the bare load (ms)",
                  fontsize=8)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    return figures.save(fig, stem)


# ------------------------------------------------------------------- jvmos run server

EXAMPLES = """\
examples:
  jvmos run server --server-cmd "java -jar app.jar --port 8080" \\
      --load-cmd "wrk -c {level} -d 10s http://127.0.0.1:{port}/" --levels 10,20,40,80
  jvmos run server --server-cmd "./start-server.sh" --port 9000 \\
      --load-cmd "java -jar loadgen.jar --port {port} --users {level}" --levels 5,10 \\
      --rate-key requests_per_s

The server command is started once (in its own session; the JVM among it and its children is
the one traced and measured); the experiment waits until that JVM listens on a TCP port. The
load command runs once per level and run (recorded, bare, and the warm pair), with {level} and
{port} replaced; it must end by itself, exit 0 on success, and may print a JSON object as its
last line (--rate-key names its throughput field). Outputs: figure.png/.svg (stacked bars),
figure.md/.csv/.json, and each recording under runs/.
"""


def parse(argv):
    p = argparse.ArgumentParser(prog="jvmos run server", epilog=EXAMPLES,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--server-cmd", help="command that starts the server (required)")
    p.add_argument("--load-cmd",
                   help="command that loads it once; {level} and {port} are replaced (required)")
    p.add_argument("--levels", help="load levels, comma-separated (e.g. 5,10,20,40; required)")
    p.add_argument("--port", type=int, help="the server's port, when it listens on several")
    p.add_argument("--warmup-level", help="one untraced load at this level first "
                                          "(default: the first level; 'none' for no warm-up)")
    p.add_argument("--rate-key", default=None,
                   help="field of the load command's last JSON line holding its throughput "
                        "(default: none; the table then gives the load's wall time)")
    p.add_argument("--ready-timeout", type=float, default=180,
                   help="seconds to wait for the server to listen (default 180)")
    p.add_argument("--load-timeout", type=float, default=900,
                   help="seconds one load may run (default 900)")
    p.add_argument("--out", help="output directory (default results/runs/<time>-server)")
    p.add_argument("--render", metavar="DIR",
                   help="write DIR's table, notes and figure again from DIR/figure.json (no "
                        "measuring)")
    add_level_options(p)
    a = p.parse_args(argv)
    if a.render:
        return a
    missing = [f"--{k.replace('_', '-')}" for k in ("server_cmd", "load_cmd", "levels")
               if not getattr(a, k)]
    if missing:
        p.error(f"the following arguments are required: {', '.join(missing)}")
    check_repeats(a, p)
    a.levels = parse_level_tokens(a.levels)
    check_commands(a.server_cmd, a.load_cmd)
    if a.warmup_level not in (None, "none"):
        parse_level_tokens(a.warmup_level, "warm-up level")
    try:
        a.layers = parse_layers(a.layers)
    except JvmosError as e:
        p.error(str(e))
    if a.port is not None and not 0 < a.port < 65536:
        p.error("--port must be 1..65535")
    return a


def main(argv) -> int:
    a = parse(argv)
    if a.render:
        out = Path(a.render)
        return report(out, load_results(out / "figure.json", "server"))
    out = out_dir(a.out, "server")
    rate_key = "rate" if a.rate_key else "load_wall_s"
    server = CommandServer(a.server_cmd, a.load_cmd, out / "server", port=a.port,
                           ready_timeout=a.ready_timeout, load_timeout=a.load_timeout,
                           rate_key=a.rate_key)
    with server:
        jvm = server.jvm
        results = {"experiment": "server", "server_command": a.server_cmd,
                   "load_command": a.load_cmd, "server_pid": server.pid,
                   "wrapper_pid": server.proc.pid if server.proc.pid != server.pid else None,
                   "port": server.port,
                   "jdk": str(jvm.home), "jdk_label": jdk_label(jvm), "layers": a.layers,
                   "repeats": a.repeats,
                   "rate_key": a.rate_key, "levels": {}}
        log(f"server: JVM pid {server.pid} ({jdk_label(jvm)}) listening on port {server.port}")
        warm = a.levels[0] if a.warmup_level is None else a.warmup_level
        if warm != "none":
            log(f"warm-up: level {warm}, untraced")
            results["warmup"] = server.load(warm)
        try:
            for lv in progress_over(a.levels, "server", "level"):
                results["levels"][lv] = measure_repeated(
                    server, lambda lv=lv: server.load(lv), out, f"level-{lv}", f"level {lv}",
                    a.repeats, layers=a.layers, pair=a.warm_pair, rate_key=rate_key)
                save_partial(out, "figure", results)
        except JvmosError as e:
            raise kept_so_far(e, out, "figure")
    return report(out, results)


def report(out: Path, results: dict) -> int:
    """figure.md/.csv/.json and the figure, from the measured levels (also --render's)."""
    rate_key = "rate" if results.get("rate_key") else "load_wall_s"
    rate_label = results.get("rate_key") or "load wall time (s)"
    program = shlex.split(results["server_command"])[0]
    return finish(out, "figure", results, "level", rate_key, rate_label,
                  f"Guaranteed overhead of the server under load ({results['jdk_label']}; ms "
                  "of server CPU time)",
                  f"{program}: guaranteed overhead by resource ({results['jdk_label']})",
                  "load level (% = overhead / bare CPU time)")


def load_results(src: Path, experiment: str) -> dict:
    """A finished server experiment's JSON, for --render (common.load_finished)."""
    return load_finished(src, experiment, "levels")


def save_partial(out: Path, stem: str, results: dict):
    """The levels measured so far, kept as they finish (stem.partial.json): a failure at a
    later level, or Ctrl-C, does not lose them. finish() removes the file."""
    tmp = out / f".{stem}.partial.json.tmp"
    tmp.write_text(json.dumps(results, indent=2, default=str) + "\n")
    os.replace(tmp, out / f"{stem}.partial.json")


def kept_so_far(e: Exception, out: Path, stem: str) -> JvmosError:
    """The error of a failed experiment, naming where its finished levels are kept."""
    part = out / f"{stem}.partial.json"
    return JvmosError(f"{e}" + (f" (the levels measured before are kept in {part})"
                                if part.exists() else ""))


def finish(out: Path, stem: str, results: dict, level_header: str, rate_key: str,
           rate_label: str, title: str, fig_title: str, xlabel: str, extra=(),
           extra_tables=(), extra_notes=(), paper_band=None) -> int:
    """Write the table, notes, figure and JSON of a server experiment; print the table."""
    table = overhead_table(title, results["levels"], level_header, rate_key, rate_label, extra,
                           results.get("layers") or LAYERS)
    notes = method_notes(results["levels"], rate_label) + list(extra_notes)
    figs = stacked_figure(results["levels"], out / stem, fig_title, xlabel, paper_band)
    results["figures"] = [f.name for f in figs]
    pcts = [L["overhead_pct_of_bare_cpu"] for L in results["levels"].values()
            if L.get("overhead_pct_of_bare_cpu") is not None]
    results["headline"] = headline(
        "guaranteed overhead over the load levels, % of the bare load's CPU time",
        f"{min(pcts):.0f}-{max(pcts):.0f}%" if pcts else "unknown",
        f"{paper_band[0]}-{paper_band[1]}% of execution time" if paper_band else None)
    write_outputs(out, stem, [table] + list(extra_tables), results, notes)
    (out / f"{stem}.partial.json").unlink(missing_ok=True)
    print(table.markdown())
    for t in extra_tables:
        print(t.markdown())
    for n in notes:
        print(f"- {n}")
    print(f"\nresults: {out}/{stem}.md (and .csv, .json, {stem}.png/.svg); recordings in "
          f"{out}/runs/")
    return 0
