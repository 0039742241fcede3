"""The probe effect: what jvmos's own probes cost, measured on this machine.

`jvmos calibrate --probes` runs workloads/c/probecal bare and under bpftrace in one invocation,
several trials, and derives per-hit costs:

  tracepoint, uprobe, uprobe_pair   a minimal probe (one count()), for reference
  jni_copy_time_hit                 what one JNI copy costs the target under --mode time: the
                                    real io.bt entry+return blocks attached to a function with
                                    the signature of jni_GetByteArrayRegion
  jni_copy_count_hit                the same under --mode count (entry block only)
  jni_copy_time_window              the part of jni_copy_time_hit that falls between the two
                                    clock reads, i.e. what a measured JNI copy time over-states
  io_syscall_hit, io_syscall_window the same for an I/O syscall and io.bt's tracepoint pair

The summary subtracts hits x window from measured times and reports hits x hit as the
slowdown jvmos imposed.
"""
import json
import subprocess
import tempfile
from pathlib import Path
from typing import Dict, List, Optional

from . import JvmosError
from .jdk import symbols
from .probegen import render
from .tools import bpftrace, c_program
from jvmos.analyzers import rawparse
from jvmos.analyzers.stats import mean_ci

MINIMAL = {
    "tracepoint": ("getpid", "tracepoint:syscalls:sys_enter_getpid /pid == cpid/ { @n = count(); }"),
    "uprobe": ("call", "uprobe:{bin}:jvmos_probe_target /pid == cpid/ { @n = count(); }"),
    "uprobe_pair": ("call", "uprobe:{bin}:jvmos_probe_target /pid == cpid/ { @t[tid] = nsecs; }\n"
                            "uretprobe:{bin}:jvmos_probe_target /pid == cpid/ "
                            "{ @s = sum(nsecs - @t[tid]); delete(@t[tid]); }"),
}


def _elapsed(stdout: str) -> int:
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if line.startswith('{"mode"'):
            return int(json.loads(line)["elapsed_ns"])
    raise JvmosError("probecal printed no result")


def _bare(prog: Path, mode: str, n: int) -> int:
    r = subprocess.run([str(prog), "--mode", mode, "--iterations", str(n)],
                       capture_output=True, text=True, timeout=300)
    if r.returncode:
        raise JvmosError(f"probecal --mode {mode} failed: {r.stderr.strip()}")
    return _elapsed(r.stdout)


def _traced(prog: Path, mode: str, n: int, script: str):
    with tempfile.NamedTemporaryFile("w", suffix=".bt", delete=False) as f:
        f.write(script)
        path = f.name
    try:
        r = subprocess.run([bpftrace(), "-f", "json", path, "-c",
                            f"{prog} --mode {mode} --iterations {n}"],
                           capture_output=True, text=True, timeout=900)
    finally:
        Path(path).unlink(missing_ok=True)
    errs = [l for l in r.stderr.splitlines() if "ERROR" in l and "RLIMIT_MEMLOCK" not in l]
    if r.returncode or errs:
        raise JvmosError(f"bpftrace failed while calibrating probes: "
                         f"{(errs or [r.stderr.strip()])[0]}")
    return _elapsed(r.stdout), rawparse.parse_lines(r.stdout.splitlines())


def io_script(prog: Path, mode: str) -> str:
    """io.bt as jvmos runs it, its GetByteArrayRegion blocks attached to probecal's target."""
    addr = symbols(prog).get("jvmos_probe_target")
    if addr is None:
        raise JvmosError(f"{prog} has no symbol jvmos_probe_target: rebuild it (make build)")
    fake = lambda p: {"jni_GetByteArrayRegion": addr} if Path(p) == prog else {}
    s = render(["io"], {"LIBJVM": [prog]}, fake, mode=mode)
    return s.text.replace("@trk[$1] = 1;", "@trk[cpid] = 1;")


def _stat(xs: List[float]) -> dict:
    m, lo, hi = mean_ci(xs)
    return {"mean_ns": m, "ci95_ns": [lo, hi], "samples_ns": [round(x, 2) for x in xs]}


def calibrate(trials: int = 5, n: int = 200_000, log=print) -> dict:
    prog = c_program("probecal")
    samples: Dict[str, List[float]] = {}
    add = lambda k, v: samples.setdefault(k, []).append(v)
    scripts = {"time": io_script(prog, "time"), "count": io_script(prog, "count")}
    for t in range(trials):
        log(f"probe-cost trial {t + 1}/{trials}")
        bare = {m: _bare(prog, m, n) for m in ("call", "write", "getpid")}
        for name, (mode, text) in MINIMAL.items():
            el, _ = _traced(prog, mode, n, text.replace("{bin}", str(prog)))
            add(name, (el - bare[mode]) / n)
        # the real bookkeeping: time mode on calls and on writes, count mode on calls
        el, raw = _traced(prog, "call", n, scripts["time"])
        add("jni_copy_time_hit", (el - bare["call"]) / n)
        timed = sum(v for k, v in raw.keyed("@time").items() if k[1] == "jni_copy")
        calls = sum(v for k, v in raw.keyed("@calls").items() if k[1] == "jni_copy")
        if calls < n:
            raise JvmosError(f"probe calibration saw {calls} of {n} calls: probes did not attach")
        add("jni_copy_time_window", timed / calls - bare["call"] / n)
        el, _ = _traced(prog, "call", n, scripts["count"])
        add("jni_copy_count_hit", (el - bare["call"]) / n)
        el, raw = _traced(prog, "write", n, scripts["time"])
        add("io_syscall_hit", (el - bare["write"]) / n)
        timed = sum(v for k, v in raw.keyed("@time").items() if k[1] == "io_syscall")
        calls = sum(v for k, v in raw.keyed("@calls").items() if k[1] == "io_syscall")
        # the window of a syscall is measured against the whole bare call (user to user)
        add("io_syscall_window", timed / calls - bare["write"] / n)
        for m, v in bare.items():
            add(f"bare_{m}", v / n)
    out = {k: _stat(v) for k, v in samples.items()}
    out["iterations"] = n
    out["trials"] = trials
    out["method"] = ("probecal run bare and under bpftrace in the same invocation; per-hit cost "
                     "= (probed - bare) / iterations; window = measured time per call - bare "
                     "time per call")
    return out


def hit_costs(probes: Optional[dict], mode: str) -> Dict[str, Optional[float]]:
    """Per-hit costs by what is hit, for the slowdown estimate (None when uncalibrated)."""
    if not probes:
        return {}
    g = lambda k: probes.get(k, {}).get("mean_ns")
    return {"jni_copy": g("jni_copy_time_hit") if mode == "time" else g("jni_copy_count_hit"),
            "io_syscall": g("io_syscall_hit"), "uprobe": g("uprobe")}


def calibrate_jni_model(jvm, window_ns: float, io_jar: Path, sizes=(10, 4096),
                        n: int = 100_000, log=print) -> dict:
    """Cost of a JNI Region copy on this JDK, for --mode count: FileOutputStream writes of
    two sizes traced in time mode; corrected time per GetByteArrayRegion = measured - window;
    a line through the two sizes gives ns_per_call and ns_per_byte."""
    libs = {"LIBJVM": [jvm.libjvm], "LIBNIO": [jvm.libnio] if jvm.libnio else []}
    script = render(["io"], libs, symbols, mode="time")
    text = script.text.replace("@trk[$1] = 1;", "@trk[cpid] = 1;")
    pts = []
    for size in sizes:
        log(f"JNI copy cost of JDK {jvm.version}: {n:,} writes of {size} bytes, traced")
        with tempfile.NamedTemporaryFile("w", suffix=".bt", delete=False) as f:
            f.write(text)
            path = f.name
        cmd = (f"{jvm.home}/bin/java -cp {io_jar} org.jvmos.workloads.BlockingIo "
               f"--iterations {n} --size {size} --target /dev/null")
        try:
            r = subprocess.run([bpftrace(), "-f", "json", path, "-c", cmd],
                               capture_output=True, text=True, timeout=900)
        finally:
            Path(path).unlink(missing_ok=True)
        raw = rawparse.parse_lines(r.stdout.splitlines())
        calls = time = 0
        for (pid, cat, probe), v in raw.keyed("@calls").items():
            if cat == "jni_copy" and script.addresses.get(probe.split(":", 1)[1]) == "jni_GetByteArrayRegion":
                calls += v
        for (pid, cat, probe), v in raw.keyed("@time").items():
            if cat == "jni_copy" and script.addresses.get(probe.split(":", 1)[1]) == "jni_GetByteArrayRegion":
                time += v
        if calls < n:
            raise JvmosError(f"JNI copy calibration on {jvm.home} saw {calls} of {n} copies")
        pts.append((size, max(time / calls - window_ns, 0.0)))
    (s0, t0), (s1, t1) = pts[0], pts[-1]
    b = max((t1 - t0) / (s1 - s0), 0.0)
    return {"ns_per_call": max(t0 - b * s0, 0.0), "ns_per_byte": b, "points": pts,
            "jdk_version": jvm.version,
            "what": "GetByteArrayRegion time per call in --mode time minus the calibrated "
                    "probe window, at two sizes"}
