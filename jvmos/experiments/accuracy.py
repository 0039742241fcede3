"""`jvmos run accuracy`: how right jvmos's times are, and what each mode costs the workload.

Ground truth comes from runs without any probe made in the same invocation:
  blocking-io  the C loop makes the same write(2) calls as the Java loop and nothing else, so
               its run time is the syscall time of the Java loop; Java minus C is what the Java
               side adds around the same syscalls (JNI transitions, copies, Java code).
  socket       10-byte java.net.Socket writes: only the bare throughput (for the slowdown).
  tomcat       embedded Tomcat serving a 10 kB page to a loopback client: the bare page rate
               before and after, against the rate while each mode is attached.
Each mode (time corrected, count, sample) records the same workload once; its estimates are
set against the ground truth, and its slowdown is its loop time over the bare loop time.
"""
import argparse
import statistics

from jvmos.analyzers.tables import Table, fmt_ns
from ..tools import IO_JAR, c_program, jar
from .common import log, out_dir, run_bare, run_recorded, select_jdks, workload_json, write_outputs
from .common import PROBE_EFFECT_HEADERS, probe_effect, probe_effect_cells

MODES = [("time", {"mode": "time"}), ("count", {"mode": "count"}), ("sample", {"mode": "sample"})]
EXAMPLES = """\
examples:
  jvmos run accuracy                     # 1,000,000 writes, 200,000 socket writes, 3 bare runs
  jvmos run accuracy --quick --out /tmp/acc
"""


def parse(argv):
    p = argparse.ArgumentParser(prog="jvmos run accuracy", epilog=EXAMPLES,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--iterations", type=int, default=1_000_000, help="blocking-io writes")
    p.add_argument("--writes", type=int, default=200_000, help="socket writes")
    p.add_argument("--repeat", type=int, default=3, help="bare runs per workload (median)")
    p.add_argument("--pages", type=int, default=300, help="tomcat: pages per measurement")
    p.add_argument("--jdk", help="JDK home (default: the first found)")
    p.add_argument("--out")
    p.add_argument("--quick", action="store_true")
    a = p.parse_args(argv)
    if a.quick:
        a.iterations, a.writes, a.repeat, a.pages = 300_000, 50_000, 2, 60
    return a


def _sampled(s, cats):
    samp = (s.get("sampling") or {}).get("categories", {})
    return sum(samp.get(c, {}).get("time_ns", 0) for c in cats)


def estimates(s: dict, mode: str) -> dict:
    c = s["categories"]
    if mode == "sample":
        return {"copy_ns": _sampled(s, ("jni_copy", "nio_copy")),
                "syscall_ns": _sampled(s, ("io_syscall", "kernel_copy"))}
    return {"copy_ns": sum((c.get(k, {}).get("time_ns") or 0) for k in ("jni_copy", "nio_copy")),
            "syscall_ns": c.get("io_syscall", {}).get("time_ns") or 0}


def err(est, truth):
    return None if not truth else 100.0 * (est - truth) / truth


def main(argv) -> int:
    a = parse(argv)
    jvm = select_jdks([a.jdk] if a.jdk else None)[0]
    out = out_dir(a.out, "accuracy")
    java = str(jvm.home / "bin" / "java")
    cmds = {
        "c": [str(c_program("blocking_io")), "--iterations", str(a.iterations), "--size", "10"],
        "blocking-io": [java, "-cp", str(jar(IO_JAR)), "org.jvmos.workloads.BlockingIo",
                        "--iterations", str(a.iterations), "--size", "10", "--target", "/dev/null"],
        "socket": [java, "-cp", str(jar(IO_JAR)), "org.jvmos.workloads.SocketStream",
                   "--writes", str(a.writes), "--size", "10"],
    }
    bare = {k: [] for k in cmds}
    for r in range(a.repeat):
        for k, cmd in cmds.items():
            log(f"bare run {r + 1}/{a.repeat}: {k}")
            bare[k].append(run_bare(cmd)["elapsed_ns"])
    med = {k: statistics.median(v) for k, v in bare.items()}
    truth = {"blocking-io": {"syscall_ns": med["c"], "java_side_ns": med["blocking-io"] - med["c"]}}
    results = {"experiment": "accuracy", "jdk": jvm.as_dict(), "bare_loop_ns": bare,
               "bare_loop_median_ns": med, "truth": truth, "runs": {}}
    t = Table(f"Accuracy of jvmos's times, and its slowdown (JDK {jvm.version})",
              ["workload", "mode", "syscall time", "truth", "error", "copy time (JNI+NIO)",
               "Java side (truth)", "copy share", "slowdown"] + PROBE_EFFECT_HEADERS)
    for wl in ("blocking-io", "socket"):
        for mode, kw in MODES:
            log(f"recorded run: {wl}, --mode {mode}")
            res = run_recorded(f"{wl}-{mode}", cmds[wl], out, **kw)
            s = res.summary
            loop = workload_json(res).get("elapsed_ns")
            est = estimates(s, mode)
            slow = 100.0 * (loop - med[wl]) / med[wl] if loop else None
            row = {"estimates": est, "loop_ns": loop, "slowdown_pct": slow,
                   "jvmos_slowdown_estimate_pct": s["totals"].get("slowdown_pct"),
                   "probe_effect": probe_effect(
                       s["totals"], loop, med[wl], "loop time",
                       "no probe estimate: sample mode (async-profiler)" if mode == "sample"
                       else None),
                   "run_dir": str(res.run_dir.relative_to(out))}
            tr = truth.get(wl)
            if tr:
                row["syscall_error_pct"] = err(est["syscall_ns"], tr["syscall_ns"])
                row["copy_share_of_java_side_pct"] = 100.0 * est["copy_ns"] / tr["java_side_ns"] \
                    if tr["java_side_ns"] > 0 else None
            results["runs"][f"{wl}/{mode}"] = row
            pe, pv = probe_effect_cells(row["probe_effect"])
            t.add([wl, mode, fmt_ns(est["syscall_ns"]), fmt_ns(tr["syscall_ns"]) if tr else "—",
                   f"{row['syscall_error_pct']:+.0f}%" if tr else "—", fmt_ns(est["copy_ns"]),
                   fmt_ns(tr["java_side_ns"]) if tr else "—",
                   f"{row['copy_share_of_java_side_pct']:.0f}%" if tr and row.get("copy_share_of_java_side_pct") is not None else "—",
                   f"{slow:+.0f}%" if slow is not None else "—"] + pe,
                  [wl, mode, est["syscall_ns"], tr["syscall_ns"] if tr else None,
                   row.get("syscall_error_pct"), est["copy_ns"],
                   tr["java_side_ns"] if tr else None, row.get("copy_share_of_java_side_pct"),
                   slow] + pv)
    tomcat_rows(a, java, out, results, t)
    notes = [
        f"bare loops (median of {a.repeat}): C {fmt_ns(med['c'])}, Java {fmt_ns(med['blocking-io'])}, "
        f"socket {fmt_ns(med['socket'])}; same invocation, interleaved.",
        "syscall truth: the C loop's run time (the same write(2) calls and nothing else). Java side "
        "(truth): Java loop minus C loop; the JNI/NIO copy is one part of it, so 'copy share' is "
        "not an error but the part jvmos attributes to copying.",
        "slowdown: recorded loop time over bare loop time, from the workload's own clock.",
        "goal figures (issue 3): corrected times within ±15% of the truth; sample mode within "
        "±15% with a slowdown below 5%. Printed as reached, not asserted.",
    ]
    write_outputs(out, "accuracy", [t], results, notes)
    print(t.markdown())
    for n in notes:
        print(f"- {n}")
    print(f"\nresults: {out}/accuracy.md (and .csv, .json)")
    return 0


def tomcat_rows(a, java, out, results, t):
    """Tomcat: pages per second bare (before and after) and while each mode is attached."""
    import subprocess
    import time
    from .. import JvmosError
    from .. import record as rec
    from ..tools import TOMCAT_JAR
    from .jni_census import fetch_pages

    d = out / "runs" / "tomcat"
    d.mkdir(parents=True, exist_ok=True)
    port_file = d / "port"
    srv = subprocess.Popen([java, "-jar", str(jar(TOMCAT_JAR)), "--page-bytes", "10240",
                            "--max-requests", "0", "--max-seconds", "900",
                            "--port-file", str(port_file)],
                           stdout=open(d / "server-stdout.txt", "wb"),
                           stderr=open(d / "server-stderr.txt", "wb"))
    try:
        t0 = time.monotonic()
        while not port_file.exists():
            if srv.poll() is not None or time.monotonic() - t0 > 120:
                raise JvmosError(f"Tomcat did not start; see {d}/server-stderr.txt")
            time.sleep(0.1)
        port = int(port_file.read_text())
        fetch_pages(port, max(a.pages, 200), 10240)          # warm-up: JIT and class loading

        def timed():
            t1 = time.monotonic_ns()
            fetch_pages(port, a.pages, 10240)
            return time.monotonic_ns() - t1

        bare = [timed()]
        for mode, kw in MODES:
            log(f"recorded run: tomcat, --mode {mode}")
            took = {}
            res = rec.record(rec.Options(pid=srv.pid, out=d / mode, **kw,
                                         workload=lambda: took.setdefault("ns", timed()),
                                         log=lambda m: log(f"  [tomcat-{mode}] {m}")))
            bare.append(timed())
            base = statistics.median(bare)
            slow = 100.0 * (took["ns"] - base) / base
            results["runs"][f"tomcat/{mode}"] = {
                "pages": a.pages, "ns": took["ns"], "bare_ns": list(bare), "slowdown_pct": slow,
                "estimates": estimates(res.summary, mode),
                "jvmos_slowdown_estimate_pct": res.summary["totals"].get("slowdown_pct"),
                "probe_effect": probe_effect(
                    res.summary["totals"], took["ns"], base, "page fetch wall time",
                    "no probe estimate: sample mode (async-profiler)" if mode == "sample"
                    else None),
                "run_dir": str(res.run_dir.relative_to(out))}
            est = results["runs"][f"tomcat/{mode}"]["estimates"]
            pe, pv = probe_effect_cells(results["runs"][f"tomcat/{mode}"]["probe_effect"])
            t.add(["tomcat", mode, fmt_ns(est["syscall_ns"]), "—", "—", fmt_ns(est["copy_ns"]),
                   "—", "—", f"{slow:+.0f}%"] + pe,
                  ["tomcat", mode, est["syscall_ns"], None, None, est["copy_ns"], None, None,
                   slow] + pv)
        results["tomcat_bare_ns"] = bare
    finally:
        srv.terminate()
        try:
            srv.wait(timeout=30)
        except subprocess.TimeoutExpired:
            srv.kill()
