"""What every experiment does: run workloads bare and under `record`, keep each run, write tables."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Optional

from .. import JvmosError
from .. import record as rec
from .. import cputime
from ..jdk import Jvm, discover_jdks


def log(msg: str):
    print(msg, file=sys.stderr, flush=True)


def last_json(text: str) -> dict:
    """The last JSON object a workload printed (every workload ends with one)."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    return {}


def run_bare(cmd: List[str], timeout: float = 900) -> dict:
    """Run a workload without any probe; returns its JSON line plus the process wall time and
    its CPU time (wait4 rusage: every thread, exited ones included, and the children it
    reaped; microsecond resolution, in ns)."""
    r = cputime.run_measured(cmd, timeout=timeout)
    if r["returncode"] != 0:
        tail = (r["stderr"].strip().splitlines() or ["no output"])[-1]
        raise JvmosError(f"workload failed (exit {r['returncode']}): {' '.join(cmd)}: {tail}")
    res = last_json(r["stdout"])
    res["process_wall_ns"] = r["wall_ns"]
    res["process_cpu_ns"] = r["cpu_ns"]
    return res


def run_recorded(name: str, cmd: List[str], out: Path, layers=("io",),
                 **kw) -> rec.Result:
    """Record a workload into out/runs/<name>; the workload's stdout is kept in the run dir."""
    run_dir = out / "runs" / name
    run_dir.mkdir(parents=True, exist_ok=True)
    opts = rec.Options(cmd=cmd, layers=list(layers), out=run_dir,
                       stdout=run_dir / "stdout.txt", stderr=run_dir / "stderr.txt",
                       log=lambda m: log(f"  [{name}] {m}"), **kw)
    res = rec.record(opts)
    if res.status != "complete":
        tail = (Path(run_dir / "stderr.txt").read_text(errors="replace").strip().splitlines()
                or ["no output"])[-1]
        raise JvmosError(f"recording of {name} ended {res.status} (exit {res.exit_code}): {tail}")
    return res


def workload_json(res: rec.Result) -> dict:
    return last_json((res.run_dir / "stdout.txt").read_text(errors="replace"))


def out_dir(arg: Optional[str], label: str) -> Path:
    return rec.prepare_out(Path(arg) if arg else rec.default_out(label))


def jdk_label(j: Jvm) -> str:
    v = j.version.split(".")[0] if j.version != "unknown" else "x"
    vendor = "temurin" if "temurin" in str(j.home).lower() or "Eclipse" in j.vendor else "openjdk"
    return f"{vendor}-{v}"


def select_jdks(homes: Optional[List[str]]) -> List[Jvm]:
    jvms = discover_jdks()
    if homes:
        want = {os.path.realpath(h) for h in homes}
        jvms = [j for j in jvms if os.path.realpath(j.home) in want]
        if not jvms:
            raise JvmosError(f"no JDK found at {', '.join(homes)}")
    if not jvms:
        raise JvmosError("no JDK found (install one, or set JAVA_HOME)")
    return jvms


def write_outputs(out: Path, stem: str, tables, results: dict, notes: List[str] = ()):
    md = [t.markdown() for t in tables] + ([("\n".join(f"- {n}" for n in notes) + "\n")] if notes else [])
    (out / f"{stem}.md").write_text("\n".join(md))
    for i, t in enumerate(tables):
        suffix = "" if i == 0 else f"-{i + 1}"
        (out / f"{stem}{suffix}.csv").write_text(t.csv())
    tmp = out / f".{stem}.json.tmp"
    tmp.write_text(json.dumps(results, indent=2, default=str) + "\n")
    os.replace(tmp, out / f"{stem}.json")
