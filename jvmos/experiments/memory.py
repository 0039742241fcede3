"""`jvmos run memory`: the paper's Table 6 (section 3.3) on this machine.

Each benchmark of the DaCapo-style suite (workloads/java/dacapo), or of a real DaCapo jar given
with --dacapo-jar, runs bare (its execution time) and once under `jvmos record --layers mem`
(the libc allocator's time, the kernel's memory services, page faults), in one invocation.
Overhead = (libc + kernel) / bare execution time, as the paper computes it. The recording also
gives the heap-growth pattern: when the JVM asked the kernel and malloc for memory, to test the
paper's assumption that C_mem is paid once, during ramp-up.
"""
import argparse
import re
import statistics
import zipfile
from pathlib import Path
from typing import List, Optional

from jvmos import JvmosError
from jvmos.analyzers.correction import sum_known
from jvmos.analyzers import figures
from jvmos.analyzers.tables import Table, fmt_bytes, fmt_count
from jvmos.tools import DACAPO_JAR, jar
from jvmos.experiments.common import (jdk_label, load_finished, log, out_dir, run_bare,
                     run_recorded, select_jdks, workload_json, write_outputs)
from jvmos.experiments.common import PROBE_EFFECT_HEADERS, headline, probe_effect, probe_effect_cells

EXAMPLES = """\
examples:
  jvmos run memory                                  # the whole suite, default size, 3 iterations
  jvmos run memory --bench h2,xalan --iterations 5
  jvmos run memory --quick                          # small inputs, 1 iteration
  jvmos run memory --dacapo-jar ~/dacapo-9.12-bach.jar --bench h2,luindex,lusearch
  jvmos run memory --render results/memory          # the tables again, nothing measured

cost: the mem layer puts a uprobe pair on every malloc/calloc/realloc of every process that
uses this libc while it traces (about 1.3 us per call here): recorded runs are slower.
"""

# the paper's Table 6: exec time, libc, kernel (ms), overhead %
PAPER_T6 = {"antlr": (35382, 1179, 3.9, 3.3), "bloat": (294101, 2587, 4.2, 0.9),
            "chart": (96169, 5737, 2.4, 5.9), "eclipse": (377705, 31037, 10.6, 8.2),
            "fop": (17640, 1185, 3.1, 6.7), "hsqldb": (59964, 930, 1.7, 1.6),
            "jython": (223652, 100628, 4.6, 45.0), "luindex": (43978, 1724, 1.8, 3.9),
            "lusearch": (87812, 4156, 2.6, 4.7), "pmd": (98809, 1492, 3.2, 1.5),
            "xalan": (226861, 27375, 3.8, 12.0)}
# --quick: four of the paper's benchmarks, to show the table (make demo), not to prove it
QUICK_BENCH = "antlr,fop,h2,luindex"
# the suite's names for the paper's benchmarks where they differ (DaCapo 2006 -> now)
PAPER_NAME = {"h2": "hsqldb"}
RAMP_FRACTION = 0.25
PASSED = re.compile(r"=====.*?(\w+) PASSED in (\d+) msec")


def parse(argv):
    p = argparse.ArgumentParser(prog="jvmos run memory", epilog=EXAMPLES,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--bench", help="comma-separated benchmarks (default: all of the suite)")
    p.add_argument("--iterations", type=int, default=3, help="iterations per run (default 3)")
    p.add_argument("--size", default="default", choices=["small", "default", "large"],
                   help="input size of the suite (default: default)")
    p.add_argument("--dacapo-jar", help="a real DaCapo jar to run instead of the suite")
    p.add_argument("--heap", help="maximum heap, e.g. 2g (default: the JVM's own default)")
    p.add_argument("--jdk", help="JDK home (default: the first found)")
    p.add_argument("--out", help="output directory (default results/runs/<time>-memory)")
    p.add_argument("--quick", action="store_true",
                   help=f"small inputs, 1 iteration, {QUICK_BENCH} (unless --bench)")
    p.add_argument("--render", metavar="DIR",
                   help="write DIR's tables, notes and figure again from DIR/table6.json "
                        "(no measuring)")
    a = p.parse_args(argv)
    if a.quick:
        a.iterations, a.size = 1, "small"
        if not a.bench and not a.dacapo_jar:
            a.bench = QUICK_BENCH
    if a.iterations <= 0:
        p.error("--iterations must be positive")
    return a


def check_dacapo_jar(path: str) -> Path:
    p = Path(path)
    if not p.exists():
        raise JvmosError(f"--dacapo-jar {path}: no such file")
    if not zipfile.is_zipfile(p):
        raise JvmosError(f"--dacapo-jar {path}: not a jar (not a zip archive)")
    with zipfile.ZipFile(p) as z:
        names = z.namelist()
        manifest = z.read("META-INF/MANIFEST.MF").decode(errors="replace") \
            if "META-INF/MANIFEST.MF" in names else ""
    if not (any("dacapo" in n.lower() for n in names) or "dacapo" in manifest.lower()):
        raise JvmosError(f"--dacapo-jar {path}: a jar, but not DaCapo's (no Harness, no "
                         "org/dacapo classes)")
    return p


class Suite:
    """How to list and run benchmarks: the project's suite, or a real DaCapo jar."""

    def __init__(self, java: str, dacapo_jar: Optional[Path], heap: Optional[str] = None):
        self.java, self.dacapo = java, dacapo_jar
        self.heap = heap

    def names(self) -> List[str]:
        import subprocess
        cmd = ([self.java, "-jar", str(self.dacapo), "-l"] if self.dacapo
               else [self.java, "-jar", str(jar(DACAPO_JAR)), "--list"])
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise JvmosError(f"cannot list the benchmarks: {' '.join(cmd)}: "
                             f"{(r.stderr.strip().splitlines() or ['no output'])[-1]}")
        return [n for n in re.split(r"\s+", r.stdout.strip()) if n]

    def cmd(self, bench: str, iterations: int, size: str) -> List[str]:
        # the JVM's default heap (a quarter of the memory) unless told: DaCapo runs that way
        heap = [f"-Xmx{self.heap}"] if self.heap else []
        if self.dacapo:
            return [self.java] + heap + ["-jar", str(self.dacapo), "-n", str(iterations),
                                         "-s", size, bench]
        return [self.java] + heap + ["-jar", str(jar(DACAPO_JAR)), bench, "--iterations",
                                     str(iterations), "--size", size]


def iteration_times(result: dict, stderr: str) -> List[int]:
    if result.get("iteration_ns"):
        return [int(x) for x in result["iteration_ns"]]
    return [int(m.group(2)) * 1_000_000 for m in PASSED.finditer(stderr)]


def growth_profile(by_pid: dict) -> dict:
    """Share of the native memory requested during the first quarter of the run."""
    out = {}
    for key in ("vm_bytes", "malloc_bytes"):
        pts = []
        for p in by_pid.values():
            pts += (p.get("memory_growth") or {}).get(key) or []
        if not pts:
            out[key] = None
            continue
        end = max(t for t, _ in pts) or 1e-9
        total = sum(b for _, b in pts) or 1
        early = sum(b for t, b in pts if t <= RAMP_FRACTION * end)
        out[key] = {"total_bytes": total, "ramp_share_pct": 100.0 * early / total,
                    "series": sorted(pts)}
    return out


def main(argv) -> int:
    a = parse(argv)
    if a.render:
        out = Path(a.render)
        return report(out, load_finished(out / "table6.json", "memory", "benchmarks"))
    dj = check_dacapo_jar(a.dacapo_jar) if a.dacapo_jar else None
    jvm = select_jdks([a.jdk] if a.jdk else None)[0]
    java = str(jvm.home / "bin" / "java")
    if a.heap and not re.fullmatch(r"\d+[kKmMgG]?", a.heap):
        raise JvmosError(f"--heap {a.heap}: write a size such as 512m or 2g")
    suite = Suite(java, dj, a.heap)
    available = suite.names()
    benches = [b.strip() for b in a.bench.split(",") if b.strip()] if a.bench else available
    unknown = [b for b in benches if b not in available]
    if unknown:
        raise JvmosError(f"unknown benchmark(s) {', '.join(unknown)} (known: {', '.join(available)})")
    out = out_dir(a.out, "memory")
    results = {"experiment": "memory", "suite": str(dj) if dj else "jvmos-dacapo",
               "size": a.size, "heap": a.heap or "JVM default", "iterations": a.iterations, "jdk": str(jvm.home),
               "jdk_label": jdk_label(jvm), "benchmarks": {}}
    for b in benches:
        cmd = suite.cmd(b, a.iterations, a.size)
        log(f"{b}: bare run")
        bare = run_bare(cmd, timeout=3600)
        log(f"{b}: recorded run (mem layer)")
        res = run_recorded(b, cmd, out, layers=("mem",))
        s = res.summary
        w = workload_json(res)
        cats = s["categories"]
        m, vm = cats.get("malloc", {}), cats.get("vm", {})
        fr = cats.get("free_estimated", {})
        exec_ns = bare["process_wall_ns"]
        # libc = the probed allocator calls' time + the estimated frees' time, kept apart too
        # a time a missing calibration leaves unknown stays unknown (None), and so does every
        # sum it is part of; a category with no call at all is 0
        malloc_ns = m.get("time_ns") if m else 0.0
        free_ns = fr.get("time_ns") if fr else 0.0
        libc = sum_known([malloc_ns, free_ns])
        kernel = vm.get("time_ns") if vm else 0.0
        both = sum_known([libc, kernel])
        err = (res.run_dir / "stderr.txt").read_text(errors="replace")
        results["benchmarks"][b] = {
            "command": cmd, "exec_ns": exec_ns,
            "bare_iteration_ns": iteration_times(bare, ""),
            "recorded_iteration_ns": iteration_times(w, err),
            "recorded_wall_ns": s["totals"]["wall_ns"],
            "libc_ns": libc, "kernel_ns": kernel,
            "kernel_syscalls_ns": vm.get("syscalls_time_ns") if vm else 0.0,
            "page_fault_ns": vm.get("page_fault_time_ns"),
            "overhead_pct": None if both is None else 100.0 * both / exec_ns,
            **cpu_figures(bare.get("process_cpu_ns"), s["totals"].get("target_cpu_ns"), both),
            "libc_overhead_pct": None if libc is None else 100.0 * libc / exec_ns,
            "malloc_probed_ns": malloc_ns, "free_estimated_ns": free_ns,
            "malloc_calls": m.get("calls"), "malloc_bytes": m.get("bytes"),
            "free_estimated_calls": fr.get("calls"),
            "malloc_timed_calls": m.get("timed_calls"),
            "malloc_correction_dominates": m.get("correction_dominates"),
            "vm_calls": vm.get("calls"), "page_faults": vm.get("page_faults"),
            "growth": growth_profile(s["by_pid"]),
            "slowdown_pct": s["totals"].get("slowdown_pct"),
            # the probes' cost is CPU time summed over threads: compared with the CPU time
            # the recording added (the wall time only when a CPU figure is missing)
            "probe_effect": (probe_effect(s["totals"], s["totals"]["target_cpu_ns"],
                                          bare["process_cpu_ns"], "process CPU time")
                             if s["totals"].get("target_cpu_ns") is not None
                             and bare.get("process_cpu_ns") is not None else
                             probe_effect(s["totals"], s["totals"]["wall_ns"],
                                          bare["process_wall_ns"], "process wall time")),
            "run_dir": str(res.run_dir.relative_to(out)),
        }
    return report(out, results)


def report(out: Path, results: dict) -> int:
    """table6.md/.csv/.json, the notes and the growth figure, from the measured runs (also
    --render's)."""
    summarize(results)
    t6, tg, tc = table6(results), table_growth(results), table_cpu(results)
    notes = notes_for(results)
    figs = growth_figure(results, out / "memory-growth")
    results["figures"] = [f.name for f in figs]
    paper = [v[3] for k, v in PAPER_T6.items()]
    kept = [v[3] for k, v in PAPER_T6.items() if k != "jython"]
    avg = results.get("average_overhead_pct")
    results["headline"] = headline(
        "memory management's share of execution time (libc + kernel), mean over the "
        f"{len(results['benchmarks'])} benchmarks run ({results.get('suite') or 'suite'}; not "
        "the paper's DaCapo 2006 set)",
        "unknown" if avg is None else f"{avg:.1f}%",
        f"{sum(paper) / len(paper):.1f}% over its {len(paper)} benchmarks "
        f"({sum(kept) / len(kept):.1f}% without jython)")
    write_outputs(out, "table6", [t6, tg, tc], results, notes)
    print(t6.markdown())
    print(tg.markdown())
    print(tc.markdown())
    for n in notes:
        print(f"- {n}")
    print(f"\nresults: {out}/table6.md (and .csv, .json, memory-growth.png/.svg); "
          f"recordings in {out}/runs/")
    return 0


def summarize(results) -> None:
    """Average overhead with and without outliers (the paper left jython out: an order of
    magnitude worse). Outlier: more than 3x the median overhead."""
    ovs = {b: r["overhead_pct"] for b, r in results["benchmarks"].items()
           if r.get("overhead_pct") is not None}
    # a benchmark whose overhead is unknown (a calibration missing) is named, not averaged in
    results["overhead_unknown"] = [b for b, r in results["benchmarks"].items()
                                   if r.get("overhead_pct") is None]
    if not ovs:
        return
    med = statistics.median(ovs.values())
    outliers = [b for b, v in ovs.items() if med > 0 and v > 3 * med]
    kept = [v for b, v in ovs.items() if b not in outliers]
    results["average_overhead_pct"] = statistics.mean(ovs.values())
    results["average_overhead_pct_without_outliers"] = statistics.mean(kept) if kept else None
    results["outliers"] = outliers


def cpu_figures(bare_cpu_ns, recorded_cpu_ns, overhead_ns) -> dict:
    """The bare run's CPU time (wait4 rusage, us resolution), the overhead's share of it, and
    the recorded run's CPU time beside it (the probe effect)."""
    ok = bool(bare_cpu_ns)
    d = recorded_cpu_ns - bare_cpu_ns if ok and recorded_cpu_ns is not None else None
    return {"bare_cpu_ns": bare_cpu_ns, "recorded_cpu_ns": recorded_cpu_ns,
            "overhead_pct_of_bare_cpu": (100.0 * overhead_ns / bare_cpu_ns
                                         if ok and overhead_ns is not None else None),
            "probe_effect_cpu_ns": d,
            "recorded_over_bare_cpu": recorded_cpu_ns / bare_cpu_ns if d is not None else None}


def table_cpu(results) -> Table:
    t = Table("Table 6, CPU time: the overhead as a share of the bare run's CPU time, and the "
              "recorded run's CPU time (probe effect; ms)",
              ["program", "bare CPU", "overhead (libc + kernel) / bare CPU", "recorded CPU",
               "recorded - bare", "recorded / bare"])
    for b, r in results["benchmarks"].items():
        bc, rc = r.get("bare_cpu_ns"), r.get("recorded_cpu_ns")
        pct, d, x = (r.get("overhead_pct_of_bare_cpu"), r.get("probe_effect_cpu_ns"),
                     r.get("recorded_over_bare_cpu"))
        t.add([b, "—" if bc is None else f"{bc / 1e6:,.0f}", "—" if pct is None else f"{pct:.1f}%",
               "—" if rc is None else f"{rc / 1e6:,.0f}", "—" if d is None else f"{d / 1e6:+,.0f}",
               "—" if x is None else f"{x:.2f}x"],
              [b, None if bc is None else bc / 1e6, pct, None if rc is None else rc / 1e6,
               None if d is None else d / 1e6, x])
    return t


def _ms(ns):
    """ns in ms; unknown stays unknown (None)."""
    return None if ns is None else ns / 1e6


def _ms_text(ns) -> str:
    return "unknown" if ns is None else f"{ns / 1e6:,.1f}"


def table6(results) -> Table:
    t = Table(f"Table 6: memory allocation costs ({results['suite']}, size {results['size']}, "
              f"{results['iterations']} iterations, {results['jdk_label']}; ms)",
              ["program", "exec time (bare wall)", "libc", "kernel", "overhead / exec time",
               "allocator calls (probed)", "frees (estimated)", "bytes requested", "page faults",
               "paper: exec / libc / kernel / overhead"]
              + PROBE_EFFECT_HEADERS)
    for b, r in results["benchmarks"].items():
        paper = PAPER_T6.get(PAPER_NAME.get(b, b))
        ptxt = (f"{paper[0]:,} / {paper[1]:,} / {paper[2]} / {paper[3]}%" if paper else "—")
        pe, pv = probe_effect_cells(r.get("probe_effect"))
        t.add([b, f"{r['exec_ns'] / 1e6:,.0f}", _ms_text(r["libc_ns"]), _ms_text(r["kernel_ns"]),
               "unknown" if r["overhead_pct"] is None else f"{r['overhead_pct']:.1f}%",
               fmt_count(r["malloc_calls"]), fmt_count(r.get("free_estimated_calls")),
               fmt_bytes(r["malloc_bytes"]),
               fmt_count(r["page_faults"]), ptxt] + pe,
              [b, r["exec_ns"] / 1e6, _ms(r["libc_ns"]), _ms(r["kernel_ns"]),
               r["overhead_pct"], r["malloc_calls"], r.get("free_estimated_calls"),
               r["malloc_bytes"], r["page_faults"],
               ptxt] + pv)
    if results.get("average_overhead_pct") is not None:
        wo = results.get("average_overhead_pct_without_outliers")
        label = ("average without " + ", ".join(results["outliers"])) if results["outliers"] \
            else "average (no outlier)"
        if results.get("overhead_unknown"):
            label += " (" + ", ".join(results["overhead_unknown"]) + ": unknown, left out)"
        t.add(["average", "", "", "", f"{results['average_overhead_pct']:.1f}%", "", "", "", "",
               "5% (without jython)", "", "", ""],
              ["average", None, None, None, results["average_overhead_pct"], None, None, None,
               None, "5% (without jython)", None, None, None])
        if wo is not None:
            t.add([label, "", "", "", f"{wo:.1f}%", "", "", "", "", "", "", "", ""],
                  [label, None, None, None, wo, None, None, None, None, "", None, None, None])
    return t


def table_growth(results) -> Table:
    t = Table(f"Native memory requested during the first {int(RAMP_FRACTION * 100)}% of the "
              "recorded run (the paper: C_mem is paid once, during ramp-up)",
              ["program", "from the kernel (pages faulted in, brk)", "in the first quarter",
               "from malloc", "in the first quarter"])
    for b, r in results["benchmarks"].items():
        g = r["growth"]
        vm, ml = g.get("vm_bytes") or {}, g.get("malloc_bytes") or {}
        t.add([b, fmt_bytes(vm.get("total_bytes")),
               f"{vm['ramp_share_pct']:.0f}%" if vm else "—",
               fmt_bytes(ml.get("total_bytes")),
               f"{ml['ramp_share_pct']:.0f}%" if ml else "—"],
              [b, vm.get("total_bytes"), vm.get("ramp_share_pct"), ml.get("total_bytes"),
               ml.get("ramp_share_pct")])
    return t


def notes_for(results) -> List[str]:
    notes = ["exec time: the bare run's whole process (JVM start to exit), as the paper timed "
             "the benchmark; libc and kernel: from the recording of the same command in the "
             "same invocation, corrected for the probe effect; overhead = (libc + kernel) / "
             "exec time.",
             "CPU time table: bare CPU = the bare run's user + system time (wait4 rusage of the "
             "JVM: every thread, those that exited included; us resolution); recorded CPU = the "
             "same for the recorded run, from the moment tracing began (summary "
             "target_cpu_ns); recorded - bare is the probe effect on the JVM's CPU time.",
             "libc = malloc/calloc/realloc timed by probes (on-CPU, minus probe windows) + "
             "free estimated (one per block allocated x the calibrated cost of a free); "
             "allocator calls counts only the calls the probes saw, frees (estimated) the "
             "estimated frees, never added to it; kernel "
             "= brk/mmap/munmap/mprotect/madvise timed + user page faults x the calibrated "
             "cost of a first touch (estimated)."]
    flagged = [b for b, r in results["benchmarks"].items() if r.get("malloc_correction_dominates")]
    if flagged:
        notes.append("the probe correction is more than half of the measured allocator time "
                     f"for {', '.join(flagged)}: each malloc costs less than the probe window, "
                     "so those libc figures are uncertain (see summary.json time_raw_ns).")
    for b, r in results["benchmarks"].items():
        ri, bi = r["recorded_iteration_ns"], r["bare_iteration_ns"]
        if ri and bi:
            notes.append(f"{b}: last iteration {bi[-1] / 1e6:.0f} ms bare, {ri[-1] / 1e6:.0f} ms "
                         "recorded (probe effect)")
    return notes


def growth_figure(results, stem: Path) -> list:
    """Cumulative native memory requested over the run, one line per benchmark."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    benches = [(b, r["growth"]) for b, r in results["benchmarks"].items()]
    if not benches:
        return []
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharex=False)
    # one colour per benchmark (tab10 repeats after ten), dashed for the second ten
    styles = {b: (plt.cm.tab10(i % 10), "-" if i < 10 else "--") for i, (b, _) in enumerate(benches)}
    for ax, key, title in ((axes[0], "vm_bytes", "from the kernel (pages faulted in, brk)"),
                           (axes[1], "malloc_bytes", "from libc malloc")):
        for b, g in benches:
            s = (g.get(key) or {}).get("series")
            if not s:
                continue
            end = s[-1][0] or 1e-9
            total = sum(v for _, v in s) or 1
            xs, ys, acc = [0.0], [0.0], 0
            for t, v in s:
                acc += v
                xs.append(100.0 * t / end)
                ys.append(100.0 * acc / total)
            ax.step(xs, ys, where="post", label=b, color=styles[b][0], ls=styles[b][1])
        ax.axvline(100 * RAMP_FRACTION, color="#999999", lw=0.8, ls="--")
        ax.set_xlabel("time (% of the recorded run)")
        ax.set_ylabel("cumulative share of bytes requested (%)")
        ax.set_title(title, fontsize=10)
        ax.set_xlim(0, 100)
        ax.set_ylim(0, 101)
    axes[1].legend(fontsize=8, loc="lower right")
    fig.suptitle("Native memory requested over time (paper: paid once, during ramp-up)",
                 fontsize=11)
    return figures.save(fig, stem)
