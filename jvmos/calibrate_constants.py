"""The heuristic's platform constants (C_nt, C_link, C_file, C_I/Ochunk), measured on this
machine: microbenchmarks of workloads/java/io run under `jvmos record` with the probes of the
layer each constant belongs to. The arithmetic that turns a recording into one trial's
constant is jvmos.heuristic.constants; the copy costs (jvmos.calibrate) and the compiled
engine's probe costs (jvmos.enginecost) that the recordings are corrected with come first.

Module order (no cycle): record uses calibrate (copy and probe costs, platform file); this
module uses both; neither imports it.
"""
import tempfile
import time
from pathlib import Path
from typing import Callable, List, Optional

from jvmos import JvmosError
from jvmos import calibrate as cal
from jvmos import record as rec
from jvmos.heuristic import constants
from jvmos.jdk import Jvm
from jvmos.tools import IO_JAR, jar


def measure(jvm, trials: int = 5, chunk: int = constants.DEFAULT_CHUNK, log: Callable = print,
            platform_file: Optional[str] = None) -> dict:
    """Runs the microbenchmarks under `record`; needs the probe costs calibrated first."""
    java = str(jvm.home / "bin" / "java")
    cp = str(jar(IO_JAR))
    benches = {
        "C_nt": (["threads"], [java, "-cp", cp, "org.jvmos.workloads.NoOpThreads",
                               "--threads", "100", "--repeat", "5", "--warmup", "1"]),
        "C_link": (["links"], [java, "-cp", cp, "org.jvmos.workloads.LinkBench",
                               "--mode", "accept", "--links", "2000", "--batch", "100"]),
        "C_file": (["links"], [java, "-cp", cp, "org.jvmos.workloads.LinkBench",
                               "--mode", "open", "--links", "5000"]),
        "C_io_chunk": (["io"], [java, "-cp", cp, "org.jvmos.workloads.SocketStream",
                                "--writes", "20000", "--size", str(chunk)]),
    }
    samples = {k: [] for k in benches}
    bounds = []     # C_io_chunk at the ends of the copy costs' intervals, per trial
    kernel = []     # C_nt's kernel part, per trial (from the same recordings)
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="jvmos-constants-") as tmp:
        for t in range(trials):
            for name, (layers, cmd) in benches.items():
                log(f"platform constant {name}: trial {t + 1}/{trials}")
                run = Path(tmp) / f"{name}-{t}"
                res = rec.record(rec.Options(
                    # C_link and C_file price the syscall (the OS's part): timed on its
                    # tracepoints, as the kernel serves it, not on libc's functions (this
                    # microbenchmark runs alone; the host-wide tracepoint tax does not matter)
                    scope="host" if layers == ["links"] else "process",
                    cmd=cmd, layers=layers, out=run, stdout=run.parent / f"{name}-{t}.out",
                    stderr=run.parent / f"{name}-{t}.err", jdks=[str(jvm.home)],
                    platform=platform_file, calibrate_if_missing=False, log=lambda m: None))
                if res.status != "complete":
                    raise JvmosError(f"calibrating {name}: the recording ended {res.status}")
                samples[name].append(constants.value_of(name, res.summary))
                if name == "C_nt":
                    kernel.append(constants.value_of("C_nt_kernel", res.summary))
                if name == "C_io_chunk":
                    bounds.append(constants.io_chunk_bounds(res.summary, str(jvm.home)))
    out = {
        "C_nt": constants.stat(samples["C_nt"], "libc + kernel time per Java thread created and "
                                       "ended (NoOpThreads, 100 threads x 5 rounds)"),
        "C_nt_kernel": constants.stat(kernel, "C_nt's kernel part: kernel time per Java "
                                              "thread created and ended (the same recordings)"),
        "C_link": constants.stat(samples["C_link"], "on-CPU time of a blocking accept + the close of "
                                           "the accepted socket (LinkBench, 2000 links)"),
        "C_file": constants.stat(samples["C_file"], "openat + close per file opened "
                                           "(LinkBench, 5000 opens)"),
        "C_io_chunk": constants.stat(samples["C_io_chunk"], f"NIO copy + kernel copyin per {chunk}-byte "
                                                   "socket write (SocketStream, 20000 writes)"),
        "chunk_bytes": chunk, "trials": trials, "jdk": str(jvm.home), "jdk_version": jvm.version,
        "calibration_seconds": round(time.time() - t0, 1),
    }
    # C_io_chunk is bytes x calibrated per-byte costs: its trials barely vary, and its
    # uncertainty is that of the copy costs. The interval covers both.
    if bounds:
        io = out["C_io_chunk"]
        lo = sum(b[0] for b in bounds) / len(bounds)
        hi = sum(b[1] for b in bounds) / len(bounds)
        io["ci95_us"] = [min(io["ci95_us"][0], lo), max(io["ci95_us"][1], hi)]
        io["what"] += ("; interval: the trials' and the calibrated copy costs' 95% intervals")
    for k, v in out.items():
        if isinstance(v, dict) and not v["mean_us"] > 0:
            raise JvmosError(f"platform constant {k} came out {v['mean_us']}: not usable")
    return out


def calibrate_constants(data: dict, jvm: Jvm, path: Path, trials: int = 5,
                        chunk: Optional[int] = None, log=print) -> dict:
    """The heuristic's platform constants (C_nt, C_link, C_file, C_io_chunk), measured with
    the probes; needs the copy costs in `data`, which is saved to `path` first because the
    recordings read it from there. The recordings' times are corrected with the compiled
    engine's probe costs: measured first where `data` lacks some."""
    from jvmos import engine as engine_mod, enginecost
    cal.save(path, data)        # what was measured so far is kept if what follows fails
    if enginecost.incomplete(data.get("engine_probes")):
        data["engine_probes"] = enginecost.merge(data.get("engine_probes"),
                                                 enginecost.calibrate(trials, log=log))
        cal.save(path, data)
    out = measure(jvm, trials=trials, chunk=chunk or constants.DEFAULT_CHUNK, log=log,
                  platform_file=str(path))
    # which engine recorded them, and which of its probe costs were borrowed
    ep = data.get("engine_probes") or {}
    out["engine"] = "bpf"
    out["engine_version"] = engine_mod.version()
    out["engine_costs_borrowed"] = sorted(k for k, v in ep.items()
                                          if isinstance(v, dict) and v.get("borrowed"))
    return out


def calibrate_all(jvms: List[Jvm], path: Path, trials: int = 5, chunk: Optional[int] = None,
                  log=print) -> dict:
    """Everything `jvmos calibrate` measures: the copy costs (jvmos.calibrate), the compiled
    engine's probe costs, the JNI copy model of every JDK (with the engine), then the
    platform constants."""
    from jvmos import enginecost
    data = cal.calibrate_copy(jvms, trials, log=log)
    data["engine_probes"] = enginecost.calibrate(trials=trials, log=log)
    data["copy"]["jni_region"] = cal.calibrate_jni_models(jvms, data["engine_probes"],
                                                          trials=trials, log=log)
    if jvms:
        data["constants"] = calibrate_constants(data, jvms[0], path, trials, chunk, log=log)
    return data
