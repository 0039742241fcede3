"""`jvmos run predictions`: the paper's question made testable. Each term of C_os prices the
OS's part of one use of a service; a change that removes uses should save the term's price on
the clock that the term prices, and on this machine, with constants calibrated in the same run.

The analysis, fixed before any data (and printed with the results):
  * Programs and arms: jvmos's request server (workloads/java/io Intervene, loaded by the C
    client workloads/c/reqload) in the two arms of `jvmos run interventions` that differ in one
    service: thread per connection -> pool (C_nt), a connection per request -> keep-alive
    (C_link), open/close per request -> a kept file (C_file), faults in the run -> the heap
    pre-touched (page faults x C_pf), heap arrays -> a direct buffer (the NIO copy: bytes x the
    calibrated heap -> direct copy cost).
  * Measurement, no probe attached: each server is fresh, run with
    -XX:-UseDynamicNumberOfCompilerThreads; a warm-up, then two windows of n requests. Per
    window the kernel's own counters (jvmos.proctimes): utime and stime of the thread group,
    minor faults, read/write syscalls and bytes, and the JIT's and the GC's threads apart.
  * The window each term uses is declared: window 2 (the slope between n and 2n requests: the
    start-up and the first compilations fall in window 1) for every term but page faults,
    whose uses happen at the first touch of the heap: window 1.
  * The clock each term prices: the kernel terms (C_nt, C_link, C_file, page faults) against
    kernel time (stime) less the JIT threads' stime; the NIO copy (a user-space copy) against
    user time (utime) less the JIT threads'.
  * Order: ABBA blocks (then BAAB, alternating), paired differences A - B, one pair per A and
    B of a block. The number of pairs is fixed in advance (--pairs); the output prints, from
    the data, how many pairs a ratio of 1 would need for an interval of +-0.2.
  * The count removed: by design of the arms (n threads, n - 1 connections, n opens, n x the
    response's bytes in n x response / chunk writes), and for page faults the kernel's minor
    fault counter (mean of A - B over the pairs). Equal work: the client's checksum of every
    answer, and the server's bytes written (wchar) equal within 1% between the arms.
  * Prediction: count x the constant (same-run calibration by default), its standard error
    from the constant's 95% interval (half-width / 1.96).
  * Verdict (two one-sided tests at 5%): measured/predicted, 90% interval by the delta method;
    "confirmed" inside [0.8, 1.25], "refuted" wholly outside, "inconclusive" otherwise;
    "missing term" when the prediction is about 0 and the saving is not. Every term is
    reported, misses included.

What this does not test: the user-space terms against the probes' own libc time (the allocator
term), and the per-use costs of the whole change (theta): open in issue 30.
"""
import argparse
import json
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

from jvmos import JvmosError
from jvmos import calibrate as cal
from jvmos import cputime, proctimes
from jvmos.analyzers import stats
from jvmos.analyzers.tables import Table, fmt_count
from jvmos.experiments import interventions as iv
from jvmos.experiments.common import (Progress, jdk_label, load_finished, log, out_dir,
                                      select_jdks, write_outputs)
from jvmos.heuristic import whatif
from jvmos.tools import IO_JAR, c_program, jar

EXAMPLES = """\
examples:
  jvmos run predictions                        # every term, 8 pairs, constants calibrated now
  jvmos run predictions --quick                # 2 pairs, small windows, the platform's constants
  jvmos run predictions --only keep-alive --pairs 12
  jvmos run predictions --render results/predictions

cost: 2 x pairs fresh JVMs per term, no probe on them; same-run constants add the
calibration's recordings (about a minute with --constant-trials 3).
"""

JVM_FLAGS = ("-XX:-UseDynamicNumberOfCompilerThreads",)


@dataclass(frozen=True)
class Term:
    name: str           # the what-if (and the interventions' spec) it tests
    term: str           # the term of C_os
    clock: str          # the window field it is tested against
    window: int         # the window (1 or 2) it is tested on
    requests: int       # n, per window, full size
    count: str          # how the count removed is known


TERMS = [
    Term("thread-pool", "C_nt", "stime_nojit_ns", 2, 2000, "design: a thread per request"),
    Term("keep-alive", "C_link", "stime_nojit_ns", 2, 4000,
         "design: n - 1 connections fewer"),
    Term("file-handles", "C_file", "stime_nojit_ns", 2, 16000, "design: an open per request"),
    Term("pretouch", "C_pf (page faults)", "stime_nojit_ns", 1, 1500,
         "the kernel's minor-fault counter, A - B"),
    Term("direct-buffers", "NIO copy (C_I/Ochunk's)", "utime_nojit_ns", 2, 1000,
         "design: every byte written from a heap array"),
]
NAMES = [t.name for t in TERMS]
CLOCK_NAMES = {"stime_nojit_ns": "kernel CPU (stime) less the JIT threads'",
               "utime_nojit_ns": "user CPU (utime) less the JIT threads'"}


def parse(argv):
    p = argparse.ArgumentParser(prog="jvmos run predictions", epilog=EXAMPLES,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--only", help=f"terms to test, comma-separated (of {', '.join(NAMES)})")
    p.add_argument("--pairs", type=int,
                   help="A-B pairs per term, fixed in advance; even (ABBA blocks); default 8, "
                        "--quick 2")
    p.add_argument("--requests-scale", type=float, default=1.0,
                   help="multiply every term's requests per window (default 1; --quick 0.25)")
    p.add_argument("--constants", choices=("same-run", "platform"),
                   help="calibrate the constants in this run (default) or take the platform "
                        "file's (default with --quick: then it is a demonstration, not a test)")
    p.add_argument("--constant-trials", type=int, default=3,
                   help="trials of the same-run calibration (default 3)")
    p.add_argument("--jdk", help="JDK home (default: the first found)")
    p.add_argument("--platform", help="platform file (probe and copy costs; jvmos calibrate)")
    p.add_argument("--seed", type=int, default=1, help="seed of the first block's order")
    p.add_argument("--out", help="output directory (default results/runs/<time>-predictions)")
    p.add_argument("--quick", action="store_true",
                   help="2 pairs, a quarter of the requests, the platform's constants")
    p.add_argument("--render", metavar="DIR",
                   help="re-make the tables of a finished run from DIR/predictions.json")
    a = p.parse_args(argv)
    if a.render:
        return a
    a.pairs = a.pairs if a.pairs is not None else (2 if a.quick else 8)
    if a.pairs < 2 or a.pairs % 2:
        p.error("--pairs must be even and at least 2 (ABBA blocks of two pairs)")
    if a.quick and a.requests_scale == 1.0:
        a.requests_scale = 0.25
    if a.requests_scale <= 0:
        p.error("--requests-scale must be positive")
    if a.constant_trials < 2:
        p.error("--constant-trials must be at least 2 (an interval needs two trials)")
    a.constants = a.constants or ("platform" if a.quick else "same-run")
    a.only = NAMES if a.only is None else [x.strip() for x in a.only.split(",") if x.strip()]
    bad = [x for x in a.only if x not in NAMES]
    if bad or not a.only:
        p.error(f"unknown or no term(s) {', '.join(bad)} (known: {', '.join(NAMES)})")
    return a


# ------------------------------------------------------------------------------ measurement

def block_order(block: int, seed: int) -> str:
    """ABBA or BAAB: the first block's by the seed, then alternating."""
    first = "ABBA" if random.Random(seed).random() < 0.5 else "BAAB"
    other = "BAAB" if first == "ABBA" else "ABBA"
    return first if block % 2 == 0 else other


def one_server(java: str, st: dict, d: Path, data_file: Path, n: int, warmup: int) -> dict:
    """A fresh server, no probe: the warm-up, then two windows of n requests, the kernel's
    counters read around each window."""
    srv = iv.Server(java, st, d, data_file, JVM_FLAGS)
    ok = False
    try:
        srv.load(warmup)
        s0 = proctimes.snapshot(srv.proc.pid)
        r1 = srv.load(n)
        s1 = proctimes.snapshot(srv.proc.pid)
        r2 = srv.load(n)
        s2 = proctimes.snapshot(srv.proc.pid)
        ok = True
    except cputime.ProcessGone as e:
        raise JvmosError(f"the server is gone: {e} (see {d}/server-stderr.txt)")
    finally:
        srv.stop(quiet=not ok)
    return {"windows": [proctimes.window(s0, s1), proctimes.window(s1, s2)],
            "answers": [r1["fnv"], r2["fnv"]], "bytes": [r1["bytes"], r2["bytes"]]}


def settings(t: Term) -> Dict[str, dict]:
    spec = next(s for s in iv.SPECS if s.name == t.name)
    return {arm: iv.arm_settings(spec, arm) for arm in "AB"}


def measure_term(t: Term, a, java: str, out: Path, data_file: Path, bar: Progress) -> dict:
    n = max(20, int(t.requests * a.requests_scale))
    warmup = max(200, n // 2)
    st = settings(t)
    r = {"name": t.name, "term": t.term, "clock": t.clock, "window": t.window, "requests": n,
         "warmup_requests": warmup, "count_basis": t.count, "status": "running",
         "settings": st, "blocks": [], "runs": {"A": [], "B": []}}
    r["server"] = {x: iv.server_cmd(java, st[x], Path("PORT_FILE"), data_file, JVM_FLAGS)
                   for x in "AB"}
    try:
        for b in range(a.pairs // 2):
            order = block_order(b, a.seed * 1009 + NAMES.index(t.name))
            r["blocks"].append(order)
            for k, arm in enumerate(order):
                res = one_server(java, st[arm], out / t.name / f"{arm}{b}{k}", data_file, n,
                                 warmup)
                r["runs"][arm].append(res)
                bar.step()
    except JvmosError as e:
        r["status"], r["reason"] = "failed", str(e)
        return r
    r["status"] = "complete"
    return r


# ------------------------------------------------------------------------------ constants

def same_run_constants(jvm, platform: dict, platform_file: Path, trials: int, log_) -> dict:
    """C_nt, C_link, C_file (probed microbenchmarks), the page fault and the heap -> direct copy
    costs, measured now, on this machine, for this run."""
    from jvmos import calibrate_constants
    t0 = time.time()
    log_("same-run calibration: the page-fault cost (workloads/c/memcal)...")
    mem = cal.calibrate_memory(trials)
    log_(f"same-run calibration: the heap -> direct copy of {jvm.home}...")
    nio = cal.calibrate_nio(jvm, trials)
    k = calibrate_constants.measure(jvm, trials=trials, log=lambda m: log_("same-run " + m),
                                    platform_file=str(platform_file))
    return {"source": "same-run", "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "seconds": round(time.time() - t0, 1), "trials": trials,
            "constants": k, "copy": {"page_fault": mem["page_fault"],
                                     "nio_heap_to_direct": {str(jvm.home): nio}}}


def platform_constants(platform: dict, platform_file: Path) -> dict:
    return {"source": "platform", "file": str(platform_file),
            "date": (platform.get("constants") or {}).get("date") or platform.get("created"),
            "constants": platform.get("constants") or {}, "copy": platform.get("copy") or {}}


# ------------------------------------------------------------------------------ analysis

def count_removed(t: Term, r: dict) -> dict:
    n, st = r["requests"], r["settings"]["A"]
    if t.name == "pretouch":
        diffs = [a["windows"][t.window - 1]["minflt"] - b["windows"][t.window - 1]["minflt"]
                 for a, b in zip(r["runs"]["A"], r["runs"]["B"])]
        return {"removed": sum(diffs) / len(diffs), "per_pair": diffs,
                "what": "minor page faults (the kernel's counter), mean of A - B"}
    if t.name == "direct-buffers":
        writes = n * -(-st["response"] // st["chunk"])
        return {"removed": n * st["response"], "calls": writes,
                "what": f"bytes written from heap arrays, in {writes:,} writes"}
    if t.name == "keep-alive":
        return {"removed": n - 1, "what": "connections accepted"}
    return {"removed": n, "what": {"thread-pool": "threads started",
                                   "file-handles": "files opened"}[t.name]}


def equal_work(t: Term, r: dict) -> dict:
    """The answers (the client's checksum of each window) and the server's bytes written in
    the tested window, per arm."""
    # the same requests in every server: each window's answers alike in every run and arm
    answers = {tuple(run["answers"]) for arm in "AB" for run in r["runs"][arm]}
    w = {arm: [run["windows"][t.window - 1]["wchar"] for run in r["runs"][arm]] for arm in "AB"}
    ma, mb = (sum(w[x]) / len(w[x]) for x in "AB")
    rel = abs(ma - mb) / max(ma, mb, 1)
    return {"same_answers": len(answers) == 1, "wchar_mean": {"A": ma, "B": mb},
            "wchar_rel_diff": rel, "equal": len(answers) == 1 and rel <= 0.01}


def analyze_term(t: Term, r: dict, consts: dict, jdk_home: str) -> dict:
    w = t.window - 1
    A, B = r["runs"]["A"], r["runs"]["B"]
    diffs = [a["windows"][w][t.clock] - b["windows"][w][t.clock] for a, b in zip(A, B)]
    cnt = count_removed(t, r)
    platform = {"constants": consts["constants"], "copy": consts["copy"]}
    p = whatif.predict(t.name, cnt["removed"], platform, jdk_home, cnt.get("calls", 0.0))
    pred_ns = p["predicted_us"] * 1e3
    # the prediction's standard error: its 95% interval's half-width / 1.96
    pred_se = (p["predicted_ci95_us"][1] - p["predicted_ci95_us"][0]) * 1e3 / 2 / 1.96
    meas = stats.paired_diff_ci(diffs, 0.90)
    meas95 = stats.paired_diff_ci(diffs, 0.95)
    ratio = stats.ratio_ci(diffs, pred_ns, pred_se, 0.90)
    v = stats.equivalence_verdict(ratio, meas95, pred_ns)
    work = equal_work(t, r)
    if not work["equal"]:
        v = {**v, "verdict": "unequal work", "why": "the arms did not do the same work"}
    side = {}
    for key in ("stime_ns", "utime_ns", "cpu_ns"):
        d = [a["windows"][w][key] - b["windows"][w][key] for a, b in zip(A, B)]
        side[key] = stats.paired_diff_ci(d, 0.95)
    for cls in ("jit", "gc"):
        d = [sum(a["windows"][w]["service"][cls][k] for k in ("utime_ns", "stime_ns")) -
             sum(b["windows"][w]["service"][cls][k] for k in ("utime_ns", "stime_ns"))
             for a, b in zip(A, B)]
        side[f"{cls}_cpu_ns"] = stats.paired_diff_ci(d, 0.95)
    rel_se = pred_se / pred_ns if pred_ns else 0.0
    return {"count": cnt, "prediction": p, "predicted_ns": pred_ns, "predicted_se_ns": pred_se,
            "diffs_ns": diffs, "measured90": meas, "measured95": meas95, "ratio": ratio,
            "verdict": v, "equal_work": work, "other_clocks": side,
            "pairs_for_pm02": stats.pairs_needed(meas["sd"], pred_ns, rel_se),
            "service_exited": sum(len(run["windows"][w]["service_exited"])
                                  for arm in "AB" for run in r["runs"][arm])}


# ------------------------------------------------------------------------------ output

def ms(x: float) -> str:
    return f"{x / 1e6:,.2f}"


def tables(results: dict) -> list:
    c = results["constants"]
    t = Table(f"Predictions of C_os's terms against the clock each prices ({results['jdk_label']}"
              f", {results['pairs']} ABBA pairs per term, constants: {c['source']}"
              f"{' ' + str(c.get('date')) if c.get('date') else ''})",
              ["term", "program", "arm (A -> B)", "count removed", "clock (window)",
               "predicted, ms [95%]", "measured A - B, ms [90% CI]", "ratio [90% CI]",
               "verdict", "JIT, GC CPU A - B, ms", "pairs for ±0.2"])
    for r in results["terms"]:
        if r.get("status") != "complete":
            t.add([r["term"], "request server", r["name"], "—", "—", "—", "—", "—",
                   f"FAILED: {r.get('reason')}", "—", "—"])
            continue
        x = r["analysis"]
        p, m, ra = x["prediction"], x["measured90"], x["ratio"]
        oc = x["other_clocks"]
        t.add([r["term"], "request server (Intervene)", next(
               s.change for s in iv.SPECS if s.name == r["name"]),
               f"{fmt_count(round(x['count']['removed']))} {x['count']['what']}",
               f"{CLOCK_NAMES[r['clock']]} (window {r['window']}, n={r['requests']:,})",
               f"{ms(x['predicted_ns'])} [{p['predicted_ci95_us'][0] / 1e3:,.2f}, "
               f"{p['predicted_ci95_us'][1] / 1e3:,.2f}]",
               f"{ms(m['mean'])} [{ms(m['ci'][0])}, {ms(m['ci'][1])}]",
               "—" if ra is None else f"{ra['ratio']:.2f} [{ra['ci'][0]:.2f}, {ra['ci'][1]:.2f}]",
               x["verdict"]["verdict"],
               f"{ms(oc['jit_cpu_ns']['mean'])}, {ms(oc['gc_cpu_ns']['mean'])}",
               str(x["pairs_for_pm02"] or f"> 200")])
    return [t]


def notes(results: dict) -> List[str]:
    done = [r for r in results["terms"] if r.get("status") == "complete"]
    kinds = [r["analysis"]["verdict"]["verdict"] for r in done]
    c = results["constants"]
    out = [f"{kinds.count('confirmed')} of {len(done)} terms confirmed, "
           f"{kinds.count('refuted')} refuted, {kinds.count('inconclusive')} inconclusive, "
           f"{kinds.count('missing term')} with a missing term"
           + (f", {kinds.count('unequal work')} with unequal work" if 'unequal work' in kinds
              else "") + " (issue 30's goal: 3 of the 4 kernel terms confirmed)."]
    if c["source"] != "same-run":
        out.append(f"NOT A TEST: the constants come from the platform file {c.get('file')} "
                   f"({c.get('date')}), not from this run: a demonstration of the procedure.")
    out += [
        "count removed: by the arms' design (exact), page faults by the kernel's minor-fault "
        "counter of the window (mean of A - B over the pairs).",
        "predicted: count x the constant; its interval the count times the ends of the "
        "constant's 95% interval (the constant's standard error is half its width / 1.96).",
        "measured: mean over pairs of arm A's clock minus arm B's in the window, Student t 90% "
        "interval (n - 1 df); the clock is the kernel's utime/stime of the whole process "
        "(exited threads included) less the JIT compiler threads', in clock ticks of "
        f"{proctimes.TICK_NS / 1e6:g} ms.",
        "ratio: measured / predicted, 90% interval by the delta method (both uncertainties). "
        "confirmed: the interval inside [0.8, 1.25] (two one-sided tests at 5%); refuted: "
        "wholly outside; inconclusive: otherwise.",
        "JIT, GC CPU A - B: the compiler and GC threads' CPU (user + kernel), mean over pairs: "
        "a shift the arms made in the JVM's own services (the GC's stays in the clock).",
        "pairs for ±0.2: how many pairs would give a ratio of 1 an interval of ±0.2 with this "
        "run's spread of differences and the constant's uncertainty (a power estimate: use it "
        "to size the next run).",
        "not tested here: the allocator term against the probes' libc time, and the whole "
        "change's per-use cost (theta).",
    ]
    gone = sum(r["analysis"]["service_exited"] for r in done)
    if gone:
        out.append(f"{gone} JIT or GC thread(s) exited inside a window: their class's figures "
                   f"miss that thread's time.")
    return out


def save(out: Path, results: dict) -> None:
    write_outputs(out, "predictions", tables(results), results, notes(results))


def render(src: Path) -> int:
    results = load_finished(src / "predictions.json", "predictions", "terms")
    save(src, results)
    print((src / "predictions.md").read_text())
    return 0


def main(argv) -> int:
    a = parse(argv)
    if a.render:
        return render(Path(a.render))
    jvm = select_jdks([a.jdk] if a.jdk else None)[0]
    java = str(jvm.home / "bin" / "java")
    platform_file = cal.platform_path(a.platform)
    platform = cal.load(platform_file)
    if a.constants == "platform" and not (platform or {}).get("constants"):
        raise JvmosError(f"no platform constants in {platform_file}: run 'jvmos calibrate' "
                         f"first, or --constants same-run")
    if a.constants == "same-run" and not (platform or {}).get("engine_probes"):
        raise JvmosError(f"no probe costs in {platform_file} (the same-run calibration's "
                         f"recordings are corrected with them): run 'jvmos calibrate' first")
    c_program("reqload")
    jar(IO_JAR)
    out = out_dir(a.out, "predictions")
    terms = [t for t in TERMS if t.name in a.only]
    results = {"experiment": "predictions", "jdk": str(jvm.home), "jdk_label": jdk_label(jvm),
               "pairs": a.pairs, "seed": a.seed, "quick": a.quick,
               "requests_scale": a.requests_scale, "jvm_flags": JVM_FLAGS,
               "date": time.strftime("%Y-%m-%d"), "commit": iv.git_commit(),
               "analysis_plan": __doc__.split("\n\n")[1], "terms": []}
    results["constants"] = (same_run_constants(jvm, platform, platform_file, a.constant_trials,
                                               log) if a.constants == "same-run"
                            else platform_constants(platform, platform_file))
    data_file = out / ".data.bin"
    data_file.write_bytes(random.Random(3).randbytes(iv.FILE_BYTES))
    try:
        with Progress(len(terms) * a.pairs * 2, "predictions", unit="server") as bar:
            for t in terms:
                log(f"{t.name}: {t.term} against {CLOCK_NAMES[t.clock]}")
                r = measure_term(t, a, java, out, data_file, bar)
                if r["status"] == "complete":
                    r["analysis"] = analyze_term(t, r, results["constants"], str(jvm.home))
                    v = r["analysis"]
                    log(f"  predicted {ms(v['predicted_ns'])} ms, measured "
                        f"{ms(v['measured90']['mean'])} ms: {v['verdict']['verdict']}")
                else:
                    log(f"  FAILED: {r['reason']}")
                results["terms"].append(r)
                save(out, results)
    finally:
        data_file.unlink(missing_ok=True)
        if results["terms"]:
            save(out, results)
    print((out / "predictions.md").read_text())
    log(f"results: {out}")
    failed = [r["name"] for r in results["terms"] if r["status"] != "complete"]
    if failed:
        raise JvmosError(f"{len(failed)} term(s) failed ({', '.join(failed)}); the others' "
                         f"results are in {out}")
    return 0
