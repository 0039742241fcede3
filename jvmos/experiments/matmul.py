"""`jvmos run matmul`: seed 001's distributed matrix multiplication on one machine: a manager
JVM and k worker JVMs (its children) on 127.0.0.1 multiply two random n x n integer matrices
over RMI with Serializable arguments, RMI with Externalizable arguments, stream sockets and
datagram sockets (stop-and-wait), with the simple parallel algorithm (SPA) and the modified
Cannon's algorithm (MCA) (workloads/java/matmul); every product validated against the
sequential one. Per n: the sequential algorithm N times, then every mechanism x algorithm N
times, each a new manager with new workers: total time (seed Table 4.1), communication time
(Table 4.2), sequential time and speedup (Table 4.3), Welch's t-tests between mechanisms; the
OS boundary per multiplication from recordings of the manager and all its workers; and the
programming effort of each mechanism as lines of code counted by pygount.
"""
import argparse
import os
import math
import shlex
from pathlib import Path
from typing import Dict, List, Optional

from jvmos import ROOT, JvmosError
from jvmos.analyzers import stats
from jvmos.analyzers.tables import Table, fmt_count
from jvmos.tools import MATMUL_JAR, jar
from jvmos.experiments import common
from jvmos.experiments.common import (Progress, boundary_counts, difference, headline, jdk_label,
                                      last_json, load_finished, log, out_dir, per_extra,
                                      record_script, run_bare, select_jdks, write_outputs)
from jvmos.experiments.server import kept_so_far, save_partial

MECHANISMS = ("rmi-serializable", "rmi-externalizable", "socket", "datagram")
ALGORITHMS = ("spa", "mca")
DEFAULT_SIZES = "100,200,300,400,500"
QUICK_SIZES = "60"          # --quick shows the result at one size (make demo)
MAX_N = 1000                 # seed 001's largest matrix
# one algorithm by default: each boundary recording starts 1 + k JVMs and drives a whole run
# under the probes (the default keeps make demo short)
DEFAULT_BOUNDARY = "spa:100"
QUICK_BOUNDARY = "socket:spa:60"   # one mechanism: --quick shows the boundary, make demo
REFERENCE = "socket"         # the t-tests compare every other mechanism with this one
ALPHA = 0.05
LEVEL = 0.95

EXAMPLES = """\
examples:
  jvmos run matmul                                 # n 100..500, 5 trials, k = 4 (long)
  jvmos run matmul --quick                         # n 60, 2 trials, boundary at socket:spa:60
  jvmos run matmul --mechanisms socket,datagram --algorithms mca --sizes 200,400 --trials 10
  jvmos run matmul --boundary socket:mca:200,datagram:mca:200 --boundary-repeat 20

--boundary takes ALGORITHM:N (every mechanism of --mechanisms) or MECHANISM:ALGORITHM:N
entries, or 'none'. Outputs: matmul.md/.csv/.json (total time, communication time, sequential
time and speedup, t-tests, the boundary per multiplication, lines of code), figures
matmul-total.png, matmul-comm.png and matmul-speedup.png (a panel per algorithm), each also as
.svg.
"""

# workloads/java/matmul/README.md, "The mechanisms, and their files": what each mechanism
# adds to the shared program (RmiSupport.java belongs to both RMI mechanisms)
SOURCE_DIR = Path("workloads/java/matmul/src/main/java/org/jvmos/workloads/matmul")
SHARED_FILES = ("Matmul.java", "MatmulWorker.java", "WorkerProcesses.java", "Spa.java",
                "Mca.java", "Matrices.java", "Message.java", "Mailbox.java", "Node.java",
                "Transport.java", "Transports.java")
MECHANISM_FILES = {
    "rmi-serializable": ("RmiSerializableTransport.java", "RmiSupport.java"),
    "rmi-externalizable": ("RmiExternalizableTransport.java", "RmiSupport.java"),
    "socket": ("SocketTransport.java",),
    "datagram": ("DatagramTransport.java",),
}


def mca_grid(k: int) -> tuple:
    """MCA's grid of workers as the workload makes it: pr = the largest divisor of k not
    above sqrt(k), pc = k / pr."""
    pr = max(d for d in range(1, math.isqrt(k) + 1) if k % d == 0)
    return pr, k // pr


def check_mca(n: int, k: int, where: str):
    pr, pc = mca_grid(k)
    if n % pr or n % pc:
        raise JvmosError(f"{where}: MCA with k={k} uses a {pr}x{pc} grid of workers, so n must "
                         f"be divisible by {pr} and {pc} (n={n}); choose other sizes or "
                         "leave mca out of --algorithms")


def parse_list(text: str, known, what: str) -> List[str]:
    """common.parse_list, and no item twice (each is a cell of the tables)."""
    out = common.parse_list(text, known, what)
    if len(set(out)) != len(out):
        raise JvmosError(f"a {what} is given twice in '{text}'")
    return out


def parse_size(text: str, what: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= MAX_N:
        raise JvmosError(f"bad {what} '{text}': a whole number 1..{MAX_N:,}")
    return n


def parse_sizes(text: str) -> List[int]:
    sizes = [parse_size(x.strip(), "size") for x in text.split(",") if x.strip()]
    if not sizes:
        raise JvmosError("--sizes is empty")
    if len(set(sizes)) != len(sizes):
        raise JvmosError(f"a size is given twice in --sizes {text}")
    return sizes


def parse_boundary(text: str, mechanisms: List[str]) -> List[tuple]:
    """[(mechanism, algorithm, n)] from ALGORITHM:N (every mechanism) or MECHANISM:ALGORITHM:N
    entries; [] for 'none'."""
    if text.strip() == "none":
        return []
    out = []
    for part in (x.strip() for x in text.split(",") if x.strip()):
        f = part.split(":")
        if len(f) == 2:
            mechs, alg, n = mechanisms, f[0], f[1]
        elif len(f) == 3:
            mechs, alg, n = [f[0]], f[1], f[2]
        else:
            raise JvmosError(f"bad --boundary entry '{part}': write ALGORITHM:N or "
                             "MECHANISM:ALGORITHM:N (e.g. spa:100 or socket:mca:100), or 'none'")
        for m in mechs:
            if m not in MECHANISMS:
                raise JvmosError(f"unknown mechanism '{m}' in --boundary entry '{part}' "
                                 f"(known: {', '.join(MECHANISMS)})")
        if alg not in ALGORITHMS:
            raise JvmosError(f"unknown algorithm '{alg}' in --boundary entry '{part}' "
                             f"(known: {', '.join(ALGORITHMS)})")
        size = parse_size(n, f"n in --boundary entry '{part}'")
        for m in mechs:
            if (m, alg, size) not in out:
                out.append((m, alg, size))
    if not out:
        raise JvmosError("--boundary is empty (write 'none' for no recording)")
    return out


def parse(argv):
    p = argparse.ArgumentParser(prog="jvmos run matmul", epilog=EXAMPLES,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--mechanisms", default=",".join(MECHANISMS),
                   help="comma-separated (default all four: " + ", ".join(MECHANISMS) + ")")
    p.add_argument("--algorithms", default=",".join(ALGORITHMS),
                   help="comma-separated: spa, mca (default both; the sequential algorithm "
                        "always runs, for the speedup)")
    p.add_argument("--sizes", help=f"matrix sizes n, comma-separated (default {DEFAULT_SIZES}; "
                                   f"at most {MAX_N:,})")
    p.add_argument("--k", type=int, default=4, help="workers (default 4, as seed 001)")
    p.add_argument("--trials", type=int, default=5,
                   help="trials per cell, each a new manager and new workers (default 5)")
    p.add_argument("--seed", type=int, default=1,
                   help="seed of the random matrices; trial i uses seed + i, the same for every "
                        "mechanism (default 1)")
    p.add_argument("--boundary", help="which runs are recorded at the OS boundary: "
                                      "ALGORITHM:N or MECHANISM:ALGORITHM:N, comma-separated "
                                      f"(default {DEFAULT_BOUNDARY} for every mechanism; "
                                      "'none' for none)")
    p.add_argument("--boundary-repeat", type=int, default=10, metavar="K",
                   help="the boundary per multiplication is (a recording of 1 + K "
                        "multiplications - one of 1) / K, the same workers in a run "
                        "(default 10)")
    p.add_argument("--max-seconds", type=int, default=600,
                   help="bound on each workload run (every receive gives up at it; default 600)")
    p.add_argument("--jdk", help="JDK home (default: the first found)")
    p.add_argument("--out", help="output directory (default results/runs/<time>-matmul)")
    p.add_argument("--quick", action="store_true",
                   help=f"sizes {QUICK_SIZES}, 2 trials, boundary at {QUICK_BOUNDARY} only")
    p.add_argument("--render", metavar="DIR",
                   help="write DIR's tables, t-tests and figures again from DIR/matmul.json "
                        "(no measuring)")
    t = p.add_argument_group("test options (passed to the workload; for jvmos's own tests)")
    t.add_argument("--drop-every", type=int, default=0, metavar="N",
                   help="datagram: every Nth data packet a node sends is dropped as if lost "
                        "(N >= 2), to exercise the retransmissions")
    t.add_argument("--worker-start-delay-ms", type=int, default=0, metavar="MS",
                   help="each worker sleeps MS before opening its endpoint (a late worker)")
    t.add_argument("--worker-start-timeout", type=int, default=30, metavar="S",
                   help="seconds the manager waits for its workers to announce (default 30)")
    a = p.parse_args(argv)
    if a.quick:
        a.trials = min(a.trials, 2)
    a.mechanisms = parse_list(a.mechanisms, MECHANISMS, "mechanism(s)")
    a.algorithms = parse_list(a.algorithms, ALGORITHMS, "algorithm(s)")
    a.sizes = parse_sizes(a.sizes or (QUICK_SIZES if a.quick else DEFAULT_SIZES))
    if not 1 <= a.k <= 64:
        raise JvmosError(f"--k must be 1..64 workers (got {a.k})")
    if a.trials < 2:
        raise JvmosError("--trials must be at least 2 (a standard deviation needs two)")
    if a.boundary_repeat <= 0:
        raise JvmosError("--boundary-repeat must be positive")
    if a.max_seconds <= 0 or a.worker_start_timeout <= 0 or a.worker_start_delay_ms < 0:
        raise JvmosError("--max-seconds and --worker-start-timeout must be positive and "
                         "--worker-start-delay-ms not negative")
    if a.drop_every and (a.drop_every < 2 or "datagram" not in a.mechanisms):
        raise JvmosError("--drop-every N needs N >= 2 and the datagram mechanism in "
                         "--mechanisms (it drops datagram packets only)")
    a.boundary = parse_boundary(a.boundary or (QUICK_BOUNDARY if a.quick else DEFAULT_BOUNDARY),
                                a.mechanisms)
    for n in a.sizes:
        if "spa" in a.algorithms and a.k > n:
            raise JvmosError(f"--sizes: SPA gives each of k={a.k} workers at least one row, "
                             f"so n must be at least k (n={n})")
        if "mca" in a.algorithms:
            check_mca(n, a.k, "--sizes")
    for m, alg, n in a.boundary:
        if alg == "spa" and a.k > n:
            raise JvmosError(f"--boundary {m}:{alg}:{n}: SPA needs n >= k={a.k}")
        if alg == "mca":
            check_mca(n, a.k, f"--boundary {m}:{alg}:{n}")
    return a


# ------------------------------------------------------------------------------ the runs

def workload_cmd(java: str, mechanism: Optional[str], algorithm: str, n: int, seed: int,
                 repeat: int, a) -> List[str]:
    """The manager's command line (mechanism None: the sequential algorithm, no workers)."""
    cmd = [java, "-jar", str(jar(MATMUL_JAR)), "--algorithm", algorithm, "--n", str(n),
           "--seed", str(seed), "--repeat", str(repeat), "--max-seconds", str(a.max_seconds)]
    if mechanism is None:
        return cmd
    cmd += ["--mechanism", mechanism, "--k", str(a.k),
            "--worker-start-timeout", str(a.worker_start_timeout)]
    if a.worker_start_delay_ms:
        cmd += ["--worker-start-delay-ms", str(a.worker_start_delay_ms)]
    if a.drop_every and mechanism == "datagram":
        cmd += ["--drop-every", str(a.drop_every)]
    return cmd


def checked(j: dict, name: str, repeat: int = 1) -> dict:
    """A run's JSON line, if its product(s) were validated; else the error naming the run."""
    if not j:
        raise JvmosError(f"{name}: the workload printed no result line")
    if j.get("validated") is not True or j.get("repeat", 1) != repeat:
        raise JvmosError(f"{name}: the product was not validated (validated="
                         f"{j.get('validated')}, repeat={j.get('repeat')} of {repeat})")
    return j


def app_bytes(j: dict) -> int:
    """Application bytes of a run: every message's bytes counted once, by its sender (the
    manager's and the workers'): 24-byte header + 4 bytes per int."""
    return (j.get("bytes_sent") or 0) + sum(j.get("workers_bytes_sent") or [])


def bare(cmd: List[str], name: str, a) -> dict:
    """One run without probes; a failure is one line that names the run first."""
    try:
        return run_bare(cmd, timeout=a.max_seconds + 120)
    except JvmosError as e:
        raise JvmosError(f"{name}: {e}") from None


def sequential_cell(java: str, n: int, a) -> dict:
    trials = []
    for i in range(a.trials):
        name = f"sequential n={n} trial {i + 1}"
        trials.append(checked(bare(workload_cmd(java, None, "sequential", n, a.seed + i, 1, a),
                                   name, a), name))
    ms = [t["total_ms"] for t in trials]
    return {"n": n, "trials": trials, "total_ms": ms, "total": stats.summary(ms, LEVEL)}


def cell(java: str, mech: str, alg: str, n: int, a) -> dict:
    """N trials of one mechanism x algorithm at n, each a new manager (and new workers)."""
    trials = []
    for i in range(a.trials):
        name = f"{mech} {alg} n={n} trial {i + 1}"
        trials.append(checked(bare(workload_cmd(java, mech, alg, n, a.seed + i, 1, a), name, a),
                              name))
    return cell_from_trials(mech, alg, n, a.k, trials)


GC_KEYS = ("gc_young_count", "gc_young_ms", "gc_full_count", "gc_full_ms",
           "gc_concurrent_count", "gc_concurrent_ms", "allocated_bytes")


def gc_of_run(j: dict) -> Optional[dict]:
    """The garbage collection of one run, summed over its JVMs (the manager's and each
    worker's own MXBean figures over its whole life, start-up included); None when the
    workload did not report it or a JVM could not give a figure (-1)."""
    out = {}
    for key in GC_KEYS:
        m, w = j.get(f"manager_{key}"), j.get(f"workers_{key}")
        if m is None or (w is None and j.get("workers_calls") is not None):
            return None
        vals = [m] + list(w or [])
        if any(v < 0 for v in vals):        # -1: a JVM could not give this figure
            return None
        out[key] = sum(vals)
    out["jvms"] = 1 + len(j.get(f"workers_{GC_KEYS[0]}") or [])
    return out


def cell_from_trials(mech: str, alg: str, n: int, k: int, trials: List[dict]) -> dict:
    total = [t["total_ms"] for t in trials]
    comm = [t["manager_comm_ms"] for t in trials]
    wcomm = [sum(t["workers_comm_ms"]) / len(t["workers_comm_ms"]) for t in trials]
    return {"mechanism": mech, "algorithm": alg, "n": n, "k": k, "grid": trials[0].get("grid"),
            "trials": trials, "total_ms": total, "comm_ms": comm, "workers_comm_ms": wcomm,
            "send_ms": [t["manager_send_ms"] for t in trials],
            "recv_ms": [t["manager_recv_ms"] for t in trials],
            "total": stats.summary(total, LEVEL), "comm": stats.summary(comm, LEVEL),
            "workers_comm": stats.summary(wcomm, LEVEL),
            "calls": trials[0]["calls"], "app_bytes": app_bytes(trials[0]),
            "retransmissions": [t.get("retransmissions") or 0 for t in trials],
            "gc": [gc_of_run(t) for t in trials]}


# -------------------------------------------------------------- the boundary, per mechanism

# the manager is started by a shell that keeps its pid; the workers are its children, so the
# recorded tree is sh, the manager and the k workers. The manager's stderr is the recording's
# (its error line is what a failed recording reports).
SCRIPT = """#!/bin/sh
# one recorded run of jvmos run matmul: the manager JVM and its k worker JVMs
d={dir}
{cmd} > "$d/manager.out" &
m=$!
echo $m > "$d/manager.pid"
wait $m
"""


def boundary(java: str, mech: str, alg: str, n: int, extra: int, a, out: Path) -> dict:
    """The OS boundary of one multiplication: the manager and its workers recorded twice
    (io, threads, links, mem layers), making 1 and 1 + extra multiplications with the same
    workers (--repeat); the difference / extra is what one more multiplication costs (JVM
    start-up, the workers' spawning and connection set-up cancel)."""
    runs = {}
    for repeat in (1, 1 + extra):
        name = f"boundary-{mech}-{alg}-{n}-repeat{repeat}"
        cmd = shlex.join(workload_cmd(java, mech, alg, n, a.seed, repeat, a))
        res, d = record_script(out, name, "matmul.sh",
                               lambda d, cmd=cmd: SCRIPT.format(dir=d, cmd=cmd))
        j = checked(last_json((d / "manager.out").read_text(errors="replace")), name, repeat)
        pid = (d / "manager.pid").read_text().strip()
        s = res.summary
        every, manager = boundary_counts(s, None), boundary_counts(s, pid)
        runs[repeat] = {"run_dir": str(res.run_dir.relative_to(out)), "manager_json": j,
                        "manager_pid": pid, "all": every, "manager": manager,
                        "workers": {**difference(every, manager),
                                    "guaranteed_unknown": every["guaranteed_unknown"]},
                        "processes": len(s.get("by_pid") or {}),
                        "probe_overhead_ns": s["totals"].get("probe_overhead_ns")}
    lo, hi = runs[1], runs[1 + extra]
    per_mult = {side: per_extra(lo[side], hi[side], extra)
                for side in ("all", "manager", "workers")}
    hj, lj = hi["manager_json"], lo["manager_json"]
    return {"mechanism": mech, "algorithm": alg, "n": n, "k": a.k, "extra": extra,
            "runs": {str(k): v for k, v in runs.items()}, "per_mult": per_mult,
            "app_bytes_per_mult": (app_bytes(hj) - app_bytes(lj)) / extra,
            "calls_per_mult": (hj["calls"] - lj["calls"]) / extra,
            "retransmissions_per_mult": ((hj.get("retransmissions") or 0)
                                         - (lj.get("retransmissions") or 0)) / extra,
            "gc_per_mult": gc_per_extra(gc_of_run(lj), gc_of_run(hj), extra)}


def gc_per_extra(lo: Optional[dict], hi: Optional[dict], extra: int) -> Optional[dict]:
    """What one more multiplication cost in garbage collection, summed over the JVMs."""
    if lo is None or hi is None:
        return None
    return {k: (hi[k] - lo[k]) / extra for k in GC_KEYS}


# -------------------------------------------------------------------- programming effort

def lines_of_code(root: Path = ROOT) -> dict:
    """Lines of each source file of the workload, counted by pygount (code: lines with code,
    a line holding only a string literal included; comments: documentation lines; blank), per
    mechanism (its own files, workloads/java/matmul/README.md) and for the shared program."""
    # pygount imports GitPython, which refuses to load on a machine without git (a fresh
    # container, a source tarball) unless told to stay quiet; jvmos counts local files only
    os.environ.setdefault("GIT_PYTHON_REFRESH", "quiet")
    try:
        from pygount import SourceAnalysis
        import pygount
    except ImportError as e:
        raise JvmosError(f"pygount cannot be loaded ({str(e).splitlines()[0]}; it counts the "
                         "lines of code): pip install -e . in the project's virtualenv") from None
    src = root / SOURCE_DIR
    present = sorted(p.name for p in src.glob("*.java")) if src.is_dir() else []
    assigned = set(SHARED_FILES) | {f for fs in MECHANISM_FILES.values() for f in fs}
    missing = sorted(assigned - set(present))
    if missing:
        raise JvmosError(f"the matmul workload's sources lack {', '.join(missing)} (in {src})")
    files = {}
    for name in present:
        r = SourceAnalysis.from_file(str(src / name), "matmul")
        files[name] = {"code": r.code_count + r.string_count,
                       "comments": r.documentation_count, "blank": r.empty_count}

    def group(names):
        return {"files": list(names),
                **{k: sum(files[f][k] for f in names) for k in ("code", "comments", "blank")}}
    return {"tool": f"pygount {pygount.__version__}", "files": files,
            "mechanisms": {m: group(fs) for m, fs in MECHANISM_FILES.items()},
            "shared": group(SHARED_FILES),
            "unassigned": group(sorted(set(present) - assigned))}


# ---------------------------------------------------------------------------------- main

def render(out: Path) -> int:
    """--render DIR: the statistics, tables, notes and figures made again from DIR/matmul.json
    (a finished run's measurements; nothing is measured)."""
    src = out / "matmul.json"
    results = load_finished(src, "matmul", "cells")
    results["speedup"] = speedups(results)
    results["ttests"] = ttests(results)
    tables = all_tables(results)
    results["figures"] = [f.name for f in figures(results, out)]
    results["headline"] = headlines(results)
    write_outputs(out, "matmul", tables, results, notes_for(results))
    print(f"results: {out}/matmul.md written again from {src}")
    return 0


def main(argv) -> int:
    a = parse(argv)
    if a.render:
        return render(Path(a.render))
    jvm = select_jdks([a.jdk] if a.jdk else None)[0]
    java = str(jvm.home / "bin" / "java")
    jar(MATMUL_JAR)
    loc = lines_of_code()
    out = out_dir(a.out, "matmul")
    results = {"experiment": "matmul", "jdk": str(jvm.home), "jdk_label": jdk_label(jvm),
               "k": a.k, "trials": a.trials, "seed": a.seed, "sizes": a.sizes,
               "mechanisms": a.mechanisms, "algorithms": a.algorithms, "level": LEVEL,
               "alpha": ALPHA, "drop_every": a.drop_every,
               "worker_start_delay_ms": a.worker_start_delay_ms, "loc": loc,
               "sequential": {}, "cells": {}, "boundary": {}}
    # progress weights: a cell's time grows with n^3 (the products) on top of a fixed cost
    # (starting k + 1 JVMs); a boundary recording counts 30 units (a rough share for the bar)
    weight = lambda n: 1 + (n / 100) ** 3  # noqa: E731
    total = sum(weight(n) * (1 + len(a.mechanisms) * len(a.algorithms)) for n in a.sizes) \
        + 30 * len(a.boundary)
    try:
        with Progress(total, "matmul") as bar:
            for n in a.sizes:
                log(f"[n={n}] sequential, {a.trials} trials")
                results["sequential"][str(n)] = sequential_cell(java, n, a)
                save_partial(out, "matmul", results)
                bar.step(weight(n))
                for mech in a.mechanisms:
                    for alg in a.algorithms:
                        log(f"[n={n}] {mech} {alg}, k={a.k}, {a.trials} trials")
                        results["cells"][f"{mech}:{alg}:{n}"] = cell(java, mech, alg, n, a)
                        save_partial(out, "matmul", results)
                        bar.step(weight(n))
            for mech, alg, n in a.boundary:
                log(f"[boundary {mech}:{alg}:{n}] recorded with 1 and {1 + a.boundary_repeat} "
                    "multiplications")
                results["boundary"][f"{mech}:{alg}:{n}"] = boundary(java, mech, alg, n,
                                                                    a.boundary_repeat, a, out)
                save_partial(out, "matmul", results)
                bar.step(30)
    except JvmosError as e:
        raise kept_so_far(e, out, "matmul")
    results["speedup"] = speedups(results)
    results["ttests"] = ttests(results)
    tables = all_tables(results)
    figs = figures(results, out)
    results["figures"] = [f.name for f in figs]
    results["headline"] = headlines(results)
    write_outputs(out, "matmul", tables, results, notes_for(results))
    (out / "matmul.partial.json").unlink(missing_ok=True)
    for t in tables:
        print(t.markdown())
    print(f"\nresults: {out}/matmul.md (and .csv, .json, figures)")
    return 0


# ------------------------------------------------------------------------- the statistics

def speedups(results) -> Dict[str, Optional[float]]:
    """Speedup of every cell: the sequential algorithm's mean time / the cell's mean total
    time at the same n (a ratio of means)."""
    out = {}
    for key, c in results["cells"].items():
        seq = results["sequential"].get(str(c["n"]))
        tm = c["total"]["mean"]
        out[key] = seq["total"]["mean"] / tm if seq and tm else None
    return out


# besides the socket against each other mechanism: the two RMI variants against each other
# (seed 001 ranks Externalizable against Serializable by their means alone)
EXTRA_PAIRS = (("rmi-serializable", "rmi-externalizable"),)


def ttests(results) -> List[dict]:
    """Welch's t-test at every n and algorithm: the socket mechanism against each other one,
    and the pairs of EXTRA_PAIRS, on total time and on communication time (the manager's)."""
    cells = results["cells"]
    out = []
    pairs = [(REFERENCE, m) for m in MECHANISMS if m != REFERENCE] + list(EXTRA_PAIRS)
    for key, ref in cells.items():
        for a_mech, b_mech in pairs:
            if ref["mechanism"] != a_mech:
                continue
            other = cells.get(f"{b_mech}:{ref['algorithm']}:{ref['n']}")
            if other is None:
                continue
            for measure, field in (("total", "total_ms"), ("communication", "comm_ms")):
                w = stats.welch(ref[field], other[field], results.get("alpha", ALPHA))
                out.append({"n": ref["n"], "algorithm": ref["algorithm"], "measure": measure,
                            "a": a_mech, "b": b_mech,
                            "mean_a": sum(ref[field]) / len(ref[field]),
                            "mean_b": sum(other[field]) / len(other[field]), **w})
    return out


def headlines(results) -> List[dict]:
    """Table 4.1's total time at the largest n, every mechanism, one headline per algorithm,
    with Table 4.3's sequential time at that n beside them."""
    cells = list(results["cells"].values())
    if not cells:
        return []
    n = max(c["n"] for c in cells)
    seq = (results["sequential"].get(str(n)) or {}).get("total", {}).get("mean")
    out = []
    for alg in ALGORITHMS:
        by = {c["mechanism"]: c["total"]["mean"] for c in cells
              if c["n"] == n and c["algorithm"] == alg}
        if not by:
            continue
        out.append(headline(
            f"total time of one multiplication (seed 001 Table 4.1), n = {n}, "
            f"{alg.upper()}, k = {results['k']} workers: the mean of {results['trials']} "
            "trials per mechanism (ms), the sequential algorithm's mean at the same n in "
            "parentheses (Table 4.3)",
            ", ".join(f"{m} {by[m]:,.1f} ms" for m in MECHANISMS if m in by)
            + (" (sequential unknown)" if seq is None else f" (sequential {seq:,.1f} ms)")))
    return out


# ------------------------------------------------------------------------------- tables

def ms(v):
    return "—" if v is None else f"{v:,.2f}"


def ci_text(s):
    return "—" if not s.get("ci") else f"[{s['ci'][0]:,.2f}, {s['ci'][1]:,.2f}]"


def ordered(results):
    """The cells in table order: n, algorithm, mechanism."""
    order = {m: i for i, m in enumerate(MECHANISMS)}
    return sorted(results["cells"].values(),
                  key=lambda c: (c["n"], ALGORITHMS.index(c["algorithm"]),
                                 order[c["mechanism"]]))


def all_tables(results) -> List[Table]:
    """Every table, in the order of matmul.md (and matmul.csv, matmul-2.csv, ...)."""
    tables = [total_table(results), comm_table(results), speedup_table(results)]
    if results.get("ttests"):
        tables.append(ttest_table(results))
    if any(g for c in results["cells"].values() for g in (c.get("gc") or [])):
        tables.append(gc_table(results))
    if results.get("boundary"):
        tables.append(boundary_table(results))
    tables.append(loc_table(results))
    return tables


def total_table(results) -> Table:
    t = Table(f"Total time of one multiplication (seed 001 Table 4.1; {results['jdk_label']}; "
              f"k = {results['k']}; {results['trials']} trials, each a new manager and new "
              "workers; ms; σ over n, sd over n − 1, 95% CI of the mean)",
              ["n", "algorithm", "mechanism", "mean", "σ", "sd", "95% CI",
               "messages / multiplication", "application bytes / multiplication",
               "retransmissions (all trials)"])
    for c in ordered(results):
        s = c["total"]
        rt = sum(c["retransmissions"])
        t.add([fmt_count(c["n"]), c["algorithm"], c["mechanism"], ms(s["mean"]),
               ms(s.get("sigma")), ms(s["sd"]), ci_text(s), fmt_count(c["calls"]),
               fmt_count(c["app_bytes"]), fmt_count(rt)],
              [c["n"], c["algorithm"], c["mechanism"], s["mean"], s.get("sigma"), s["sd"],
               s["ci"], c["calls"], c["app_bytes"], rt])
    return t


def comm_table(results) -> Table:
    t = Table("Communication time of one multiplication (seed 001 Table 4.2: time inside the "
              "send and receive calls, measured by the manager; a receive includes waiting for "
              "the workers; ms)",
              ["n", "algorithm", "mechanism", "manager: mean", "σ", "sd", "95% CI",
               "of which send (mean)", "of which receive (mean)",
               "workers (mean over the workers): mean", "σ", "95% CI"])
    for c in ordered(results):
        s, w = c["comm"], c["workers_comm"]
        snd = sum(c["send_ms"]) / len(c["send_ms"])
        rcv = sum(c["recv_ms"]) / len(c["recv_ms"])
        t.add([fmt_count(c["n"]), c["algorithm"], c["mechanism"], ms(s["mean"]),
               ms(s.get("sigma")), ms(s["sd"]), ci_text(s), ms(snd), ms(rcv), ms(w["mean"]),
               ms(w.get("sigma")), ci_text(w)],
              [c["n"], c["algorithm"], c["mechanism"], s["mean"], s.get("sigma"), s["sd"],
               s["ci"], snd, rcv, w["mean"], w.get("sigma"), w["ci"]])
    return t


def speedup_table(results) -> Table:
    t = Table("Sequential time and speedup (seed 001 Table 4.3; speedup = the sequential "
              "algorithm's mean time / the mechanism's mean total time at the same n, a ratio "
              "of means; ms)",
              ["n", "sequential: mean", "σ", "95% CI", "algorithm", "mechanism",
               "total: mean", "speedup"])
    sp = results.get("speedup") or speedups(results)
    for c in ordered(results):
        seq = results["sequential"].get(str(c["n"]))
        q = seq["total"] if seq else {"mean": None, "ci": None}
        x = sp.get(f"{c['mechanism']}:{c['algorithm']}:{c['n']}")
        t.add([fmt_count(c["n"]), ms(q["mean"]), ms(q.get("sigma")), ci_text(q),
               c["algorithm"], c["mechanism"], ms(c["total"]["mean"]),
               "—" if x is None else f"{x:.3f}"],
              [c["n"], q["mean"], q.get("sigma"), q.get("ci"), c["algorithm"], c["mechanism"],
               c["total"]["mean"], x])
    return t


def ttest_table(results) -> Table:
    alpha = results.get("alpha", ALPHA)
    t = Table(f"Welch's t-test between mechanisms ({REFERENCE} against each other mechanism, "
              f"and RMI Serializable against Externalizable, per n and algorithm; H0: equal "
              f"means; two-sided; α = {alpha}; t of the first − the second: negative when the "
              f"second is slower; ms)",
              ["n", "algorithm", "measure", "mechanisms (first vs second)", "first: mean",
               "second: mean",
               "t", "df", "p", "H0 rejected"])
    for r in results["ttests"]:
        t.add([fmt_count(r["n"]), r["algorithm"], r["measure"], f"{r['a']} vs {r['b']}",
               ms(r["mean_a"]), ms(r["mean_b"]),
               "—" if r["t"] is None else f"{r['t']:.2f}",
               "—" if r["df"] is None else f"{r['df']:.1f}", f"{r['p']:.3g}",
               "yes" if r["reject"] else "no"],
              [r["n"], r["algorithm"], r["measure"], f"{r['a']} vs {r['b']}", r["mean_a"],
               r["mean_b"], r["t"], r["df"], r["p"], r["reject"]])
    return t


def gc_table(results) -> Table:
    t = Table("Garbage collection of one run (each JVM's own MXBeans over its whole life, "
              "start-up included, summed over the manager and its workers; mean over the "
              "trials that reported it)",
              ["n", "algorithm", "mechanism", "JVMs", "young collections", "full collections",
               "concurrent cycles", "GC time (ms, the collectors' accumulated time)",
               "allocated (MB)", "allocated / application byte", "trials"])
    for c in ordered(results):
        gs = [g for g in (c.get("gc") or []) if g]
        if not gs:
            continue
        mean = {k: sum(g[k] for g in gs) / len(gs) for k in GC_KEYS}
        ab = c["app_bytes"]
        per = mean["allocated_bytes"] / ab if ab else None
        t.add([fmt_count(c["n"]), c["algorithm"], c["mechanism"], fmt_count(gs[0]["jvms"]),
               f"{mean['gc_young_count']:,.1f}", f"{mean['gc_full_count']:,.1f}",
               f"{mean['gc_concurrent_count']:,.1f}",
               f"{mean['gc_young_ms'] + mean['gc_full_ms'] + mean['gc_concurrent_ms']:,.1f}",
               f"{mean['allocated_bytes'] / 1e6:,.1f}", "—" if per is None else f"{per:,.1f}",
               f"{len(gs)} of {len(c['gc'])}"],
              [c["n"], c["algorithm"], c["mechanism"], gs[0]["jvms"], mean["gc_young_count"],
               mean["gc_full_count"], mean["gc_concurrent_count"],
               mean["gc_young_ms"] + mean["gc_full_ms"] + mean["gc_concurrent_ms"],
               mean["allocated_bytes"], per, len(gs)])
    return t


BOUNDARY_COLUMNS = [
    ("I/O syscalls", "io_syscalls"),
    ("read/write syscalls (stream path)", "stream_syscalls"),
    ("sendto/recvfrom syscalls (datagram path)", "datagram_syscalls"),
    ("bytes through I/O syscalls", "io_bytes"),
    ("JNI copies", "jni_copy_calls"), ("JNI copied bytes", "jni_copy_bytes"),
    ("NIO copies", "nio_copy_calls"), ("NIO copied bytes", "nio_copy_bytes"),
    ("threads created", "threads_created"), ("allocator calls", "malloc_calls"),
    ("page faults", "page_faults"), ("futex", "futex"),
    ("context switches", "context_switches"),
]


def boundary_table(results) -> Table:
    t = Table("The OS boundary per multiplication (jvmos recordings of the manager and its "
              "workers, io, threads, links and mem layers: (a run of 1 + K multiplications − a "
              "run of 1) / K, the same workers in both; a difference of two recordings, so a "
              "figure can come out negative; 'workers' = every process of the tree but the "
              "manager)",
              ["mechanism", "algorithm", "n", "side", "messages", "application bytes"]
              + [h for h, _ in BOUNDARY_COLUMNS]
              + ["syscall bytes / application byte",
                 "kernel copy (µs, estimated: bytes x calibrated cost)",
                 "guaranteed overhead (µs; 'known terms' when a term's time is unknown)",
                 "guaranteed overhead / application byte (ns)",
                 "allocated bytes (all JVMs, their MXBeans)", "young collections"])
    # a term whose time is unknown leaves the sum of the known ones: not a bound of a difference
    known = lambda p: " (known terms)" if p.get("guaranteed_unknown") else ""  # noqa: E731
    f1 = lambda v: "—" if v is None else f"{v:,.1f}"  # noqa: E731
    us = lambda v: "—" if v is None else f"{v / 1e3:,.1f}"  # noqa: E731
    for key, b in results["boundary"].items():
        ab = b["app_bytes_per_mult"]
        for side in ("all", "manager", "workers"):
            p = b["per_mult"][side]
            share = lambda v: v / ab if v is not None and ab else None  # noqa: E731
            g = p.get("guaranteed_ns")
            # the JVMs' own GC figures come from the manager's line, for the whole tree
            gc = (b.get("gc_per_mult") or {}) if side == "all" else {}
            t.add([b["mechanism"], b["algorithm"], fmt_count(b["n"]), side,
                   f1(b["calls_per_mult"]), f1(ab)]
                  + [f1(p.get(k)) for _, k in BOUNDARY_COLUMNS]
                  + [("—" if share(p.get("io_bytes")) is None
                      else f"{share(p.get('io_bytes')):.2f}"), us(p.get("kernel_copy_ns")),
                     us(g) + known(p),
                     "—" if share(g) is None else f"{share(g):,.2f}" + known(p),
                     f1(gc.get("allocated_bytes")), f1(gc.get("gc_young_count"))],
                  [b["mechanism"], b["algorithm"], b["n"], side, b["calls_per_mult"], ab]
                  + [p.get(k) for _, k in BOUNDARY_COLUMNS]
                  + [share(p.get("io_bytes")), p.get("kernel_copy_ns"), g, share(g),
                     gc.get("allocated_bytes"), gc.get("gc_young_count")])
    return t


def loc_table(results) -> Table:
    loc = results["loc"]
    t = Table(f"Programming effort: lines of the workload's Java sources ({loc['tool']}; code "
              "lines exclude comments and blank lines; the files of each mechanism as "
              "workloads/java/matmul/README.md assigns them; RmiSupport.java is counted for "
              "both RMI mechanisms)",
              ["part", "files", "code lines", "comment lines", "blank lines"])
    rows = [(m, g) for m, g in loc["mechanisms"].items()] + [("shared by all", loc["shared"])]
    if loc["unassigned"]["files"]:
        rows.append(("not assigned by the README", loc["unassigned"]))
    for name, g in rows:
        t.add([name, ", ".join(g["files"]), fmt_count(g["code"]), fmt_count(g["comments"]),
               fmt_count(g["blank"])],
              [name, " ".join(g["files"]), g["code"], g["comments"], g["blank"]])
    return t


def notes_for(results) -> List[str]:
    notes = [
        "Total time: the manager's System.nanoTime from its first task sent to the last result "
        "received (seed 001's overall time); matrix generation, the workers' start-up and the "
        "check of the product are outside it. Every product was checked against a reference "
        "product computed by the manager (exact compare); a run that did not validate is an "
        "error, not a row.",
        "Communication time (seed 001's definition): the time the manager spent inside its send "
        "and receive calls of the multiplication's messages. A receive includes waiting, for "
        "the workers to compute and for the messages to arrive, so it is not the cost of the "
        "transfer alone. The workers' column is each worker's own measurement (sent back at "
        "the end), averaged over the workers; a worker's receive also waits for its task while "
        "the manager sends the others theirs.",
        "Application bytes: the bytes of the messages the program sends (a 24-byte header and "
        "4 bytes per int), counted once, by the sender, the same for every mechanism; RMI's "
        "and serialization's own bytes, TCP/UDP/IP headers and the datagram "
        "acknowledgements are not in them (they are in 'bytes through I/O syscalls').",
        "σ divides by n (seed 001's standard deviation, the figures' error bars), sd by n − 1; "
        "the 95% CI of the mean is Student's t with n − 1 degrees of freedom and sd. Speedup "
        "is a ratio of means (no error bar). The t-test is Welch's (unequal variances), "
        f"two-sided, α = {results.get('alpha', ALPHA)}.",
        "One multiplication per trial, as seed 001 timed it: what happens once per run falls "
        "inside the total and communication times: the socket mechanism opens its connection "
        "to a peer at the first send, RMI at the first call, and every JVM loads classes and "
        "runs its code interpreted before the JIT compiles it. At small n these dominate; the "
        "boundary figures (a difference of repeated multiplications) leave them out.",
        "Trial i of every cell uses seed + i, so every mechanism multiplies the same matrices "
        "in its i-th trial; each trial is a new manager JVM spawning new worker JVMs.",
        "Garbage collection: each JVM's own figures (GarbageCollectorMXBean counts and "
        "accumulated times, classed young, full or concurrent by the collector's name; bytes "
        "allocated by all its threads), read by the manager at the end and by each worker "
        "when it sends its last message, over the JVM's whole life (start-up included), "
        "summed over the JVMs of the run. In the boundary table they are per multiplication "
        "(the difference of the two runs / K) on the 'all' row.",
    ]
    if results.get("boundary"):
        notes.append(
            "Boundary: each entry is recorded twice (jvmos record, layers io, threads, links, "
            "mem; the whole process tree: a shell, the manager and its k workers), with --repeat "
            "1 and 1 + K; the workload re-uses the same workers for every repetition, so JVM "
            "start-up, spawning and connection set-up are in both and cancel. The difference / K "
            "is one multiplication; it is a difference of two recordings, so noise remains and "
            "a figure can come out negative. read/write and sendto/recvfrom are syscall names "
            "(JDK 17's stream sockets and RMI use read/write, DatagramSocket sendto/recvfrom), "
            "not socket types. The kernel copy is estimated (the syscalls' bytes x the "
            "calibrated per-byte cost); 'guaranteed overhead' is jvmos's sum over the four "
            "resources ('≥' when a part is uncalibrated). The Java heap's allocation and GC are "
            "not in these counts (allocator calls are native malloc).")
    if results.get("drop_every"):
        notes.append(f"Test option: the datagram mechanism dropped every "
                     f"{results['drop_every']}th data packet each node sent (--drop-every), so "
                     "its times include the retransmissions' timeouts.")
    return notes


# ------------------------------------------------------------------------------ figures

COLOURS = {"rmi-serializable": "#d95f02", "rmi-externalizable": "#7570b3",
           "socket": "#1b9e77", "datagram": "#e7298a"}


def figures(results, out: Path) -> list:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from jvmos.analyzers import figures as fig_io
    cells = results["cells"]
    algs = [x for x in ALGORITHMS if any(c["algorithm"] == x for c in cells.values())]
    if not algs:
        return []
    sp = results.get("speedup") or speedups(results)
    saved = []
    for stem, ylabel, value, sigma, what in (
            ("matmul-total", "total time (ms), mean ± σ",
             lambda c: c["total"]["mean"], lambda c: c["total"].get("sigma") or 0,
             "total time (seed Figs 4.1, 4.2)"),
            ("matmul-comm", "communication time at the manager (ms), mean ± σ",
             lambda c: c["comm"]["mean"], lambda c: c["comm"].get("sigma") or 0,
             "communication time (seed Figs 4.3, 4.4)"),
            ("matmul-speedup", "speedup (sequential mean / total mean)",
             lambda c: sp.get(f"{c['mechanism']}:{c['algorithm']}:{c['n']}"), None,
             "speedup (seed Figs 4.6, 4.7)")):
        fig, axes = plt.subplots(1, len(algs), figsize=(5.5 * len(algs), 4), squeeze=False)
        for ax, alg in zip(axes[0], algs):
            for mech in MECHANISMS:
                cs = sorted((c for c in cells.values()
                             if c["mechanism"] == mech and c["algorithm"] == alg),
                            key=lambda c: c["n"])
                cs = [c for c in cs if value(c) is not None]
                if not cs:
                    continue
                ax.errorbar([c["n"] for c in cs], [value(c) for c in cs],
                            yerr=None if sigma is None else [sigma(c) for c in cs],
                            marker="o", capsize=3, color=COLOURS[mech], label=mech)
            if stem == "matmul-speedup":
                ax.axhline(1.0, color="#9e9e9e", linewidth=0.8, linestyle=":")
            ax.set_xticks(sorted({c["n"] for c in cells.values()}))
            ax.set_xlabel("n")
            ax.set_ylabel(ylabel)
            ax.set_title(f"{alg.upper()}, k = {results['k']}: {what}", fontsize=9)
            ax.legend(fontsize=7)
        saved += fig_io.save(fig, out / stem)
    return saved
