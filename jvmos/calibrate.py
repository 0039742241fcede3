"""Platform constants of this machine: the per-byte copy costs jvmos uses for what it cannot
probe (kernel copyin/copyout, and the JIT-intrinsified heap->direct copies of NIO), and what a
recording needs measured before it starts (ensure_calibrated: those, the compiled engine's
probe costs, the JNI copy cost models).

Written to a platform file (JSON) that `record` and `report` read and that each run copies
into its summary, so a run can be read later on another machine.
"""
import json
import os
import subprocess
import time
from pathlib import Path
from typing import List, Optional

from jvmos import JvmosError
from jvmos.jdk import Jvm
from jvmos.tools import IO_JAR, c_program, host_info, jar
from jvmos.analyzers.stats import floor_fit, linfit, mean_ci

SCHEMA = "jvmos.platform/1"
KERNEL_SIZES = "64,256,1024,4096,16384,65536"
JAVA_SIZES = "16,64,256,1024,4096,16384"


def platform_path(explicit: Optional[str] = None) -> Path:
    if explicit:
        return Path(explicit)
    if os.environ.get("JVMOS_PLATFORM"):
        return Path(os.environ["JVMOS_PLATFORM"])
    base = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    return Path(base) / "jvmos" / "platform.json"


def load(path: Path) -> Optional[dict]:
    try:
        data = json.loads(Path(path).read_text())
    except (FileNotFoundError, NotADirectoryError):
        return None                 # none there (what can be written there: jvmos.writable)
    except IsADirectoryError:
        raise JvmosError(f"platform file {path} is a directory: give a file's path")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise JvmosError(f"platform file {path} is unreadable ({e}): "
                         f"recalibrate with 'jvmos calibrate --force'")
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        schema = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise JvmosError(f"platform file {path} has schema {schema!r}, "
                         f"expected {SCHEMA}: recalibrate with 'jvmos calibrate --force'")
    return data


def save(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, path)


def _fit_trials(rows, key) -> dict:
    """rows: [(trial, size, ns)]; fit ns = a + b*size per trial, then mean and 95% CI."""
    trials = sorted({r[0] for r in rows})
    slopes, icepts = [], []
    for t in trials:
        pts = [(r[1], r[2]) for r in rows if r[0] == t]
        a, b = linfit([p[0] for p in pts], [p[1] for p in pts])
        slopes.append(b)
        icepts.append(a)
    m, lo, hi = mean_ci(slopes)
    ma, loa, hia = mean_ci(icepts)
    out = {"ns_per_byte": m, "ns_per_byte_ci95": [lo, hi],
           "ns_per_call": ma, "ns_per_call_ci95": [loa, hia],
           "trials": len(trials), "sizes": sorted({r[1] for r in rows}), "what": key}
    return floor_fit(out, "ns_per_call")


def calibrate_kernel(trials: int = 5, millis: int = 60) -> dict:
    prog = c_program("copycal")
    out = subprocess.run([str(prog), "--trials", str(trials), "--millis", str(millis),
                          "--sizes", KERNEL_SIZES], capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise JvmosError(f"copycal failed: {out.stderr.strip().splitlines()[-1:]}")
    recs = [json.loads(l) for l in out.stdout.splitlines() if l.strip()]
    res = {}
    for key, field, what in (("kernel_copyin", "write_ns", "write(2) of N bytes into a pipe"),
                             ("kernel_copyout", "read_ns", "read(2) of N bytes from a pipe"),
                             ("memcpy", "memcpy_ns", "user-space memcpy of N bytes")):
        res[key] = _fit_trials([(r["trial"], r["size"], r[field]) for r in recs], what)
    return res


def calibrate_nio(jvm: Jvm, trials: int = 5, millis: int = 150) -> dict:
    java = jvm.home / "bin" / "java"
    if not java.exists():
        raise JvmosError(f"{java} not found: cannot calibrate the NIO copy of {jvm.home}")
    cmd = [str(java), "-cp", str(jar(IO_JAR)), "org.jvmos.workloads.CopyCalibrate",
           "--sizes", JAVA_SIZES, "--millis-per-size", str(millis)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise JvmosError(f"CopyCalibrate failed on {jvm.home}: "
                         f"{(out.stderr.strip().splitlines() or ['?'])[-1]}")
    rows = []
    for line in out.stdout.splitlines():
        line = line.strip()
        if line.startswith("{") and '"ns_per_copy"' in line:
            r = json.loads(line)
            for t, ns in enumerate(r["ns_per_copy"][:trials] if trials else r["ns_per_copy"]):
                rows.append((t, r["size"], ns))
    if not rows:
        raise JvmosError(f"CopyCalibrate printed no results on {jvm.home}")
    fit = _fit_trials(rows, "ByteBuffer.put(byte[]) into a direct buffer, JIT-compiled")
    fit["jdk_version"] = jvm.version
    return fit


def calibrate_memory(trials: int = 5) -> dict:
    """Cost of one allocator call and of one user page fault (workloads/c/memcal)."""
    prog = c_program("memcal")
    out = subprocess.run([str(prog), "--trials", str(trials)], capture_output=True, text=True,
                         timeout=600)
    if out.returncode != 0:
        raise JvmosError(f"memcal failed: {(out.stderr.strip().splitlines() or ['?'])[-1]}")
    recs = [json.loads(l) for l in out.stdout.splitlines() if l.strip()]
    res = {}
    for key, field, what in (
            ("malloc_call", "malloc_ns", "one libc malloc of 16 B..4 KiB (batches of 256)"),
            ("free_call", "free_ns", "one libc free of such a block (batches of 256)"),
            ("page_fault", "fault_ns", "first touch of a fresh anonymous page")):
        m, lo, hi = mean_ci([r[field] for r in recs])
        res[key] = {"ns_per_call": m, "ns_per_call_ci95": [lo, hi], "trials": len(recs),
                    "what": what}
    return res


def calibrate_copy(jvms: List[Jvm], trials: int = 5, log=print) -> dict:
    t0 = time.time()
    log("calibrating kernel copyin/copyout and memcpy (pipe writes/reads of growing size)...")
    copy = calibrate_kernel(trials)
    log("calibrating the allocator call and page-fault costs...")
    copy.update(calibrate_memory(trials))
    copy["nio_heap_to_direct"] = {}
    for j in jvms:
        log(f"calibrating the heap->direct buffer copy of {j.home} (JDK {j.version})...")
        copy["nio_heap_to_direct"][str(j.home)] = calibrate_nio(j, trials)
    return {"schema": SCHEMA, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "host": host_info(), "calibration_seconds": round(time.time() - t0, 1),
            "copy": copy}


def calibrate_jni(jvm: Jvm, engine_probes: dict, trials: int = 3, log=print) -> dict:
    """This JDK's JNI copy cost model (copy.jni_region[home]), measured with the compiled
    engine and corrected with its calibrated window (engine_probes: the platform file's)."""
    from jvmos.enginecost import JniModelUnresolved, calibrate_jni_model
    try:
        return calibrate_jni_model(jvm, engine_probes, trials=trials, log=log)
    except JniModelUnresolved as e:
        # kept as unresolved (with why): --mode count then says the copies' time is unknown,
        # and the model is measured again only when the window changes
        log(f"note: no JNI copy cost model for JDK {jvm.version}: {e}")
        return e.unresolved


def calibrate_jni_models(jvms: List[Jvm], engine_probes: dict, trials: int = 3,
                         log=print) -> dict:
    """calibrate_jni for each JDK that can have one; a JDK that cannot (a stripped libjvm, a
    window not calibrated) is left out, and said so."""
    from jvmos.enginecost import jni_model_unavailable
    out = {}
    for j in jvms:
        why = jni_model_unavailable(j, engine_probes)
        if why:
            log(f"note: no JNI copy cost model for JDK {j.version} ({j.home}): {why}")
            continue
        out[str(j.home)] = calibrate_jni(j, engine_probes, trials=trials, log=log)
    return out


def jni_model_stale(model: Optional[dict], engine_probes: Optional[dict]) -> Optional[str]:
    """Why a JNI copy cost model no longer fits this platform file's engine calibration (None
    when it does): it subtracts a probe window, and a model made with another window (an older
    engine calibration, or the retired bpftrace scripts') would estimate with a window the
    recordings are not corrected with."""
    if not model:
        return "none"
    win = (engine_probes or {}).get("jni_copy_time_window") or {}
    used = model.get("window") or {}
    if not model.get("engine"):
        return "measured with the retired bpftrace scripts' probe window"
    if used.get("mean_ns") != win.get("mean_ns"):
        return (f"measured with a probe window of {used.get('mean_ns')} ns, the engine's "
                f"calibration now says {win.get('mean_ns')} ns")
    # (copy_minus_window_by_size: that difference's first name, Welch's rule too)
    if model.get("unresolved") and "traced_minus_window_by_size" not in model \
            and "copy_minus_window_by_size" not in model \
            and len(win.get("samples_ns") or []) >= 2:
        # the rule before Welch's interval (a traced median under the window's low end,
        # the traced trials' spread left out) called copies unresolved that are not
        return ("kept unresolved by the rule before Welch's interval, which left the traced "
                "trials' spread out")
    return None


def ensure_calibrated(platform: Optional[dict], platform_file: Path, jvms: List[Jvm],
                      layers: List[str], mode: str, log=print) -> dict:
    """What a recording of these layers in this mode needs and the platform file lacks,
    measured once (once per machine, once per JDK) and saved after each step, so that what
    was measured is kept if a later step fails: the copy costs, each JDK's NIO copy, the
    compiled engine's probe costs of these layers, and in --mode count with the io layer each
    JDK's JNI copy cost model."""
    from jvmos import enginecost
    from jvmos.enginecost import jni_model_unavailable
    from jvmos.jdk import runs_elsewhere
    away = [j for j in jvms if runs_elsewhere(j)]
    for j in away:
        log(f"note: no NIO or JNI copy calibration of JDK {j.version}: {runs_elsewhere(j)}; "
            "its jni_copy and nio_copy are counted, without a time (calibrate it where it "
            "runs: jvmos calibrate on that side)")
    jvms = [j for j in jvms if j not in away]
    from jvmos.writable import check_writable
    # before each measurement: a file that cannot be written is said before minutes of it
    writable = lambda: check_writable(platform_file, "platform file")
    if platform is None:
        writable()
        log(f"no calibration in {platform_file}: measuring this machine's copy and probe costs "
            "first (once; 'jvmos calibrate --force' redoes it)")
        platform = calibrate_copy(jvms, log=log)
        save(platform_file, platform)
    nio = platform["copy"].setdefault("nio_heap_to_direct", {})
    for j in [j for j in jvms if str(j.home) not in nio]:
        writable()
        log(f"no NIO copy calibration for JDK {j.version} in {platform_file}: measuring it once")
        nio[str(j.home)] = calibrate_nio(j)
        save(platform_file, platform)
    if enginecost.incomplete(platform.get("engine_probes"), list(layers)):
        writable()
        log(f"no (or an incomplete) probe-cost calibration of the compiled engine for "
            f"{','.join(layers)} in {platform_file}: measuring it once (a minute)")
        got = enginecost.calibrate(trials=3, log=log, layers=list(layers))
        platform["engine_probes"] = enginecost.merge(platform.get("engine_probes"), got)
        save(platform_file, platform)
    if mode == "count" and "io" in layers:
        # --mode count times no JNI copy: the io layer estimates them with this model
        jr = platform["copy"].setdefault("jni_region", {})
        for j in jvms:
            stale = jni_model_stale(jr.get(str(j.home)), platform.get("engine_probes"))
            if not stale:
                continue
            why = jni_model_unavailable(j, platform.get("engine_probes"))
            if why:
                log(f"note: no JNI copy cost model for JDK {j.version}: {why}")
                jr.pop(str(j.home), None)       # never one that does not fit the window
                continue
            writable()
            log(f"JNI copy cost model for JDK {j.version}: "
                + ("measuring it once (--mode count)" if stale == "none"
                   else f"measuring it again ({stale})"))
            jr[str(j.home)] = calibrate_jni(j, platform["engine_probes"], log=log)
            save(platform_file, platform)
    return platform


def costs_for(platform: Optional[dict]) -> dict:
    """The cost models the summary uses, from a platform file (empty when there is none).
    A calibrated window or cost that is zero, negative or not a number is an error of the
    calibration (JvmosError, one line), never a correction of 0 ns."""
    validate_platform(platform)
    return dict(platform.get("copy", {})) if platform else {}


def validate_platform(platform: Optional[dict]) -> None:
    """Check the probe costs and cost models of a platform file before they are used: the
    compiled engine's probe costs (what recordings are corrected with) and the copy costs. A
    "probes" section (bpftrace's probe costs, from before the engine was jvmos's only engine)
    is not used by a recording and not checked here."""
    from jvmos.analyzers.correction import validate_costs, validate_probes
    if not platform:
        return
    validate_probes(platform.get("engine_probes"))
    validate_costs(platform.get("copy"))
