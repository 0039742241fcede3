"""`jvmos run predictions`: the paper's question made testable. Each term of C_os prices the
OS's part of one use of a service; a change that removes uses should save the term's price on
the clock that the term prices, and on this machine, with constants calibrated in the same run.

The analysis, fixed before any data (and printed with the results):
  * Programs and arms: jvmos's request server (workloads/java/io Intervene, loaded by the C
    client workloads/c/reqload) in the two arms of `jvmos run interventions` that differ in one
    service: thread per connection -> pool (C_nt), a connection per request -> keep-alive
    (C_link), open/close per request -> a kept file (C_file), faults in the run -> the heap
    pre-touched (page faults x C_pf), heap arrays -> a direct buffer (the NIO copy: bytes x the
    calibrated heap -> direct copy cost), a new zlib Inflater per inflation -> one reused
    (the allocator: malloc calls x the calibrated cost of one malloc).
  * Measurement, no probe attached: arms A and B as two live servers side by side (each run
    with -XX:-UseDynamicNumberOfCompilerThreads), both warmed up, then windows of n requests
    to one and the other in ABBA/BAAB order, so that a window of A and its window of B are
    seconds apart: the machine's drift (on this VM the CPU of the same work varies up to 3x
    between minutes) falls on both. Per window the kernel's own counters (jvmos.proctimes):
    utime and stime of the thread group, minor faults, read/write syscalls and bytes, and the
    JIT's and the GC's threads apart.
  * Windows: the first window of each arm is the JIT's settling (kept, not tested; the slope
    between n and 2n requests), then --windows tested windows; page faults use one window
    after a warm-up of 50 requests only (the uses happen at the first touch of the heap).
  * The clock each term prices: the kernel terms (C_nt, C_link, C_file, page faults) against
    kernel time (stime) less the JIT threads' stime; the NIO copy (a user-space copy) against
    user time (utime) less the JIT threads'; the allocator against libc's malloc time as the
    probes measure it (each of its windows recorded with the mem layer, time mode, corrected
    for the probe effect), its count the probes' malloc calls in the same windows.
  * Unit of analysis: the server pair (the windows of two JVMs are not independent): the
    mean of its window pairs' differences A - B; --servers pairs of fresh JVMs per term, fixed
    in advance; the output prints, from the data, how many server pairs a ratio of 1 would
    need for an interval of +-0.2.
  * The count removed: by design of the arms (n threads, n - 1 connections, n opens, n x the
    response's bytes in n x response / chunk writes), and for page faults the kernel's minor
    fault counter (mean of A - B over the window pairs). Equal work: the client's checksum of every
    answer, and the server's bytes written (wchar) equal within 1% between the arms.
  * Prediction: count x the constant (same-run calibration by default; C_nt by its kernel
    part, the part a kernel clock sees); its standard error from the calibration's trials
    (sd / sqrt(trials), trials - 1 df) where stored, else the constant's 95% interval's
    half-width / t (or / 1.96).
  * Verdict (two one-sided tests at 5%): measured/predicted, 90% interval by the delta method
    (a ratio estimator when the count was measured per pair), Welch-Satterthwaite df;
    "confirmed" inside [0.8, 1.25], "refuted" wholly outside, "inconclusive" otherwise;
    "missing term" when the prediction is about 0 and the saving is not. Every term is
    reported, misses included.

What this does not test: the per-use costs of the whole change (θ: jvmos calibrate --in-situ,
jvmos run held-out).
"""
import argparse
import math
import random
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List

from jvmos import JvmosError
from jvmos import calibrate as cal
from jvmos import cputime, proctimes
from jvmos import record as rec_
from jvmos.analyzers import stats
from jvmos.analyzers.tables import Table, fmt_count
import jvmos.experiments.interventions as iv
from jvmos.experiments.common import (Progress, headline, jdk_label, load_finished, log,
                                      out_dir, select_jdks, write_outputs)
from jvmos.heuristic import whatif
from jvmos.tools import IO_JAR, c_program, jar

EXAMPLES = """\
examples:
  jvmos run predictions                        # every term, 6 server pairs, constants now
  jvmos run predictions --quick                # 2 server pairs, the platform's constants
  jvmos run predictions --only keep-alive --servers 10 --windows 8
  jvmos run predictions --render results/predictions

cost: 2 x servers fresh JVMs per term, no probe on them; same-run constants add the
calibration's recordings (about 45 s with the default --constant-trials 10).
"""

JVM_FLAGS = ("-XX:-UseDynamicNumberOfCompilerThreads",)


@dataclass(frozen=True)
class Term:
    name: str           # the what-if (and the interventions' spec) it tests
    term: str           # the term of C_os
    clock: str          # the window field it is tested against
    discard: int        # the windows of each arm before the tested ones (the JIT's settling)
    requests: int       # n, per window, full size
    count: str          # how the count removed is known
    warmup: int = 0     # requests before the first window (0: max(200, n))


TERMS = [
    Term("thread-pool", "C_nt", "stime_nojit_ns", 1, 500, "design: a thread per request"),
    Term("keep-alive", "C_link", "stime_nojit_ns", 1, 1000,
         "design: n - 1 connections fewer"),
    Term("file-handles", "C_file", "stime_nojit_ns", 1, 4000, "design: an open per request"),
    Term("pretouch", "C_pf (page faults)", "stime_nojit_ns", 0, 1500,
         "the kernel's minor-fault counter, A - B", warmup=50),
    Term("direct-buffers", "NIO copy (C_I/Ochunk's)", "utime_nojit_ns", 1, 250,
         "design: every byte written from a heap array"),
    Term("reuse-native-buffers", "C_mem's allocator (malloc)", "malloc_time_ns", 1, 300,
         "the probes' malloc calls in the same windows, A - B"),
]
# the terms whose clock is the probes' own time: their windows are recorded (mem layer)
PROBED_CLOCKS = {"malloc_time_ns": "mem"}
NAMES = [t.name for t in TERMS]
CLOCK_NAMES = {"stime_nojit_ns": "kernel CPU (stime) less the JIT threads'",
               "utime_nojit_ns": "user CPU (utime) less the JIT threads'",
               "malloc_time_ns": "libc's allocator time (malloc, calloc, realloc, *memalign), "
                                 "probe-measured and corrected (mem layer)"}


def parse(argv):
    p = argparse.ArgumentParser(prog="jvmos run predictions", epilog=EXAMPLES,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--only", help=f"terms to test, comma-separated (of {', '.join(NAMES)})")
    p.add_argument("--servers", type=int,
                   help="pairs of fresh servers (A and B) per term, fixed in advance: the unit "
                        "of analysis; default 6, --quick 2")
    p.add_argument("--windows", type=int,
                   help="tested windows per arm and server pair (page faults: 1); default 6, "
                        "--quick 2")
    p.add_argument("--requests-scale", type=float, default=1.0,
                   help="multiply every term's requests per window (default 1; --quick 0.25)")
    p.add_argument("--constants", choices=("same-run", "platform"),
                   help="calibrate the constants in this run (default) or take the platform "
                        "file's (default with --quick: then it is a demonstration, not a test)")
    p.add_argument("--constant-trials", type=int, default=10,
                   help="trials of the same-run calibration (default 10, about 45 s)")
    p.add_argument("--jdk", help="JDK home (default: the first found)")
    p.add_argument("--platform", help="platform file (probe and copy costs; jvmos calibrate)")
    p.add_argument("--seed", type=int, default=1, help="seed of the first block's order")
    p.add_argument("--out", help="output directory (default results/runs/<time>-predictions)")
    p.add_argument("--quick", action="store_true",
                   help="2 server pairs of 2 windows, a quarter of the requests, the platform's "
                        "constants")
    p.add_argument("--render", metavar="DIR",
                   help="re-make the tables of a finished run from DIR/predictions.json")
    a = p.parse_args(argv)
    if a.render:
        return a
    a.servers = a.servers if a.servers is not None else (2 if a.quick else 6)
    a.windows = a.windows if a.windows is not None else (2 if a.quick else 6)
    if a.servers < 2:
        p.error("--servers must be at least 2 (an interval needs two server pairs)")
    if a.windows < 1:
        p.error("--windows must be at least 1")
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


def window_order(windows: int, seed: int, first_block: int = 0) -> str:
    """The arms of 2 x `windows` windows in ABBA/BAAB blocks from block `first_block` on (an
    odd count ends on AB or BA): each arm has as many windows as the other and, over an even
    count, goes first in as many pairs as the other."""
    seq, j = "", first_block
    while len(seq) < 2 * windows:
        seq += block_order(j, seed)
        j += 1
    return seq[:2 * windows]


def pair_order(discard: int, windows: int, seed: int, k: int) -> str:
    """The windows' arms for server pair k: the settling windows, then the tested ones in
    blocks of their own, so that the tested pairs are balanced (an order drawn over both and
    cut would not be); successive server pairs start on the other block."""
    return (window_order(discard, seed + 1, k) if discard else "") + \
        window_order(windows, seed, k)


def settings(t: Term) -> Dict[str, dict]:
    spec = next(s for s in iv.SPECS if s.name == t.name)
    return {arm: iv.arm_settings(spec, arm) for arm in "AB"}


def probed_window(srv, n: int, t: Term, d: Path, platform_file) -> tuple:
    """One window recorded by jvmos (the layer of the term's clock, time mode): the load's
    answer, and the probes' calls and corrected time of the clock's category. Only the
    summary and manifest of the recording are kept."""
    box = {}
    res = rec_.record(rec_.Options(pid=srv.proc.pid, layers=[PROBED_CLOCKS[t.clock]],
                                   mode="time", out=d, platform=platform_file,
                                   workload=lambda: box.setdefault("load", srv.load(n)),
                                   log=lambda m: None))
    if res.status != "complete":
        raise JvmosError(f"the recording of window {d.name} ended {res.status}: {res.reason}")
    cat = ((res.summary.get("by_pid") or {}).get(str(srv.proc.pid)) or {}).get(
        "categories", {}).get("malloc") or {}
    shutil.rmtree(d / "raw", ignore_errors=True)
    (d / "probes.plan.json").unlink(missing_ok=True)
    return box["load"], {"malloc_time_ns": float(cat.get("time_ns") or 0.0),
                         "malloc_calls": int(cat.get("calls") or 0),
                         "malloc_correction_dominates": bool(cat.get("correction_dominates")),
                         "malloc_method": cat.get("method") or "no call seen",
                         "recording": str(d)}


def server_pair(t: Term, st: dict, java: str, d: Path, data_file: Path, n: int, warmup: int,
                windows: int, seed: int, k: int, bar: Progress,
                platform_file: str = None) -> dict:
    """Arms A and B as two live servers, no probe: both warmed up, then windows of n requests
    to one and the other in ABBA order, the kernel's counters read around each window; the
    first `t.discard` windows of each arm are the JIT's settling (kept, not tested)."""
    first = "AB" if k % 2 == 0 else "BA"
    srv, ok = {}, False
    order = pair_order(t.discard, windows, seed, k)
    rec = {"start_order": first, "order": order, "windows": {"A": [], "B": []},
           "answers": {"A": [], "B": []}, "bytes": {"A": [], "B": []}}
    try:
        for arm in first:
            srv[arm] = iv.Server(java, st[arm], d / arm, data_file, JVM_FLAGS)
        for arm in first:
            srv[arm].load(warmup)
        for i, arm in enumerate(rec["order"]):
            s0 = proctimes.snapshot(srv[arm].proc.pid)
            if t.clock in PROBED_CLOCKS:
                res, probed = probed_window(srv[arm], n, t, d / f"{arm}-window{i}",
                                            platform_file)
            else:
                res, probed = srv[arm].load(n), {}
            s1 = proctimes.snapshot(srv[arm].proc.pid)
            rec["windows"][arm].append({**proctimes.window(s0, s1), **probed})
            rec["answers"][arm].append(res["fnv"])
            rec["bytes"][arm].append(res["bytes"])
            bar.step()
        ok = True
    except cputime.ProcessGone as e:
        raise JvmosError(f"a server is gone: {e} (see {d}/*/server-stderr.txt)")
    finally:
        stop_all(srv.values(), quiet=not ok)
    for arm in srv:
        err = d / arm / "server-stderr.txt"
        if err.exists() and not err.stat().st_size:
            shutil.rmtree(d / arm)      # nothing to read: a finished server leaves no folder
    if d.is_dir() and not any(d.iterdir()):
        d.rmdir()
    return rec


stop_all = iv.stop_servers      # (the interventions' servers: one way to stop them)


def term_windows(t: Term, a) -> int:
    return 1 if t.name == "pretouch" else a.windows


def measure_term(t: Term, a, java: str, out: Path, data_file: Path, bar: Progress) -> dict:
    n = max(20, int(t.requests * a.requests_scale))
    # page faults: a short warm-up, or the heap is touched before the window opens
    warmup = t.warmup or max(200, n)
    st = settings(t)
    r = {"name": t.name, "term": t.term, "clock": t.clock, "requests": n,
         "warmup_requests": warmup, "discard": t.discard, "windows": term_windows(t, a),
         "count_basis": t.count, "status": "running", "settings": st, "servers": []}
    r["server"] = {x: iv.server_cmd(java, st[x], Path("PORT_FILE"), data_file, JVM_FLAGS)
                   for x in "AB"}
    try:
        for k in range(a.servers):
            seed = a.seed * 1009 + NAMES.index(t.name) * 31 + k
            r["servers"].append(server_pair(t, st, java, out / t.name / f"pair{k}", data_file,
                                            n, warmup, r["windows"], seed, k, bar,
                                            str(a.platform_file)))
    except JvmosError as e:
        r["status"], r["reason"] = "failed", str(e)
        return r
    if (out / t.name).is_dir() and not any((out / t.name).iterdir()):
        (out / t.name).rmdir()
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
                                     "malloc_call": mem["malloc_call"],
                                     "nio_heap_to_direct": {str(jvm.home): nio}}}


def platform_constants(platform: dict, platform_file: Path) -> dict:
    return {"source": "platform", "file": str(platform_file),
            "date": (platform.get("constants") or {}).get("date") or platform.get("created"),
            "constants": platform.get("constants") or {}, "copy": platform.get("copy") or {}}


# ------------------------------------------------------------------------------ analysis

def tested(r: dict, arm: str, k: int) -> List[dict]:
    """The tested windows of arm `arm` of server pair k (the settling windows left out)."""
    return r["servers"][k]["windows"][arm][r["discard"]:]


def window_pairs(r: dict, key: str) -> List[List[float]]:
    """Per server pair, A - B of `key` for each tested window pair (A's i-th with B's i-th,
    adjacent in time)."""
    return [[a[key] - b[key] for a, b in zip(tested(r, "A", k), tested(r, "B", k))]
            for k in range(len(r["servers"]))]


def service_pairs(r: dict, cls: str) -> List[List[float]]:
    cpu = lambda w: w["service"][cls]["utime_ns"] + w["service"][cls]["stime_ns"]
    return [[cpu(a) - cpu(b) for a, b in zip(tested(r, "A", k), tested(r, "B", k))]
            for k in range(len(r["servers"]))]


def mean(xs) -> float:
    return sum(xs) / len(xs)


def count_removed(t: Term, r: dict) -> dict:
    """The uses one window of arm A makes and the same window of arm B does not."""
    n, st = r["requests"], r["settings"]["A"]
    if t.name == "pretouch":
        per = [mean(x) for x in window_pairs(r, "minflt")]
        return {"removed": mean(per), "per_server_pair": per,
                "what": "minor page faults (the kernel's counter), mean of A - B"}
    if t.name == "reuse-native-buffers":
        per = [mean(x) for x in window_pairs(r, "malloc_calls")]
        return {"removed": mean(per), "per_server_pair": per,
                "what": "allocator calls the probes counted (malloc, calloc, realloc, "
                        "*memalign), mean of A - B"}
    if t.name == "direct-buffers":
        writes = n * -(-st["response"] // st["chunk"])
        return {"removed": n * st["response"], "calls": writes,
                "what": f"bytes written from heap arrays, in {writes:,} writes"}
    if t.name == "keep-alive":
        return {"removed": n - 1, "what": "connections accepted"}
    return {"removed": n, "what": {"thread-pool": "threads started",
                                   "file-handles": "files opened"}[t.name]}


def equal_work(t: Term, r: dict) -> dict:
    """The answers (the client's checksum of each window: the i-th window of every server got
    the same requests) and the server's bytes written in the tested windows, per arm."""
    answers = {tuple(sp["answers"][arm]) for sp in r["servers"] for arm in "AB"}
    w = {arm: [x["wchar"] for k in range(len(r["servers"])) for x in tested(r, arm, k)]
         for arm in "AB"}
    ma, mb = mean(w["A"]), mean(w["B"])
    rel = abs(ma - mb) / max(ma, mb, 1)
    return {"same_answers": len(answers) == 1, "wchar_mean": {"A": ma, "B": mb},
            "wchar_rel_diff": rel, "equal": len(answers) == 1 and rel <= 0.01}


def prediction_se(t: Term, consts: dict, p: dict, removed: float):
    """The prediction's standard error (ns) and its degrees of freedom: from the calibration's
    trials where they are stored (count x sd / sqrt(k), k - 1 df), else from the constant's
    95% interval (half-width / t of its trials, or / 1.96 when they are not known)."""
    from scipy import stats as st
    key = {"C_nt": "C_nt", "C_link": "C_link", "C_file": "C_file"}.get(t.term)
    c = (consts.get("constants") or {}).get(key) if key else None
    if c and len(c.get("samples_us") or []) >= 2:
        xs = c["samples_us"]
        m = sum(xs) / len(xs)
        sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))
        return abs(removed) * sd / math.sqrt(len(xs)) * 1e3, float(len(xs) - 1)
    half = (p["predicted_ci95_us"][1] - p["predicted_ci95_us"][0]) * 1e3 / 2
    copy_key = {"pretouch": "page_fault", "reuse-native-buffers": "malloc_call"}.get(t.name)
    k = ((consts.get("copy") or {}).get(copy_key) or {}).get("trials") if copy_key else None
    if k and k >= 2:
        return half / float(st.t.ppf(0.975, k - 1)), float(k - 1)
    return half / 1.96, math.inf


def malloc_prediction(removed: float, consts: dict) -> dict:
    """The allocator term on the probes' malloc clock: calls removed x the calibrated cost of
    one malloc (free is not on this clock: the probes do not time it)."""
    m = (consts.get("copy") or {}).get("malloc_call")
    if not m:
        raise JvmosError("no calibrated malloc cost: run 'jvmos calibrate'")
    lo, hi = m["ns_per_call_ci95"]
    return {"predicted_us": removed * m["ns_per_call"] / 1e3,
            "predicted_ci95_us": sorted([removed * lo / 1e3, removed * hi / 1e3]),
            "constant": m, "interval_method": "the count x the ends of the malloc cost's "
                                              "calibrated 95% interval"}


def priced(t: Term, consts: dict):
    """The constants a term is priced with on its clock, and what prices it. C_nt is libc +
    kernel time; tested against kernel time, it is priced by its kernel part where the
    calibration kept it (C_nt_kernel), else by the whole of it, which then says so."""
    k = consts.get("constants") or {}
    if t.name == "reuse-native-buffers":
        return consts, ("C_mem's allocator: one malloc of 16 B..4 KiB (memcal), for every "
                        "allocator call")
    if t.term != "C_nt":
        return consts, t.term
    if k.get("C_nt_kernel"):
        return ({**consts, "constants": {**k, "C_nt": k["C_nt_kernel"]}},
                "C_nt's kernel part (C_nt_kernel)")
    return consts, ("C_nt, libc + kernel (no kernel part in this calibration: its libc part "
                    "is user time, outside this clock, so the ratio is low by that part)")


def correction_dominated(r: dict) -> int:
    """How many of arm A's tested windows had a probe correction larger than half of the raw
    time (the probes' own flag): 0 for the terms whose windows have no probe."""
    return sum(1 for k in range(len(r["servers"])) for w in tested(r, "A", k)
               if w.get("malloc_correction_dominates"))


def analyze_term(t: Term, r: dict, consts: dict, jdk_home: str) -> dict:
    """The verdict's unit is the server pair: the mean of its window pairs' differences (the
    windows of one pair of JVMs are not independent of each other), n = server pairs."""
    per_pair = window_pairs(r, t.clock)
    diffs = [mean(x) for x in per_pair]
    cnt = count_removed(t, r)
    consts, priced_by = priced(t, consts)
    platform = {"constants": consts["constants"], "copy": consts["copy"]}
    p = (malloc_prediction(cnt["removed"], consts) if t.name == "reuse-native-buffers" else
         whatif.predict(t.name, cnt["removed"], platform, jdk_home, cnt.get("calls", 0.0)))
    pred_ns = p["predicted_us"] * 1e3
    pred_se, pred_df = prediction_se(t, consts, p, cnt["removed"])
    meas = stats.paired_diff_ci(diffs, 0.90)
    meas95 = stats.paired_diff_ci(diffs, 0.95)
    # a count measured per server pair (page faults) moves with the difference: a ratio
    # estimator; a count fixed by design is exact
    ratio = stats.ratio_ci(diffs, pred_ns, pred_se, 0.90, pred_df,
                           counts=cnt.get("per_server_pair"))
    v = stats.equivalence_verdict(ratio, meas95, pred_ns)
    work = equal_work(t, r)
    if not work["equal"]:
        v = {**v, "verdict": "unequal work", "why": "the arms did not do the same work"}
    dominated = correction_dominated(r)
    if dominated and v["verdict"] in ("confirmed", "refuted"):
        # the clock is mostly the subtracted probe cost: a systematic error of that cost
        # (each window's own interval holds it) is not in the ratio's interval
        v = {**v, "verdict": "inconclusive", "why": v["why"] + f"; but the probe correction "
             f"dominates the measured time in {dominated} of arm A's windows: the ratio "
             f"rests on the calibrated probe window"}
    flat = [d for x in per_pair for d in x]
    side = {key: stats.paired_diff_ci([mean(x) for x in window_pairs(r, key)], 0.95)
            for key in ("stime_ns", "utime_ns", "cpu_ns")}
    for cls in ("jit", "gc"):
        side[f"{cls}_cpu_ns"] = stats.paired_diff_ci([mean(x) for x in service_pairs(r, cls)],
                                                     0.95)
    rel_se = pred_se / abs(pred_ns) if pred_ns else 0.0
    needed = stats.pairs_needed(meas["sd"], pred_ns, rel_se, predicted_df=pred_df)
    exited = sum(len(w["service_exited"]) for k in range(len(r["servers"])) for arm in "AB"
                 for w in tested(r, arm, k))
    return {"count": cnt, "prediction": p, "predicted_ns": pred_ns, "predicted_se_ns": pred_se,
            "predicted_df": pred_df, "window_diffs_ns": per_pair, "diffs_ns": diffs,
            "measured90": meas, "measured95": meas95, "ratio": ratio, "verdict": v,
            "equal_work": work, "other_clocks": side,
            "window_level90": stats.paired_diff_ci(flat, 0.90) if len(flat) >= 2 else None,
            "server_pairs_for_pm02": needed, "priced_by": priced_by,
            "service_exited": exited}


# ------------------------------------------------------------------------------ output

def ms(x: float) -> str:
    return f"{x / 1e6:,.2f}"


def tables(results: dict) -> list:
    c = results["constants"]
    t = Table(f"Predictions of C_os's terms against the clock each prices ({results['jdk_label']}"
              f", {results['servers']} server pairs per term, {results['windows']} tested "
              f"window pairs each (page faults: 1), ABBA; constants: {c['source']}"
              f"{' ' + str(c.get('date')) if c.get('date') else ''})",
              ["term", "program", "arm (A -> B)", "count removed", "clock (window)",
               "predicted, ms [95%]", "measured A - B, ms [90% CI]", "ratio [90% CI]",
               "verdict", "JIT, GC CPU A - B, ms", "server pairs for ±0.2"])
    for r in results["terms"]:
        if r.get("status") != "complete":
            t.add([r["term"], "request server", r["name"], "—", "—", "—", "—", "—",
                   f"FAILED: {r.get('reason')}", "—", "—"])
            continue
        x = r["analysis"]
        p, m, ra = x["prediction"], x["measured90"], x["ratio"]
        oc = x["other_clocks"]
        needed = x["server_pairs_for_pm02"] or ("no ratio" if not x["predicted_ns"]
                                                else "> 200")
        t.add([x.get("priced_by", r["term"]), "request server (Intervene)", next(
               s.change for s in iv.SPECS if s.name == r["name"]),
               f"{fmt_count(round(x['count']['removed']))} {x['count']['what']}",
               f"{CLOCK_NAMES[r['clock']]} (per window of n={r['requests']:,}; "
               f"{r['windows']} tested of {r['discard'] + r['windows']} per arm)",
               f"{ms(x['predicted_ns'])} [{p['predicted_ci95_us'][0] / 1e3:,.2f}, "
               f"{p['predicted_ci95_us'][1] / 1e3:,.2f}]",
               f"{ms(m['mean'])} [{ms(m['ci'][0])}, {ms(m['ci'][1])}]",
               "—" if ra is None else f"{ra['ratio']:.2f} [{ra['ci'][0]:.2f}, {ra['ci'][1]:.2f}]",
               x["verdict"]["verdict"],
               f"{ms(oc['jit_cpu_ns']['mean'])}, {ms(oc['gc_cpu_ns']['mean'])}",
               str(needed)])
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
        "count removed, per window: by the arms' design (exact); page faults by the kernel's "
        "minor-fault counter, malloc calls by the probes (mean of A - B over the window pairs).",
        "predicted, per window: count x the constant; its interval the count times the ends "
        "of the constant's 95% interval; its standard error, for the ratio, from the "
        "calibration's trials (sd / sqrt(trials)) where stored.",
        "measured, per window: arm A's clock minus arm B's in adjacent windows, averaged per "
        "server pair; the mean over server pairs with its Student t 90% interval (n server "
        "pairs, n - 1 df). The clock is the kernel's utime or stime of the whole process "
        "(exited threads included) less the JIT compiler threads', which the kernel samples "
        f"at each tick and reports in units of {proctimes.TICK_NS / 1e6:g} ms.",
        "ratio: measured / predicted, 90% interval by the delta method (both uncertainties, "
        "Welch-Satterthwaite df). confirmed: the interval inside [0.8, 1.25] (two one-sided "
        "tests at 5%); refuted: wholly outside; inconclusive: otherwise.",
        "JIT, GC CPU A - B: the compiler and GC threads' CPU (user + kernel) per window, "
        "mean over server pairs: a shift the arms made in the JVM's own services (the GC's "
        "stays in the clock, the JIT's does not).",
        "server pairs for ±0.2: how many server pairs would give a ratio of 1 an interval of "
        "±0.2 with this run's spread and the constant's uncertainty (a power estimate for the "
        "next run; > 200: the constant's own interval is too wide, or the spread).",
        "the allocator's windows are recorded (mem layer, time mode): its clock is the probes' "
        "own malloc time, corrected for their effect, and its count their malloc calls; the "
        "other terms' windows have no probe. The whole change's per-use cost is θ's "
        "(calibrate --in-situ, run held-out).",
    ]
    gone = sum(r["analysis"]["service_exited"] for r in done)
    if gone:
        out.append(f"{gone} JIT or GC thread(s) exited inside a window: their class's figures "
                   f"miss that thread's time.")
    return out


def headlines(results: dict) -> List[dict]:
    """The first note's count of verdicts, and the table's ratio of every term."""
    done = [r for r in results["terms"] if r.get("status") == "complete"]
    kinds = [r["analysis"]["verdict"]["verdict"] for r in done]
    failed = len(results["terms"]) - len(done)
    rest = [f"{kinds.count(k)} {k}" for k in ("refuted", "inconclusive", "missing term",
                                               "unequal work") if kinds.count(k)]
    rest += [f"{failed} failed"] if failed else []
    test = "" if (results.get("constants") or {}).get("source") == "same-run" else \
        "; NOT A TEST: the platform file's constants, not this run's"
    ratios = []
    for r in results["terms"]:
        x = r.get("analysis") if r.get("status") == "complete" else None
        ra = (x or {}).get("ratio")
        ratios.append(f"{(x or {}).get('priced_by', r['term'])} " + (
            "failed" if x is None else "no ratio (predicted 0)" if ra is None else
            f"{ra['ratio']:.2f} [{ra['ci'][0]:.2f}, {ra['ci'][1]:.2f}]"))
    return [
        headline("terms of C_os whose predicted saving (count removed x the term's calibrated "
                 "constant) the measured saving confirmed: measured / predicted with its 90% "
                 "interval inside [0.8, 1.25], of the terms run",
                 f"{kinds.count('confirmed')} of {len(results['terms'])}"
                 + (f" ({', '.join(rest)})" if rest else "") + test
                 if results["terms"] else "unknown"),
        headline("measured / predicted saving per term (x; [90% CI, delta method]; measured: "
                 "the clock the term prices, arm A - arm B, mean over server pairs)",
                 "; ".join(ratios) + test if ratios else "unknown")]


def save(out: Path, results: dict) -> None:
    results["headline"] = headlines(results)
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
    a.platform_file = platform_file
    out = out_dir(a.out, "predictions")
    terms = [t for t in TERMS if t.name in a.only]
    results = {"experiment": "predictions", "jdk": str(jvm.home), "jdk_label": jdk_label(jvm),
               "servers": a.servers, "windows": a.windows, "seed": a.seed, "quick": a.quick,
               "requests_scale": a.requests_scale, "jvm_flags": JVM_FLAGS,
               "date": time.strftime("%Y-%m-%d"), "commit": iv.git_commit(),
               "analysis_plan": __doc__.split("\n\n")[1], "terms": []}
    results["constants"] = (same_run_constants(jvm, platform, platform_file, a.constant_trials,
                                               log) if a.constants == "same-run"
                            else platform_constants(platform, platform_file))
    data_file = out / ".data.bin"
    data_file.write_bytes(random.Random(3).randbytes(iv.FILE_BYTES))
    try:
        steps = sum(a.servers * 2 * (t.discard + term_windows(t, a)) for t in terms)
        with Progress(steps, "predictions", unit="window") as bar:
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
