"""`jvmos run blocking-io`: the paper's Table 3 (section 3.1.1) on this machine.

The same loop - SIZE-byte writes to /dev/null, ITERATIONS times - in C and in Java on every
JDK found. Each is run bare (REPEAT times, median kept) and once under `jvmos record`, all in one
invocation, so the Java/C ratio compares runs made side by side.
"""
import argparse
import statistics
from pathlib import Path

from jvmos.analyzers.tables import Table, fmt_bytes, fmt_count, fmt_ns
from jvmos.tools import IO_JAR, c_program, jar
from jvmos.experiments.common import (PROBE_EFFECT_HEADERS, jdk_label, log, out_dir, probe_effect,
                     probe_effect_cells, headline, load_finished, publish, run_bare, run_recorded,
                     select_jdks, workload_json)

EXAMPLES = """\
examples:
  jvmos run blocking-io                              # 1,000,000 x 10 bytes, every JDK found
  jvmos run blocking-io --iterations 200000 --repeat 5 --out /tmp/bio
  jvmos run blocking-io --jdk /usr/lib/jvm/temurin-25-jdk-amd64
  jvmos run blocking-io --render results/blocking-io  # the table again, nothing measured
"""


def parse(argv):
    p = argparse.ArgumentParser(prog="jvmos run blocking-io", epilog=EXAMPLES,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--iterations", type=int, default=1_000_000)
    p.add_argument("--size", type=int, default=10, help="bytes per write (default 10)")
    p.add_argument("--target", default="/dev/null")
    p.add_argument("--repeat", type=int, default=3, help="bare runs per implementation (median)")
    p.add_argument("--jdk", action="append", help="JDK home (repeatable; default: all found)")
    p.add_argument("--out", help="output directory (default results/runs/<time>-blocking-io)")
    p.add_argument("--quick", action="store_true", help="200,000 iterations, 2 bare runs")
    p.add_argument("--render", metavar="DIR",
                   help="write DIR's table and notes again from DIR/table3.json (no measuring)")
    a = p.parse_args(argv)
    if a.quick:
        a.iterations, a.repeat = min(a.iterations, 200_000), min(a.repeat, 2)
    if a.iterations <= 0 or a.size <= 0 or a.repeat <= 0:
        p.error("--iterations, --size and --repeat must be positive")
    return a


def main(argv) -> int:
    a = parse(argv)
    if a.render:
        out = Path(a.render)
        return report(out, load_finished(out / "table3.json", "blocking-io", "impls"))
    out = out_dir(a.out, "blocking-io")
    impls = [("c", [str(c_program("blocking_io")), "--iterations", str(a.iterations),
                    "--size", str(a.size), "--target", a.target])]
    for j in select_jdks(a.jdk):
        impls.append((jdk_label(j), [str(j.home / "bin" / "java"), "-cp", str(jar(IO_JAR)),
                                     "org.jvmos.workloads.BlockingIo", "--iterations",
                                     str(a.iterations), "--size", str(a.size),
                                     "--target", a.target]))
    results = {"experiment": "blocking-io", "iterations": a.iterations, "size": a.size,
               "target": a.target, "repeat": a.repeat, "impls": {}}
    # bare runs interleaved (C, Java, C, Java, ...) so drift on a shared machine hits all alike
    bare = {name: [] for name, _ in impls}
    for r in range(a.repeat):
        for name, cmd in impls:
            log(f"bare run {r + 1}/{a.repeat}: {name}")
            bare[name].append(run_bare(cmd))
    for name, cmd in impls:
        log(f"recorded run: {name}")
        res = run_recorded(name, cmd, out)
        s = res.summary
        w = workload_json(res)
        results["impls"][name] = {
            "command": cmd,
            "bare_loop_ns": [b["elapsed_ns"] for b in bare[name]],
            "bare_process_ns": [b["process_wall_ns"] for b in bare[name]],
            "bare_loop_ns_median": statistics.median(b["elapsed_ns"] for b in bare[name]),
            "bare_process_ns_median": statistics.median(b["process_wall_ns"] for b in bare[name]),
            "recorded_loop_ns": w.get("elapsed_ns"),
            "recorded_wall_ns": s["totals"]["wall_ns"],
            "run_dir": str(res.run_dir.relative_to(out)),
            "categories": s["categories"], "paths": s["paths"],
            "guaranteed_overhead_ns": s["totals"]["guaranteed_overhead_ns"],
            "probe_overhead_ns": s["totals"].get("probe_overhead_ns"),
        }
        r = results["impls"][name]
        r["probe_effect"] = probe_effect(s["totals"], r["recorded_loop_ns"],
                                         r["bare_loop_ns_median"], "loop time")
    return report(out, results)


def report(out: Path, results: dict) -> int:
    """table3.md/.csv/.json and the notes, from the measured runs (also --render's)."""
    table = table3(results)
    c = results["impls"]["c"]
    notes = []
    for name, r in results["impls"].items():
        if name == "c":
            continue
        ratio = r["bare_loop_ns_median"] / c["bare_loop_ns_median"]
        pratio = r["bare_process_ns_median"] / c["bare_process_ns_median"]
        r["java_c_loop_ratio"], r["java_c_process_ratio"] = ratio, pratio
        notes.append(f"{name}/C execution-time ratio (bare, median of {results['repeat']}, same "
                     f"invocation): loop {ratio:.2f}x, whole process {pratio:.2f}x "
                     "(paper: 45.16 s / 21.62 s = 2.09x)")
    results["headline"] = [
        headline(f"{name}/C time of the same {results['size']}-byte write loop (bare, median)",
                 f"{r['java_c_loop_ratio']:.2f}x", "2.09x (45.16 s / 21.62 s)")
        for name, r in results["impls"].items() if name != "c"]
    notes.append("probe effect: estimated = hits x calibrated cost per hit of every probe "
                 "that fired in the traced process, whole recording (summary.json: probe_hits, "
                 "probe_cost_per_hit_ns), with its 95% interval; observed = recorded loop - "
                 "bare loop (median); goal: ratio within ±25%.")
    notes.append("JNI copy and write(2) times are measured between two probes, minus hits x the "
                 "calibrated probe window of the engine that recorded (jvmos calibrate --probes); summary.json keeps the raw "
                 "value, the hits and a 95% interval. NIO and copyin times are estimated: bytes x "
                 "calibrated per-byte cost.")
    publish(out, "table3", [table], results, notes, also=f"; recordings in {out}/runs/")
    return 0


def table3(results) -> Table:
    names = list(results["impls"])
    headers = ["row"]
    for n in names:
        shown = "C" if n == "c" else n
        headers += [f"{shown} calls", f"{shown} bytes", f"{shown} time"]
    t = Table(f"Table 3: the cost of copying in blocking I/O "
              f"({results['iterations']:,} x {results['size']}-byte writes to {results['target']})",
              headers)

    def row(label, getter):
        fmt, raw = [label], [label]
        for n in names:
            c = getter(results["impls"][n]) or {}
            fmt += [fmt_count(c.get("calls")) if c.get("calls") is not None else "—",
                    fmt_bytes(c.get("bytes")) if c.get("bytes") is not None else "—",
                    fmt_ns(c.get("time_ns"))]
            raw += [c.get("calls"), c.get("bytes"), c.get("time_ns")]
        t.add(fmt, raw)

    cats = lambda r, k: r["categories"].get(k, {"calls": 0, "bytes": 0, "time_ns": 0})
    row("JNI copy (paper: memcpy) [measured, corrected]", lambda r: cats(r, "jni_copy"))
    row("NIO copy [estimated]", lambda r: cats(r, "nio_copy"))
    row("write(2) [measured, corrected]", lambda r: (cats(r, "io_syscall").get("syscalls") or {}).get(
        "write", {"calls": 0, "bytes": 0, "time_ns": 0}))
    row("copyin (kernel) [estimated]", lambda r: {
        "calls": cats(r, "kernel_copy").get("calls"),
        "bytes": cats(r, "kernel_copy").get("copyin_bytes"),
        "time_ns": cats(r, "kernel_copy").get("time_ns")})
    row("exec. time, bare loop (median)", lambda r: {"time_ns": r["bare_loop_ns_median"]})
    row("exec. time, bare process (median)", lambda r: {"time_ns": r["bare_process_ns_median"]})
    row("exec. time, recorded loop", lambda r: {"time_ns": r["recorded_loop_ns"]})
    row("Java - C, bare loop (all Java-side cost)", lambda r: {
        "time_ns": r["bare_loop_ns_median"] - results["impls"]["c"]["bare_loop_ns_median"]})
    for i, label in enumerate(PROBE_EFFECT_HEADERS):
        fmt, raw = [label], [label]
        for n in names:
            cells, vals = probe_effect_cells(results["impls"][n].get("probe_effect"))
            fmt += ["", "", cells[i]]
            raw += [None, None, vals[i]]
        t.add(fmt, raw)
    return t
