"""`jvmos run probe-effect`: does jvmos's estimate of its own probe effect hold on real programs?

Every recording estimates what its probes cost the traced process: each kind of probe's hits
x its calibrated cost per hit (the summary's totals.probe_overhead_ns, CPU time summed over
the traced threads). This experiment puts that estimate beside the cost observed on the same
program: pairs of runs, one bare and one recorded, their order alternating (bare first in odd
pairs), the observed effect being the process's CPU time recorded minus bare, pair by pair.

Programs (--programs):
  dacapo  benchmarks of the DaCapo-style suite (--bench, default its two largest here), or
          of a real DaCapo jar (--dacapo-jar): one JVM per run, its CPU time from wait4
  shop    the Tomcat shop, a fresh server per pair warmed by 3 untraced loads: a load of
          --shop-threads threads x --shop-pages pages per run, jvmos attached to the server for
          the recorded load; the server's CPU time per load
  chat    jvmos's chat server (platform threads), the same way: one load of --chat-rooms rooms
          x 20 users per run

Read per program: the observed effect's mean with its 95% paired t interval; the estimate's
mean; estimated / observed (ratio of the means) with its 90% interval, judged against +/-25%
by two one-sided t tests of the observed mean against estimate / 1.25 and estimate / 0.75:
within, outside or unresolved. A miss is printed as such, with the probe kinds that carry
the estimate.
"""
import argparse
import contextlib
import json
import statistics
import types
from pathlib import Path
from typing import Callable, List, Optional

from jvmos import JvmosError
from jvmos.analyzers.tables import Table, fmt_ns
from jvmos.experiments.common import (BOUNDARY_LAYERS, PROBE_EFFECT_GOAL, jdk_label, load_finished,
                                      log, out_dir, parse_list, run_bare, run_recorded,
                                      publish, select_jdks)

PROGRAMS = ("dacapo", "shop", "chat")
# the suite's two largest benchmarks by CPU time at the default size on the reference VM (27
# Nov, 2 iterations, bare: lusearch 55.9 s, h2 35.8 s, eclipse 34.5 s, ... inflate 2.5 s)
DEFAULT_BENCH = "lusearch,h2"
LEVEL = 0.90            # the equivalence test's interval (two one-sided tests at 5% each)

EXAMPLES = """examples:
  jvmos run probe-effect                                 # dacapo (lusearch, h2), shop, chat; 10 pairs
  jvmos run probe-effect --programs shop --pairs 12 --mode count
  jvmos run probe-effect --programs dacapo --dacapo-jar ~/dacapo-9.12-bach.jar --bench avrora
  jvmos run probe-effect --quick                         # 2 pairs each, small loads
  jvmos run probe-effect --render results/probe-effect   # the tables again, nothing measured

cost: every pair runs the program twice; recorded runs are slower (that is what is measured).
"""


def parse(argv):
    p = argparse.ArgumentParser(prog="jvmos run probe-effect", epilog=EXAMPLES,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--programs", default=",".join(PROGRAMS),
                   help=f"comma-separated, of {', '.join(PROGRAMS)} (default all)")
    p.add_argument("--pairs", type=int, help="bare/recorded pairs per program (default 10; "
                   "--quick 2)")
    p.add_argument("--layers", default=",".join(BOUNDARY_LAYERS),
                   help=f"layers recorded (default {','.join(BOUNDARY_LAYERS)})")
    p.add_argument("--mode", choices=("time", "count"), default="time",
                   help="the recordings' --mode (default time, record's default)")
    p.add_argument("--bench", help=f"dacapo: benchmarks (default {DEFAULT_BENCH}; with "
                   "--dacapo-jar: avrora)")
    p.add_argument("--dacapo-jar", help="dacapo: a real DaCapo jar instead of the suite")
    p.add_argument("--iterations", type=int, default=2, help="dacapo: iterations per run "
                   "(default 2)")
    p.add_argument("--shop-pages", type=int, help="shop: pages per load thread (default 1000; "
                   "--quick 50)")
    p.add_argument("--shop-threads", type=int, default=4, help="shop: load threads (default 4)")
    p.add_argument("--chat-rooms", type=int, help="chat: rooms per load, 20 users each "
                   "(default 10; --quick 2)")
    p.add_argument("--jdk", help="JDK home (default: the first found)")
    p.add_argument("--out", help="output directory (default results/runs/<time>-probe-effect)")
    p.add_argument("--quick", action="store_true", help="2 pairs each, small loads, the "
                   "suite's small size")
    p.add_argument("--render", metavar="DIR", help="write the tables of a finished run in DIR "
                   "again (nothing is measured)")
    a = p.parse_args(argv)
    if a.render:
        return a
    a.pairs = a.pairs if a.pairs is not None else (2 if a.quick else 10)
    a.shop_pages = a.shop_pages or (50 if a.quick else 1000)
    a.chat_rooms = a.chat_rooms or (2 if a.quick else 10)
    if min(a.pairs, a.iterations, a.shop_pages, a.shop_threads, a.chat_rooms) <= 0:
        p.error("--pairs, --iterations, --shop-pages, --shop-threads and --chat-rooms must be "
                "positive")
    if a.pairs < 2:
        p.error("--pairs must be 2 or more (a paired interval needs two pairs)")
    try:
        a.programs = parse_list(a.programs, PROGRAMS, "program")
        a.layers = parse_list(a.layers, BOUNDARY_LAYERS, "layer")
    except JvmosError as e:
        p.error(str(e))
    return a


# ------------------------------------------------------------------------- measuring

def recorded_fields(summary: dict) -> dict:
    """What a recorded run keeps of its summary: the estimate and its parts by probe kind."""
    tot = summary["totals"]
    kinds = tot.get("probe_cost_per_hit_ns") or {}
    return {"probe_overhead_ns": tot.get("probe_overhead_ns"),
            "probe_overhead_ci95_ns": tot.get("probe_overhead_ci95_ns"),
            "probe_overhead_unknown_kinds": tot.get("probe_overhead_unknown_kinds"),
            "probe_overhead_by_kind_ns": {k: v.get("total_ns") for k, v in kinds.items()},
            "probe_hits": tot.get("probe_hits") or {}}


def one_pair(i: int, bare: Callable[[], dict], recorded: Callable[[], dict], tag: str) -> dict:
    """Pair i (from 0): bare first when i is even, recorded first when odd; logged."""
    first = "bare first" if i % 2 == 0 else "recorded first"
    if i % 2 == 0:
        b, r = bare(), recorded()
    else:
        r, b = recorded(), bare()
    log(f"[{tag}]   CPU bare {fmt_ns(b['cpu_ns'])}, recorded {fmt_ns(r['cpu_ns'])}: "
        f"observed {fmt_ns(r['cpu_ns'] - b['cpu_ns'])}, estimated "
        f"{fmt_ns(r.get('probe_overhead_ns'))}")
    return {"order": first, "bare": b, "recorded": r}


def alternate(n: int, bare: Callable[[], dict], recorded: Callable[[int], dict], tag: str,
              keep: Callable[[], None], pairs: list):
    """n pairs (one_pair); each pair is kept (keep()) as soon as it is measured."""
    for i in range(n):
        log(f"[{tag}] pair {i + 1}/{n} ({'bare first' if i % 2 == 0 else 'recorded first'})")
        pairs.append(one_pair(i, bare, lambda: recorded(i), tag))
        keep()


def run_dacapo(a, java: str, out: Path, results: dict, keep) -> None:
    from jvmos.experiments.memory import Suite, check_dacapo_jar
    dj = check_dacapo_jar(a.dacapo_jar) if a.dacapo_jar else None
    suite = Suite(java, dj)
    benches = [b.strip() for b in (a.bench or ("avrora" if dj else DEFAULT_BENCH)).split(",")
               if b.strip()]
    known = suite.names()
    bad = [b for b in benches if b not in known]
    if bad:
        raise JvmosError(f"unknown benchmark(s) {', '.join(bad)} (known: {', '.join(known)})")
    size = "small" if a.quick else "default"
    for b in benches:
        cmd = suite.cmd(b, a.iterations, size)
        name = f"dacapo-{b}"
        prog = results["programs"][name] = {
            "program": f"{b} ({'DaCapo jar ' + dj.name if dj else 'the DaCapo-style suite'}, "
                       f"{a.iterations} iterations, size {size})",
            "command": cmd, "observed_as": "the JVM's CPU time (wait4: every thread)",
            "pairs": []}

        def bare():
            got = run_bare(cmd, timeout=3600)
            return {"cpu_ns": got["process_cpu_ns"], "sys_ns": got.get("process_sys_ns")}

        def recorded(i, b=b, cmd=cmd):
            res = run_recorded(f"{name}-{i + 1}", cmd, out, layers=a.layers, mode=a.mode)
            cpu = res.summary["totals"].get("target_cpu_ns")
            if cpu is None:
                raise JvmosError(f"the recording of {b} has no CPU time of its process")
            return {"cpu_ns": cpu, "sys_ns": res.summary["totals"].get("target_sys_ns"),
                    "run_dir": str(res.run_dir.relative_to(out)),
                    "cpu_complete": bool(res.summary["totals"].get("target_cpu_complete")),
                    **recorded_fields(res.summary)}
        alternate(a.pairs, bare, recorded, name, keep, prog["pairs"])


SERVER_WARMUP_LOADS = 3  # untraced loads on each fresh server before its pair


def run_server(a, name: str, describe: str, start, out: Path, results: dict, keep) -> None:
    """Pairs of loads, each pair on a fresh server (start(i): a context manager yielding the
    server and its load) warmed by SERVER_WARMUP_LOADS untraced loads: one load bare, one with
    jvmos attached for the load, their order alternating. A server's CPU per load can drift
    as it serves (the shop's database grows with every order): a fresh server per pair puts
    both loads of a pair on a server in the same state."""
    from jvmos.experiments.server import _bare_load, _recorded_load
    prog = results["programs"][name] = {
        "program": describe, "observed_as": "the server's CPU time per load (its process "
        "CPU clock: every thread)", "design": f"a fresh server per pair, {SERVER_WARMUP_LOADS} "
        "untraced warm-up loads, then the pair", "pairs": []}
    for i in range(a.pairs):
        first = "bare first" if i % 2 == 0 else "recorded first"
        log(f"[{name}] pair {i + 1}/{a.pairs} ({first}): a fresh server, "
            f"{SERVER_WARMUP_LOADS} warm-up loads")
        with start(i) as (target, load):
            for _ in range(SERVER_WARMUP_LOADS):
                load()

            def bare():
                got = _bare_load(target, load)
                return {"cpu_ns": got["server_cpu_ns"], "sys_ns": got["server_sys_ns"]}

            def recorded():
                res, got, cpu = _recorded_load(target, load, a.layers,
                                               out / "runs" / f"{name}-{i + 1}",
                                               f"{name}-{i + 1}", mode=a.mode)
                return {"cpu_ns": cpu, "sys_ns": got.get("server_sys_ns"),
                        "run_dir": str(res.run_dir.relative_to(out)),
                        **recorded_fields(res.summary)}
            prog["pairs"].append(one_pair(i, bare, recorded, name))
        keep()


def run_shop(a, java: str, out: Path, results: dict, keep) -> None:
    from jvmos.experiments.shop import Shop

    @contextlib.contextmanager
    def start(i):
        with Shop(java, out / "servers" / f"shop-{i + 1}", page_bytes=10_240) as shop:
            yield shop, lambda: shop.load(a.shop_threads, a.shop_pages)
    run_server(a, "shop", f"the Tomcat shop, {a.shop_threads} threads x {a.shop_pages} "
               "pages of 10 kB each per load", start, out, results, keep)


def run_chat(a, java: str, out: Path, results: dict, keep) -> None:
    from jvmos.experiments.chat import load_cmd, server_cmd
    from jvmos.experiments.server import CommandServer
    opts = types.SimpleNamespace(users_per_room=20, messages=20, message_bytes=40)

    @contextlib.contextmanager
    def start(i):
        srv = CommandServer(server_cmd(java, "platform", 3600), load_cmd(java, opts),
                            out / "servers" / f"chat-{i + 1}", rate_key="messages_per_s")
        with srv:
            yield srv, lambda: srv.load(str(a.chat_rooms))
    run_server(a, "chat", f"jvmos's chat server (platform threads), {a.chat_rooms} rooms "
               "x 20 users, 20 messages of 40 bytes each per load", start, out, results, keep)


# ------------------------------------------------------------------------- reading

def ratio_interval(est: float, obs_ci: List[float]) -> Optional[List[Optional[float]]]:
    """estimated / observed over the observed mean's interval, the estimate taken as fixed:
    [est / hi, est / lo], the upper end None (unbounded) when the interval reaches 0; None
    when the whole interval is at or below 0."""
    lo, hi = obs_ci
    if hi <= 0:
        return None
    return [est / hi, est / lo if lo > 0 else None]


def verdict(est: float, obs_ci: List[float]) -> str:
    """Two one-sided t tests (5% each) of the observed mean against est / 1.25 and
    est / 0.75, read off its 90% interval: within when the interval lies inside both
    bounds, outside when it lies wholly beyond one, unresolved otherwise."""
    g = PROBE_EFFECT_GOAL
    lo, hi = obs_ci
    if hi <= 0:
        return f"outside ±{g:.0%} (no positive effect observed, one estimated)"
    if est / (1 + g) <= lo and hi <= est / (1 - g):
        return f"within ±{g:.0%}"
    if hi < est / (1 + g):
        return f"outside ±{g:.0%} (estimate too high)"
    if lo > est / (1 - g):
        return f"outside ±{g:.0%} (estimate too low)"
    return "unresolved"


def summarize(prog: dict) -> dict:
    """The program's figures from its pairs (kept in the results: --render reads them).
    A pair whose recorded CPU time is a lower bound (a process reaped between readings) is
    kept in the results and left out here, counted."""
    from jvmos.analyzers.stats import paired_diff_ci
    pairs = [p for p in prog["pairs"] if p["recorded"].get("cpu_complete", True)]
    obs = [p["recorded"]["cpu_ns"] - p["bare"]["cpu_ns"] for p in pairs]
    est = [p["recorded"].get("probe_overhead_ns") for p in pairs]
    s = {"n": len(pairs), "left_out_incomplete_cpu": len(prog["pairs"]) - len(pairs),
         "observed": paired_diff_ci(obs, level=0.95) if len(obs) >= 2 else None,
         "observed_ci90": paired_diff_ci(obs, level=LEVEL)["ci"] if len(obs) >= 2 else None,
         "estimated_mean_ns": statistics.mean(est) if est and None not in est else None,
         "bare_cpu_mean_ns": statistics.mean(p["bare"]["cpu_ns"] for p in pairs) if pairs
         else None}
    e, o = s["estimated_mean_ns"], s["observed"]
    s["ratio"] = e / o["mean"] if e is not None and o and o["mean"] > 0 else None
    s["ratio_ci90"] = ratio_interval(e, s["observed_ci90"]) if e is not None and o else None
    s["verdict"] = ("unknown (an estimate is missing: a probe kind without calibration)"
                    if e is None else "unresolved (under 2 pairs)" if not o else
                    verdict(e, s["observed_ci90"]))
    # the same reading on the kernel-mode CPU alone (the servers' /proc stime, a launched
    # JVM's wait4 ru_stime), where the probes' traps and programs run and the JIT's and the
    # collector's noise does not
    sy = [p["recorded"].get("sys_ns") is not None and p["bare"].get("sys_ns") is not None
          and p["recorded"]["sys_ns"] - p["bare"]["sys_ns"] for p in pairs]
    if len(sy) >= 2 and all(x is not False for x in sy) and e is not None:
        s["observed_sys"] = paired_diff_ci(sy, level=0.95)
        s["observed_sys_ci90"] = paired_diff_ci(sy, level=LEVEL)["ci"]
        m = s["observed_sys"]["mean"]
        s["ratio_sys"] = e / m if m > 0 else None
        s["ratio_sys_ci90"] = ratio_interval(e, s["observed_sys_ci90"])
        s["verdict_sys"] = verdict(e, s["observed_sys_ci90"])
    else:
        s["observed_sys"] = s["ratio_sys"] = s["ratio_sys_ci90"] = None
        s["verdict_sys"] = "—"
    # where the estimate comes from: its largest probe kinds, mean over the recordings
    by_kind = {}
    for p in pairs:
        for k, v in (p["recorded"].get("probe_overhead_by_kind_ns") or {}).items():
            if v is not None:
                by_kind[k] = by_kind.get(k, 0.0) + v / len(pairs)
    s["estimate_by_kind_ns"] = dict(sorted(by_kind.items(), key=lambda kv: -kv[1]))
    return s


def _ratio_cell(r: Optional[float], ci) -> str:
    return (("—" if r is None else f"{r:.2f}")
            + (f" [{ci[0]:.2f}, {'∞' if ci[1] is None else f'{ci[1]:.2f}'}]" if ci else ""))


def _mean_cell(o: Optional[dict]) -> str:
    return f"{fmt_ns(o['mean'])} [{fmt_ns(o['ci'][0])}, {fmt_ns(o['ci'][1])}]" if o else "—"


def tables(results: dict):
    t = Table("jvmos's estimate of its probe effect against the effect observed, per program "
              f"({results['jdk']}; --layers {','.join(results['layers'])} --mode "
              f"{results['mode']}; bare and recorded runs in alternating pairs)",
              ["program", "pairs", "bare CPU (mean)", "observed: recorded − bare CPU, mean "
               "[95%, paired t]", "estimated by jvmos (mean of the recordings)",
               "estimated / observed [90%]", f"±{PROBE_EFFECT_GOAL:.0%} (two one-sided t "
               "tests, 90%)",
               "observed in system CPU alone, mean [95%]",
               "estimated / observed system CPU [90%]", f"±{PROBE_EFFECT_GOAL:.0%} on system "
               "CPU", "largest estimated kinds"])
    misses = []
    for name, prog in results["programs"].items():
        s = prog["summary"] = summarize(prog)
        o = s["observed"]
        top = list(s["estimate_by_kind_ns"].items())[:3]
        est = s["estimated_mean_ns"]
        shares = ", ".join(f"{k} {100 * v / est:.0f}%" for k, v in top) if est else "—"
        osy = s.get("observed_sys")
        t.add([f"{name}: {prog['program']}", str(s["n"]), fmt_ns(s["bare_cpu_mean_ns"]),
               _mean_cell(o), fmt_ns(est), _ratio_cell(s["ratio"], s["ratio_ci90"]),
               s["verdict"] + (f" ({s['left_out_incomplete_cpu']} pair(s) left out: CPU time "
                               "incomplete)" if s["left_out_incomplete_cpu"] else ""),
               _mean_cell(osy), _ratio_cell(s.get("ratio_sys"), s.get("ratio_sys_ci90"))
               if osy else "—", s.get("verdict_sys", "—"), shares],
              [name, s["n"], s["bare_cpu_mean_ns"], o["mean"] if o else None, est, s["ratio"],
               s["verdict"], osy["mean"] if osy else None, s.get("ratio_sys"),
               s.get("verdict_sys"), shares])
        if not s["verdict"].startswith("within"):
            misses.append(f"{name}: the estimate is not shown to hold, {s['verdict']}: "
                          f"estimated {fmt_ns(est)}, observed "
                          + (_mean_cell(o) if o else "unknown")
                          + (f", ratio {s['ratio']:.2f}" if s["ratio"] is not None else "")
                          + (f"; on system CPU alone: {s['verdict_sys']}, observed "
                             f"{_mean_cell(osy)}" if osy else "")
                          + (f"; most of the estimate: {shares}" if est else ""))
    return [t], misses


NOTES = [
    "observed: per pair, the recorded run's CPU time minus the bare run's (a JVM's own, from "
    "wait4, for dacapo; the server's process CPU clock over one load, for shop and chat), "
    "their mean with a 95% paired Student t interval. It holds everything the recording "
    "costs the process: the probes' traps and programs, and the cache and scheduling effects "
    "they cause; not jvmos's own processes (the engine, its sampler), which are not the "
    "traced process.",
    "estimated: the recording's totals.probe_overhead_ns, each probe kind's hits x its "
    "calibrated cost per hit (jvmos calibrate --probes), CPU time summed over the traced "
    "threads.",
    "estimated / observed: the ratio of the two means; its 90% interval is the estimate "
    "over the observed mean's 90% paired t interval (∞ when that interval reaches 0). The "
    "estimate is taken as fixed: the uncertainty of its calibrated costs per hit (its own "
    "interval, in each recording's summary) is not in it. Within ±25%: two one-sided t tests "
    "at 5% each put the observed mean between estimate / 1.25 and estimate / 0.75; outside: "
    "the 90% interval lies wholly beyond one of them (an observed effect at or below 0 with "
    "an estimated one is outside); unresolved otherwise.",
    "the estimate of a recording with several of the threads, links and mem layers counts "
    "the scheduler chain's filter once per layer (each layer's sched_switch cost was "
    "calibrated with that layer alone, the filter included), though it runs once per "
    "switch: a bias upward, of the filter's cost per switch out of a traced thread.",
    "dacapo: a recorded run's CPU time is its wait4 rusage minus its CPU clock when tracing "
    "began (jvmos's gate before the exec, milliseconds); a pair whose recorded CPU time is "
    "only a lower bound is kept in the JSON and left out of the figures, counted. shop and "
    "chat: the server's CPU over the load; the estimate counts the hits from the attach to "
    "the stop, which enclose the load.",
    "observed in system CPU alone (added after the first run): a server's stime "
    "(/proc/PID/stat, sampled at the scheduler tick) over the load, a launched JVM's wait4 "
    "ru_stime (its recorded runs' also holds jvmos's gate before the exec, milliseconds), "
    "recorded minus bare. A uprobe's trap and "
    "its BPF program run in the kernel, so they land there; what they cause in user mode "
    "(caches, a slower JIT-compiled path) does not. It is read the same way, against the "
    "same estimate.",
    "pairs alternate their order (bare first in odd pairs), so that a drift of the machine "
    "falls on both arms alike; every pair is kept in probe-effect.json, misses included.",
]


def write_all(out: Path, results: dict) -> int:
    ts, misses = tables(results)
    publish(out, "probe-effect", ts, results, NOTES + [f"MISS {m}" for m in misses])
    for m in misses:
        log(f"MISS {m}")
    return 0


def main(argv) -> int:
    a = parse(argv)
    if a.render:
        out = Path(a.render)
        return write_all(out, load_finished(out / "probe-effect.json", "probe-effect",
                                            "programs"))
    jvm = select_jdks([a.jdk] if a.jdk else None)[0]
    java = str(jvm.home / "bin" / "java")
    out = out_dir(a.out, "probe-effect")
    results = {"experiment": "probe-effect", "jdk": jdk_label(jvm), "layers": a.layers,
               "mode": a.mode, "pairs_per_program": a.pairs, "programs": {}}

    def keep():
        tmp = out / ".probe-effect.partial.json.tmp"
        tmp.write_text(json.dumps(results, indent=2, default=str) + "\n")
        tmp.replace(out / "probe-effect.partial.json")
    run = {"dacapo": run_dacapo, "shop": run_shop, "chat": run_chat}
    try:
        for p in a.programs:
            run[p](a, java, out, results, keep)
    except (JvmosError, KeyboardInterrupt) as e:
        part = out / "probe-effect.partial.json"
        raise JvmosError(f"{e or 'interrupted'}" + (f" (the pairs measured before are kept "
                                                    f"in {part})" if part.exists() else ""))
    write_all(out, results)
    (out / "probe-effect.partial.json").unlink(missing_ok=True)
    return 0
