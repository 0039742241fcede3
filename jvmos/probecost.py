"""The probe effect: what jvmos's own probes cost, measured on this machine.

`jvmos calibrate --probes` runs workloads/c/probecal bare and under bpftrace in one invocation,
several trials, and derives per-hit costs:

Times are the probecal process's CPU time (COST below), per iteration or per hit.

  tracepoint, uprobe, uprobe_pair   a minimal probe (one count()), for reference
  jni_copy_time_hit                 what one JNI copy costs the target under --mode time: the
                                    real io.bt entry+return blocks attached to a function with
                                    the signature of jni_GetByteArrayRegion
  jni_copy_count_hit                the same under --mode count (entry block only)
  jni_copy_time_window              the part of jni_copy_time_hit that falls between the two
                                    clock reads, i.e. what a measured JNI copy time over-states
  io_syscall_hit, io_syscall_window the same for an I/O syscall and io.bt's tracepoint pair

and, for the other layers (each with the real blocks of its .bt file, loaded with common.bt):

  sched_switch_{links,threads,mem}_hit  what one switch out of a traced thread costs with that
                                    layer's sched_switch blocks: two threads pinned to one CPU
                                    yield to each other; the bare time is scaled to the
                                    switches of the probed run (getrusage counts both)
  futex_threads_hit                 threads.bt's futex pair, on FUTEX_WAKE with no waiter
  span_syscall_threads_hit          threads.bt's pair on its span syscalls, outside a span
                                    (madvise)
  vm_syscall_mem_hit                mem.bt's pair on a memory syscall (madvise)
  link_syscall_hit                  links.bt's pair (close(-1))
  page_fault_mem_hit                mem.bt's page_fault_user block, on first touches of pages
  malloc_mem_{time,count}_hit       mem.bt's allocator blocks, attached to probecal's function
  thread_common_hit                 common.bt's task_newtask and sched_process_exit blocks, on
                                    pthread_create + join: per hit of either

Each of these divides (probed - bare) by the hits that the script's own maps counted (the
same maps a recording uses, analyzers/overhead.py), not by the iterations asked for.

The summary subtracts hits x window from measured times and reports hits x hit as the
slowdown jvmos imposed (analyzers/overhead.py).
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
from jvmos.analyzers.overhead import hits_by_pid
from jvmos.analyzers.stats import mean_ci

MINIMAL = {
    "tracepoint": ("getpid", "tracepoint:syscalls:sys_enter_getpid /pid == cpid/ { @n = count(); }"),
    "uprobe": ("call", "uprobe:{bin}:jvmos_probe_target /pid == cpid/ { @n = count(); }"),
    "uprobe_pair": ("call", "uprobe:{bin}:jvmos_probe_target /pid == cpid/ { @t[tid] = nsecs; }\n"
                            "uretprobe:{bin}:jvmos_probe_target /pid == cpid/ "
                            "{ @s = sum(nsecs - @t[tid]); delete(@t[tid]); }"),
}


def _result(stdout: str) -> dict:
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if line.startswith('{"mode"'):
            return json.loads(line)
    raise JvmosError("probecal printed no result")


# What a run costs: the process's CPU time, not the loop's wall time. A probe runs in the
# context of the task it hits, so its cost is in that task's CPU time; on a shared machine the
# wall time also holds the waits for a CPU that other processes cause (several microseconds per
# iteration of the thread and yield loops here, far more than a probe costs).
COST = "cpu_ns"


def _elapsed(stdout: str) -> int:
    return int(_result(stdout)[COST])


def _bare(prog: Path, mode: str, n: int, full: bool = False):
    r = subprocess.run([str(prog), "--mode", mode, "--iterations", str(n)],
                       capture_output=True, text=True, timeout=300)
    if r.returncode:
        raise JvmosError(f"probecal --mode {mode} failed: {r.stderr.strip()}")
    return _result(r.stdout) if full else _elapsed(r.stdout)


def _traced(prog: Path, mode: str, n: int, script: str):
    res, raw = _traced_full(prog, mode, n, script)
    return int(res["elapsed_ns"]), raw


def _traced_full(prog: Path, mode: str, n: int, script: str):
    """probecal's result line and the maps, run under bpftrace with this script."""
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
    return _result(r.stdout), rawparse.parse_lines(r.stdout.splitlines())


def io_script(prog: Path, mode: str) -> str:
    """io.bt as jvmos runs it, its GetByteArrayRegion blocks attached to probecal's target."""
    addr = symbols(prog).get("jvmos_probe_target")
    if addr is None:
        raise JvmosError(f"{prog} has no symbol jvmos_probe_target: rebuild it (make build)")
    fake = lambda p: {"jni_GetByteArrayRegion": addr} if Path(p) == prog else {}
    s = render(["io"], {"LIBJVM": [prog]}, fake, mode=mode)
    return s.text.replace("@trk[$1] = 1;", "@trk[cpid] = 1;")


def layer_script(prog: Path, layers: List[str], mode: str = "time") -> str:
    """common.bt and these layers as jvmos renders them, tracing probecal (its child). The
    allocator blocks of mem.bt are attached to probecal's function (as malloc); the other
    uprobes of the layers find no library and are left out: only their tracepoints run."""
    addr = symbols(prog).get("jvmos_probe_target")
    if addr is None:
        raise JvmosError(f"{prog} has no symbol jvmos_probe_target: rebuild it (make build)")
    fake = lambda p: {"malloc": addr} if Path(p) == prog else {}
    s = render(layers, {"LIBC": [prog]}, fake, mode=mode)
    return s.text.replace("@trk[$1] = 1;", "@trk[cpid] = 1;")


# cost key -> (probecal mode, iterations, layers, script mode, kinds whose hits divide)
LAYER_COSTS = {
    "sched_switch_links_hit": ("yield", 100_000, ["links"], "time", ["links:sched_switch"]),
    "sched_switch_threads_hit": ("yield", 100_000, ["threads"], "time", ["threads:sched_switch"]),
    "sched_switch_mem_hit": ("yield", 100_000, ["mem"], "time", ["mem:sched_switch"]),
    "futex_threads_hit": ("futex", 200_000, ["threads"], "time", ["threads:futex_pair"]),
    "span_syscall_threads_hit": ("madvise", 200_000, ["threads"], "time",
                                 ["threads:span_syscall"]),
    "vm_syscall_mem_hit": ("madvise", 200_000, ["mem"], "time", ["mem:vm_syscall_pair"]),
    "link_syscall_hit": ("close", 200_000, ["links"], "time", ["links:syscall_pair"]),
    "page_fault_mem_hit": ("fault", 200_000, ["mem"], "time", ["mem:page_fault"]),
    "malloc_mem_time_hit": ("call", 200_000, ["mem"], "time", ["mem:malloc_pair"]),
    "malloc_mem_count_hit": ("call", 200_000, ["mem"], "count", ["mem:malloc_pair"]),
    "thread_common_hit": ("thread", 5_000, [], "time",
                          ["common:task_newtask", "common:sched_process_exit"]),
}


def per_hit(bare: dict, probed: dict, hits: int, scale_by_switches: bool = False) -> float:
    """(probed - bare) / hits; in yield mode the bare time is first scaled to the number of
    switches the probed run made (each switch is the loop's unit of work there)."""
    if hits <= 0:
        raise JvmosError(f"probe calibration ({probed.get('mode')}): the probes counted no hit")
    base = bare[COST]
    if scale_by_switches:
        if not bare.get("switches") or not probed.get("switches"):
            raise JvmosError("probe calibration (yield): probecal counted no context switch")
        base = base * probed["switches"] / bare["switches"]
    return (probed[COST] - base) / hits


def calibrate_layers(prog: Path, trials: int, add, log=print) -> Dict[str, List[float]]:
    """The per-hit cost of each LAYER_COSTS key, one sample per trial; returns the hits the
    maps counted per loop iteration, per key and trial (a check that each probe attached)."""
    per_iteration: Dict[str, List[float]] = {}
    scripts = {k: layer_script(prog, v[2], v[3]) for k, v in LAYER_COSTS.items()}
    for t in range(trials):
        log(f"layer probe-cost trial {t + 1}/{trials}")
        bare = {}
        for key, (mode, n, _layers, _m, kinds) in LAYER_COSTS.items():
            if mode not in bare:
                bare[mode] = _bare(prog, mode, n, full=True)
                if mode != "call":   # bare_call is added by calibrate()
                    add(f"bare_{mode}", bare[mode][COST] / n)
            b = bare[mode]
            probed, raw = _traced_full(prog, mode, n, scripts[key])
            per = hits_by_pid(raw)
            hits = sum(k.get(kind, 0) for k in per.values() for kind in kinds)
            if mode == "yield":
                # every switch of the two yielding threads is a hit: the maps must agree
                if hits < 0.9 * probed["switches"]:
                    raise JvmosError(f"probe calibration ({key}): {hits} hits counted for "
                                     f"{probed['switches']} switches: probes did not attach")
            elif hits < 0.9 * n * (2 if key == "thread_common_hit" else 1):
                raise JvmosError(f"probe calibration ({key}): {hits} hits counted for {n} "
                                 f"iterations: probes did not attach")
            add(key, per_hit(b, probed, hits, scale_by_switches=(mode == "yield")))
            per_iteration.setdefault(key, []).append(round(hits / n, 4))
    return per_iteration


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
    per_iteration = calibrate_layers(prog, trials, add, log=log)
    out = {k: _stat(v) for k, v in samples.items()}
    out["hits_per_iteration"] = per_iteration
    out["iterations"] = n
    out["trials"] = trials
    out["method"] = ("probecal run bare and under bpftrace in the same invocation, its process "
                     "CPU time compared; per-hit cost "
                     "= (probed - bare) / iterations (the layers' costs: / the hits their maps "
                     "counted); window = measured time per call - bare time per call")
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
