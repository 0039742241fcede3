"""`jvmos report RUN_DIR`: re-read a finished run directory, without the live process."""
import json
from pathlib import Path
from typing import List, Optional

from jvmos import JvmosError
from jvmos.analyzers.summary import missed_note
from jvmos.analyzers.tables import Table, category_table, fmt_bytes, fmt_count, fmt_ns


def load_run(run_dir) -> tuple:
    d = Path(run_dir)
    if not d.is_dir():
        raise JvmosError(f"{d} is not a directory")
    try:
        manifest = json.loads((d / "manifest.json").read_text())
    except FileNotFoundError:
        raise JvmosError(f"{d} is not a jvmos run directory (no manifest.json)")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise JvmosError(f"{d}/manifest.json is damaged: {e}")
    try:
        summary = json.loads((d / "summary.json").read_text())
    except FileNotFoundError:
        raise JvmosError(f"{d} has no summary.json: the recording did not finish "
                         f"(manifest status: {manifest.get('status')})")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise JvmosError(f"{d}/summary.json is damaged: {e}")
    return manifest, summary


def target_cpu_line(t: dict) -> str:
    """The guaranteed overhead as a share of the target's CPU time during the recording."""
    cpu = t.get("target_cpu_ns")
    if cpu is None:
        return f"target's CPU time during the recording: not read ({t.get('target_cpu_method')})"
    lb = "" if t.get("target_cpu_complete") else (
        f"; incomplete, a lower bound: {t.get('target_cpu_method')}")
    pct = t.get("guaranteed_overhead_pct_of_cpu")
    if pct is not None:
        share = f"{pct:.1f}% of the target's CPU time"
    elif not cpu:
        share = "no share of the target's CPU time (it used none)"
    else:
        share = "no share of the target's CPU time (no guaranteed overhead figure)"
    return f"  = {share} ({cpu / 1e6:,.1f} ms CPU during the recording{lb})"


def wrapped_text(manifest: dict) -> str:
    """Which recorded layers' syscalls libc's wrappers stand for (--scope process)."""
    layers = [x for x in ("io", "mem", "links") if x in (manifest.get("layers") or [])]
    if not layers:
        return ""
    return (f"; libc's wrappers stand for the {', '.join(layers[:-1]) + ' and ' if len(layers) > 1 else ''}"
            f"{layers[-1]} syscalls")


def tax_text(tax: Optional[dict]) -> str:
    """What the syscall tracepoints cost every task on the host, as calibrated."""
    if not tax:
        return ""
    if tax.get("ns_per_syscall") is None:
        return f" (their cost to other processes: unknown, {tax.get('why', 'not calibrated')})"
    ci = tax.get("ci95_ns")
    text = (f" (one idle syscall tracepoint costs every task about {tax['ns_per_syscall']:,.0f} "
            f"ns more per syscall" + (f", 95% [{ci[0]:,.0f}, {ci[1]:,.0f}]" if ci else ""))
    if tax.get("pct_of_bare_write") is not None:
        text += (f", +{tax['pct_of_bare_write']:.0f}% on a bare {tax['bare_write_ns']:,.0f} ns "
                 f"write(2)")
    return text + (" on this machine (jvmos calibrate --probes); more tracepoints, and programs "
                   "that run for other processes at --scope host, cost more)")


def scope_line(manifest: dict) -> str:
    """Where the probes trapped: only in the traced processes, or in every process mapping
    the library (older recordings say nothing: they were host-wide)."""
    eng = manifest.get("engine") or {}
    probes = manifest.get("probes") or {}
    if eng.get("name") == "bpf":
        # the compiled engine opens every uprobe for the traced processes only, at either scope
        kinds = probes.get("kinds") or {}
        sys_tp = any(k.startswith("tracepoint:syscalls:") for k in kinds)
        moved = sum(1 for x in probes.get("sites") or [] if x.get("shift"))
        sc = manifest.get("scope") or (probes.get("scope") or {}).get("mode")
        n = len(manifest.get("processes") or {})
        return (f"scope {sc}: uprobes opened for the traced processes only"
                + (f" ({n} process(es))" if n else "")
                + (" as uprobe_multi links" if eng.get("uprobe_multi") else "")
                + (f" ({eng['fallback']})" if eng.get("fallback") else "")
                + (wrapped_text(manifest) if sc == "process"
                   else "; syscall tracepoints instead of libc's wrappers")
                + "".join(f"; not seen by {layer}: {what}"
                          for layer, what in (manifest.get("blind_spots") or {}).items())
                + (f"; {moved} probe(s) moved onto an emulated instruction" if moved else "")
                + ("; syscall tracepoints sent every syscall of the host through the slow path"
                   + tax_text(manifest.get("host_tax")) if sys_tp else ""))
    sc = probes.get("scope") or {}
    if sc.get("mode") == "process":
        moved = len(sc.get("sites_moved") or {})
        return (f"scope process: {sc.get('uprobes_scoped', 0)} uprobes opened for pid(s) "
                f"{', '.join(map(str, sc.get('pids', []))) or 'none'} only"
                + (f", {len(sc['late'])} joined later" if sc.get("late") else "")
                + (f"; {moved} probe(s) moved onto an emulated instruction" if moved else ""))
    if manifest.get("scope") == "process":     # no uprobe to scope (a C program, say)
        return "scope process: no uprobe in this recording; no syscall tracepoint in io/mem"
    kinds = ((manifest.get("probes") or {}).get("kinds") or {})
    sys_tp = any(k.startswith("tracepoint:syscalls:") for k in kinds) or not kinds
    return ("scope host: uprobes trapped in every process mapping the library"
            + ("; syscall tracepoints sent every syscall of the host through the slow path"
               if sys_tp else ""))


def engine_label(manifest: dict) -> str:
    """Which probes made a recording: the compiled engine (its version), or the bpftrace of a
    recording made before bpftrace's retirement."""
    eng = manifest.get("engine") or {}
    if eng.get("name") == "bpf":
        return f"engine {eng.get('version') or '?'}"
    return str(manifest.get("bpftrace") or "probe engine not recorded")


def probe_kinds_table(t: dict) -> Optional[Table]:
    """Which probes the probe effect comes from: per kind, its hits in the traced processes,
    the calibrated cost of one hit (and where it came from) and their product, largest first:
    where cutting probes would pay."""
    hits, costs = t.get("probe_hits") or {}, t.get("probe_cost_per_hit_ns") or {}
    if not hits:
        return None
    total = t.get("probe_overhead_ns")
    tab = Table("Probe effect by probe kind (estimated: hits x calibrated cost per hit, CPU "
                "time of the traced threads)",
                ["probe kind", "one hit is", "hits", "ns per hit [95%]", "cost per hit from",
                 "estimated effect", "share of the probe effect"])
    rows = []
    for kind, n in hits.items():
        c = costs.get(kind) or {}
        eff = c.get("total_ns", n * c["ns"] if c.get("ns") is not None else None)
        rows.append((kind, n, c, eff))
    for kind, n, c, eff in sorted(rows, key=lambda r: -(r[3] or 0)):
        ci = c.get("ci95_ns")
        src = (c.get("source") or "not calibrated").split(":", 1)[0]
        tab.add([kind, c.get("what", ""), fmt_count(n),
                 "unknown" if c.get("ns") is None else
                 f"{c['ns']:,.0f}" + (f" [{ci[0]:,.0f}, {ci[1]:,.0f}]" if ci else ""),
                 src + (f" ({c['calibration_key']})" if c.get("calibration_key") else ""),
                 fmt_ns(eff) if eff is not None else "unknown",
                 f"{100 * eff / total:.1f}%" if eff is not None and total else "—"],
                [kind, c.get("what"), n, c.get("ns"), src, eff,
                 eff / total if eff is not None and total else None])
    return tab


def waits_table(waits: dict) -> Table:
    """--wall: where the sampled threads waited off the CPU, by boundary and Java call site."""
    t = Table(f"Where threads waited: Java call sites (async-profiler wall-clock samples of "
              f"waiting threads, {waits['samples_total']:,} samples, one per "
              f"{fmt_ns(waits['interval_ns'])} per sampled thread)",
              ["boundary", "samples ± 95%", "share of the waiting samples",
               "of them stacks without an application frame (JVM and JDK threads, idle pool "
               "workers)", "the application's top call sites"])
    for b, e in waits["by_boundary"].items():
        t.add([b, f"{fmt_count(e['samples'])} ± {e['samples_err95']:.0f}",
               f"{e['share_pct']:.1f}%", fmt_count(e.get("no_application_frame_samples")),
               "; ".join(f"{site} ({n})" for site, n in e["top_call_sites"][:3]) or "—"])
    return t


def probe_effect_lines(t: dict) -> List[str]:
    """The probe effect's headline, and the io wrappers' bound against the kernel's count."""
    out: List[str] = []
    if t.get("probe_overhead_ns") is not None:
        out.append(f"probe effect: jvmos added an estimated {fmt_ns(t['probe_overhead_ns'])} to the "
                   f"traced processes" + (f" (= {t['slowdown_pct']:.0f}% of their CPU time without the probes, "
                                             "estimated)"
                                          if t.get("slowdown_pct") is not None else "")
                   + f"; mode {t.get('mode', 'time')}")
    elif t.get("mode") == "sample":
        out.append("probe effect: no probes; async-profiler's sampling overhead is small and "
                   "not subtracted")
    elif t.get("probe_overhead_known_ns") is not None:
        unk = ", ".join(f"{k} ({n:,} hits)" for k, n in
                        (t.get("probe_overhead_unknown_kinds") or {}).items())
        out.append(f"probe effect: unknown (kinds without a calibrated cost: {unk or '?'}); the "
                   f"calibrated kinds cost {fmt_ns(t['probe_overhead_known_ns'])}")
    else:
        out.append("probe effect: unknown: no probe-cost calibration (jvmos calibrate --probes);"
                   " corrected times are unknown, time_raw_ns keeps what the probes measured")
    b = t.get("io_wrapper_bound")
    if b and "kernel_writes_range" in b:
        kr, kw = b["kernel_reads_range"], b["kernel_writes_range"]
        out.append(f"io on libc's wrappers, against the kernel's count (pid {b['pid']}, "
                   f"/proc/PID/io while counting ran): reads {b['wrapper_reads']:,} seen, the "
                   f"kernel's {kr[0]:,}-{kr[1]:,}; writes {b['wrapper_writes']:,} seen, the "
                   f"kernel's {kw[0]:,}-{kw[1]:,}"
                   + ("" if b["within"] else
                      f" (not seen: at least {b['reads_not_seen_at_least']:,} reads and "
                      f"{b['writes_not_seen_at_least']:,} writes)"))
    return out


def page_fault_line(vm: Optional[dict]) -> Optional[str]:
    """The user page faults of the vm category, and how many fell in the Java heap."""
    if not vm or not vm.get("page_faults"):
        return None
    line = (f"user page faults: {vm['page_faults']:,} (estimated time "
            f"{fmt_ns(vm.get('page_fault_time_ns'))})")
    if vm.get("page_faults_heap") is not None:
        line += f", of which in the Java heap: {vm['page_faults_heap']:,}"
        if vm.get("page_faults_unregioned"):
            line += (f" (a lower bound: {vm['page_faults_unregioned']:,} fault(s) were not "
                     "counted by address)")
    elif vm.get("page_faults_heap_unknown"):
        line += f"; in the Java heap: unknown ({vm['page_faults_heap_unknown']})"
    return line


def zlib_line(malloc: Optional[dict]) -> Optional[str]:
    """The zlib streams created (one per Inflater or Deflater), when there were some, or why
    they could not be counted."""
    if not malloc:
        return None
    zs = malloc.get("zlib_streams")
    if zs is None and malloc.get("zlib_streams_unknown"):
        return f"zlib streams created: unknown ({malloc['zlib_streams_unknown']})"
    if not zs or not zs.get("calls"):
        return None
    return (f"zlib streams created: {zs['calls']:,} ({zs.get('inflate', 0):,} inflate, "
            f"{zs.get('deflate', 0):,} deflate: one per java.util.zip.Inflater or Deflater; "
            "counted at zlib's inflateInit2_/deflateInit2_)")


def render(run_dir) -> str:
    manifest, s = load_run(run_dir)
    out = []
    cmd = " ".join(manifest.get("command") or []) or f"pid {manifest.get('attach_pid')}"
    out.append(f"run {run_dir}: {cmd}")
    out.append(f"status {s['status']}" + (f" (exit code {s.get('exit_code')})"
                                          if s.get("exit_code") not in (None, 0) else "")
               + (f": {s['status_reason']}" if s.get("status_reason") else ""))
    jv = ", ".join(f"JDK {j['version']} ({j['home']})" for j in manifest.get("jvms_probed", []))
    if manifest.get("mode") == "sample":
        out.append(f"mode sample: {manifest.get('sampler')}; no BPF probes; "
                   f"kernel {manifest['host']['kernel']}")
    else:
        out.append(f"JVMs probed: {jv or 'none'}; layers {','.join(manifest.get('layers', []))}; "
                   f"mode {manifest.get('mode', 'time')}; {engine_label(manifest)}; "
                   f"kernel {manifest['host']['kernel']}")
        out.append(scope_line(manifest))
    t = s["totals"]
    g = t.get("guaranteed_overhead_ns")
    gtxt = fmt_ns(g) if g is not None else (
        f"unknown (known terms: {fmt_ns(t.get('guaranteed_overhead_known_ns'))}, a lower bound)"
        if t.get("guaranteed_overhead_known_ns") is not None else "unknown")
    out.append(f"wall {fmt_ns(t['wall_ns'])}; guaranteed overhead {gtxt}"
               + (f" ({t['guaranteed_overhead_pct']:.1f}% of wall)" if t.get("guaranteed_overhead_pct") is not None else "")
               + (f" = {' + '.join(t['guaranteed_overhead_categories'])}"
                  if t.get("guaranteed_overhead_categories") else ""))
    if "target_cpu_ns" in t:
        out.append(target_cpu_line(t))
    res = t.get("guaranteed_by_resource") or {}
    if len(res) > 1:
        out.append("  by resource: " + ", ".join(f"{k} {fmt_ns(v)}" for k, v in res.items())
                   + " (time summed over threads: can exceed wall on several cores)")
    if t.get("context_switches"):
        cs = t["context_switches"]
        out.append(f"context switches: {cs['voluntary']:,} voluntary, {cs['involuntary']:,} "
                   f"involuntary, over {cs['threads']:,} threads")
    faults = page_fault_line(s["categories"].get("vm"))
    if faults:
        out.append(faults)
    zlib = zlib_line(s["categories"].get("malloc"))
    if zlib:
        out.append(zlib)
    off = t.get("off_cpu")
    if off:
        out.append(f"off-CPU time (waiting, not in the guaranteed overhead; a lower bound): "
                   f"{fmt_ns(off['total_ns'])} in {off['intervals']:,} intervals: blocked "
                   f"{fmt_ns(off['blocked_ns'])}, preempted {fmt_ns(off['preempted_ns'])}"
                   + (f", stopped {fmt_ns(off['stopped_ns'])}" if off.get("stopped_ns") else ""))
    out += probe_effect_lines(t)
    for w in s.get("warnings") or []:
        out.append(f"warning: {w}")
    if t.get("lost_events"):
        who = "bpftrace" if manifest.get("bpftrace") else "the probes"
        out.append(f"warning: {who} lost {t['lost_events']} events")
    for what, n in (t.get("missed_events") or {}).items():
        out.append(f"note: {missed_note(what, n)}")
    out.append("")
    out.append(category_table(s, "Categories (all traced processes)").markdown())
    pk = probe_kinds_table(t)
    if pk:
        out.append(pk.markdown())
    jc = s["categories"].get("jni_copy", {}).get("functions", {})
    if jc:
        ft = Table("JNI copy functions", ["function", "calls", "bytes", "time"])
        for name, f in sorted(jc.items(), key=lambda kv: -kv[1]["calls"]):
            ft.add([name, fmt_count(f["calls"]), fmt_bytes(f["bytes"]) if f["bytes"] else "—",
                    fmt_ns(f["time_ns"])])
        out.append(ft.markdown())
    samp = s.get("sampling")
    if samp:
        st = Table(f"CPU samples by category (async-profiler, {samp['samples_total']:,} samples of "
                   f"{fmt_ns(samp['interval_ns'])})", ["category", "samples", "share", "time ± 95%"])
        for name, c in samp["categories"].items():
            st.add([name, fmt_count(c["samples"]), f"{c['share_pct']:.1f}%",
                    f"{fmt_ns(c['time_ns'])} ± {fmt_ns(c['time_err95_ns'])}"])
        out.append(st.markdown())
        for name in ("jni_copy", "nio_copy", "io_syscall", "kernel_copy"):
            sites = samp.get("top_call_sites", {}).get(name)
            if sites:
                out.append(f"top Java call sites, {name}: " +
                           "; ".join(f"{site} ({n})" for site, n in sites[:3]))
        if samp.get("flamegraphs"):
            out.append("flame graphs: " + ", ".join(samp["flamegraphs"]))
        out.append("")
    if off:
        ot = Table("Off-CPU time by boundary (all traced processes; threads' time summed: can "
                   "exceed wall)", ["where the thread waited", "intervals (switch-out to "
                                    "switch-in)", "time", "share of the off-CPU total"])
        for b, e in off["by_boundary"].items():
            ot.add([b, fmt_count(e["intervals"]), fmt_ns(e["ns"]),
                    f"{100 * e['ns'] / off['total_ns']:.1f}%" if off["total_ns"] else "—"])
        out.append(ot.markdown())
        out.append(f"off-CPU time (waiting): {off['basis']}")
    waits = (samp or {}).get("waits")
    if waits:
        out.append(waits_table(waits).markdown())
        out.append(f"waiting call sites: {waits['basis']}")
        for f in waits.get("conversion_failed") or []:
            out.append(f"warning: wall samples not converted: {f}")
    p = s.get("paths") or {}
    if p:
        pt = Table("I/O bytes by path", ["path", "syscalls", "bytes"])
        for name in ("jni", "nio", "other"):
            v = p.get(name, {})
            pt.add([name, fmt_count(v.get("calls")) if "calls" in v else "—", fmt_bytes(v.get("bytes"))])
        out.append(pt.markdown())
    for name, c in s["categories"].items():
        if c.get("basis"):
            out.append(f"{name} ({c['method']}): {c['basis']}")
    return "\n".join(out)
