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

The blocking-io truth assumes a Java write(2) costs the kernel what the C loop's does. That is
checked, not assumed: both loops run again under one sampler, bpftrace's profile probe on the
launched process (the same script, rate and classification for both), and the kernel time per
write of the writing thread is compared (see kernel_check).
"""
import argparse
import json
import math
import re
import statistics
from collections import Counter
from pathlib import Path
from typing import Dict, List

from jvmos.analyzers.tables import Table, fmt_ns
from jvmos import JvmosError
from jvmos import session
from jvmos.tools import IO_JAR, c_program, jar
from jvmos.experiments.common import (last_json, load_finished, log, out_dir, publish, run_bare,
                                      run_recorded, select_jdks, workload_json)
from jvmos.experiments.common import PROBE_EFFECT_HEADERS, probe_effect, probe_effect_cells

MODES = [("time", {"mode": "time"}), ("count", {"mode": "count"}), ("sample", {"mode": "sample"})]
EXAMPLES = """\
examples:
  jvmos run accuracy                     # 1,000,000 writes, 200,000 socket writes, 3 bare runs
  jvmos run accuracy --quick --out /tmp/acc
  jvmos run accuracy --render results/accuracy   # the tables again, nothing measured
"""


def parse(argv):
    p = argparse.ArgumentParser(prog="jvmos run accuracy", epilog=EXAMPLES,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--iterations", type=int, help="blocking-io writes (default 1,000,000)")
    p.add_argument("--writes", type=int, help="socket writes (default 200,000)")
    p.add_argument("--repeat", type=int,
                   help="bare runs per workload (median), and kernel-check runs (default 3)")
    p.add_argument("--pages", type=int, help="tomcat: pages per measurement (default 300)")
    p.add_argument("--jdk", help="JDK home (default: the first found)")
    p.add_argument("--out")
    p.add_argument("--quick", action="store_true",
                   help="300,000 writes, 50,000 socket writes, 2 runs, 60 pages (options given "
                        "explicitly still win)")
    p.add_argument("--kernel-hz", type=int, default=KERNEL_HZ,
                   help=f"kernel-time check: samples per second and CPU (default {KERNEL_HZ})")
    p.add_argument("--render", metavar="DIR",
                   help="write DIR's tables and notes again from DIR/accuracy.json (no measuring)")
    a = p.parse_args(argv)
    sizes = (300_000, 50_000, 2, 60) if a.quick else (1_000_000, 200_000, 3, 300)
    for name, default in zip(("iterations", "writes", "repeat", "pages"), sizes):
        if getattr(a, name) is None:
            setattr(a, name, default)
    if min(a.iterations, a.writes, a.repeat, a.pages, a.kernel_hz) <= 0:
        raise JvmosError("--iterations, --writes, --repeat, --pages and --kernel-hz must be positive")
    return a


def _sampled(s, cats):
    """Sampled time in these categories, or None when no sample fell in them (zero samples is
    'below the sampler's resolution', not 0 ns); and the number of samples."""
    samp = (s.get("sampling") or {}).get("categories", {})
    n = sum(samp.get(c, {}).get("samples", 0) for c in cats)
    return (sum(samp.get(c, {}).get("time_ns", 0) for c in cats) if n else None), n


def _traced(c, cats):
    """Probed time in these categories; None when a category present has no time (unknown)."""
    vals = [c[k].get("time_ns") for k in cats if k in c]
    if any(v is None for v in vals):
        return None
    return sum(vals)


def estimates(s: dict, mode: str) -> dict:
    c = s["categories"]
    if mode == "sample":
        copy, ncopy = _sampled(s, ("jni_copy", "nio_copy"))
        sysc, nsys = _sampled(s, ("io_syscall", "kernel_copy"))
        return {"copy_ns": copy, "syscall_ns": sysc, "copy_samples": ncopy, "syscall_samples": nsys}
    return {"copy_ns": _traced(c, ("jni_copy", "nio_copy")), "syscall_ns": _traced(c, ("io_syscall",))}


def err(est, truth):
    return None if not truth or est is None else 100.0 * (est - truth) / truth


def _pct(v, fmt="+.0f"):
    return "—" if v is None else f"{v:{fmt}}%"


# --- the kernel-time check of the blocking-io truth ----------------------------------------------
KERNEL_HZ = 4999            # samples per second and CPU (prime: not in step with a periodic timer)
# one sample per tick of each CPU running the launched process: its thread, the privilege level
# it was interrupted at (cs & 3: 0 kernel, 3 user), and its kernel stack
KERNEL_SAMPLER = 'profile:hz:{hz} /pid == cpid/ {{ @s[tid, reg("cs") & 3, kstack] = count(); }}'
WRITE_BODY = re.compile(r"^(__x64_sys_write|__ia32_sys_write|__se_sys_write|__do_sys_write|"
                        r"ksys_write)$")
OTHER_SYSCALL = re.compile(r"^(__x64_sys_|__ia32_sys_|__se_sys_|__do_sys_|ksys_)\w+$")
SYSCALL_ENTRY = re.compile(r"^entry_SYSCALL_64\w*$")
# another tracer's work in the loop's thread: a uprobe's trap or a uretprobe's return (its own
# system call on recent kernels) in a library the loop uses, or system-call tracepoints with perf
# or BPF attached (the slow entry and exit paths). Not the loop's cost: counted apart, and warned.
TRACER = re.compile(r"^(asm_exc_int3|\w*uprobe\w*|\w*uretprobe\w*|syscall_trace_enter|"
                    r"syscall_exit_work|perf_syscall_\w+|perf_call_bpf_\w+|trace_call_bpf|"
                    r"perf_tp_event|_*bpf_prog_\w+|ftrace_syscall_\w+)$")


def kernel_stack_kind(stack: List[str]) -> str:
    """A kernel-mode sample's place, from its stack (leaf first, 'symbol+offset' or 'symbol'):
    tracer (another tracer's probe work, see TRACER), write (inside write(2)'s handler), other_syscall (inside
    another system call's handler), syscall_path (system-call entry, dispatch or exit, no handler
    on the stack: the part every call pays), other (interrupts, page faults, a stack not
    resolved)."""
    names = [f.strip().split("+")[0] for f in stack if f.strip()]
    if any(TRACER.match(f) for f in names):
        return "tracer"
    if any(WRITE_BODY.match(f) for f in names):
        return "write"
    if any(OTHER_SYSCALL.match(f) for f in names):
        return "other_syscall"
    if names and SYSCALL_ENTRY.match(names[-1]):
        return "syscall_path"
    return "other"


def parse_kernel_samples(bpftrace_json: str) -> Dict[int, Counter]:
    """bpftrace -f json output of KERNEL_SAMPLER -> {tid: Counter(user=, write=, ...)}."""
    by_tid: Dict[int, Counter] = {}
    for line in bpftrace_json.splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if d.get("type") != "map" or "@s" not in d.get("data", {}):
            continue
        for key, n in d["data"]["@s"].items():
            tid, mode, stack = key.split(",", 2)
            frames = stack.splitlines()
            kind = "user" if int(mode) == 3 else kernel_stack_kind(frames)
            c = by_tid.setdefault(int(tid), Counter())
            c[kind] += int(n)
            if kind == "write":
                c["write:" + write_callee(frames)] += int(n)
    return by_tid


def write_callee(stack: List[str]) -> str:
    """The function write's handler was in (the frame below the handler's outermost frame), or
    the handler itself when the sample fell in its own code."""
    names = [f.strip().split("+")[0] for f in stack if f.strip()]
    i = max(i for i, f in enumerate(names) if WRITE_BODY.match(f))
    while i > 0 and WRITE_BODY.match(names[i - 1]):
        i -= 1
    return names[i - 1] if i > 0 else names[i]


def writer_kernel_ns(by_tid: Dict[int, Counter], hz: int, writes: int) -> dict:
    """Kernel time per write(2) of the thread that wrote (the one with the most samples inside
    write's handler): samples in the handler plus samples on the system-call path (entry,
    dispatch, exit: the writer's other system calls pay it too, so this part is an upper bound),
    each sample 1/hz s of CPU, with a 95% Poisson interval (1.96 sqrt(n))."""
    if not by_tid or writes <= 0:
        raise JvmosError("kernel-time check: no samples or no writes")
    tid, c = max(by_tid.items(), key=lambda kv: kv[1]["write"])
    n = c["write"] + c["syscall_path"]
    per = 1e9 / hz / writes
    return {"thread_rank": tid, "samples": dict(c), "samples_write": c["write"],
            "samples_syscall_path": c["syscall_path"], "samples_counted": n,
            "samples_tracer": c["tracer"], "writes": writes, "hz": hz,
            "ns_per_write": n * per, "ns_per_write_err95": 1.96 * math.sqrt(n) * per,
            "handler_ns_per_write": c["write"] * per,
            "handler_ns_per_write_err95": 1.96 * math.sqrt(c["write"]) * per,
            "handler_ns_per_write_by_callee": {k.split(":", 1)[1]: v * per for k, v in c.items()
                                               if k.startswith("write:")}}


def ratio_ci95(n_num: int, w_num: int, n_den: int, w_den: int):
    """(n_num/w_num) / (n_den/w_den) with a 95% interval from the two Poisson counts."""
    if not (n_num and n_den and w_num and w_den):
        return None, None
    r = (n_num / w_num) / (n_den / w_den)
    rel = 1.96 * math.sqrt(1 / n_num + 1 / n_den)
    return r, [r * math.exp(-rel), r * math.exp(rel)]


def sample_kernel(cmd: List[str], hz: int, out: Path) -> dict:
    """Run cmd under the kernel sampler; its samples by thread, and the workload's JSON line."""
    if any(ch.isspace() for arg in cmd for ch in arg):
        raise JvmosError(f"kernel-time check: bpftrace -c splits at spaces: {cmd}")
    out.parent.mkdir(parents=True, exist_ok=True)
    r = session.run_command(KERNEL_SAMPLER.format(hz=hz), " ".join(cmd), "the kernel-time check",
                            output=out, map_keys="65536", check=False)
    wl = last_json(r.stdout)
    text = out.read_text(errors="replace") if out.exists() else ""
    if r.returncode != 0 or not wl or '"@s"' not in text:
        tail = (r.stderr.strip().splitlines() or ["no output"])[-1]
        raise JvmosError(f"kernel-time check failed (exit {r.returncode}): {' '.join(cmd)}: {tail}")
    # bpftrace reports a kernel stack it could not store (a stack-map collision) as an error line;
    # that sample is counted under an empty stack ('other')
    lost = sum(1 for l in r.stderr.splitlines() if "failed to look up stack id" in l)
    return {"by_tid": parse_kernel_samples(text), "workload": wl, "stacks_lost": lost}


def kernel_check(cmds: dict, repeat: int, hz: int, out: Path) -> dict:
    """The C loop and the Java loop, interleaved `repeat` times under the same sampler; the
    samples of one side's runs are added up, thread by rank (the writer first)."""
    tot = {k: {} for k in ("c", "blocking-io")}
    writes = {k: 0 for k in tot}
    lost = {k: 0 for k in tot}
    for r in range(repeat):
        for k in tot:
            log(f"kernel-time check {r + 1}/{repeat}: {k} under profile:hz:{hz}")
            res = sample_kernel(cmds[k], hz, out / "runs" / "kernel-check" / f"{k}-{r + 1}.json")
            ranked = sorted(res["by_tid"].values(), key=lambda c: -c["write"])
            for i, c in enumerate(ranked):
                tot[k].setdefault(i, Counter()).update(c)
            writes[k] += int(res["workload"].get("ops") or 0)
            lost[k] += res["stacks_lost"]
    c = writer_kernel_ns(tot["c"], hz, writes["c"])
    j = writer_kernel_ns(tot["blocking-io"], hz, writes["blocking-io"])
    res = {"hz": hz, "runs_per_side": repeat, "c": c, "java": j,
           "sampler": KERNEL_SAMPLER.format(hz=hz), "warnings": []}
    res["java_over_c"], res["java_over_c_ci95"] = ratio_ci95(
        j["samples_counted"], j["writes"], c["samples_counted"], c["writes"])
    res["handler_java_over_c"], res["handler_java_over_c_ci95"] = ratio_ci95(
        j["samples_write"], j["writes"], c["samples_write"], c["writes"])
    for name, side, k in (("C", c, "c"), ("Java", j, "blocking-io")):
        if side["samples_tracer"]:
            res["warnings"].append(
                f"the {name} loop's writing thread spent {side['samples_tracer']} samples in "
                "another tracer's probes (uprobes on a library it uses, or system-call "
                "tracepoints): left out of its kernel time, but they also slow what is counted")
        if lost[k]:
            res["warnings"].append(f"{lost[k]} kernel stacks of the {name} loop were not stored "
                                   "by bpftrace (counted as 'other')")
    return res


def main(argv) -> int:
    a = parse(argv)
    if a.render:
        out = Path(a.render)
        return report(out, load_finished(out / "accuracy.json", "accuracy", "runs"))
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
    try:
        kc = kernel_check(cmds, a.repeat, a.kernel_hz, out)
    except JvmosError as e:                 # the rest of the experiment does not need it
        log(f"warning: {e}")
        kc = {"error": str(e)}
    truth["blocking-io"]["kernel_check"] = kc
    results = {"experiment": "accuracy", "jdk": jvm.as_dict(), "iterations": a.iterations,
               "repeat": a.repeat, "bare_loop_ns": bare, "bare_loop_median_ns": med,
               "truth": truth, "runs": {}}
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
                    if tr["java_side_ns"] > 0 and est["copy_ns"] is not None else None
            results["runs"][f"{wl}/{mode}"] = row
    tomcat_rows(a, java, out, results)
    return report(out, results)


def report(out: Path, results: dict) -> int:
    """accuracy.md/.csv/.json and the notes, from the measured runs (also --render's)."""
    med = results["bare_loop_median_ns"]
    kc = results["truth"]["blocking-io"]["kernel_check"]
    # a run made before results kept them: the bare runs kept, the C loop's writes per
    # kernel-check run
    repeat = results.get("repeat", len(results["bare_loop_ns"]["c"]))
    iterations = results.get("iterations")
    if iterations is None and "error" not in kc:
        iterations = kc["c"]["writes"] // kc["runs_per_side"]
    t = accuracy_table(results)
    notes = [
        f"bare loops (median of {repeat}): C {fmt_ns(med['c'])}, Java {fmt_ns(med['blocking-io'])}, "
        f"socket {fmt_ns(med['socket'])}; same invocation, interleaved.",
        "syscall truth: the C loop's run time (the same write(2) calls and nothing else), which "
        "assumes a Java write(2) costs the kernel what the C loop's does: the ground truth check "
        "below measures how far that holds. Java side "
        "(truth): Java loop minus C loop; the JNI/NIO copy is one part of it, so 'copy share' is "
        "not an error but the part jvmos attributes to copying.",
        "slowdown: recorded loop time over bare loop time, from the workload's own clock.",
        "sample mode: time = samples × sampling interval; '—' where no sample fell in the "
        "categories (below the sampler's resolution, not 0 ns).",
        "goal figures (issue 3): corrected times within ±15% of the truth; sample mode within "
        "±15% with a slowdown below 5%. Printed as reached, not asserted.",
    ]
    kt = kernel_check_table(kc, med["c"], iterations)
    notes.append(kernel_check_note(kc))
    publish(out, "accuracy", [t, kt], results, notes)
    return 0


def accuracy_table(results: dict) -> Table:
    """Each mode's estimates against the truth, and its slowdown, workload by workload."""
    t = Table(f"Accuracy of jvmos's times, and its slowdown (JDK {results['jdk']['version']})",
              ["workload", "mode", "syscall time", "truth", "error", "copy time (JNI+NIO)",
               "Java side (truth)", "copy share", "slowdown"] + PROBE_EFFECT_HEADERS)
    for key, row in results["runs"].items():
        wl, mode = key.split("/", 1)
        est, slow = row["estimates"], row["slowdown_pct"]
        pe, pv = probe_effect_cells(row["probe_effect"])
        if wl == "tomcat":
            t.add(["tomcat", mode, fmt_ns(est["syscall_ns"]), "—", "—", fmt_ns(est["copy_ns"]),
                   "—", "—", f"{slow:+.0f}%"] + pe,
                  ["tomcat", mode, est["syscall_ns"], None, None, est["copy_ns"], None, None,
                   slow] + pv)
            continue
        tr = results["truth"].get(wl)
        t.add([wl, mode, fmt_ns(est["syscall_ns"]), fmt_ns(tr["syscall_ns"]) if tr else "—",
               _pct(row.get("syscall_error_pct")), fmt_ns(est["copy_ns"]),
               fmt_ns(tr["java_side_ns"]) if tr else "—",
               _pct(row.get("copy_share_of_java_side_pct"), ".0f"), _pct(slow)] + pe,
              [wl, mode, est["syscall_ns"], tr["syscall_ns"] if tr else None,
               row.get("syscall_error_pct"), est["copy_ns"],
               tr["java_side_ns"] if tr else None, row.get("copy_share_of_java_side_pct"),
               slow] + pv)
    return t


def _ratio_text(r, ci) -> str:
    if r is None:
        return "not measured (no sample on one side)"
    lo, hi = ci
    where = "1 inside the 95% interval" if lo <= 1.0 <= hi else "1 outside the 95% interval"
    return f"{r:.2f} (95% {lo:.2f}–{hi:.2f}, {where})"


def kernel_check_table(kc: dict, c_loop_ns: float, iterations: int) -> Table:
    t = Table("Ground truth check: C write(2) vs Java write(2), kernel time per call "
              f"(bpftrace profile:hz:{kc.get('hz', '?')}, the same sampler for both)",
              ["loop", "kernel time per write", "±95%", "in write's handler", "±95%",
               "samples (handler + syscall path)", "other tracers' samples", "writes sampled",
               "C loop time per write (the truth's unit)"])
    if "error" in kc:
        t.add(["—", f"not measured: {kc['error']}"] + [""] * 7)
        return t
    c, j = kc["c"], kc["java"]
    for name, side in (("C", c), ("Java", j)):
        per_iter = c_loop_ns / iterations if name == "C" else None
        t.add([name, fmt_ns(side["ns_per_write"]), fmt_ns(side["ns_per_write_err95"]),
               fmt_ns(side["handler_ns_per_write"]), fmt_ns(side["handler_ns_per_write_err95"]),
               f"{side['samples_counted']:,} ({side['samples_write']:,} + "
               f"{side['samples_syscall_path']:,})",
               f"{side['samples_tracer']:,}", f"{side['writes']:,}", fmt_ns(per_iter)],
              [name, side["ns_per_write"], side["ns_per_write_err95"], side["handler_ns_per_write"],
               side["handler_ns_per_write_err95"], side["samples_counted"], side["samples_tracer"],
               side["writes"], per_iter])
    t.add(["Java/C", _ratio_text(kc["java_over_c"], kc["java_over_c_ci95"]), "",
           _ratio_text(kc["handler_java_over_c"], kc["handler_java_over_c_ci95"]), "", "", "", "",
           ""],
          ["Java/C", kc["java_over_c"], None, kc["handler_java_over_c"], None, None, None, None,
           None])
    return t


def kernel_check_note(kc: dict) -> str:
    if "error" in kc:
        return ("C write(2) vs Java write(2) kernel time per call: not measured "
                f"({kc['error']}); the syscall truth's assumption (Java/C = 1) is untested.")
    c, j = kc["c"], kc["java"]
    text = (f"C write(2) vs Java write(2) kernel time per call: {c['ns_per_write']:.0f} ns vs "
            f"{j['ns_per_write']:.0f} ns ({c['samples_counted']:,} and {j['samples_counted']:,} "
            f"samples, ±{c['ns_per_write_err95']:.0f} and ±{j['ns_per_write_err95']:.0f} ns at "
            f"95%); Java/C {_ratio_text(kc['java_over_c'], kc['java_over_c_ci95'])}. In write's "
            f"handler alone: {c['handler_ns_per_write']:.0f} vs {j['handler_ns_per_write']:.0f} ns,"
            f" Java/C {_ratio_text(kc['handler_java_over_c'], kc['handler_java_over_c_ci95'])}. "
            "The syscall truth (the C loop's time) assumes Java/C = 1. Kernel time = samples of "
            "the writing thread in write's handler plus on the system-call path (entry, dispatch, "
            "exit; the thread's other system calls pay that path too, so it is an upper bound), "
            "each sample 1/hz s of CPU; the same bpftrace profile script for both loops.")
    cc, jc = c["handler_ns_per_write_by_callee"], j["handler_ns_per_write_by_callee"]
    parts = sorted(set(cc) | set(jc), key=lambda k: -(cc.get(k, 0) + jc.get(k, 0)))
    if parts:
        text += (" In write's handler by function (ns per write, C vs Java): " + ", ".join(
            f"{k} {cc.get(k, 0):.0f} vs {jc.get(k, 0):.0f}" for k in parts[:6]) + ".")
    for w in kc["warnings"]:
        text += f" Warning: {w}."
    return text


def tomcat_rows(a, java, out, results):
    """Tomcat: pages per second bare (before and after) and while each mode is attached, kept
    in results["runs"]."""
    import subprocess
    import time
    from jvmos import JvmosError
    from jvmos import record as rec
    from jvmos.tools import TOMCAT_JAR
    from jvmos.experiments.jni_census import fetch_pages

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
            # a bare load follows: every link is closed when record returns
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
        results["tomcat_bare_ns"] = bare
    finally:
        srv.terminate()
        try:
            srv.wait(timeout=30)
        except subprocess.TimeoutExpired:
            srv.kill()
