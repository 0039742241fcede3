"""`jvmos record`: run or attach to a JVM, trace it with the compiled engine (probes/*.bpf.c
loaded by build/jvmos-engine, jvmos.engine), write a run directory.

A run directory holds:
  manifest.json     what was traced and how (written first with status "running")
  probes.plan.json  the exact plan the engine ran (programs, attach points, constants)
  raw/engine.json, raw/engine.stderr   the engine's final maps as it handed them, and its log
  summary.json      written last and atomically; its "status" says whether the run completed
Recordings made before the bpftrace engine was retired (probes.bt, raw/bpftrace.json) are still
read by `jvmos report` and scripts/reanalyse.py.

Statuses (summary.json and manifest.json; the one place they are defined, see STATUSES). A
recording is `complete` only when nothing below applies; when several apply the status is the
first in this order, and `warnings` gives every reason with its figures:

  failed          the engine stopped (or could not start/attach) before the run ended, or the
                  sampler could not be loaded/stopped: figures missing or cover part of the run
  truncated       the engine handed over no final maps after the stop, or some of its map
                  entries could not be read
  interrupted     SIGINT/SIGTERM stopped a launched command (or came before tracing started:
                  the command never ran, or stopped the recording of a load an experiment
                  drives); in attach mode the signal is otherwise the normal way to stop
  load_failed     the load driven during an attach recording raised an error
  target_exited   attach mode: the traced pid exited before the recording ended
  command_failed  the launched command exited non-zero (figures valid for what it did)
  events_lost     the engine counted lost events (a full map, a lost fork/exec event, a
                  program run the kernel skipped)
  partial         probes that apply to the target were skipped (symbols not found)
  complete        the engine handed over its final maps after the stop, they read without
                  errors, and the target ran until the end (or exited 0, launch mode); an
                  engine that did not confirm closing its links is warned about (its exit
                  closes them: no probe outlives it)
  running         (manifest.json only) the recording has not ended, or jvmos itself died
Returns without an entry (a call in progress when tracing began) are warned about with their
count but leave the status alone: their calls are counted, only their time is missing.
"""
import hashlib
import json
import math
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

from jvmos import JvmosError, __version__
from jvmos import calibrate as cal
from jvmos.catalogue import (DEFAULT_LAYERS, LAYERS, OPTIONAL_SYMBOL_PREFIXES, TIMED_SPAN_LAYERS,
                             LINK_SYSCALLS, Mode)
from jvmos.jdk import (Jvm, discover_jdks, executable_kind, jvm_of_executable, jvm_of_pid, libc_of,
                       libz_of, symbols)
from jvmos import sampling
from jvmos import cputime
from jvmos import javaheap
from jvmos.session import ATTACH_TIMEOUT_S, Session, alive
from jvmos.tools import ensure_tracefs, host_info
from jvmos.analyzers import rawparse, summary as summ
from jvmos.enginelayers import mem as mem_layer

def _task_state(pid: int, tid) -> Optional[tuple]:
    """(the thread's /proc/TID/syscall line, its voluntary context switches), or None."""
    try:
        with open(f"/proc/{pid}/task/{tid}/syscall") as f:
            line = f.read().strip()
        with open(f"/proc/{pid}/task/{tid}/status") as f:
            vcsw = next(int(x.split()[1]) for x in f if x.startswith("voluntary_ctxt_switches"))
    except (OSError, StopIteration, ValueError, IndexError):
        return None
    return line, vcsw


def links_in_progress(pid: int) -> Dict[int, tuple]:
    """{tid: (its /proc/TID/syscall line, its voluntary switches)} of the process's threads
    blocked in a links syscall now (accept, accept4, connect, open, openat, close): calls
    whose return no probe will see at --scope process (a uretprobe is armed at the entry)."""
    from jvmos.analyzers.threads import syscall_name
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        st = _task_state(pid, tid)
        head = st[0].split()[0] if st and st[0] else ""
        if head.lstrip("-").isdigit() and int(head) >= 0 and \
                syscall_name(int(head) + 1) in LINK_SYSCALLS:
            out[int(tid)] = st
    return out


def ended_in_progress(pid: int, start: Dict[int, tuple]) -> Dict[int, str]:
    """Of the calls in progress at the start, those that ended before the stop: the thread is
    gone, is no longer in that call (its syscall line changed), or was switched in and out
    again since (its voluntary switches grew: a blocked call returns only once woken, and the
    same loop's next call would show the same line). {tid: the syscall's name}."""
    from jvmos.analyzers.threads import syscall_name
    out = {}
    for tid, (line, vcsw) in start.items():
        now = _task_state(pid, tid)
        if now is None or now[0] != line or now[1] > vcsw:
            out[tid] = syscall_name(int(line.split()[0]) + 1)
    return out


def count_in_progress(run, root: int, start: Dict[int, tuple], ended: Dict[int, str]) -> None:
    """The ended calls counted in the links layer's figures as untimed calls (@in_progress),
    under libc's function of the same name, and said in the manifest."""
    by = {}
    for name in ended.values():
        by[name] = by.get(name, 0) + 1
    run.manifest["links_in_progress_at_start"] = {
        "threads": len(start), "ended_during_recording": by,
        "how": "threads blocked in a links syscall when counting began (/proc/TID/syscall), "
               "and whether they left it before the stop; counted as untimed calls, their "
               "time and outcome not seen"}
    raw = run.engine_raw
    libc = (run.manifest.get("probes") or {}).get("libc") or "libc"
    if raw is None or not by:
        return
    m = raw.maps.setdefault("@in_progress", {})
    for name, n in by.items():
        cat = "link" if name in ("accept", "accept4", "connect") else "file"
        key = f"{root},{cat},uprobe:{libc}:{name}"
        m[key] = m.get(key, 0) + n


def kernel_io(pid: int) -> Optional[dict]:
    """The kernel's counts of a process's read and write syscalls (/proc/PID/io syscr,
    syscw), or None when it is gone."""
    from jvmos import proctimes
    try:
        kv = proctimes.io_counters(pid)
        return {"syscr": int(kv["syscr"]), "syscw": int(kv["syscw"])}
    except (OSError, KeyError, ValueError):
        return None


def io_wrapper_bound(manifest: dict, summary: dict) -> Optional[dict]:
    """What libc's wrappers did not see of the target's reads and writes (--scope process,
    io layer, attach mode): the kernel's counts of its read and write syscalls over the
    recording against the wrappers' calls. The kernel's syscr and syscw count read, readv,
    pread64, preadv and write, writev, pwrite64, pwritev (on files and sockets alike),
    sendfile and copy_file_range in both, and the kernel's own reads for the task (an exec's);
    not send*/recv*. The wrappers compared: read, readv, pread64, write, writev, pwrite64 and
    sendfile (preadv, pwritev and copy_file_range are not probed: if used, they show as not
    seen)."""
    k = manifest.get("kernel_io")
    if not k or manifest.get("scope") != "process" or "io" not in (manifest.get("layers")
                                                                  or []):
        return None
    part = ((summary.get("by_pid") or {}).get(str(k["pid"])) or {}).get("categories") or {}
    sc = (part.get("io_syscall") or {}).get("syscalls") or {}
    calls = lambda names: sum((sc.get(n) or {}).get("calls", 0) for n in names)
    # sendfile adds one to both of the kernel's counts
    seen_r = calls(("read", "readv", "pread64", "sendfile"))
    seen_w = calls(("write", "writev", "pwrite64", "sendfile"))
    (r_lo, r_hi), (w_lo, w_hi) = k["syscr"], k["syscw"]
    return {"pid": k["pid"], "kernel_reads_range": [r_lo, r_hi], "wrapper_reads": seen_r,
            "kernel_writes_range": [w_lo, w_hi], "wrapper_writes": seen_w,
            # what the wrappers surely missed: the kernel's least count beyond theirs
            "reads_not_seen_at_least": max(0, r_lo - seen_r),
            "writes_not_seen_at_least": max(0, w_lo - seen_w),
            "within": r_lo <= seen_r <= r_hi and w_lo <= seen_w <= w_hi,
            "basis": "the kernel's syscr/syscw of the process while counting ran (a range: "
                     "read just inside and just outside the start and the stop) against the "
                     "calls libc's read/readv/pread64/sendfile and write/writev/pwrite64/"
                     "sendfile wrappers saw; calls made without them (the dynamic loader's, "
                     "glibc's internal nocancel reads and writes, a raw syscall(2)) put the "
                     "kernel's least count above the wrappers'"}


def host_tax(platform: Optional[dict], kinds: dict) -> Optional[dict]:
    """When the plan enables syscall tracepoints: what every syscall of every task on the host
    pays for them while they are on, from jvmos calibrate --probes (an idle syscall tracepoint
    beside a write(2) loop), or why it is unknown. None when no syscall tracepoint is on."""
    if not any(k.startswith("tracepoint:syscalls:") for k in kinds):
        return None
    from jvmos.enginecost import TAX_KEY
    probes = (platform or {}).get("engine_probes") or {}
    tax, bare = probes.get(TAX_KEY), probes.get("bare_write")
    if TAX_KEY in (probes.get("unresolved") or {}):
        return {"ns_per_syscall": None,
                "why": "calibrated, but not resolved from the noise on this machine"}
    if not tax or tax.get("mean_ns") is None:
        return {"ns_per_syscall": None,
                "why": "not calibrated on this machine (jvmos calibrate --probes measures it)"}
    out = {"ns_per_syscall": tax["mean_ns"], "ci95_ns": tax.get("ci95_ns"),
           "measured_with": tax.get("measured_with"), "source": "jvmos calibrate --probes"}
    if bare and bare.get("mean_ns"):
        out["bare_write_ns"] = bare["mean_ns"]
        out["pct_of_bare_write"] = 100 * tax["mean_ns"] / bare["mean_ns"]
    return out


def blind_spots(layers, scope: str) -> Dict[str, str]:
    """What a layer's attach points cannot see at this scope (libc's wrappers at --scope
    process), said in the manifest and the report."""
    from jvmos.catalogue import LINK_BLIND_SPOTS, THREAD_BLIND_SPOTS
    out = {}
    if scope == "process" and "links" in layers:
        out["links"] = LINK_BLIND_SPOTS
    if scope == "process" and "threads" in layers:
        out["threads"] = THREAD_BLIND_SPOTS
    return out


@dataclass
class Options:
    cmd: Optional[List[str]] = None
    pid: Optional[int] = None
    duration: Optional[float] = None
    layers: Sequence[str] = tuple(DEFAULT_LAYERS)
    mode: str = "time"                 # time: entry+return probes; count: entry probes only;
                                       # sample: async-profiler only, no BPF probes
    sample: bool = False               # with time/count: also sample with async-profiler
    wall: bool = False                 # with sampling: also wall-clock samples (waits' sites)
    # process: uprobes trap only in the traced processes (uprobe_multi links with their pid)
    # and libc's wrappers stand for the syscalls where a layer allows; host: the syscall
    # tracepoints, which see every call the kernel serves (see each probes/*.bpf.c)
    scope: str = "process"
    out: Optional[Path] = None
    jdks: Sequence[str] = ()           # JDK homes to probe when the command does not say
    platform: Optional[str] = None
    stdout: Optional[Path] = None      # capture the command's output (experiments)
    stderr: Optional[Path] = None
    env: Optional[Dict[str, str]] = None
    calibrate_if_missing: bool = True
    log: object = None
    # with --pid: a load to drive while tracing; the recording ends when it returns
    workload: Optional[Callable[[], None]] = None
    # the live view (jvmos.live; a launched command or --pid): a snapshot every `interval` s, `count` of them
    # (None: until the recording ends); metrics_file: OpenMetrics text rewritten each interval
    interval: Optional[float] = None
    count: Optional[int] = None
    metrics_file: Optional[Path] = None


@dataclass
class Result:
    run_dir: Path
    status: str
    exit_code: Optional[int]
    summary: dict
    warnings: List[str] = field(default_factory=list)
    reason: Optional[str] = None       # why the status is not complete (one of the warnings)


def _now_iso():
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


STATUSES = {
    "failed": "the probe engine (or the sampler) stopped or failed before the run ended",
    "truncated": "the probe engine's output is incomplete or did not parse",
    "interrupted": "a signal stopped the launched command (or came before tracing started)",
    "load_failed": "the load driven during the recording failed",
    "target_exited": "the attached process exited before the recording ended",
    "command_failed": "the launched command exited non-zero",
    "events_lost": "the probe engine lost events",
    "partial": "probes that apply to the target were skipped",
    "complete": "everything above was checked and none applies",
}
STATUS_ORDER = list(STATUSES)


def decide_status(reasons: List[tuple]) -> str:
    """reasons: (status, why) pairs; the status is the first of STATUS_ORDER among them."""
    found = {st for st, _ in reasons}
    return next((st for st in STATUS_ORDER if st in found), "complete")


def run_reasons(*, sig: Optional[int], launched: bool, load_error: list,
                driven: bool = False) -> List[tuple]:
    """The reasons every mode shares: a signal that stopped the launched command (or, in
    attach mode, the recording of a driven load: an experiment's recording is not whole), a
    failed load, a command that exited non-zero."""
    reasons = []
    if launched and sig is not None:
        reasons.append(("interrupted", f"signal {signal.Signals(sig).name} "
                                       "stopped the command before it finished"))
    elif driven and sig is not None:
        reasons.append(("interrupted", f"signal {signal.Signals(sig).name} stopped the "
                                       "recording before the driven load finished"))
    if load_error:
        reasons.append(("load_failed", f"the load driven during the recording failed: "
                                       f"{load_error[0]}"))
    return reasons


def command_reason(launched: bool, exit_code: Optional[int], sig: Optional[int]) -> List[tuple]:
    if launched and exit_code != 0 and sig is None:
        return [("command_failed", f"the command exited with status {exit_code}")]
    return []


def settle(reasons: List[tuple], warnings: List[str], log) -> tuple:
    """(status, its reason); every reason is also a warning, said as it is added."""
    status = decide_status(reasons)
    for _, why in reasons:
        warnings.append(why)
        log(f"warning: {why}")
    return status, next((why for st, why in reasons if st == status), None)


def missed_warnings(raw) -> List[str]:
    """The spans the probes could not time, per kind (@missed; summary.missed_note)."""
    missed: Dict[str, int] = {}
    for (_pid, what), n in raw.keyed("@missed").items():
        missed[what] = missed.get(what, 0) + int(n)
    return [summ.missed_note(what, n) for what, n in sorted(missed.items())]


def _write_json(path: Path, data: dict):
    """Atomic: the file is either its old version or the new one, never half written."""
    tmp = path.with_name("." + path.name + ".tmp")
    try:
        tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
        os.replace(tmp, path)
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise


def _save(path: Path, data: dict, out: Path):
    """_write_json with the error said in one line: what could not be written, and where the
    rest of the run is."""
    try:
        _write_json(path, data)
    except OSError as e:
        raise JvmosError(f"cannot write {path}: {e.strerror or e}; what was written before is "
                         f"kept in {out}", 1)


def default_out(label: str) -> Path:
    from jvmos import ROOT
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return ROOT / "results" / "runs" / f"{stamp}-{label}"


def prepare_out(out: Path) -> Path:
    """Create the run directory, or fail at once (before anything runs) if it cannot be."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".jvmos-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise JvmosError(f"cannot write to output directory {out}: {e.strerror or e}")
    if (out / "summary.json").exists():
        raise JvmosError(f"{out} already holds a recording: choose another --out")
    return out


# JDK launchers whose binary names the JVM they will load (_Tree)
LAUNCHERS = ("java", "javaw")


class _Tree(threading.Thread):
    """Polls the traced process tree: pids, their commands and the libjvm.so each maps (the
    engine follows the tree itself; this is what the manifest and the analyzers read)."""

    def __init__(self, root: int):
        super().__init__(daemon=True)
        self.root = root
        self.pids: Dict[int, dict] = {}
        self.stop = threading.Event()

    def scan(self):
        parents = {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open(f"/proc/{d}/stat") as f:
                        s = f.read()
                    parents[int(d)] = int(s[s.rindex(")") + 2:].split()[1])
                except (OSError, ValueError, IndexError):
                    pass
        tree = {self.root}
        changed = True
        while changed:
            changed = False
            for p, pp in parents.items():
                if pp in tree and p not in tree:
                    tree.add(p)
                    changed = True

        for p in tree:
            info = self.pids.setdefault(p, {"pid": p})
            try:
                info["cmdline"] = open(f"/proc/{p}/cmdline", "rb").read().split(b"\0")[:-1]
                info["cmdline"] = [a.decode(errors="replace") for a in info["cmdline"]]
                if "jvm" not in info:
                    j = jvm_of_pid(p)
                    if j:
                        info["jvm"] = j.as_dict()
                    elif "jvm_from_launcher" not in info:
                        # a JDK's launcher between its exec and its dlopen of libjvm.so (a
                        # short run can end before a later scan): the JVM of that launcher,
                        # until the maps say otherwise
                        exe = os.readlink(f"/proc/{p}/exe")
                        j = jvm_of_executable(exe) if os.path.basename(exe) in LAUNCHERS \
                            else None
                        if j:
                            info["jvm_from_launcher"] = j.as_dict()
            except (OSError, JvmosError):
                pass

    def run(self):
        while not self.stop.is_set():
            try:
                self.scan()
            except OSError:
                pass
            self.stop.wait(0.1)


def _targets(opts: Options, warnings: List[str]) -> List[Jvm]:
    """Which libjvm.so files to attach to, decided before anything starts."""
    if opts.jdks:
        jvms = []
        for h in opts.jdks:
            j = jvm_of_executable(str(Path(h) / "bin" / "java"))
            if j is None:
                raise JvmosError(f"--jdk {h}: not a JDK home (no bin/java next to a "
                                 "lib/server/libjvm.so)")
            jvms.append(j)
        return jvms
    if opts.pid is not None:
        j = jvm_of_pid(opts.pid)
        if j is None:
            warnings.append(f"pid {opts.pid} is not a JVM (no libjvm.so mapped): "
                            "JVM probes skipped, syscall probes still run")
            return []
        return [j]
    kind = executable_kind(opts.cmd[0])
    if kind == "missing":
        raise JvmosError(f"command not found: {opts.cmd[0]}")
    if kind == "jvm":
        return [jvm_of_executable(opts.cmd[0])]
    if kind == "native":
        warnings.append(f"{opts.cmd[0]} is not a JVM launcher: JVM probes skipped, "
                        "syscall probes still run")
        return []
    jvms = discover_jdks()
    if not jvms:
        warnings.append(f"{opts.cmd[0]} may start a JVM but no JDK was found: JVM probes "
                        "skipped (name one with --jdk)")
    return jvms


def check_options(opts: Options) -> None:
    """Argument errors, said before anything runs or is written."""
    for layer in opts.layers:
        if layer not in LAYERS:
            raise JvmosError(f"unknown layer '{layer}' (known: {', '.join(LAYERS)})")
    if (opts.cmd is None) == (opts.pid is None):
        raise JvmosError("give either a command (after --) or --pid PID")
    if opts.duration is not None:
        if opts.cmd is not None:
            raise JvmosError("--duration applies to --pid only: a launched command is "
                             "recorded until it exits")
        if not math.isfinite(opts.duration) or opts.duration <= 0:
            raise JvmosError(f"--duration must be a positive number of seconds, not "
                             f"{opts.duration}")
    from jvmos import engine as engine_mod
    if Mode.parse(opts.mode) != "sample":       # async-profiler alone needs no probe engine
        engine_mod.check_env()
    if opts.count is not None and opts.interval is None:
        raise JvmosError("--count needs --interval (the number of intervals to print)")
    if opts.metrics_file is not None and opts.interval is None:
        raise JvmosError("--metrics-file needs --interval (the file is rewritten each interval)")
    if opts.interval is not None:
        if not math.isfinite(opts.interval) or opts.interval <= 0:
            raise JvmosError(f"--interval must be a positive number of seconds, not "
                             f"{opts.interval:g}")
        if opts.count is not None and opts.count <= 0:
            raise JvmosError(f"--count must be a positive number of intervals, not {opts.count}")
        if Mode.parse(opts.mode) == "sample":
            raise JvmosError("--interval needs the probes (--mode time or count), not "
                             "--mode sample")
    if opts.pid is not None and (opts.pid <= 0 or not alive(opts.pid)):
        raise JvmosError(f"no process with pid {opts.pid}")
    opts.mode = Mode.parse(opts.mode)     # the one check of a mode


# CAP_SYS_ADMIN, CAP_PERFMON and CAP_BPF in /proc/self/status CapEff
CAP_SYS_ADMIN, CAP_PERFMON, CAP_BPF = 21, 38, 39


def _can_load_bpf() -> bool:
    if os.geteuid() == 0:
        return True
    try:
        eff = next(int(l.split()[1], 16) for l in open("/proc/self/status")
                   if l.startswith("CapEff:"))
    except (OSError, StopIteration, ValueError, IndexError):
        return False
    has = lambda cap: bool(eff >> cap & 1)
    return has(CAP_SYS_ADMIN) or (has(CAP_BPF) and has(CAP_PERFMON))


def record(opts: Options) -> Result:
    """One recording: options checked, then (probe modes) prepared, traced and concluded;
    --mode sample has its own path without BPF probes (_record_sampled)."""
    log = opts.log or (lambda m: print(m, file=sys.stderr))
    check_options(opts)
    if opts.mode == "sample":
        return _record_sampled(opts, log)
    if not _can_load_bpf():
        raise JvmosError("jvmos record needs root (or CAP_BPF with CAP_PERFMON): it loads "
                         "BPF programs; run it as root, or use --mode sample")
    run = _prepare(opts, log)
    _trace_engine(run)
    return _conclude(run)


@dataclass
class _Run:
    """What a recording carries from one phase to the next: _prepare (targets, calibration,
    plan, manifest), _trace_engine (the tracing session) and _conclude (status, summary, run
    directory)."""
    opts: Options
    log: Callable[[str], None]
    warnings: List[str]
    jvms: List[Jvm]
    out: Path
    platform_file: Path
    platform: Optional[dict]
    missing: List[str]
    manifest: dict
    raw_path: Path
    plan: object
    # set by _trace_engine
    root: Optional[int] = None
    child: object = None
    tree: object = None
    wall_ns: int = 0
    target_cpu: Optional[dict] = None
    exit_code: Optional[int] = None
    target_gone: bool = False
    load_error: List[Exception] = field(default_factory=list)
    sample_error: Optional[str] = None
    stopped_early: bool = False
    engine_rc: Optional[int] = None
    sig: Optional[int] = None
    # the engine's final maps as Raw, what ended it
    engine_raw: object = None
    engine_end: Optional[str] = None


def _prepare(opts: Options, log) -> _Run:
    """Everything decided before anything runs: the JVMs to probe, the engine's plan, the
    calibration, the run directory and its first manifest."""
    from jvmos import engine as engine_mod
    engine_mod.check_built(opts.layers)     # one clear error before anything starts
    ensure_tracefs()
    warnings: List[str] = []
    for layer in (opts.layers if opts.mode == "count" else []):
        if layer in TIMED_SPAN_LAYERS:
            warnings.append(f"--mode count keeps the {layer} layer's entry probes only: its "
                            "counts are exact, its per-layer times are partial (use --mode time)")
    jvms = _targets(opts, warnings)
    libc = libc_of(opts.pid)
    # zlib's library (the mem layer counts the streams created there), or why there is none
    libz, libz_why = libz_of(jvms, opts.pid) if "mem" in opts.layers else ([], None)
    libs = {"LIBJVM": [j.libjvm for j in jvms],
            "LIBNIO": [j.libnio for j in jvms if j.libnio],
            "LIBC": [libc] if libc else [], "LIBZ": libz}
    # the root pid is known once the command is launched (or now, --pid): the plan is
    # completed then; built here, before a run directory is made or a calibration started,
    # so that what the JVM's libraries cannot give (a layer with no probe there) is refused
    # first; kept for its probe list, the manifest and the errors
    plan = engine_mod.build_plan(opts.layers, libs, symbols, mode=opts.mode, scope=opts.scope,
                                 root=opts.pid or 0, counting=opts.pid is None)
    out = prepare_out(opts.out or default_out("record"))
    for w in warnings:
        log(f"warning: {w}")

    platform_file = cal.platform_path(opts.platform)
    platform = cal.load(platform_file)
    if opts.calibrate_if_missing:
        platform = cal.ensure_calibrated(platform, platform_file, jvms, list(opts.layers),
                                         opts.mode, log)
    cal.validate_platform(platform)     # a bad calibration stops here, before tracing starts

    script = plan.script
    missing = [m for m in script.missing
               if not m.rsplit(":", 1)[-1].startswith(OPTIONAL_SYMBOL_PREFIXES)
               and "(library not found)" not in m]
    for m in missing:
        log(f"warning: symbol not found, its probe is skipped: {m}")
    try:
        (out / "raw").mkdir(exist_ok=True)
        (out / "probes.plan.json").write_text(script.text)
    except OSError as e:
        raise JvmosError(f"cannot write the engine's plan to {out}: {e.strerror or e}", 1)
    manifest = {
        "schema": "jvmos.manifest/1", "jvmos_version": __version__, "status": "running",
        "target": "launch" if opts.cmd else "attach",
        "command": opts.cmd, "attach_pid": opts.pid, "duration_s": opts.duration,
        "layers": list(opts.layers), "mode": opts.mode, "sample": opts.sample, "wall": opts.wall,
        "scope": opts.scope, "jvms_probed": [j.as_dict() for j in jvms],
        "host": host_info(),
        "engine": {"name": "bpf", "version": engine_mod.version(),
                   "objects_sha256": engine_mod.object_hashes(plan),
                   "plan": "probes.plan.json"},
        "probes": {"attached": script.attached, "missing": script.missing,
                   "uprobes": script.uprobe_count, "tracepoints": script.tracepoint_count,
                   "addresses": script.addresses, "aliases": script.aliases,
                   "usdt": script.usdt_count, "kinds": script.kinds,
                   "usdt_skipped": script.usdt_skipped,
                   # the plan is not kept with reference results: its hash says which it was
                   "script_sha256": hashlib.sha256(script.text.encode()).hexdigest(),
                   "libc": str(libc) if libc else None,
                   "scope": {"mode": opts.scope},
                   **({"zlib": mem_layer.zlib_state(libz, libz_why, script.attached)}
                      if "mem" in opts.layers else {})},
        "platform_file": str(platform_file), "warnings": warnings,
        "start_time": None, "end_time": None,
        # what the chosen attach points cannot see, by layer
        "blind_spots": blind_spots(opts.layers, opts.scope),
        # what every task of the host paid while the recording's syscall tracepoints were on
        "host_tax": host_tax(platform, script.kinds),
    }

    return _Run(opts=opts, log=log, warnings=warnings, jvms=jvms, out=out,
                platform_file=platform_file, platform=platform,
                missing=missing, manifest=manifest, plan=plan,
                raw_path=out / "raw" / "engine.json")


def _launch_or_attach(session: Session, opts: Options, out: Path) -> int:
    """The root of the traced tree: the command launched and held at the gate (with the
    sampling agent in its environment when asked), or the pid attached to."""
    if opts.cmd:
        env = sampling.launch_env(out, opts.env, wall=opts.wall) if opts.sample else opts.env
        return session.launch(opts.cmd, opts.stdout, opts.stderr, env)
    return opts.pid


def _run_live(run: "_Run", live, session: Session, root: int, load) -> bool:
    """The live view's intervals, then what they were in the manifest and timeline.json
    (written whatever ended them). True when the target exited."""
    opts, manifest = run.opts, run.manifest
    try:
        return live.run(session, root, opts.duration, load)
    finally:
        manifest["live"] = {"interval_s": opts.interval, "count": opts.count,
                            "intervals": len(live.intervals), "ended": live.ended,
                            "skipped": live.skipped, "lost_events": live.lost_events}
        try:
            live.write()
            manifest["live"]["timeline"] = "timeline.json"
        except OSError as e:
            manifest["live"]["timeline"] = None
            run.warnings.append(f"timeline.json could not be written: {e}")


def _stop_sampler(opts: Options, jvms: List[Jvm], out: Path, log) -> Optional[str]:
    """Attach mode with --sample: the agent stopped and its profile written; why not, if it
    could not be."""
    if opts.sample and opts.pid is not None and alive(opts.pid):
        try:
            sampling.attach_stop(jvms[0], opts.pid, out, wall=opts.wall)
        except JvmosError as e:
            log(f"warning: {e}")
            return str(e)
    return None


def _trace_engine(run: _Run) -> None:
    """The tracing session: the command launched at the gate (or the pid
    attached), the engine started on the plan and ready (every probe open), counting started
    (attach mode), the recording waited for, then the engine stopped: counting ends, its final
    maps are read, every link is closed (a fraction of a second: one uprobe_multi link per
    library and program)."""
    from jvmos import engine as engine_mod
    opts, log, out, jvms, manifest, plan = (run.opts, run.log, run.out, run.jvms, run.manifest,
                                            run.plan)
    session = Session(log)
    tree = None
    eng = None
    err_path = out / "raw" / "engine.stderr"
    wall_ns, target_cpu, exit_code, target_gone = 0, None, None, False
    load_error: List[Exception] = []
    sample_error = None
    stopped_early = False
    with session:
        try:
            _save(out / "manifest.json", manifest, out)
            root = _launch_or_attach(session, opts, out)
            child = session.child
            never_ran = "; the command never ran" if opts.cmd else ""
            plan.doc["root_pid"] = root
            plan.doc["constants"]["common"]["root_tgid"] = root
            plan.doc["counting"] = opts.pid is None     # attach mode: from the start signal
            t_attach = time.time()
            eng = engine_mod.Engine(plan, out / "probes.plan.json", err_path, log)
            session.bt = eng.proc       # the session watches it and kills it on every path

            def abort(msg, status="failed", code=1):
                session.close_gate()       # the command never starts
                eng.kill()
                manifest.update({"status": status, "error": msg, "end_time": _now_iso()})
                _save(out / "manifest.json", manifest, out)
                raise JvmosError(msg, code)

            ev = eng.wait_ready(ATTACH_TIMEOUT_S, lambda: session.interrupted is not None)
            if session.interrupted is not None:
                abort("interrupted before tracing started" + never_ran, "interrupted", 130)
            if ev is None:
                abort(f"the engine did not attach within {ATTACH_TIMEOUT_S:.0f}s" + never_ran)
            if ev.get("event") != "ready":
                abort(f"the engine failed before tracing started: {eng.first_error()}"
                      + never_ran)
            _note_ready(run, ev, root, time.time() - t_attach)
            if opts.sample and opts.pid is not None:
                if not jvms:
                    abort(f"--sample needs a JVM: pid {opts.pid} is not one")
                try:
                    sampling.attach_start(jvms[0], opts.pid, out, wall=opts.wall)
                except JvmosError as e:
                    abort(str(e))
            tree = _Tree(root)      # which processes ran, and their JVMs (the engine follows them)
            cpu_watch = cputime.TreeCpu(root, tree=True, interval=0.2) if child is None else None
            cpu_at_t0 = None if child is None else cputime.cpu_or_none(child.pid)
            t0 = time.monotonic_ns()
            if cpu_watch is not None:
                cpu_watch.start()
            # the kernel's own count of the target's read and write syscalls, read on both
            # sides of the start of counting (and of its stop), to bound what libc's wrappers
            # miss (attach mode: the process counts from the engine's start)
            io_before = kernel_io(root) if opts.pid is not None else None
            if opts.pid is not None and not eng.start():
                abort(f"the engine did not start counting: {eng.first_error()}")
            io_at_start = ((io_before, kernel_io(root))
                           if io_before is not None else None)
            # the links calls already in progress (no return probe on them: libc's route)
            links_at_start = (links_in_progress(root) if opts.pid is not None
                              and opts.scope == "process" and "links" in opts.layers else None)
            # a reader can see tracing has begun: the probes count from here (attach mode
            # counts from the engine's start, a launched command from its first instruction)
            manifest["start_time"] = _now_iso()
            _save(out / "manifest.json", manifest, out)
            live = None
            if opts.interval is not None:
                live = _live_view(run, tree, cpu_watch, eng)
                live.start(eng.alive)
            session.release()
            tree.start()
            load = session.run_load(opts.workload, load_error)
            cpu_at_end = cpu_rusage = None
            if live is not None:
                target_gone = _run_live(run, live, session, root, load)
            if child is not None:
                # a launched command ends the recording when it exits (after the live view,
                # which may end first on --count)
                exit_code, cpu_at_end, cpu_rusage = session.wait_command()
                target_gone = False
            elif live is None:
                target_gone = session.wait_attached(root, opts.duration, load)
            wall_ns = time.monotonic_ns() - t0
            target_cpu = (cpu_watch.stop() if cpu_watch is not None
                          else cputime.launched_cpu(cpu_at_t0, cpu_at_end, cpu_rusage))
            if cpu_watch is None and child is not None and target_cpu.get("complete"):
                # the rusage's kernel-mode part: the whole command's, the gate's start-up
                # (milliseconds before the exec) included, unlike cpu_ns
                target_cpu["sys_ns"] = cputime.rusage_sys_ns(child)
            sample_error = _stop_sampler(opts, jvms, out, log)
            tree.stop.set()
            tree.join()
            manifest["end_time"] = _now_iso()
            ended = ended_in_progress(root, links_at_start) if links_at_start else None
            stopped_early = _stop_engine(run, eng, ev, root, io_at_start)
            if ended is not None:
                count_in_progress(run, root, links_at_start, ended)
        finally:
            if tree is not None and tree.is_alive():
                tree.stop.set()
                tree.join()
            if eng is not None and eng.alive():
                eng.kill()
            _release_held(run, tree)
    run.__dict__.update(root=root, child=child, tree=tree, wall_ns=wall_ns,
                        target_cpu=target_cpu, exit_code=exit_code, target_gone=target_gone,
                        load_error=load_error, sample_error=sample_error,
                        stopped_early=stopped_early,
                        engine_rc=eng.proc.returncode if eng is not None else None,
                        sig=session.interrupted)


def _note_ready(run: _Run, ev: dict, root: int, attach_s: float) -> None:
    """The engine is ready: what it attached goes into the manifest, and one line to the user."""
    opts, manifest, log = run.opts, run.manifest, run.log
    sites = ev.get("sites") or []
    manifest["attach_seconds"] = round(attach_s, 3)
    manifest["probes"]["sites"] = sites
    # the raw tracepoint programs every layer's object attached (common's and each
    # layer's own), as the engine says
    manifest["probes"]["tp_btf"] = ev.get("tp_btf_programs") or []
    # the layers whose scheduler handlers run from common's one sched_switch program, in order
    manifest["probes"]["switch_chain"] = ev.get("switch_chain") or []
    manifest["engine"].update({"uprobe_multi": ev.get("uprobe_multi"), "pid": ev.get("pid"),
                               "load_s": round(ev.get("load_s", 0), 4),
                               "attach_s": round(ev.get("attach_s", 0), 4)})
    if ev.get("fallback"):
        manifest["engine"]["fallback"] = ev["fallback"]
        run.warnings.append(ev["fallback"])
        log(f"warning: {ev['fallback']}")
    moved = sum(1 for x in sites if x.get("shift"))
    stepped = sorted({x["symbol"] for x in sites if x.get("class") == "single-stepped"})
    log(f"tracing pid {root} with the compiled engine ({ev.get('uprobes', 0)} uprobes, "
        f"{ev.get('tracepoints', 0)} tracepoints, attached in {attach_s:.2f}s; "
        f"{moved} probe(s) moved onto an emulated instruction"
        + (f", {len(stepped)} single-stepped: {', '.join(stepped[:4])}" if stepped else "")
        + ")" + (f" for {opts.duration}s" if opts.duration else "")
        + ("; Ctrl-C to stop" if opts.pid else ""))


def _stop_engine(run: _Run, eng, ev: dict, root: int, io_at_start) -> bool:
    """Counting ends: the kernel's io counters read again (attach mode), the engine stopped, its
    final maps kept and read, how it ended in the manifest. True when the engine had
    already exited (no final maps)."""
    from jvmos import engine as engine_mod
    manifest, plan = run.manifest, run.plan
    end_before = kernel_io(root) if io_at_start is not None else None
    stopped_early = not eng.alive()
    maps = None if stopped_early else eng.stop()
    end_after = kernel_io(root) if end_before is not None else None
    if "mem" in run.opts.layers:
        manifest["java_heap"] = java_heap_at_stop(root, maps is not None or not eng.alive())
        heap = manifest["java_heap"]
        run.log(f"java heap of pid {root}: " + (
            f"[{heap['start']:#x}, {heap['end']:#x}) ({heap.get('collector')})"
            if "start" in heap else f"unknown: {heap['unknown']}"))
    if end_after is not None and None not in io_at_start:
        # counting began between the first two reads and ended between the last two: the
        # kernel's count over it lies between these ends
        s0, s1 = io_at_start
        manifest["kernel_io"] = {
            "pid": root, **{k: [end_before[k] - s1[k], end_after[k] - s0[k]]
                            for k in ("syscr", "syscw")},
            "window": "the kernel's count of the process's read and write syscalls while "
                      "counting ran, between the counters read just inside and just outside "
                      "its start and stop (/proc/PID/io, every thread, exited ones included)"}
    if maps is not None:
        try:
            run.raw_path.write_text(json.dumps(maps) + "\n")   # as the engine handed it
        except OSError as e:
            run.warnings.append(f"the engine's maps could not be kept in "
                                f"{run.raw_path}: {e}")
        run.engine_raw = engine_mod.to_raw(maps, plan)
        # what the engine attached (bpftrace's attached_probes): uprobe attach points
        # of the root, tracepoints, and common.bpf.c's raw tracepoints
        run.engine_raw.attached_probes = sum(
            int(ev.get(k) or 0) for k in ("uprobes", "tracepoints", "tp_btf"))
        late = maps.get("released_at_stop") or []
        if late:
            manifest["engine"]["released_at_stop"] = late
            run.warnings.append(
                f"{len(late)} child process(es) started a program just before the stop "
                f"and were held at their exec until it (pids {', '.join(map(str, late[:5]))}"
                "): they ran nothing while traced, and ran on once let go")
    if eng.closed is not None:
        manifest["teardown_seconds"] = round(eng.closed.get("detach_s", 0), 4)
    run.engine_end = ("stopped by jvmos: final maps read, every link closed"
                      if maps is not None and eng.closed is not None else
                      "stopped by jvmos: final maps read; the engine did not confirm "
                      "that it closed its links (its exit closes them)"
                      if maps is not None else
                      f"exited before the stop: {eng.first_error()}" if stopped_early
                      else f"no final maps after the stop: {eng.first_error()}")
    if maps is not None and eng.closed is None:
        run.warnings.append(f"the engine {run.engine_end.split('; ', 1)[1]}")
    manifest["engine"]["end"] = run.engine_end
    manifest["engine"]["procs"] = eng.procs
    if eng.warnings:
        manifest["engine"]["warnings"] = eng.warnings
    return stopped_early


def java_heap_at_stop(pid: int, counting_over: bool) -> dict:
    """The manifest's java_heap: the address range of the recorded JVM's Java heap (the mem
    layer's page faults in it are page_faults_heap), read with its JDK's jcmd once counting
    is over: jcmd starts a thread in the JVM (its attach listener), whose work must not be
    counted. Unknown, with the reason, when the process is gone or counting did not stop."""
    if not counting_over:
        return {"pid": pid, "unknown": "the engine did not confirm that counting stopped: "
                                       "jcmd was not run in the traced process"}
    if not alive(pid):
        return {"pid": pid, "unknown": f"pid {pid} had exited when counting stopped"}
    return javaheap.read_java_heap(pid)


def _release_held(run: _Run, tree) -> None:
    """No child of the traced tree stays stopped at its exec, whatever ended the recording:
    the engine lets them go at its stop (and at EOF); this covers an engine that was killed
    or died. Only pids the probes marked held (@held), and only those of the traced tree."""
    held = set()
    if run.engine_raw is not None:
        held = {int(p) for (p,) in run.engine_raw.keyed("@held") if str(p).isdigit()}
    for ev in (run.manifest.get("engine") or {}).get("procs") or []:
        if ev.get("held"):
            held.add(int(ev["pid"]))
    tree_pids = set(tree.pids) if tree is not None else set()
    for p in held & tree_pids:
        try:
            os.kill(p, signal.SIGCONT)
        except OSError:
            pass


def engine_reasons(run: _Run) -> List[tuple]:
    """What the engine's end and maps say about a recording, as (status, why) pairs."""
    from jvmos import engine as engine_mod
    out = []
    raw = run.engine_raw
    if run.stopped_early:
        out.append(("failed", f"the engine stopped before the end of the run: {run.engine_end}; "
                              "no figures were read"))
    elif raw is None:
        out.append(("truncated", f"the engine handed over no final maps ({run.engine_end})"))
    if raw is not None and raw.errors:
        out.append(("truncated", f"{len(raw.errors)} entr(y/ies) of the engine's maps could "
                                 f"not be read (first: {raw.errors[0]})"))
    lost = engine_mod.lost_reasons(raw) if raw is not None else []
    if lost:
        out.append(("events_lost", "the engine lost events: " + "; ".join(lost)))
    return out


def engine_probe_costs(platform: Optional[dict], layers, ready_sites, raw=None) -> tuple:
    """The compiled engine's calibrated probe costs (jvmos calibrate --probes), and the
    warnings that go with them: none calibrated, or probes placed on an instruction class
    the calibration did not measure."""
    from jvmos import enginecost
    probes = (platform or {}).get("engine_probes")
    if enginecost.incomplete(probes, list(layers)):
        return None, ["the compiled engine's probe costs are not calibrated (jvmos calibrate "
                      "--probes): measured times are uncorrected and the probe effect unknown"]
    warnings = []
    borrowed = sorted(k for k, v in probes.items() if isinstance(v, dict) and v.get("borrowed"))
    if borrowed:
        warnings.append("the engine's calibration did not resolve " + ", ".join(borrowed)
                        + " from the noise: each is charged the measured cost of the engine's "
                          "program of the same shape (labelled borrowed in probe_costs, without "
                          "an interval, so the probe overhead's interval is unknown)")
    if probes.get("unresolved"):
        warnings.append("the engine's calibration did not resolve "
                        + ", ".join(sorted(probes["unresolved"]))
                        + " from the noise (mean not above 0): what needs them is unknown "
                          "(re-run jvmos calibrate --probes on a quieter machine)")
    calibrated = {s.get("class") for s in (probes.get("placement") or {}).values()}
    # only probes that fired: one that never hit costs nothing, whatever its class
    hit = None
    if raw is not None:
        hit = {k[2].split(":", 1)[1] for k, v in raw.keyed("@calls").items()
               if v and len(k) == 3 and k[2].startswith(("uprobe:", "usdt:"))}
    usdt = sorted({k[2].split(":")[-1] for k, v in (raw.keyed("@calls").items() if raw else [])
                   if v and len(k) == 3 and k[2].startswith("usdt:")})
    if usdt:
        warnings.append(f"{len(usdt)} probe(s) that fired were HotSpot USDT probes (a libjvm "
                        f"without those symbols: {', '.join(usdt[:3])}"
                        + (f" and {len(usdt) - 3} more" if len(usdt) > 3 else "")
                        + "): they are charged and corrected at the symbol uprobes' calibrated "
                          "costs, which were not measured on a USDT site")
    other = sorted({f"{s['symbol']} ({s.get('insn')})" for s in ready_sites or []
                    if s.get("class") not in calibrated
                    and (hit is None or f"{s['path']}:{s['symbol']}" in hit)})
    if other:
        warnings.append(f"{len(other)} probe(s) sit on an instruction class the engine's "
                        f"calibration did not measure ({', '.join(other[:3])}"
                        + (f" and {len(other) - 3} more" if len(other) > 3 else "")
                        + "): their hits are charged and corrected at the calibrated "
                          "(emulated) cost, an underestimate if they are single-stepped")
    return probes, warnings


def summary_inputs(platform: Optional[dict], manifest: dict, pids: Dict[str, dict],
                   raw=None) -> tuple:
    """What summary.build needs besides the probes' output, for these processes of the
    recording the manifest describes (the recording's end, its live view, and
    scripts/reanalyse.py reading it again): (its keyword arguments, the probe-cost warnings,
    {pid: JVM home}). raw: the engine's final maps (which probes fired), None while live."""
    probes = manifest.get("probes") or {}
    jvm_home_by_pid, _ = jvm_homes(pids, manifest.get("attach_pid"),
                                   [j["home"] for j in manifest.get("jvms_probed") or []])
    probe_costs, probe_warnings = engine_probe_costs(platform, manifest.get("layers") or [],
                                                     probes.get("sites"), raw)
    kw = dict(addresses=probes.get("addresses") or {}, costs=cal.costs_for(platform),
              jvms_by_pid=jvm_home_by_pid, probes=probe_costs,
              mode=manifest.get("mode", "time"), scope=manifest.get("scope") or "process",
              java_heap=manifest.get("java_heap"),
              zlib=probes.get("zlib") if "mem" in (manifest.get("layers") or []) else None)
    return kw, probe_warnings, jvm_home_by_pid


def write_metrics_file(run: _Run, summary: dict) -> None:
    """--metrics-file: the recording so far in Prometheus's text format (what
    node-exporter's textfile collector reads), replaced whole."""
    from jvmos import export
    export.write_atomically(Path(run.opts.metrics_file),
                            export.prometheus_text(run.manifest, summary, run.out.name).encode())


def _live_view(run: _Run, tree, cpu_watch, eng):
    """The live view of an attach-mode recording (jvmos.live): snapshots summarized by the
    same analyzers as the end of the recording; OpenMetrics text each interval if asked."""
    from jvmos import live as live_mod

    def summarize(raw, wall_ns):
        kw, _, _ = summary_inputs(run.platform, run.manifest,
                                  {str(p): i for p, i in tree.pids.items()}, run.engine_raw)
        s = summ.build(raw, wall_ns=wall_ns, status="running", exit_code=None, **kw)
        return s

    def cpu_now():
        if cpu_watch is None:
            return None
        cpu_watch.poll()
        return cpu_watch.result().get("cpu_ns")

    metrics = ((lambda summary: write_metrics_file(run, summary))
               if run.opts.metrics_file is not None else None)
    return live_mod.LiveView(eng, run.plan, run.out, run.raw_path, run.opts.interval,
                             run.opts.count, summarize, cpu_now, metrics=metrics)


def jvm_homes(processes: Dict[str, dict], attach_pid: Optional[int],
              probed_homes: List[str]):
    """({pid: JDK home of the libjvm it mapped}, the JDK homes that ran) of a recording's
    processes (the manifest's `processes`): the attached pid's JDK is the one probed, and when
    no process showed its JDK, every JDK probed counts as run (a command may have started one
    of several JDKs probed). The analyzers' per-JDK constants and probe costs follow these."""
    homes = {p: (i.get("jvm") or i["jvm_from_launcher"])["home"]
             for p, i in processes.items() if "jvm" in i or "jvm_from_launcher" in i}
    if attach_pid is not None and probed_homes:
        homes.setdefault(str(attach_pid), probed_homes[0])
    return homes, sorted(set(homes.values())) or list(probed_homes)


def _conclude(run: _Run) -> Result:
    """The recording's status and why, its summary (the analyzers on the raw output), and the
    run directory's last files."""
    opts, log, out, jvms, manifest = run.opts, run.log, run.out, run.jvms, run.manifest
    warnings, missing, tree = run.warnings, run.missing, run.tree
    child, root, wall_ns, exit_code = run.child, run.root, run.wall_ns, run.exit_code
    load_error, target_cpu = run.load_error, run.target_cpu
    interrupted = {"sig": run.sig}
    raw = run.engine_raw if run.engine_raw is not None else rawparse.Raw()
    reasons = engine_reasons(run)
    if run.sample_error:
        reasons.append(("failed", f"the sampler could not be stopped: {run.sample_error}"))
    reasons += run_reasons(sig=interrupted["sig"], launched=child is not None,
                           load_error=load_error, driven=opts.workload is not None)
    if run.target_gone:
        reasons.append(("target_exited", f"pid {root} exited {wall_ns / 1e9:.1f} s into the "
                                         "recording, before it was stopped: the figures cover "
                                         "that time"))
    reasons += command_reason(child is not None, exit_code, interrupted["sig"])
    if missing:
        names = [m.rsplit(":", 1)[-1] for m in missing]
        reasons.append(("partial", f"{len(missing)} probe(s) skipped, their symbols were not "
                                   f"found: {', '.join(names[:5])}"
                                   + (f" and {len(names) - 5} more" if len(names) > 5 else "")
                                   + "; their figures are absent"))
    for p in (run.manifest.get("engine") or {}).get("procs") or []:
        if p.get("error"):
            reasons.append(("partial", f"pid {p['pid']} joined the traced processes "
                                       f"({p.get('kind')}) but its uprobes could not be opened "
                                       f"({p['error']}): its library calls are not counted"))
    forked = [p for p in (run.manifest.get("engine") or {}).get("procs") or []
              if p.get("kind") == "fork" and p.get("uprobes") and not p.get("error")]
    if forked:
        # one line for all of them (a shell loop forks hundreds)
        gap = max(float(p.get("attach_ms") or 0) for p in forked)
        warnings.append(f"{len(forked)} process(es) were forked during the recording (pids "
                        f"{', '.join(str(p['pid']) for p in forked[:5])}"
                        + (f" and {len(forked) - 5} more" if len(forked) > 5 else "")
                        + f"): each one's uprobes were opened up to {gap:.1f} ms after its fork "
                          "was seen, so library calls a child made before that are not counted "
                          "(a child that starts a program is held at its exec until probed)")
    status, reason = settle(reasons, warnings, log)
    for why in missed_warnings(raw):
        warnings.append(why)
        log(f"note: {why}")
    pids = {str(p): info for p, info in tree.pids.items()}
    kw, probe_warnings, jvm_home_by_pid = summary_inputs(run.platform, manifest, pids,
                                                         run.engine_raw)
    warnings.extend(probe_warnings)
    try:
        summary = summ.build(raw, wall_ns=wall_ns, status=status, exit_code=exit_code, **kw)
    except JvmosError as e:
        # the probes' output is kept (raw/); the manifest says why there is no summary
        manifest.update({"status": "failed", "error": f"the summary could not be built: {e}",
                         "end_time": manifest.get("end_time") or _now_iso()})
        _write_json(out / "manifest.json", manifest)
        raise JvmosError(f"{e}; the probes' output is kept in {out / 'raw'}")
    jvm_hits = sum(summary["categories"].get(c, {}).get("calls") or 0
                   for c in ("jni_copy", "thread_jvm", "jni_call"))
    jvm_hits += (summary["categories"].get("nio_copy") or {}).get("nio_native_calls", 0)
    if opts.cmd and jvms and not jvm_home_by_pid and not jvm_hits:
        warnings.append("no JVM ran under the traced command (no libjvm.so mapped, no JVM "
                        "probe fired): only syscall figures apply")
        log(f"warning: {warnings[-1]}")
    summary["totals"]["attach_seconds"] = manifest["attach_seconds"]
    bound = io_wrapper_bound(manifest, summary)
    if bound:
        summary["totals"]["io_wrapper_bound"] = bound
    if opts.sample:     # before the totals that read the categories' times
        merge_samples(summary, sampling.collect(out, log=log))
    summary["totals"].update(cputime.overhead_totals(
        summary["totals"].get("guaranteed_overhead_ns"), wall_ns, target_cpu,
        summary["totals"].get("probe_overhead_ns")))
    # the analyzers' warnings (calibration, unknown figures) and the recording's, in one list
    summary["warnings"] = list(summary.get("warnings") or []) + [
        w for w in warnings if w not in (summary.get("warnings") or [])]
    summary["status_reason"] = reason
    manifest.update({"status": status, "exit_code": exit_code, "processes": pids,
                     "attached_probe_count": raw.attached_probes, "warnings": warnings,
                     "wall_ns": wall_ns,
                     "engine_exit_status": run.engine_rc,
                     "status_reason": reason})
    _finish(out, manifest, summary)
    if opts.metrics_file is not None:
        # the live file ends with the whole recording's figures and status
        try:
            write_metrics_file(run, summary)
        except (OSError, JvmosError) as e:
            log(f"warning: {opts.metrics_file} not rewritten with the final figures: {e}")
    if load_error:
        raise JvmosError(f"the load driven during the recording failed: {load_error[0]}; "
                         f"the recording is kept in {out}")
    return Result(run_dir=out, status=status, exit_code=exit_code, summary=summary,
                  warnings=warnings, reason=reason)


def _finish(out: Path, manifest: dict, summary: dict) -> None:
    """The final manifest, then the summary (the last file of a run). If the summary cannot be
    written, the manifest is rewritten (if it can be) to say so instead of a status that
    summary.json would have backed."""
    _save(out / "manifest.json", manifest, out)
    try:
        _write_json(out / "summary.json", summary)
    except OSError as e:
        msg = f"cannot write {out / 'summary.json'}: {e.strerror or e}"
        manifest.update({"status": "failed", "error": msg,
                         "status_measured": summary.get("status")})
        try:
            _write_json(out / "manifest.json", manifest)
        except OSError:
            pass
        raise JvmosError(f"{msg}; what was written before (manifest.json, raw/) is kept in "
                         f"{out}", 1)


SAMPLED_CATEGORIES = ("jni_copy", "nio_copy", "io_syscall", "kernel_copy")


# count mode's copy categories whose time is an estimate from a model (not probed): with
# --sample, a sampled time replaces it where samples fell in the category
SAMPLE_REPLACES = ("jni_copy", "nio_copy")
# a replaced figure's correction fields belonged to the time it no longer carries
_CORRECTION_FIELDS = ("time_raw_ns", "time_hits", "correction_ns", "corrected", "floored",
                      "correction_dominates", "time_ci95_ns", "probe_window_ns",
                      "probe_window_source")


def merge_samples(summary: dict, samp: Optional[dict]) -> None:
    """Times from samples next to the probe-derived ones: samples x interval, or unknown
    (null) when no sample fell in the category. Count mode: where samples fell in a copy
    category whose time is a model's estimate (SAMPLE_REPLACES), the sampled time replaces
    the estimate (method "sampled", the estimate kept as time_estimated_ns), per process, and
    the guaranteed totals are summed again; measured times (io_syscall) stay as they are."""
    summary["sampling"] = samp
    if not samp:
        summary.setdefault("warnings", []).append("no profile was written: no JVM was sampled")
        return
    count = summary["totals"].get("mode") == "count"

    def put(cats: dict, sampled: dict) -> None:
        for name in SAMPLED_CATEGORIES:
            c = cats.get(name)
            if c is None:
                continue
            s = sampled.get(name) or {"samples": 0, "time_ns": None, "time_err95_ns": None}
            n = s.get("samples") or 0
            c["samples"] = n
            c["time_sampled_ns"] = s["time_ns"] if n else None
            c["time_sampled_err95_ns"] = s["time_err95_ns"] if n else None
            if count and name in SAMPLE_REPLACES and n:
                c["time_estimated_ns"] = c.get("time_ns")
                c["time_ns"] = c["time_sampled_ns"]
                c["method"] = "sampled"
                c["basis"] = (f"{n} CPU samples x the sampling interval (async-profiler); the "
                              "count model's estimate is time_estimated_ns")
                for k in _CORRECTION_FIELDS:
                    c.pop(k, None)

    put(summary["categories"], samp.get("categories") or {})
    for pid, p in summary.get("by_pid", {}).items():
        put(p["categories"], ((samp.get("by_pid") or {}).get(pid) or {}).get("categories") or {})
    if count:
        gtot, gwarn = summ.guaranteed_totals(summary["categories"], summary.get("by_pid", {}),
                                             summary["totals"].get("wall_ns"))
        summary["totals"].update(gtot)
        # the warning of the totals is the one of the totals now
        summary["warnings"] = [w for w in summary.get("warnings") or []
                               if not w.startswith("guaranteed overhead unknown")] + gwarn


def _record_sampled(opts: Options, log) -> Result:
    """--mode sample: async-profiler alone, no BPF probes (the lowest-overhead mode). The
    statuses are those of the module docstring; a sampler that cannot be loaded or stopped
    is `failed`."""
    jvm = None
    if opts.pid is not None:
        jvm = jvm_of_pid(opts.pid)
        if jvm is None:
            raise JvmosError(f"--mode sample needs a JVM: pid {opts.pid} maps no libjvm.so")
    elif executable_kind(opts.cmd[0]) == "missing":
        raise JvmosError(f"command not found: {opts.cmd[0]}")
    agent = sampling.lib()
    out = prepare_out(opts.out or default_out("record"))
    warnings: List[str] = []
    manifest = {"schema": "jvmos.manifest/1", "jvmos_version": __version__,
                "status": "running", "mode": "sample",
                "target": "launch" if opts.cmd else "attach",
                "command": opts.cmd, "attach_pid": opts.pid, "duration_s": opts.duration,
                "layers": [], "jvms_probed": [], "host": host_info(),
                "sampler": f"async-profiler ({agent}), cpu, "
                           f"{sampling.INTERVAL_NS} ns interval"
                           + (f", wall clock every {sampling.WALL_NS} ns" if opts.wall else ""),
                "start_time": None, "end_time": None}
    _save(out / "manifest.json", manifest, out)
    exit_code = None
    target_gone = False
    load_error = []
    stop_error = None
    session = Session(log)
    with session:
        if opts.cmd:
            manifest["start_time"] = _now_iso()
            _save(out / "manifest.json", manifest, out)
            t0 = time.monotonic_ns()
            # no probe to wait for: the command starts at once, the agent loaded with the JVM
            root = session.launch(opts.cmd, opts.stdout, opts.stderr,
                                  sampling.launch_env(out, opts.env, wall=opts.wall), gated=False)
            # no SIGKILL after a signal: async-profiler writes its samples as the JVM exits
            exit_code, _, _ = session.wait_command(kill_after=None)
            wall_ns = time.monotonic_ns() - t0
        else:
            try:
                sampling.attach_start(jvm, opts.pid, out, wall=opts.wall)
            except JvmosError as e:
                # nothing was sampled: the manifest says why, no summary claims figures
                manifest.update({"status": "failed", "error": str(e), "end_time": _now_iso()})
                _save(out / "manifest.json", manifest, out)
                raise JvmosError(str(e), 1)
            manifest["jvms_probed"] = [jvm.as_dict()]
            manifest["start_time"] = _now_iso()
            _save(out / "manifest.json", manifest, out)  # a reader can see sampling has begun
            log(f"sampling pid {opts.pid}" + (f" for {opts.duration}s" if opts.duration else
                                              "; Ctrl-C to stop"))
            t0 = time.monotonic_ns()
            load = session.run_load(opts.workload, load_error)
            target_gone = session.wait_attached(opts.pid, opts.duration, load)
            wall_ns = time.monotonic_ns() - t0
            if not target_gone:
                try:
                    sampling.attach_stop(jvm, opts.pid, out, wall=opts.wall)
                except JvmosError as e:
                    stop_error = str(e)
            root = opts.pid
    interrupted = {"sig": session.interrupted}
    samp = sampling.collect(out, log=log)
    reasons = []
    if stop_error:
        reasons.append(("failed", f"the sampler could not be stopped, its samples are lost: "
                                  f"{stop_error}"))
    elif samp is None and not target_gone:
        reasons.append(("failed", "no profile was written (the command ran no JVM, or the "
                                  "JVM could not load the agent): nothing was sampled"))
    reasons += run_reasons(sig=interrupted["sig"], launched=bool(opts.cmd),
                           load_error=load_error, driven=opts.workload is not None)
    if target_gone:
        reasons.append(("target_exited", f"pid {opts.pid} exited {wall_ns / 1e9:.1f} s into "
                                         "the recording, before it was stopped: its samples "
                                         "went with it (async-profiler writes them at stop)"))
    reasons += command_reason(bool(opts.cmd), exit_code, interrupted["sig"])
    status, reason = settle(reasons, warnings, log)
    summary = summ.build_sampled(samp, wall_ns=wall_ns, status=status, exit_code=exit_code,
                                 warnings=warnings)
    summary["status_reason"] = reason
    manifest.update({"status": status, "exit_code": exit_code, "end_time": _now_iso(),
                     "wall_ns": wall_ns, "root_pid": root, "warnings": warnings,
                     "status_reason": reason})
    _finish(out, manifest, summary)
    if load_error:
        raise JvmosError(f"the load driven during the recording failed: {load_error[0]}; "
                         f"the recording is kept in {out}")
    return Result(run_dir=out, status=status, exit_code=exit_code, summary=summary,
                  warnings=warnings, reason=reason)
