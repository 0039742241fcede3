"""--mode sample (async-profiler alone, no BPF probe), and --sample beside the probes: the
samples merged into the probes' summary, where they replace the copy categories' times."""
import time
from typing import List, Optional

from jvmos import JvmosError, __version__
from jvmos.jdk import executable_kind, jvm_of_pid
from jvmos import sampling
from jvmos.session import Session
from jvmos.tools import host_info
from jvmos.analyzers import summary as summ
from jvmos.recording import (Options, Result, command_reason, default_out, finish, now_iso,
                             prepare_out, run_reasons, save, settle)


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


def record_sampled(opts: Options, log) -> Result:
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
    save(out / "manifest.json", manifest, out)
    exit_code = None
    target_gone = False
    load_error = []
    stop_error = None
    session = Session(log)
    with session:
        if opts.cmd:
            manifest["start_time"] = now_iso()
            save(out / "manifest.json", manifest, out)
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
                manifest.update({"status": "failed", "error": str(e), "end_time": now_iso()})
                save(out / "manifest.json", manifest, out)
                raise JvmosError(str(e), 1)
            manifest["jvms_probed"] = [jvm.as_dict()]
            manifest["start_time"] = now_iso()
            save(out / "manifest.json", manifest, out)  # a reader can see sampling has begun
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
    manifest.update({"status": status, "exit_code": exit_code, "end_time": now_iso(),
                     "wall_ns": wall_ns, "root_pid": root, "warnings": warnings,
                     "status_reason": reason})
    finish(out, manifest, summary)
    if load_error:
        raise JvmosError(f"the load driven during the recording failed: {load_error[0]}; "
                         f"the recording is kept in {out}")
    return Result(run_dir=out, status=status, exit_code=exit_code, summary=summary,
                  warnings=warnings, reason=reason)
