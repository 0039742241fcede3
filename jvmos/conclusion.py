"""The end of a recording: its status and why, its summary (the analyzers on the engine's
maps, corrected with the engine's probe costs of the platform file), the I/O wrapper bound
and the host tax of its manifest, and the run directory's last files."""
from pathlib import Path
from typing import Dict, List, Optional

from jvmos import JvmosError
from jvmos import calibrate as cal
from jvmos import sampling
from jvmos import cputime
from jvmos.analyzers import summary as summ
from jvmos.analyzers.records import Records
from jvmos.recording import (Result, Run, command_reason, finish, missed_warnings, now_iso,
                             run_reasons, settle, write_json)
from jvmos.recordsample import merge_samples


def io_wrapper_bound(manifest: dict, summary: dict) -> Optional[dict]:
    """What libc's wrappers did not see of the target's reads and writes (--scope process,
    io layer, attach mode): the kernel's counts of its read and write syscalls over the
    recording against the wrappers' calls. The kernel's syscr and syscw count read, readv,
    pread64, preadv and write, writev, pwrite64, pwritev (on files and sockets alike),
    sendfile and copy_file_range in both, and the kernel's own reads for the task (an exec's);
    not send*/recv*. The wrappers compared: read, readv, pread64, write, writev, pwrite64 and
    sendfile (preadv, pwritev and copy_file_range are not probed: if used, they show as not
    seen)."""
    k = manifest.get("kernel_io")
    if not k or manifest.get("scope") != "process" or "io" not in (manifest.get("layers")
                                                                  or []):
        return None
    part = ((summary.get("by_pid") or {}).get(str(k["pid"])) or {}).get("categories") or {}
    sc = (part.get("io_syscall") or {}).get("syscalls") or {}
    calls = lambda names: sum((sc.get(n) or {}).get("calls", 0) for n in names)
    # sendfile adds one to both of the kernel's counts
    seen_r = calls(("read", "readv", "pread64", "sendfile"))
    seen_w = calls(("write", "writev", "pwrite64", "sendfile"))
    (r_lo, r_hi), (w_lo, w_hi) = k["syscr"], k["syscw"]
    return {"pid": k["pid"], "kernel_reads_range": [r_lo, r_hi], "wrapper_reads": seen_r,
            "kernel_writes_range": [w_lo, w_hi], "wrapper_writes": seen_w,
            # what the wrappers surely missed: the kernel's least count beyond theirs
            "reads_not_seen_at_least": max(0, r_lo - seen_r),
            "writes_not_seen_at_least": max(0, w_lo - seen_w),
            "within": r_lo <= seen_r <= r_hi and w_lo <= seen_w <= w_hi,
            "basis": "the kernel's syscr/syscw of the process while counting ran (a range: "
                     "read just inside and just outside the start and the stop) against the "
                     "calls libc's read/readv/pread64/sendfile and write/writev/pwrite64/"
                     "sendfile wrappers saw; calls made without them (the dynamic loader's, "
                     "glibc's internal nocancel reads and writes, a raw syscall(2)) put the "
                     "kernel's least count above the wrappers'"}


def host_tax(platform: Optional[dict], kinds: dict) -> Optional[dict]:
    """When the plan enables syscall tracepoints: what every syscall of every task on the host
    pays for them while they are on, from jvmos calibrate --probes (an idle syscall tracepoint
    beside a write(2) loop), or why it is unknown. None when no syscall tracepoint is on."""
    if not any(k.startswith("tracepoint:syscalls:") for k in kinds):
        return None
    from jvmos.enginecost import TAX_KEY
    probes = (platform or {}).get("engine_probes") or {}
    tax, bare = probes.get(TAX_KEY), probes.get("bare_write")
    if TAX_KEY in (probes.get("unresolved") or {}):
        return {"ns_per_syscall": None,
                "why": "calibrated, but not resolved from the noise on this machine"}
    if not tax or tax.get("mean_ns") is None:
        return {"ns_per_syscall": None,
                "why": "not calibrated on this machine (jvmos calibrate --probes measures it)"}
    out = {"ns_per_syscall": tax["mean_ns"], "ci95_ns": tax.get("ci95_ns"),
           "measured_with": tax.get("measured_with"), "source": "jvmos calibrate --probes"}
    if bare and bare.get("mean_ns"):
        out["bare_write_ns"] = bare["mean_ns"]
        out["pct_of_bare_write"] = 100 * tax["mean_ns"] / bare["mean_ns"]
    return out


def engine_reasons(run: Run) -> List[tuple]:
    """What the engine's end and maps say about a recording, as (status, why) pairs."""
    from jvmos import engine as engine_mod
    out = []
    raw = run.engine_raw
    if run.stopped_early:
        out.append(("failed", f"the engine stopped before the end of the run: {run.engine_end}; "
                              "no figures were read"))
    elif raw is None:
        out.append(("truncated", f"the engine handed over no final maps ({run.engine_end})"))
    if raw is not None and raw.errors:
        out.append(("truncated", f"{len(raw.errors)} entr(y/ies) of the engine's maps could "
                                 f"not be read (first: {raw.errors[0]})"))
    lost = engine_mod.lost_reasons(raw) if raw is not None else []
    if lost:
        out.append(("events_lost", "the engine lost events: " + "; ".join(lost)))
    return out


def _first_three(names: List[str]) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def engine_probe_costs(platform: Optional[dict], layers, ready_sites, raw=None) -> tuple:
    """The compiled engine's calibrated probe costs (jvmos calibrate --probes), and the
    warnings that go with them: none calibrated, or probes placed on an instruction class
    the calibration did not measure."""
    from jvmos import enginecost
    probes = (platform or {}).get("engine_probes")
    if enginecost.incomplete(probes, list(layers)):
        return None, ["the compiled engine's probe costs are not calibrated (jvmos calibrate "
                      "--probes): measured times are uncorrected and the probe effect unknown"]
    warnings = []
    borrowed = sorted(k for k, v in probes.items() if isinstance(v, dict) and v.get("borrowed"))
    if borrowed:
        warnings.append("the engine's calibration did not resolve " + ", ".join(borrowed)
                        + " from the noise: each is charged the measured cost of the engine's "
                          "program of the same shape (labelled borrowed in probe_costs, without "
                          "an interval, so the probe overhead's interval is unknown)")
    if probes.get("unresolved"):
        warnings.append("the engine's calibration did not resolve "
                        + ", ".join(sorted(probes["unresolved"]))
                        + " from the noise (mean not above 0): what needs them is unknown "
                          "(re-run jvmos calibrate --probes on a quieter machine)")
    calibrated = {s.get("class") for s in (probes.get("placement") or {}).values()}
    # only probes that fired: one that never hit costs nothing, whatever its class
    hit = None
    if raw is not None:
        hit = {k[2].split(":", 1)[1] for k, v in raw.keyed("calls").items()
               if v and len(k) == 3 and k[2].startswith(("uprobe:", "usdt:"))}
    usdt = sorted({k[2].split(":")[-1] for k, v in (raw.keyed("calls").items() if raw else [])
                   if v and len(k) == 3 and k[2].startswith("usdt:")})
    if usdt:
        warnings.append(f"{len(usdt)} probe(s) that fired were HotSpot USDT probes (a libjvm "
                        f"without those symbols: {_first_three(usdt)}): they are charged and "
                        "corrected at the symbol uprobes' calibrated costs, which were not "
                        "measured on a USDT site")
    other = sorted({f"{s['symbol']} ({s.get('insn')})" for s in ready_sites or []
                    if s.get("class") not in calibrated
                    and (hit is None or f"{s['path']}:{s['symbol']}" in hit)})
    if other:
        warnings.append(f"{len(other)} probe(s) sit on an instruction class the engine's "
                        f"calibration did not measure ({_first_three(other)}): their hits are "
                        "charged and corrected at the calibrated (emulated) cost, an "
                        "underestimate if they are single-stepped")
    return probes, warnings


def summary_inputs(platform: Optional[dict], manifest: dict, pids: Dict[str, dict],
                   raw=None) -> tuple:
    """What summary.build needs besides the probes' output, for these processes of the
    recording the manifest describes (the recording's end, its live view, and
    scripts/reanalyse.py reading it again): (its keyword arguments, the probe-cost warnings,
    {pid: JVM home}). raw: the engine's final maps (which probes fired), None while live."""
    probes = manifest.get("probes") or {}
    jvm_home_by_pid, _ = jvm_homes(pids, manifest.get("attach_pid"),
                                   [j["home"] for j in manifest.get("jvms_probed") or []])
    probe_costs, probe_warnings = engine_probe_costs(platform, manifest.get("layers") or [],
                                                     probes.get("sites"), raw)
    kw = dict(addresses=probes.get("addresses") or {}, costs=cal.costs_for(platform),
              jvms_by_pid=jvm_home_by_pid, probes=probe_costs,
              mode=manifest.get("mode", "time"), scope=manifest.get("scope") or "process",
              java_heap=manifest.get("java_heap"),
              zlib=probes.get("zlib") if "mem" in (manifest.get("layers") or []) else None)
    return kw, probe_warnings, jvm_home_by_pid


def write_metrics_file(run: Run, summary: dict) -> None:
    """--metrics-file: the recording so far in Prometheus's text format (what
    node-exporter's textfile collector reads), replaced whole."""
    from jvmos import export
    export.write_atomically(Path(run.opts.metrics_file),
                            export.prometheus_text(run.manifest, summary, run.out.name).encode())


def jvm_homes(processes: Dict[str, dict], attach_pid: Optional[int],
              probed_homes: List[str]):
    """({pid: JDK home of the libjvm it mapped}, the JDK homes that ran) of a recording's
    processes (the manifest's `processes`): the attached pid's JDK is the one probed, and when
    no process showed its JDK, every JDK probed counts as run (a command may have started one
    of several JDKs probed). The analyzers' per-JDK constants and probe costs follow these."""
    homes = {p: (i.get("jvm") or i["jvm_from_launcher"])["home"]
             for p, i in processes.items() if "jvm" in i or "jvm_from_launcher" in i}
    if attach_pid is not None and probed_homes:
        homes.setdefault(str(attach_pid), probed_homes[0])
    return homes, sorted(set(homes.values())) or list(probed_homes)


def conclude(run: Run) -> Result:
    """The recording's status and why, its summary (the analyzers on the raw output), and the
    run directory's last files."""
    opts, log, out, jvms, manifest = run.opts, run.log, run.out, run.jvms, run.manifest
    warnings, missing, tree = run.warnings, run.missing, run.tree
    child, root, wall_ns, exit_code = run.child, run.root, run.wall_ns, run.exit_code
    load_error, target_cpu = run.load_error, run.target_cpu
    interrupted = {"sig": run.sig}
    raw = run.engine_raw if run.engine_raw is not None else Records()
    reasons = engine_reasons(run)
    if run.sample_error:
        reasons.append(("failed", f"the sampler could not be stopped: {run.sample_error}"))
    reasons += run_reasons(sig=interrupted["sig"], launched=child is not None,
                           load_error=load_error, driven=opts.workload is not None)
    if run.target_gone:
        reasons.append(("target_exited", f"pid {root} exited {wall_ns / 1e9:.1f} s into the "
                                         "recording, before it was stopped: the figures cover "
                                         "that time"))
    reasons += command_reason(child is not None, exit_code, interrupted["sig"])
    if missing:
        names = [m.rsplit(":", 1)[-1] for m in missing]
        reasons.append(("partial", f"{len(missing)} probe(s) skipped, their symbols were not "
                                   f"found: {', '.join(names[:5])}"
                                   + (f" and {len(names) - 5} more" if len(names) > 5 else "")
                                   + "; their figures are absent"))
    for p in (run.manifest.get("engine") or {}).get("procs") or []:
        if p.get("error"):
            reasons.append(("partial", f"pid {p['pid']} joined the traced processes "
                                       f"({p.get('kind')}) but its uprobes could not be opened "
                                       f"({p['error']}): its library calls are not counted"))
    forked = [p for p in (run.manifest.get("engine") or {}).get("procs") or []
              if p.get("kind") == "fork" and p.get("uprobes") and not p.get("error")]
    if forked:
        # one line for all of them (a shell loop forks hundreds)
        gap = max(float(p.get("attach_ms") or 0) for p in forked)
        warnings.append(f"{len(forked)} process(es) were forked during the recording (pids "
                        f"{', '.join(str(p['pid']) for p in forked[:5])}"
                        + (f" and {len(forked) - 5} more" if len(forked) > 5 else "")
                        + f"): each one's uprobes were opened up to {gap:.1f} ms after its fork "
                          "was seen, so library calls a child made before that are not counted "
                          "(a child that starts a program is held at its exec until probed)")
    status, reason = settle(reasons, warnings, log)
    for why in missed_warnings(raw):
        warnings.append(why)
        log(f"note: {why}")
    pids = {str(p): info for p, info in tree.pids.items()}
    kw, probe_warnings, jvm_home_by_pid = summary_inputs(run.platform, manifest, pids,
                                                         run.engine_raw)
    warnings.extend(probe_warnings)
    try:
        summary = summ.build(raw, wall_ns=wall_ns, status=status, exit_code=exit_code, **kw)
    except JvmosError as e:
        # the probes' output is kept (raw/); the manifest says why there is no summary
        manifest.update({"status": "failed", "error": f"the summary could not be built: {e}",
                         "end_time": manifest.get("end_time") or now_iso()})
        write_json(out / "manifest.json", manifest)
        raise JvmosError(f"{e}; the probes' output is kept in {out / 'raw'}")
    jvm_hits = sum(summary["categories"].get(c, {}).get("calls") or 0
                   for c in ("jni_copy", "thread_jvm", "jni_call"))
    jvm_hits += (summary["categories"].get("nio_copy") or {}).get("nio_native_calls", 0)
    if opts.cmd and jvms and not jvm_home_by_pid and not jvm_hits:
        warnings.append("no JVM ran under the traced command (no libjvm.so mapped, no JVM "
                        "probe fired): only syscall figures apply")
        log(f"warning: {warnings[-1]}")
    summary["totals"]["attach_seconds"] = manifest["attach_seconds"]
    bound = io_wrapper_bound(manifest, summary)
    if bound:
        summary["totals"]["io_wrapper_bound"] = bound
    if opts.sample:     # before the totals that read the categories' times
        merge_samples(summary, sampling.collect(out, log=log))
    summary["totals"].update(cputime.overhead_totals(
        summary["totals"].get("guaranteed_overhead_ns"), wall_ns, target_cpu,
        summary["totals"].get("probe_overhead_ns")))
    # the analyzers' warnings (calibration, unknown figures) and the recording's, in one list
    summary["warnings"] = list(summary.get("warnings") or []) + [
        w for w in warnings if w not in (summary.get("warnings") or [])]
    summary["status_reason"] = reason
    manifest.update({"status": status, "exit_code": exit_code, "processes": pids,
                     "attached_probe_count": raw.attached_probes, "warnings": warnings,
                     "wall_ns": wall_ns,
                     "engine_exit_status": run.engine_rc,
                     "status_reason": reason})
    finish(out, manifest, summary)
    if opts.metrics_file is not None:
        # the live file ends with the whole recording's figures and status
        try:
            write_metrics_file(run, summary)
        except (OSError, JvmosError) as e:
            log(f"warning: {opts.metrics_file} not rewritten with the final figures: {e}")
    if load_error:
        raise JvmosError(f"the load driven during the recording failed: {load_error[0]}; "
                         f"the recording is kept in {out}")
    return Result(run_dir=out, status=status, exit_code=exit_code, summary=summary,
                  warnings=warnings, reason=reason)
