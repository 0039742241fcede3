"""`jvmos record`: run or attach to a JVM, trace it with the compiled engine (probes/*.bpf.c
loaded by build/jvmos-engine, jvmos.engine), write a run directory.

A recording has three phases, each in its module: _prepare here (targets, calibration, the
engine's plan, the run directory and its first manifest), jvmos.recordengine (the tracing
session) and jvmos.conclusion (status, summary, last files); --mode sample has its own path
(jvmos.recordsample). What a run directory holds and what each status means: jvmos.recording.
"""
import hashlib
import math
import os
import sys
from pathlib import Path
from typing import Dict, List

from jvmos import JvmosError, __version__
from jvmos import calibrate as cal
from jvmos.catalogue import LAYERS, OPTIONAL_SYMBOL_PREFIXES, TIMED_SPAN_LAYERS, Mode
from jvmos.jdk import (Jvm, discover_jdks, executable_kind, jvm_of_executable, jvm_of_pid,
                       libc_of, libz_of, symbols)
from jvmos.session import alive
from jvmos.tools import ensure_tracefs, host_info
from jvmos.enginelayers import mem as mem_layer
from jvmos.recording import Options, Result, Run, check_out, default_out, prepare_out
from jvmos.conclusion import conclude, host_tax
from jvmos.recordsample import record_sampled
from jvmos.recordengine import trace


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


def check_outputs(opts: Options) -> None:
    """What the recording will write, checked before anything runs or is measured: the run
    directory (fixed here when it is the default one), --metrics-file, and the platform file
    when a missing one is to be calibrated first (an incomplete one is checked by
    calibrate.ensure_calibrated before it measures)."""
    from jvmos.writable import check_writable
    opts.out = Path(opts.out or default_out("record"))
    check_out(opts.out)
    if opts.metrics_file is not None:
        check_writable(opts.metrics_file, "--metrics-file")
    platform_file = cal.platform_path(opts.platform)
    if opts.mode != "sample" and opts.calibrate_if_missing and not platform_file.is_file():
        check_writable(platform_file, "platform file")


def record(opts: Options) -> Result:
    """One recording: options checked, then (probe modes) prepared, traced and concluded;
    --mode sample has its own path without BPF probes (record_sampled)."""
    log = opts.log or (lambda m: print(m, file=sys.stderr))
    check_options(opts)
    if opts.mode != "sample" and not _can_load_bpf():
        raise JvmosError("jvmos record needs root (or CAP_BPF with CAP_PERFMON): it loads "
                         "BPF programs; run it as root, or use --mode sample")
    check_outputs(opts)
    if opts.mode == "sample":
        return record_sampled(opts, log)
    run = _prepare(opts, log)
    trace(run)
    return conclude(run)


def _prepare(opts: Options, log) -> Run:
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

    return Run(opts=opts, log=log, warnings=warnings, jvms=jvms, out=out,
                platform_file=platform_file, platform=platform,
                missing=missing, manifest=manifest, plan=plan,
                raw_path=out / "raw" / "engine.json")
