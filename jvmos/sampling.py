"""Sampling with async-profiler: where the boundary crossings come from (Java call sites), and
their CPU time from samples instead of probes (--mode sample, or --sample with --mode count).

Launch mode loads the agent through JAVA_TOOL_OPTIONS (so child JVMs get it too), attach mode
through the JDK attach API (`jcmd PID JVMTI.agent_load`); both write collapsed stacks with
kernel frames, which jvmos.analyzers.stacks attributes to categories.

--wall adds async-profiler's wall-clock sampling (every WALL_NS, in the same session): the
profile is then written as JFR (profile-PID.jfr), and converted after the run into the CPU
samples (profile-PID.collapsed, as without --wall) and the wall samples of threads that were
not running (wait-PID.collapsed, thread state "sleeping": blocked in a syscall, parked,
waiting); jvmos.analyzers.stacks.attribute_waits names the boundary and the Java call site
of each wait. async-profiler's wall mode samples a bounded number of threads per tick (16 by
default), so wall samples are shares of the sampled waiting, not a time.
"""
import os
import subprocess
from pathlib import Path
from typing import Dict, List, Optional

from jvmos import ROOT, JvmosError
from jvmos.jdk import Jvm, discover_jdks
from jvmos.analyzers import stacks

AP_DIR = ROOT / "build" / "async-profiler"
LIB = AP_DIR / "libasyncProfiler.so"
CONVERTER = AP_DIR / "jfr-converter.jar"
INTERVAL_NS = 1_000_000     # 1 ms of CPU time per sample
WALL_NS = 10_000_000        # --wall: a wall-clock sample of the threads every 10 ms


def lib() -> Path:
    if not LIB.exists():
        raise JvmosError(f"async-profiler is not installed ({LIB}): run 'make build'")
    return LIB


def jattach_load(jattach: str, pid: int, opts: str, timeout: float, what: str) -> None:
    """async-profiler's command `opts` in pid through jattach (loaded first if it is not yet);
    JvmosError "WHAT in pid PID: ..." when jattach or the JVM refused or did not answer."""
    try:
        r = subprocess.run([jattach, str(pid), "load", str(lib()), "true", opts],
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise JvmosError(f"jattach to pid {pid} did not answer in {timeout:g} s")
    out = (r.stdout + r.stderr).strip()
    if r.returncode != 0 or "return code: 0" not in out:
        raise JvmosError(f"{what} in pid {pid}: " + (out.splitlines() or ["no output"])[-1])


def agent_args(run_dir: Path, pid_pattern: bool = True, wall: bool = False) -> str:
    # absolute: a launched command that changes directory still writes into the run directory
    if wall:
        name = "profile-%p.jfr" if pid_pattern else "profile.jfr"
        return (f"start,event=cpu,interval={INTERVAL_NS},wall={WALL_NS},jfr,"
                f"file={run_dir.resolve() / name}")
    name = "profile-%p.collapsed" if pid_pattern else "profile.collapsed"
    return (f"start,event=cpu,interval={INTERVAL_NS},ann,collapsed,"
            f"file={run_dir.resolve() / name}")


def launch_env(run_dir: Path, base: Optional[Dict[str, str]] = None,
               wall: bool = False) -> Dict[str, str]:
    env = dict(base if base is not None else os.environ)
    opt = f"-agentpath:{lib()}={agent_args(run_dir, wall=wall)}"
    env["JAVA_TOOL_OPTIONS"] = (env.get("JAVA_TOOL_OPTIONS", "") + " " + opt).strip()
    return env


def _jcmd(jvm: Jvm, pid: int, args: str) -> str:
    jcmd = jvm.home / "bin" / "jcmd"
    if not jcmd.exists():
        raise JvmosError(f"{jcmd} not found: sampling an attached JVM needs a JDK (not a JRE)")
    # the diagnostic-command parser splits unquoted text at '=': quote the agent's options
    r = subprocess.run([str(jcmd), str(pid), "JVMTI.agent_load", str(lib()), f'"{args}"'],
                       capture_output=True, text=True, timeout=120)
    out = (r.stdout + r.stderr).strip()
    if "return code: 0" not in out and r.returncode == 0 and "Exception" not in out:
        raise JvmosError(f"async-profiler refused '{args}' in pid {pid} ({out.splitlines()[-1]}); "
                         "its message is on the JVM's stderr")
    if r.returncode != 0 or "Exception" in out:
        lines = [l.strip() for l in out.splitlines() if l.strip()]
        last = next((l for l in lines if "Exception" in l), lines[-1] if lines else "no output")
        raise JvmosError(f"cannot load async-profiler into pid {pid} (is attach disabled with "
                         f"-XX:+DisableAttachMechanism?): {last.strip()}; "
                         "the probe modes (--mode time or count) still work")
    return out


def attach_start(jvm: Jvm, pid: int, run_dir: Optional[Path] = None, wall: bool = False) -> None:
    if wall:    # JFR is written while it records: its file is named at the start
        _jcmd(jvm, pid, f"start,event=cpu,interval={INTERVAL_NS},wall={WALL_NS},jfr,"
                        f"file={run_dir.resolve() / f'profile-{pid}.jfr'}")
    else:
        _jcmd(jvm, pid, f"start,event=cpu,interval={INTERVAL_NS}")


def attach_stop(jvm: Jvm, pid: int, run_dir: Path, wall: bool = False) -> None:
    if wall:
        _jcmd(jvm, pid, "stop")
    else:
        _jcmd(jvm, pid, f"stop,ann,collapsed,file={run_dir / f'profile-{pid}.collapsed'}")


def _converter_java() -> Optional[str]:
    return next((str(j.home / "bin" / "java") for j in discover_jdks()), None)


def convert_jfr(run_dir: Path, log=print) -> List[str]:
    """Each profile-PID.jfr (--wall) into profile-PID.collapsed (CPU samples) and
    wait-PID.collapsed (wall samples in thread state sleeping). Returns what failed."""
    failed = []
    java = _converter_java()
    for jfr in sorted(run_dir.glob("profile-*.jfr")):
        pid = jfr.stem.split("-", 1)[1]
        for args, name in ((["--cpu"], f"profile-{pid}.collapsed"),
                           (["--wall", "--state", "sleeping"], f"wait-{pid}.collapsed")):
            target = run_dir / name
            if not CONVERTER.exists() or not java:
                failed.append(f"{jfr.name}: no converter ({CONVERTER}) or no java to run it")
                break
            r = subprocess.run([java, "-jar", str(CONVERTER), *args, "-o", "collapsed",
                                str(jfr), str(target)], capture_output=True, text=True,
                               timeout=300)
            if r.returncode != 0 or not target.exists():
                msg = (r.stderr.strip().splitlines() or ["no output"])[-1]
                failed.append(f"{jfr.name} {' '.join(args)}: {msg}")
    for f in failed:
        log(f"warning: {f}")
    return failed


def collect(run_dir: Path, log=print) -> Optional[dict]:
    """Attribute every profile-<pid>.collapsed of the run; write a flame graph per profile."""
    failed = convert_jfr(run_dir, log)
    files = sorted(run_dir.glob("profile-*.collapsed"))
    if not files:
        return None
    by_pid, all_stacks, graphs = {}, [], []
    for f in files:
        pid = f.stem.split("-", 1)[1]
        st = stacks.parse_collapsed(f.read_text(errors="replace").splitlines())
        all_stacks.extend(st)
        by_pid[pid] = stacks.attribute(st, INTERVAL_NS)
        html = run_dir / f"flamegraph-{pid}.html"
        if flamegraph(f, html, f"jvmos: pid {pid}"):
            graphs.append(html.name)
        else:
            log(f"warning: no flame graph for {f.name} (converter unavailable)")
    total = stacks.attribute(all_stacks, INTERVAL_NS)
    total["by_pid"] = by_pid
    total["flamegraphs"] = graphs
    total["profiles"] = [f.name for f in files]
    waits = sorted(run_dir.glob("wait-*.collapsed"))
    if waits or failed:
        total["waits"] = _waits(waits, failed)
    return total


def _waits(files: List[Path], failed: List[str]) -> dict:
    """The wall samples of waiting threads, by boundary and Java call site, per process."""
    by_pid, every = {}, []
    for f in files:
        st = stacks.parse_collapsed(f.read_text(errors="replace").splitlines())
        every.extend(st)
        by_pid[f.stem.split("-", 1)[1]] = stacks.attribute_waits(st, WALL_NS)
    out = stacks.attribute_waits(every, WALL_NS)
    out["by_pid"] = by_pid
    out["profiles"] = [f.name for f in files]
    out["conversion_failed"] = failed
    return out


def flamegraph(collapsed: Path, html: Path, title: str) -> bool:
    if not CONVERTER.exists():
        return False
    java = _converter_java()
    if not java:
        return False
    r = subprocess.run([java, "-jar", str(CONVERTER), "--title", title, str(collapsed), str(html)],
                       capture_output=True, text=True, timeout=300)
    return r.returncode == 0 and html.exists() and html.stat().st_size > 0
