"""Sampling with async-profiler: where the boundary crossings come from (Java call sites), and
their CPU time from samples instead of probes (--mode sample, or --sample with --mode count).

Launch mode loads the agent through JAVA_TOOL_OPTIONS (so child JVMs get it too), attach mode
through the JDK attach API (`jcmd PID JVMTI.agent_load`); both write collapsed stacks with
kernel frames, which jvmos.analyzers.stacks attributes to categories.
"""
import os
import subprocess
from pathlib import Path
from typing import Dict, Optional

from jvmos import ROOT, JvmosError
from jvmos.jdk import Jvm, discover_jdks
from jvmos.analyzers import stacks

AP_DIR = ROOT / "build" / "async-profiler"
LIB = AP_DIR / "libasyncProfiler.so"
CONVERTER = AP_DIR / "jfr-converter.jar"
INTERVAL_NS = 1_000_000     # 1 ms of CPU time per sample


def lib() -> Path:
    if not LIB.exists():
        raise JvmosError(f"async-profiler is not installed ({LIB}): run 'make build'")
    return LIB


def agent_args(run_dir: Path, pid_pattern: bool = True) -> str:
    name = "profile-%p.collapsed" if pid_pattern else "profile.collapsed"
    # absolute: a launched command that changes directory still writes into the run directory
    return (f"start,event=cpu,interval={INTERVAL_NS},ann,collapsed,"
            f"file={run_dir.resolve() / name}")


def launch_env(run_dir: Path, base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = dict(base if base is not None else os.environ)
    opt = f"-agentpath:{lib()}={agent_args(run_dir)}"
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


def attach_start(jvm: Jvm, pid: int) -> None:
    _jcmd(jvm, pid, f"start,event=cpu,interval={INTERVAL_NS}")


def attach_stop(jvm: Jvm, pid: int, run_dir: Path) -> None:
    _jcmd(jvm, pid, f"stop,ann,collapsed,file={run_dir / f'profile-{pid}.collapsed'}")


def collect(run_dir: Path, log=print) -> Optional[dict]:
    """Attribute every profile-<pid>.collapsed of the run; write a flame graph per profile."""
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
    return total


def flamegraph(collapsed: Path, html: Path, title: str) -> bool:
    if not CONVERTER.exists():
        return False
    java = next((str(j.home / "bin" / "java") for j in discover_jdks()), None)
    if not java:
        return False
    r = subprocess.run([java, "-jar", str(CONVERTER), "--title", title, str(collapsed), str(html)],
                       capture_output=True, text=True, timeout=300)
    return r.returncode == 0 and html.exists() and html.stat().st_size > 0
