"""A recording as jvmos carries it: its options (Options), its state from one phase to the
next (Run: jvmos.record prepares it, jvmos.recordengine traces, jvmos.conclusion concludes),
its result, its run directory and its status.

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
import json
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

from jvmos import JvmosError
from jvmos.catalogue import DEFAULT_LAYERS
from jvmos.jdk import Jvm
from jvmos.analyzers import summary as summ


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


def now_iso():
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
    for (_pid, what), n in raw.keyed("missed").items():
        missed[what] = missed.get(what, 0) + int(n)
    return [summ.missed_note(what, n) for what, n in sorted(missed.items())]


def write_json(path: Path, data: dict):
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


def save(path: Path, data: dict, out: Path):
    """write_json with the error said in one line: what could not be written, and where the
    rest of the run is."""
    try:
        write_json(path, data)
    except OSError as e:
        raise JvmosError(f"cannot write {path}: {e.strerror or e}; what was written before is "
                         f"kept in {out}", 1)


def default_out(label: str) -> Path:
    from jvmos import ROOT
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return ROOT / "results" / "runs" / f"{stamp}-{label}"


def check_out(out: Path) -> None:
    """Refuse a run directory that cannot be written, or that holds a finished recording:
    said before anything runs, and nothing is made."""
    from jvmos.writable import check_writable
    check_writable(out, "output directory", "dir")
    if (Path(out) / "summary.json").exists():
        raise JvmosError(f"{out} already holds a recording: choose another --out")


def prepare_out(out: Path) -> Path:
    """Create the run directory, or fail at once (before anything runs) if it cannot be."""
    out = Path(out)
    check_out(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise JvmosError(f"cannot write to output directory {out}: {e.strerror or e}")
    return out


@dataclass
class Run:
    """What a recording carries from one phase to the next: _prepare (targets, calibration,
    plan, manifest), trace (the tracing session) and conclude (status, summary, run
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
    # set by trace
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
    # the engine's final maps as Records, what ended it
    engine_raw: object = None
    engine_end: Optional[str] = None


def finish(out: Path, manifest: dict, summary: dict) -> None:
    """The final manifest, then the summary (the last file of a run). If the summary cannot be
    written, the manifest is rewritten (if it can be) to say so instead of a status that
    summary.json would have backed."""
    save(out / "manifest.json", manifest, out)
    try:
        write_json(out / "summary.json", summary)
    except OSError as e:
        msg = f"cannot write {out / 'summary.json'}: {e.strerror or e}"
        manifest.update({"status": "failed", "error": msg,
                         "status_measured": summary.get("status")})
        try:
            write_json(out / "manifest.json", manifest)
        except OSError:
            pass
        raise JvmosError(f"{msg}; what was written before (manifest.json, raw/) is kept in "
                         f"{out}", 1)
