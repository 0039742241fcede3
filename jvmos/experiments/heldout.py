"""`jvmos run held-out`: θ (jvmos calibrate --in-situ) tested on a program it never saw.

shop-keep-alive: the JPetStore-style shop on Tomcat (workloads/java/shop), its load generator
opening a connection per page (arm A) or one per load thread (arm B, keep-alive); θ keep-alive.
chat-virtual: the VolanoMark-style chat server (workloads/java/chat, a reader and a writer
thread per connection), its threads platform (arm A) or virtual (arm B, JDK 21+), loaded with
short sessions (--rooms x 20 users, --messages each); θ thread-pool, on θ's own JDK.
ipc-buffered: seed 000's socket server (workloads/java/ipc, object streams), its streams on
the socket as they are (arm A: ObjectOutputStream's blocks of at most 1 KiB go to the socket
one write each) or buffered by 8 KiB (arm B), answering SV calls (--ipc-size Integers per
answer, --ipc-calls calls per client); θ bigger-chunks.
shop-pretouch: the shop on a fixed 1 GiB heap (-Xms1g -Xmx1g), as it is (arm A: the heap's
pages are first touched as the shop allocates) or with -XX:+AlwaysPreTouch (arm B: touched at
start-up, before it listens); θ pretouch. A first touch happens once in a JVM's life: after
the warm-up, G1 keeps growing its young generation into the untouched heap for about eight
loads (--pretouch-loads), and those loads are the ones measured and recorded.

The analysis, fixed before the data:
  * Prediction, from arm A's recording and the declared change only: one load of arm A is
    recorded (count mode) on a warmed server. Shop: links layer; keep-alive keeps one
    connection per load thread, so the uses removed are A's accepts less the load's threads
    (from 28 Nov: ceil(pages / 100) per load thread, since Tomcat closes a keep-alive
    connection after 100 requests).
    Chat: threads layer; virtual threads keep no platform thread per connection (the
    scheduler's carriers start once, not per load), so the uses removed are A's threads
    started. Pretouch: mem layer, a fresh shop of arm A, warmed like the measured ones, recorded
    over its next --pretouch-loads loads; the uses removed are its user page faults inside the
    Java heap's range (the only ones AlwaysPreTouch moves to start-up), none kept. The saving per load is removed x θ (its interval θ's, model error included).
    Beside it, the paper's prediction, removed x C_link or C_nt (the OS's part only). Arm B is
    recorded too, for the count error only (B's count against the uses kept).
  * Measurement, no probe attached. Shop: --servers fresh shops, each loaded with both arms
    (the arm is the load's). Chat: --servers fresh pairs of live servers, one per arm (the arm
    is the server's). In each, a warm-up of both arms, then --windows loads of each arm in
    ABBA/BAAB order; per load the server's CPU clock (ns, every thread) less its JIT compiler
    threads' CPU. Equal work: every load served the same pages (shop) or delivered every
    message to every member of its room (chat), with no error.
  * Unit of analysis: the shop or the chat pair (its loads are not independent): the mean of
    its A - B differences; Student t across them.
  * Verdict: measured / predicted with its 90% interval (delta method, Welch-Satterthwaite
    df): confirmed inside [0.8, 1.25], refuted wholly outside, inconclusive otherwise.
  * No leak: the result names θ's sha256, and the held-out program (its jar, by sha256 and by
    name) must be none of the programs θ was fitted on.
"""
import argparse
import contextlib
import math
import json
import shutil
import time
from typing import Optional
from pathlib import Path

from jvmos import JvmosError
from jvmos import calibrate as cal
from jvmos import cputime, proctimes
from jvmos import record as rec
from jvmos.analyzers import stats
from jvmos.analyzers.tables import Table
import jvmos.experiments.interventions as iv
from jvmos.experiments.common import (Progress, jdk_label, load_finished, log, out_dir,
                                      select_jdks, write_outputs)
from jvmos.experiments.predictions import window_order
from jvmos.experiments.server import CommandServer
from jvmos.experiments.shop import Shop
from jvmos.heuristic import theta as th
from jvmos.heuristic import whatif
from jvmos.tools import CHAT_JAR, DACAPO_JAR, IPC_JAR, SHOP_JAR, jar, program_id

TESTS = ("shop-keep-alive", "chat-virtual", "ipc-buffered", "shop-pretouch", "shop-combined",
         "dacapo-inflate")
WARMUP_LOADS = 3            # loads of each arm before the measured ones, in every shop
JVM_FLAGS = ["-XX:-UseDynamicNumberOfCompilerThreads"]


def parse(argv):
    p = argparse.ArgumentParser(prog="jvmos run held-out", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="examples:\n  jvmos run held-out\n"
                                       "  jvmos run held-out --servers 2 --windows 2 --pages 40"
                                       "\n  jvmos run held-out --render results/predictions/"
                                       "held-out\n")
    p.add_argument("--only", help=f"tests ({', '.join(TESTS)}; default: every test whose θ "
                                  f"this machine has, the others skipped with the reason)")
    p.add_argument("--servers", type=int, default=4, help="fresh shops (default 4)")
    p.add_argument("--windows", type=int, default=4,
                   help="loads of each arm per shop, ABBA (default 4)")
    p.add_argument("--threads", type=int, default=4, help="load threads (default 4)")
    p.add_argument("--pages", type=int, default=250, help="pages per load thread (default 250)")
    p.add_argument("--rooms", type=int, default=10,
                   help="chat: rooms of 20 users per load (default 10)")
    p.add_argument("--messages", type=int, default=1,
                   help="chat: messages each user sends (default 1: short sessions)")
    p.add_argument("--ipc-size", type=int, default=5000,
                   help="ipc: Integers per SV answer (default 5000: about 50 KB)")
    p.add_argument("--ipc-calls", type=int, default=50,
                   help="ipc: calls per client run, one load (default 50)")
    p.add_argument("--pretouch-loads", type=int, default=8,
                   help="shop-pretouch: loads of each arm after the warm-up, all measured and "
                        "summed (default 8: while G1 grows into the heap)")
    p.add_argument("--dacapo-iterations", type=int, default=10,
                   help="dacapo-inflate: n, the iterations of the shorter run (the longer runs "
                        "2n; default 10)")
    p.add_argument("--dacapo-size", default="default", choices=("small", "default", "large"),
                   help="dacapo-inflate: the suite's input size (default: default)")
    p.add_argument("--jdk", help="JDK home (default: the first found)")
    p.add_argument("--platform", help="platform file with θ (jvmos calibrate --in-situ)")
    p.add_argument("--out", help="output directory (default results/runs/<time>-held-out)")
    p.add_argument("--render", metavar="DIR", help="re-make the tables from DIR/held-out.json")
    a = p.parse_args(argv)
    if a.render:
        return a
    if a.servers < 2 or min(a.windows, a.threads, a.pages, a.rooms, a.messages, a.ipc_size,
                            a.ipc_calls, a.pretouch_loads, a.dacapo_iterations) < 1:
        p.error("--servers must be at least 2; --windows, --threads, --pages, --rooms, "
                "--messages, --ipc-size and --ipc-calls at least 1")
    bad = [x for x in (a.only or ",".join(TESTS)).split(",") if x not in TESTS]
    if bad:
        p.error(f"unknown held-out test(s) {', '.join(bad)} (known: {', '.join(TESTS)})")
    return a


def recorded_load(pid: int, layer: str, what_if: str, load, out: Path,
                  platform_file: Path, layers: Optional[list] = None) -> dict:
    """One load recorded on a warmed server (count mode, one layer, or `layers`): the counts
    of its JVM (whatif.counts), the probes that counted the what-if's uses (for several,
    what_if is a comma-separated list), and what names the run."""
    box = {}
    res = rec.record(rec.Options(
        pid=pid, layers=layers or [layer], mode="count", out=out, platform=str(platform_file),
        workload=lambda: box.setdefault("load", load()),
        log=lambda m: log(f"  [{out.name}] {m}")))
    if res.status != "complete":
        raise JvmosError(f"the recording {out} ended {res.status}: {res.reason}")
    part, _, _ = whatif.jvm_of_run(res.summary, pid)
    manifest = json.loads((out / "manifest.json").read_text())
    hooks = sorted({h for w in what_if.split(",") for h in whatif.count_hooks(manifest, w)})
    return {"counts": whatif.counts(part), "run_dir": str(out), "load": box["load"],
            "count_hooks": hooks,
            "summary_sha256": th.sha256_of(res.summary), "engine": manifest.get("engine") or {}}


def _kept(r: dict, **fields) -> dict:
    """A recorded load as a held-out result keeps it: its named counts, not every count."""
    return {**fields, **{k: v for k, v in r.items() if k != "counts"}}


def recorded_accepts(shop: Shop, a, keepalive: bool, out: Path, platform_file: Path) -> dict:
    r = recorded_load(shop.pid, "links", "keep-alive",
                      lambda: shop.load(a.threads, a.pages, keepalive), out, platform_file)
    return _kept(r, accepts=r["counts"]["accepts"])


def measured_loads(order: str, pid_of, load, row, bar: Progress, gone: str) -> dict:
    """The measured loads of a unit, arm by arm in `order`: each load (load(arm) returns its
    equal-work record) between two snapshots of its server's counters, kept as row(window,
    record). `gone` says where to look when a server dies."""
    loads = {"A": [], "B": []}
    for arm in order:
        try:
            s0 = proctimes.snapshot(pid_of(arm))
            res = load(arm)
            s1 = proctimes.snapshot(pid_of(arm))
        except cputime.ProcessGone as e:
            raise JvmosError(f"{gone[0]} is gone: {e} (see {gone[1]})")
        loads[arm].append(row(proctimes.window(s0, s1), res))
        bar.step()
    return loads


def cpu_row(w: dict) -> dict:
    """A load's CPU, less its JIT threads' and with them."""
    return {"cpu_ns": w["cpu_nojit_ns"], "cpu_with_jit_ns": w["cpu_ns"],
            "stime_ns": w["stime_ns"]}


def one_shop(java: str, a, d: Path, k: int, bar: Progress) -> dict:
    order = window_order(a.windows, 23, k)
    with Shop(java, d, page_bytes=4096, max_seconds=1800, jvm_args=JVM_FLAGS) as shop:
        for _ in range(WARMUP_LOADS):              # the warm-up: past the JIT's first waves
            for arm in "AB":
                shop.load(a.threads, a.pages, arm == "B")
        loads = measured_loads(
            order, lambda arm: shop.pid, lambda arm: shop.load(a.threads, a.pages, arm == "B"),
            lambda w, res: {**cpu_row(w), "pages": res["pages"],
                            "connections": res["connections"], "errors": res.get("errors", 0)},
            bar, ("the shop", f"{d}/server-stderr.txt"))
    err = d / "server-stderr.txt"
    if not (err.exists() and err.stat().st_size):
        shutil.rmtree(d, ignore_errors=True)   # the shop's logs: nothing once it served
    return {"order": order, "loads": loads, "sha256": th.sha256_of(loads)}


def judge(r: dict, diffs: list, removed: float, theta: dict, constant: dict,
          unequal: str = "", prediction: Optional[dict] = None,
          programs: Optional[list] = None) -> dict:
    """The verdict of one held-out test: measured (the units' mean A - B CPU) against removed
    x θ (or a `prediction` made of several θ, whose `programs` are all of theirs), and beside
    it removed x the paper's constant (the OS's part; or the constant's `c_os_ns`); the
    no-leak rule."""
    p = prediction or th.predict(removed, theta["fit"])
    meas = stats.paired_diff_ci(diffs, 0.90)
    meas95 = stats.paired_diff_ci(diffs, 0.95)
    ratio = stats.ratio_ci(diffs, p["predicted_ns"], p["predicted_se_ns"], 0.90,
                           p["predicted_df"])
    v = stats.equivalence_verdict(ratio, meas95, p["predicted_ns"])
    # the units a run of this spread would need for a ±0.2 interval at a ratio of 1 (what the
    # next run's size comes from)
    need = stats.pairs_needed(meas["sd"], p["predicted_ns"],
                              p["predicted_se_ns"] / p["predicted_ns"] if p["predicted_ns"]
                              else 0.0, predicted_df=p["predicted_df"])
    if unequal:
        v = {**v, "verdict": "unequal work", "why": unequal}
    # no leak: the held-out program is none of θ's (by its jar's sha256 or its jar's name, so
    # that a rebuilt copy of θ's own program is caught too); a θ that names no program
    # cannot be checked and counts as leaked
    mine = r["program_id"]
    progs = programs if prediction else theta.get("programs")
    leak_programs = (not progs) or any(x.get("jar_sha256") == mine["jar_sha256"] or
                                       x.get("jar") == mine["jar"] for x in progs)
    cos_ns = constant["c_os_ns"] if "c_os_ns" in constant else \
        removed * constant["mean_us"] * 1e3
    return {"removed": removed, "prediction": p, "measured90": meas, "measured95": meas95,
            "diffs_ns": diffs, "ratio": ratio, "verdict": v, "equal_work": not unequal,
            "units_needed_for_0.2": need,
            "c_os_predicted_ns": cos_ns,
            "c_os_ratio": meas["mean"] / cos_ns if cos_ns else None,
            "theta_programs_disjoint": not leak_programs}


PARTIAL = "held-out.partial.json"


def keep_partial(out: Path, r: dict) -> None:
    """The test in progress, kept on disk after each unit: a server that dies later loses
    nothing measured before it (the file goes when the test's results are written)."""
    tmp = out / (PARTIAL + ".tmp")
    tmp.write_text(json.dumps(r) + "\n")
    tmp.replace(out / PARTIAL)


def full_size(name: str, a) -> bool:
    """Only a test at its stated size speaks for θ (its verdict is stored beside θ): at least
    4 units of 4 windows, and the program's load as the analysis plan states it."""
    if a.servers < 4 or a.windows < 4:
        return False
    return {"shop-keep-alive": a.threads >= 4 and a.pages >= 250,
            "shop-pretouch": a.threads >= 4 and a.pages >= 250 and a.pretouch_loads >= 8,
            "shop-combined": a.threads >= 4 and a.pages >= 250 and a.pretouch_loads >= 8,
            "dacapo-inflate": a.dacapo_iterations >= 10 and a.dacapo_size != "small",
            "chat-virtual": a.rooms >= 10 and a.messages == 1,
            "ipc-buffered": a.ipc_size >= 5000 and a.ipc_calls >= 50}[name]


def unit_diffs(units: list) -> list:
    """Per unit (a shop, a chat pair), the mean of its A loads' CPU less the mean of its B's."""
    return [sum(x["cpu_ns"] for x in u["loads"]["A"]) / len(u["loads"]["A"]) -
            sum(x["cpu_ns"] for x in u["loads"]["B"]) / len(u["loads"]["B"]) for u in units]


def analyze(r: dict, theta: dict, c_link: dict) -> dict:
    shops = r["shops"]
    removed = r["recorded"]["A"]["accepts"] - r["keep"]
    pages = {x["pages"] for s in shops for arm in "AB" for x in s["loads"][arm]}
    errors = sum(x["errors"] for s in shops for arm in "AB" for x in s["loads"][arm])
    equal = pages == {r["threads"] * r["pages"]} and errors == 0
    out = judge(r, unit_diffs(shops), removed, theta, c_link,
                "" if equal else f"pages {sorted(pages)}, errors {errors}")
    out["count_error_b"] = r["recorded"]["B"]["accepts"] - r["keep"]
    return out


def fresh_theta(a, platform: dict, what_if: str, term_hint: bool = False):
    """(the JDK a held-out test runs on: --jdk, else the first found; θ of what_if fitted on
    it), refused in one line when θ is missing or stale (term_hint: the refusal names the
    calibrate term to run)."""
    jvm = select_jdks([a.jdk] if a.jdk else None)[0]
    theta = th.of(platform, what_if, str(jvm.home))
    why = th.stale(theta, str(jvm.home))
    if why:
        raise JvmosError(why.replace("--in-situ'", f"--in-situ --in-situ-terms {what_if}'")
                         if term_hint else why)
    return jvm, theta


def run_shop_keep_alive(a, platform: dict, platform_file: Path, out: Path) -> dict:
    jvm, theta = fresh_theta(a, platform, "keep-alive")
    java = str(jvm.home / "bin" / "java")
    r = {"name": "shop-keep-alive", "what_if": "keep-alive", "term": "θ keep-alive (C_link)",
         "program": "the shop (Tomcat), a load's connections",
         "program_id": program_id(jar(SHOP_JAR), "org.jvmos.workloads.shop (jar)"),
         "jdk": str(jvm.home), "jdk_label": jdk_label(jvm),
         "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
         "change": "a connection per page -> keep-alive (one per load thread)",
         "threads": a.threads, "pages": a.pages, "keep": kept_connections(a.threads, a.pages),
         "theta_sha256": theta["theta_sha256"], "theta_source": {
             k: theta.get(k) for k in ("date", "commit", "jdk_label", "counted_by")},
         "recorded": {}, "shops": []}
    c_link = (platform.get("constants") or {}).get("C_link")
    if not c_link:
        raise JvmosError("no C_link in the platform file: run 'jvmos calibrate'")
    with Shop(java, out / "recorded-server", page_bytes=4096, max_seconds=1800,
              jvm_args=JVM_FLAGS) as shop:
        for _ in range(WARMUP_LOADS):
            shop.load(a.threads, a.pages, False)
            shop.load(a.threads, a.pages, True)
        for arm in "AB":
            r["recorded"][arm] = recorded_accepts(shop, a, arm == "B", out / f"recorded-{arm}",
                                                  platform_file)
    shutil.rmtree(out / "recorded-server", ignore_errors=True)
    with Progress(a.servers * 2 * a.windows, "held-out shop-keep-alive", unit="load") as bar:
        for k in range(a.servers):
            r["shops"].append(one_shop(java, a, out / f"shop{k}", k, bar))
            keep_partial(out, r)
    r["analysis"] = analyze(r, theta, c_link)
    r["constant_source"] = f"the platform file's C_link ({c_link['mean_us']:.2f} µs)"
    return r


PRETOUCH_FLAG = "-XX:+AlwaysPreTouch"
# Tomcat closes a keep-alive connection after this many requests (its maxKeepAliveRequests,
# left at its default by the shop): keep-alive keeps ceil(pages / 100) connections per load
# thread per load, not one
TOMCAT_KEEPALIVE_REQUESTS = 100


def kept_connections(threads: int, pages: int, loads: int = 1) -> int:
    return threads * loads * -(-pages // TOMCAT_KEEPALIVE_REQUESTS)


def pretouch_args(arm: str) -> list:
    return JVM_FLAGS + ([PRETOUCH_FLAG] if arm == "B" else [])


def pretouch_shop(java: str, arm: str, d: Path) -> Shop:
    return Shop(java, d, page_bytes=4096, max_seconds=1800, jvm_args=pretouch_args(arm))


def recorded_shop(java: str, a, arm: str, out: Path, platform_file: Path, make_shop,
                  keepalive: bool, what_if: str, layers: list) -> dict:
    """A fresh shop of one arm (make_shop(java, arm, dir)), warmed and then recorded (count
    mode, `layers`) over --pretouch-loads loads, as the measured shops are loaded; the heap's
    page faults must be known (the tests that use it price them)."""
    loads = lambda: [shop.load(a.threads, a.pages, keepalive) for _ in range(a.pretouch_loads)]
    with make_shop(java, arm, out.parent / f"recorded-server-{arm}") as shop:
        for _ in range(WARMUP_LOADS):
            shop.load(a.threads, a.pages, keepalive)
        r = recorded_load(shop.pid, layers[0], what_if, loads, out, platform_file,
                          layers=layers)
    shutil.rmtree(out.parent / f"recorded-server-{arm}", ignore_errors=True)
    if r["counts"].get("heap_page_faults") is None:
        raise JvmosError(f"the recording {out} could not tell the Java heap's page faults from "
                         f"the others (the heap's range was not read): no prediction")
    return r


def recorded_heap_faults(java: str, a, arm: str, out: Path, platform_file: Path) -> dict:
    """Its page faults in the Java heap (mem layer)."""
    r = recorded_shop(java, a, arm, out, platform_file, pretouch_shop, False, "pretouch",
                      ["mem"])
    return _kept(r, heap_page_faults=r["counts"]["heap_page_faults"],
                 page_faults=r["counts"].get("page_faults", 0),
                 pages=sum(x["pages"] for x in r["load"]))


def shop_pair(java: str, a, d: Path, k: int, bar: Progress, make_shop, seed: int,
              keepalive_b: bool, connections: bool) -> dict:
    """Two fresh shops, A and B (make_shop(java, arm, dir)): the warm-up of each, then
    --pretouch-loads loads each in ABBA/BAAB order, B's loads keeping their connections alive
    if keepalive_b; per load its shop's CPU less its JIT's, and its minor faults."""
    order = window_order(a.pretouch_loads, seed, k)
    with contextlib.ExitStack() as stack:
        shops = {arm: stack.enter_context(make_shop(java, arm, d / f"shop-{arm}"))
                 for arm in "AB"}
        load = lambda arm: shops[arm].load(a.threads, a.pages, keepalive_b and arm == "B")
        for _ in range(WARMUP_LOADS):              # the JIT's first waves, not measured
            for arm in "AB":
                load(arm)
        loads = measured_loads(
            order, lambda arm: shops[arm].pid, load,
            lambda w, res: {**cpu_row(w), "utime_ns": w["utime_ns"], "minflt": w["minflt"],
                            "pages": res["pages"],
                            **({"connections": res["connections"]} if connections else {}),
                            "errors": res.get("errors", 0)},
            bar, ("a shop", f"{d}/shop-*/"))
    if not any(f.stat().st_size for f in d.glob("shop-*/server-stderr.txt")):
        shutil.rmtree(d, ignore_errors=True)
    return {"order": order, "loads": loads, "sha256": th.sha256_of(loads)}


def shop_pretouch_pair(java: str, a, d: Path, k: int, bar: Progress) -> dict:
    """A as it is and B pretouched, loaded alike."""
    return shop_pair(java, a, d, k, bar, pretouch_shop, 41, False, False)


def unit_sums(units: list) -> list:
    """Per unit (a pair of fresh shops), the sum of its A loads' CPU less the sum of its B's:
    every measured load, where the first touches fall."""
    return [sum(x["cpu_ns"] for x in u["loads"]["A"]) -
            sum(x["cpu_ns"] for x in u["loads"]["B"]) for u in units]


def analyze_pretouch(r: dict, theta: dict, c_pf: dict) -> dict:
    units = r["pairs"]
    removed = r["recorded"]["A"]["heap_page_faults"] - r["keep"]
    pages = {x["pages"] for u in units for arm in "AB" for x in u["loads"][arm]}
    errors = sum(x["errors"] for u in units for arm in "AB" for x in u["loads"][arm])
    equal = pages == {r["threads"] * r["pages"]} and errors == 0
    out = judge(r, unit_sums(units), removed, theta, c_pf,
                "" if equal else f"pages {sorted(pages)}, errors {errors}")
    out["count_error_b"] = r["recorded"]["B"]["heap_page_faults"] - r["keep"]
    # the kernel's own count, beside the probes': every minor fault of the measured shops
    out["minflt_a_minus_b"] = sum(sum(x["minflt"] for x in u["loads"]["A"]) -
                                  sum(x["minflt"] for x in u["loads"]["B"])
                                  for u in units) / len(units)
    return out


def run_shop_pretouch(a, platform: dict, platform_file: Path, out: Path) -> dict:
    jvm, theta = fresh_theta(a, platform, "pretouch")
    pf = (platform.get("copy") or {}).get("page_fault")
    if not pf:
        raise JvmosError("no calibrated page-fault cost in the platform file: run "
                         "'jvmos calibrate'")
    java = str(jvm.home / "bin" / "java")
    r = {"name": "shop-pretouch", "what_if": "pretouch", "term": "θ pretouch (C_mem's faults)",
         "program": f"the shop (Tomcat), {a.pretouch_loads} loads after {WARMUP_LOADS} of "
                    f"warm-up",
         "program_id": program_id(jar(SHOP_JAR), "org.jvmos.workloads.shop (jar)"),
         "jdk": str(jvm.home), "jdk_label": jdk_label(jvm),
         "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
         "change": f"-Xms1g -Xmx1g -> the same with {PRETOUCH_FLAG}",
         "threads": a.threads, "pages": a.pages, "loads": a.pretouch_loads, "keep": 0,
         "theta_sha256": theta["theta_sha256"], "theta_source": {
             k: theta.get(k) for k in ("date", "commit", "jdk_label", "counted_by")},
         "recorded": {}, "pairs": []}
    for arm in "AB":
        r["recorded"][arm] = recorded_heap_faults(java, a, arm, out / f"recorded-{arm}",
                                                  platform_file)
    with Progress(a.servers * 2 * a.pretouch_loads, "held-out shop-pretouch",
                  unit="load") as bar:
        for k in range(a.servers):
            r["pairs"].append(shop_pretouch_pair(java, a, out / f"pair{k}", k, bar))
            keep_partial(out, r)
    r["analysis"] = analyze_pretouch(r, theta, {"mean_us": pf["ns_per_call"] / 1e3})
    r["constant_source"] = (f"the platform file's page-fault cost ({pf['ns_per_call']:,.0f} ns "
                            f"per fault: {pf.get('what', '')})")
    return r


COMBINED_POOL = 4           # arm B's bounded pool: Tomcat's workers, one per load thread
COMBINED_LAYERS = ["links", "mem", "threads"]
COMBINED_WHAT_IFS = ("keep-alive", "pretouch", "thread-pool")


def combined_shop(java: str, arm: str, d: Path) -> Shop:
    """Arm A: the shop as it is (1 GiB heap, Tomcat's pool up to 500 workers). Arm B: the same
    pretouched, its pool bounded to COMBINED_POOL workers (its loads keep their connections
    alive)."""
    return Shop(java, d, page_bytes=4096, max_seconds=1800, jvm_args=pretouch_args(arm),
                max_threads=500 if arm == "A" else COMBINED_POOL)


def recorded_combined(java: str, a, arm: str, out: Path, platform_file: Path) -> dict:
    """Its accepts, heap page faults and threads started (links, mem and threads layers)."""
    r = recorded_shop(java, a, arm, out, platform_file, combined_shop, arm == "B",
                      ",".join(COMBINED_WHAT_IFS), COMBINED_LAYERS)
    c = r["counts"]
    return _kept(r, accepts=c["accepts"], heap_page_faults=c["heap_page_faults"],
                 page_faults=c["page_faults"], threads_created=c["threads_created"],
                 pages=sum(x["pages"] for x in r["load"]))


def combined_pair(java: str, a, d: Path, k: int, bar: Progress) -> dict:
    """A as it is and B with the three changes (its loads keep their connections alive)."""
    return shop_pair(java, a, d, k, bar, combined_shop, 43, True, True)


def combined_terms(r: dict) -> dict:
    """Per kind of use, the count removed (arm A's recording less what the change keeps):
    keep-alive keeps ceil(pages / 100) connections per load thread per load (Tomcat's
    maxKeepAliveRequests; the reference run of 27 Nov kept one), pretouch none, the bounded pool
    starts its workers before the loads (every thread A started in its loads is taken as
    removed: an upper bound, the JVM's own threads included)."""
    a = r["recorded"]["A"]
    return {"keep-alive": a["accepts"] - kept_connections(r["threads"], r["pages"], r["loads"]),
            "pretouch": a["heap_page_faults"], "thread-pool": a["threads_created"]}


def analyze_combined(r: dict, thetas: dict, constants: dict) -> dict:
    """The three θ's predictions summed (theta.combine) against the pairs' summed A - B; the
    OS's part beside it (each count x its constant, summed)."""
    units = r["pairs"]
    removed = combined_terms(r)
    parts = {w: th.predict(n, thetas[w]["fit"]) for w, n in removed.items() if n}
    p = th.combine(list(parts.values()))
    pages = {x["pages"] for u in units for arm in "AB" for x in u["loads"][arm]}
    errors = sum(x["errors"] for u in units for arm in "AB" for x in u["loads"][arm])
    equal = pages == {r["threads"] * r["pages"]} and errors == 0
    cos = sum(n * constants[w] * 1e3 for w, n in removed.items())
    progs = [x for w in parts for x in (thetas[w].get("programs") or [])] or None
    # no one count: the kinds are in different units (removed_by_kind holds them)
    out = judge(r, unit_sums(units), None, {}, {"c_os_ns": cos},
                "" if equal else f"pages {sorted(pages)}, errors {errors}", prediction=p,
                programs=progs)
    b = r["recorded"]["B"]
    out["removed_by_kind"] = removed
    out["predicted_by_kind_ns"] = {w: x["predicted_ns"] for w, x in parts.items()}
    out["count_error_b_by_kind"] = {
        "keep-alive": b["accepts"] - kept_connections(r["threads"], r["pages"], r["loads"]),
        "pretouch": b["heap_page_faults"], "thread-pool": b["threads_created"]}
    out["count_error_b"] = None         # by kind only: the kinds are in different units
    out["minflt_a_minus_b"] = sum(sum(x["minflt"] for x in u["loads"]["A"]) -
                                  sum(x["minflt"] for x in u["loads"]["B"])
                                  for u in units) / len(units)
    return out


def combined_thetas(platform: dict, jdk: str, removed_threads: Optional[int] = None) -> dict:
    """The θ of each kind of use, on this JDK; thread-pool's is needed only when the recording
    of A started threads in its loads."""
    out = {}
    for w in COMBINED_WHAT_IFS:
        t = th.of(platform, w, jdk)
        why = th.stale(t, jdk)
        if w == "thread-pool" and removed_threads == 0:
            continue
        if why:
            raise JvmosError(f"θ {w}: {why}")
        out[w] = t
    return out


def combined_constants(platform: dict) -> dict:
    k = platform.get("constants") or {}
    pf = (platform.get("copy") or {}).get("page_fault")
    if not (k.get("C_link") and k.get("C_nt") and pf):
        raise JvmosError("the platform file lacks C_link, C_nt or the page-fault cost: run "
                         "'jvmos calibrate'")
    return {"keep-alive": k["C_link"]["mean_us"], "thread-pool": k["C_nt"]["mean_us"],
            "pretouch": pf["ns_per_call"] / 1e3}


def run_shop_combined(a, platform: dict, platform_file: Path, out: Path) -> dict:
    jvm = select_jdks([a.jdk] if a.jdk else None)[0]
    jdk = str(jvm.home)
    combined_thetas(platform, jdk, 0)           # refused before anything runs
    constants = combined_constants(platform)
    java = str(jvm.home / "bin" / "java")
    r = {"name": "shop-combined", "what_if": ",".join(COMBINED_WHAT_IFS),
         "term": "θ keep-alive + θ pretouch + θ thread-pool",
         "program": f"the shop (Tomcat), {a.pretouch_loads} loads after {WARMUP_LOADS} of "
                    f"warm-up",
         "program_id": program_id(jar(SHOP_JAR), "org.jvmos.workloads.shop (jar)"),
         "jdk": jdk, "jdk_label": jdk_label(jvm),
         "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
         "change": f"a connection per page, Tomcat's pool up to 500, -Xms1g -Xmx1g -> "
                   f"keep-alive, a pool of {COMBINED_POOL}, and {PRETOUCH_FLAG}",
         "threads": a.threads, "pages": a.pages, "loads": a.pretouch_loads,
         "recorded": {}, "pairs": []}
    for arm in "AB":
        r["recorded"][arm] = recorded_combined(java, a, arm, out / f"recorded-{arm}",
                                               platform_file)
    thetas = combined_thetas(platform, jdk, r["recorded"]["A"]["threads_created"])
    r["theta_sha256"] = ",".join(thetas[w]["theta_sha256"][:12] for w in thetas)
    r["thetas_sha256"] = {w: t["theta_sha256"] for w, t in thetas.items()}
    r["theta_source"] = {w: {k: t.get(k) for k in ("date", "commit", "jdk_label")}
                         for w, t in thetas.items()}
    with Progress(a.servers * 2 * a.pretouch_loads, "held-out shop-combined",
                  unit="load") as bar:
        for k in range(a.servers):
            r["pairs"].append(combined_pair(java, a, out / f"pair{k}", k, bar))
            keep_partial(out, r)
    r["analysis"] = analyze_combined(r, thetas, constants)
    r["constant_source"] = ("the platform file's C_link, C_nt and page-fault cost "
                            f"({constants['keep-alive']:.2f}, {constants['thread-pool']:.2f} "
                            f"and {constants['pretouch']:.2f} µs)")
    return r


INFLATE_REUSE = "-Djvmos.dacapo.inflate.reuse=true"
# what one zlib inflate stream made by java.util.zip.Inflater allocates and frees: the JDK's
# z_stream (calloc), zlib's inflate state and, on the first inflate, its window (read in the
# JDK's Inflater.c and zlib's inflate.c): the paper's allocator part of one Inflater
MALLOCS_PER_INFLATER = 3


def inflate_cmd(java: str, a, arm: str, iterations: int) -> list:
    """The DaCapo-style suite's inflate benchmark: arm A as it is (a new Inflater per
    document), arm B with one Inflater kept per worker thread and reset."""
    return [java] + ([INFLATE_REUSE] if arm == "B" else []) + JVM_FLAGS + [
        "-jar", str(jar(DACAPO_JAR)), "inflate", "--iterations", str(iterations),
        "--size", a.dacapo_size]


def inflate_run(java: str, a, arm: str, iterations: int) -> dict:
    """One bare run: the process's CPU (wait4 rusage: every thread, JIT included) and its
    iterations' validation."""
    r = cputime.run_measured(inflate_cmd(java, a, arm, iterations), timeout=1800)
    res = iv.last_json(r["stdout"]) or {}
    if r["returncode"] != 0 or not res.get("passed"):
        tail = (r["stderr"].strip().splitlines() or ["no output"])[-1]
        raise JvmosError(f"the inflate benchmark failed (exit {r['returncode']}): {tail}")
    return {"cpu_ns": r["cpu_ns"], "wall_ns": r["wall_ns"], "iterations": iterations,
            "threads": res.get("threads"), "passed": True}


def inflate_unit(java: str, a, k: int, bar: Progress) -> dict:
    """One unit: runs of n and 2n iterations of each arm, in an order balanced over units (A
    first in even units, B in odd; within a unit the arms' order reverses for the longer
    runs). Its difference: (A's 2n - A's n) - (B's 2n - B's n), so that start-up, setup and
    the JIT's first waves cancel."""
    n = a.dacapo_iterations
    first = "AB" if k % 2 == 0 else "BA"
    order = [(first[0], n), (first[1], n), (first[1], 2 * n), (first[0], 2 * n)]
    runs = {}
    for arm, it in order:
        runs[f"{arm}{it}"] = inflate_run(java, a, arm, it)
        bar.step()
    loads = {arm: [{"cpu_ns": runs[f"{arm}{2 * n}"]["cpu_ns"] - runs[f"{arm}{n}"]["cpu_ns"],
                    "threads": runs[f"{arm}{n}"]["threads"]}] for arm in "AB"}
    return {"order": [f"{arm}{it}" for arm, it in order], "runs": runs, "loads": loads,
            "sha256": th.sha256_of(runs)}


def recorded_inflaters(java: str, a, arm: str, out: Path, platform_file: Path) -> dict:
    """Arm `arm` recorded (mem layer, count mode) in runs of n and 2n iterations: the zlib
    inflate streams and allocator calls of the n iterations more."""
    got = {}
    for it in (a.dacapo_iterations, 2 * a.dacapo_iterations):
        d = out / f"recorded-{arm}{it}"
        res = rec.record(rec.Options(cmd=inflate_cmd(java, a, arm, it), layers=["mem"],
                                     mode="count", out=d, platform=str(platform_file),
                                     stdout=d / "stdout.txt", stderr=d / "stderr.txt",
                                     log=lambda m: log(f"  [{d.name}] {m}")))
        if res.status != "complete":
            raise JvmosError(f"the recording {d} ended {res.status}: {res.reason}")
        part, _, _ = whatif.jvm_of_run(res.summary)
        c = whatif.counts(part)
        if c.get("zlib_inflaters") is None:
            raise JvmosError(f"the recording {d} could not count zlib's inflate streams (is "
                             f"libz mapped by the JVM?): no prediction")
        manifest = json.loads((d / "manifest.json").read_text())
        got[it] = {"zlib_inflaters": c["zlib_inflaters"], "malloc_calls": c["malloc_calls"],
                   "run_dir": str(d), "summary_sha256": th.sha256_of(res.summary),
                   "count_hooks": whatif.count_hooks(manifest, "reuse-native-buffers")}
    n, n2 = a.dacapo_iterations, 2 * a.dacapo_iterations
    return {"zlib_inflaters": got[n2]["zlib_inflaters"] - got[n]["zlib_inflaters"],
            "malloc_calls": got[n2]["malloc_calls"] - got[n]["malloc_calls"],
            "runs": got, "count_hooks": got[n2]["count_hooks"]}


def analyze_inflate(r: dict, theta: dict, alloc_ns: float) -> dict:
    removed = r["recorded"]["A"]["zlib_inflaters"] - r["keep"]
    cos = removed * MALLOCS_PER_INFLATER * alloc_ns
    out = judge(r, unit_diffs(r["units"]), removed, theta, {"c_os_ns": cos})
    out["count_error_b"] = r["recorded"]["B"]["zlib_inflaters"] - r["keep"]
    out["malloc_calls_a"] = r["recorded"]["A"]["malloc_calls"]
    out["malloc_calls_b"] = r["recorded"]["B"]["malloc_calls"]
    return out


def run_dacapo_inflate(a, platform: dict, platform_file: Path, out: Path) -> dict:
    jvm, theta = fresh_theta(a, platform, "reuse-native-buffers")
    cp = platform.get("copy") or {}
    if not (cp.get("malloc_call") and cp.get("free_call")):
        raise JvmosError("no calibrated allocator costs in the platform file: run "
                         "'jvmos calibrate'")
    alloc_ns = cp["malloc_call"]["ns_per_call"] + cp["free_call"]["ns_per_call"]
    java = str(jvm.home / "bin" / "java")
    n = a.dacapo_iterations
    r = {"name": "dacapo-inflate", "what_if": "reuse-native-buffers",
         "term": "θ reuse-native-buffers (C_mem's allocator)",
         "program": f"the DaCapo-style suite's inflate ({a.dacapo_size}), {n} iterations "
                    f"(runs of {2 * n} less runs of {n})",
         "program_id": program_id(jar(DACAPO_JAR), "org.jvmos.workloads.dacapo (jar)"),
         "jdk": str(jvm.home), "jdk_label": jdk_label(jvm),
         "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
         "change": "a new Inflater per document -> one per worker thread, reset",
         "iterations": n, "size": a.dacapo_size,
         "theta_sha256": theta["theta_sha256"], "theta_source": {
             k: theta.get(k) for k in ("date", "commit", "jdk_label", "counted_by")},
         "recorded": {}, "units": []}
    for arm in "AB":
        r["recorded"][arm] = recorded_inflaters(java, a, arm, out, platform_file)
    with Progress(a.servers * 4, "held-out dacapo-inflate", unit="run") as bar:
        for k in range(a.servers):
            r["units"].append(inflate_unit(java, a, k, bar))
            keep_partial(out, r)
    # B keeps one Inflater per worker thread per iteration (the harness starts fresh workers)
    r["keep"] = r["units"][0]["loads"]["B"][0]["threads"] * n
    r["analysis"] = analyze_inflate(r, theta, alloc_ns)
    r["constant_source"] = (f"{MALLOCS_PER_INFLATER} x (malloc + free) per stream, by reading "
                            f"the JDK's and zlib's code, priced at the platform file's "
                            f"allocator costs ({alloc_ns:,.0f} ns a pair, calibrated on 16 B-4 "
                            f"KiB blocks; a stream's are a z_stream, a ~7 KiB state and a 32 "
                            f"KiB window): an estimate")
    return r


CHAT_USERS_PER_ROOM = 20


def chat_commands(java: str, a, mode: str):
    """The chat server in one thread model (its heap fixed, its compiler threads for its whole
    life) and the load of short sessions."""
    server = (f"{java} {' '.join(JVM_FLAGS)} -Xms512m -Xmx512m -jar {jar(CHAT_JAR)} --port 0 "
              f"--threads {mode} --max-seconds 3600")
    load = (f"{java} -Xmx1g -cp {jar(CHAT_JAR)} org.jvmos.workloads.chat.ChatLoad --port {{port}}"
            f" --rooms {{level}} --users-per-room {CHAT_USERS_PER_ROOM} --messages {a.messages} "
            f"--message-bytes 40 --max-seconds 600")
    return server, load


def chat_load(srv: CommandServer, a) -> dict:
    """One load of short sessions, and whether every message reached every member of its room
    (the chat's equal work)."""
    res = srv.load(str(a.rooms))
    users = a.rooms * CHAT_USERS_PER_ROOM
    want = users * CHAT_USERS_PER_ROOM * a.messages
    return {"users": res.get("users"), "messages_sent": res.get("messages_sent"),
            "deliveries": res.get("deliveries"),
            "complete": (res.get("users") == users and res.get("deliveries") == want and
                         res.get("messages_sent") == users * a.messages and
                         not res.get("lost") and not res.get("duplicated") and
                         not res.get("wrong_room") and not res.get("bad_frames"))}


def recorded_threads(srv: CommandServer, a, out: Path, platform_file: Path) -> dict:
    r = recorded_load(srv.pid, "threads", "thread-pool", lambda: chat_load(srv, a), out,
                      platform_file)
    return _kept(r, threads_created=r["counts"]["threads_created"])


def server_pair(servers: dict, load, a, d: Path, k: int, bar: Progress, seed: int) -> dict:
    """Two live servers, one per arm (servers: arm -> (name, server command, load command)):
    a warm-up of each, then --windows loads of each in ABBA/BAAB order, each load's CPU of its
    server less its JIT's; load(server) runs one load and returns its equal-work record."""
    order = window_order(a.windows, seed, k)
    srv = {}
    with contextlib.ExitStack() as stack:
        for arm, (name, cmd, load_cmd) in servers.items():
            srv[arm] = stack.enter_context(CommandServer(cmd, load_cmd, d / f"server-{name}",
                                                         load_timeout=660))
        for _ in range(WARMUP_LOADS):              # the warm-up: past the JIT's first waves
            for arm in "AB":
                load(srv[arm])
        loads = measured_loads(
            order, lambda arm: srv[arm].pid, lambda arm: load(srv[arm]),
            lambda w, res: {**cpu_row(w), "utime_ns": w["utime_ns"], "syscr": w["syscr"],
                            "syscw": w["syscw"], **res},
            bar, ("a server", f"{d}/server-*/"))
    if not any(f.stat().st_size for f in d.glob("server-*/server-stderr.txt")):
        shutil.rmtree(d, ignore_errors=True)   # the servers' logs: nothing once they served
    return {"order": order, "loads": loads, "sha256": th.sha256_of(loads)}


def chat_pair(java: str, a, d: Path, k: int, bar: Progress) -> dict:
    """Two live chat servers, platform (A) and virtual (B)."""
    servers = {arm: (mode, *chat_commands(java, a, mode))
               for arm, mode in (("A", "platform"), ("B", "virtual"))}
    return server_pair(servers, lambda srv: chat_load(srv, a), a, d, k, bar, 29)


def analyze_chat(r: dict, theta: dict, c_nt: dict) -> dict:
    removed = r["recorded"]["A"]["threads_created"] - r["keep"]
    bad = [x for u in r["pairs"] for arm in "AB" for x in u["loads"][arm] if not x["complete"]]
    out = judge(r, unit_diffs(r["pairs"]), removed, theta, c_nt,
                f"{len(bad)} load(s) lost or garbled messages" if bad else "")
    out["count_error_b"] = r["recorded"]["B"]["threads_created"] - r["keep"]
    return out


IPC_BUFFER = 8192


def ipc_commands(java: str, a, buffer: int):
    """Seed 000's socket server, its streams unbuffered (0) or buffered, and a client of SV
    calls (its own streams unbuffered in both arms: only the server changes)."""
    server = (f"{java} {' '.join(JVM_FLAGS)} -Xms256m -Xmx256m -cp {jar(IPC_JAR)} "
              f"org.jvmos.workloads.ipc.IpcServer --primitive sockets --port 0 "
              f"--max-seconds 3600" + (f" --buffer {buffer}" if buffer else ""))
    load = (f"{java} -cp {jar(IPC_JAR)} org.jvmos.workloads.ipc.IpcClient --primitive sockets "
            f"--port {{port}} --benchmark SV --size {{level}} --calls {a.ipc_calls} "
            f"--max-seconds 600")
    return server, load


def ipc_load(srv: CommandServer, a) -> dict:
    """One client run; every answer was validated by the client (it exits 1 otherwise)."""
    res = srv.load(str(a.ipc_size))
    return {"calls": res.get("calls"), "validated": res.get("validated"),
            "bytes_received": res.get("bytes_received_app"),
            "complete": res.get("calls") == a.ipc_calls == res.get("validated")}


def recorded_writes(srv: CommandServer, a, out: Path, platform_file: Path) -> dict:
    r = recorded_load(srv.pid, "io", "bigger-chunks", lambda: ipc_load(srv, a), out,
                      platform_file)
    c = r["counts"]
    return _kept(r, writes=c["io_writes"], write_bytes=c["io_write_bytes"], reads=c["io_reads"])


def ipc_kept(recorded: dict, calls: int, buffer: int = IPC_BUFFER) -> int:
    """The writes the change keeps, from arm A's recording: every answer (its bytes, A's
    written bytes over the calls) flushed from a buffer of `buffer` bytes in whole buffers."""
    per = recorded["write_bytes"] / calls if calls else 0
    return calls * max(1, math.ceil(per / buffer))


def analyze_ipc(r: dict, theta: dict, c_chunk: dict) -> dict:
    removed = r["recorded"]["A"]["writes"] - r["keep"]
    loads = [x for u in r["pairs"] for arm in "AB" for x in u["loads"][arm]]
    sizes = {x["bytes_received"] for x in loads}
    bad = [x for x in loads if not x["complete"]]
    unequal = (f"{len(bad)} load(s) not fully answered" if bad else
               f"answers of {len(sizes)} different sizes" if len(sizes) != 1 else "")
    out = judge(r, unit_diffs(r["pairs"]), removed, theta, c_chunk, unequal)
    out["count_error_b"] = r["recorded"]["B"]["writes"] - r["keep"]
    # what the change also removes and θ for writes does not price: the server's reads
    out["reads_a"] = r["recorded"]["A"]["reads"]
    out["reads_b"] = r["recorded"]["B"]["reads"]
    return out


def run_ipc_buffered(a, platform: dict, platform_file: Path, out: Path) -> dict:
    jvm, theta = fresh_theta(a, platform, "bigger-chunks", term_hint=True)
    c_chunk = (platform.get("constants") or {}).get("C_io_chunk")
    if not c_chunk:
        raise JvmosError("no C_io_chunk in the platform file: run 'jvmos calibrate'")
    java = str(jvm.home / "bin" / "java")
    r = {"name": "ipc-buffered", "what_if": "bigger-chunks", "term": "θ bigger-chunks "
         "(C_I/Ochunk)", "program": f"seed 000's socket server, SV answers of {a.ipc_size:,} "
         f"Integers, {a.ipc_calls} calls a client",
         "program_id": program_id(jar(IPC_JAR), "org.jvmos.workloads.ipc (jar)"),
         "jdk": str(jvm.home), "jdk_label": jdk_label(jvm),
         "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
         "change": f"the server's socket streams as they are -> buffered by {IPC_BUFFER:,} bytes",
         "ipc_size": a.ipc_size, "ipc_calls": a.ipc_calls, "buffer": IPC_BUFFER,
         "theta_sha256": theta["theta_sha256"], "theta_source": {
             k: theta.get(k) for k in ("date", "commit", "jdk_label", "counted_by", "doses")},
         "recorded": {}, "pairs": []}
    for arm, buf in (("A", 0), ("B", IPC_BUFFER)):
        cmd, load = ipc_commands(java, a, buf)
        with CommandServer(cmd, load, out / f"recorded-server-{arm}", load_timeout=660) as srv:
            for _ in range(WARMUP_LOADS):
                ipc_load(srv, a)
            r["recorded"][arm] = recorded_writes(srv, a, out / f"recorded-{arm}", platform_file)
        shutil.rmtree(out / f"recorded-server-{arm}", ignore_errors=True)
    r["keep"] = ipc_kept(r["recorded"]["A"], a.ipc_calls)
    servers = {arm: (name, *ipc_commands(java, a, buf))
               for arm, name, buf in (("A", "unbuffered", 0), ("B", "buffered", IPC_BUFFER))}
    with Progress(a.servers * 2 * a.windows, "held-out ipc-buffered", unit="load") as bar:
        for k in range(a.servers):
            r["pairs"].append(server_pair(servers, lambda srv: ipc_load(srv, a), a,
                                          out / f"pair{k}", k, bar, 37))
            keep_partial(out, r)
    r["analysis"] = analyze_ipc(r, theta, c_chunk)
    r["constant_source"] = f"the platform file's C_io_chunk ({c_chunk['mean_us']:.2f} µs)"
    return r


def chat_theta(platform: dict, a) -> Optional[dict]:
    """θ thread-pool for the chat test: that of --jdk when given; else one fitted on a JDK 21
    or later (virtual threads), the latest first."""
    if a.jdk:
        return th.of(platform, "thread-pool", a.jdk)
    from jvmos.experiments.chat import feature
    cands = th.all_of(platform, "thread-pool")
    for t in cands:
        try:
            if feature(select_jdks([t["jdk"]])[0]) >= 21:
                return t
        except JvmosError:
            continue
    return cands[0] if cands else None


def chat_jvm(theta: dict, a):
    """The JDK of the chat test: θ's own (a θ prices the JDK it was fitted on), 21 or later."""
    from jvmos.experiments.chat import feature
    jvm = select_jdks([a.jdk or theta["jdk"]])[0]
    why = th.stale(theta, str(jvm.home))
    if why:
        raise JvmosError(why)
    if feature(jvm) < 21:
        raise JvmosError(f"held-out chat-virtual needs virtual threads (JDK 21+), and θ "
                         f"thread-pool was fitted on {jdk_label(jvm)}: run 'jvmos calibrate "
                         f"--in-situ --in-situ-terms thread-pool --jdk HOME' with a JDK 21+")
    return jvm


def run_chat_virtual(a, platform: dict, platform_file: Path, out: Path) -> dict:
    theta = chat_theta(platform, a)
    if not theta:
        raise JvmosError("no θ thread-pool on this machine: run 'jvmos calibrate --in-situ "
                         "--in-situ-terms thread-pool --jdk HOME' with a JDK 21+")
    jvm = chat_jvm(theta, a)
    c_nt = (platform.get("constants") or {}).get("C_nt")
    if not c_nt:
        raise JvmosError("no C_nt in the platform file: run 'jvmos calibrate'")
    java = str(jvm.home / "bin" / "java")
    r = {"name": "chat-virtual", "what_if": "thread-pool", "term": "θ thread-pool (C_nt)",
         "program": f"the chat server, short sessions ({a.rooms} rooms x "
                    f"{CHAT_USERS_PER_ROOM} users, {a.messages} message(s) each)",
         "program_id": program_id(jar(CHAT_JAR), "org.jvmos.workloads.chat (jar)"),
         "jdk": str(jvm.home), "jdk_label": jdk_label(jvm),
         "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
         "change": "platform threads (a reader and a writer per connection) -> virtual threads",
         "rooms": a.rooms, "messages": a.messages, "keep": 0,
         "theta_sha256": theta["theta_sha256"], "theta_source": {
             k: theta.get(k) for k in ("date", "commit", "jdk_label", "counted_by")},
         "recorded": {}, "pairs": []}
    for arm, mode in (("A", "platform"), ("B", "virtual")):
        cmd, load = chat_commands(java, a, mode)
        with CommandServer(cmd, load, out / f"recorded-server-{mode}", load_timeout=660) as srv:
            for _ in range(WARMUP_LOADS):
                chat_load(srv, a)
            r["recorded"][arm] = recorded_threads(srv, a, out / f"recorded-{arm}",
                                                  platform_file)
        shutil.rmtree(out / f"recorded-server-{mode}", ignore_errors=True)
    with Progress(a.servers * 2 * a.windows, "held-out chat-virtual", unit="load") as bar:
        for k in range(a.servers):
            r["pairs"].append(chat_pair(java, a, out / f"pair{k}", k, bar))
            keep_partial(out, r)
    r["analysis"] = analyze_chat(r, theta, c_nt)
    r["constant_source"] = f"the platform file's C_nt ({c_nt['mean_us']:.2f} µs)"
    return r


def leaked(r: dict) -> bool:
    """θ's programs include the held-out one. A result made before the rule existed was not
    checked: it is not called leaked (its JSON has no such field)."""
    return not r["analysis"].get("theta_programs_disjoint", True)


def removed_text(r: dict) -> str:
    x = r["analysis"]
    if r["name"] == "ipc-buffered":
        return (f"{x['removed']:,} writes ({r['recorded']['A']['writes']:,} written - "
                f"{r['keep']:,} kept; reads {x['reads_a']:,} in A, not priced)")
    if r["name"] == "dacapo-inflate":
        return (f"{x['removed']:,} zlib inflate streams ({r['recorded']['A']['zlib_inflaters']:,} "
                f"made - {r['keep']:,} kept; allocator calls, 2n - n runs: "
                f"{x['malloc_calls_a']:,} in A, {x['malloc_calls_b']:,} in B)")
    if r["name"] == "shop-combined":
        k = x["removed_by_kind"]
        return (f"{k['keep-alive']:,} connections ({r['recorded']['A']['accepts']:,} accepts - "
                f"{r['recorded']['A']['accepts'] - k['keep-alive']:,} kept), "
                f"{k['pretouch']:,} page faults in the "
                f"Java heap, {k['thread-pool']:,} thread{'s' if k['thread-pool'] != 1 else ''} "
                f"started")
    if r["name"] == "shop-pretouch":
        return (f"{x['removed']:,} page faults in the Java heap (of "
                f"{r['recorded']['A']['page_faults']:,} in all; the kernel's minor faults, A - "
                f"B, in the measured shops: {x['minflt_a_minus_b']:,.0f})")
    if r["name"] == "chat-virtual":
        return (f"{x['removed']:,} threads ({r['recorded']['A']['threads_created']:,} started - "
                f"{r['keep']} kept)")
    return (f"{x['removed']:,} connections ({r['recorded']['A']['accepts']:,} accepts - "
            f"{r['keep']} kept)")


def tables(results: dict) -> list:
    t = Table("Held-out tests of θ", ["term", "program (JDK)", "arm (A -> B)",
                                      "count removed (recording of A)",
                                      "predicted by θ, ms [95%, model error incl.]",
                                      "C_os's part, ms", "measured A - B, ms [90% CI]",
                                      "ratio [90% CI]", "confirmed?", "count error of B",
                                      "units for ±0.2", "θ sha256"])
    for r in results["tests"]:
        x = r["analysis"]
        p, m, ra = x["prediction"], x["measured90"], x["ratio"]
        unit = {"shop-keep-alive": "shops", "shop-pretouch": "shop pairs",
                "shop-combined": "shop pairs", "dacapo-inflate": "units of 4 runs"}.get(
                    r["name"], "pairs")
        t.add([r.get("term", "θ keep-alive (C_link)"),
               f"{r['program']} ({r.get('jdk_label') or results['jdk_label']})", r["change"],
               removed_text(r),
               f"{p['predicted_ns'] / 1e6:,.2f} [{p['predicted_ci_ns'][0] / 1e6:,.2f}, "
               f"{p['predicted_ci_ns'][1] / 1e6:,.2f}]",
               f"{x['c_os_predicted_ns'] / 1e6:,.2f}",
               f"{m['mean'] / 1e6:,.2f} [{m['ci'][0] / 1e6:,.2f}, {m['ci'][1] / 1e6:,.2f}] "
               f"(n={m['n']} {unit})",
               "—" if ra is None else f"{ra['ratio']:.2f} [{ra['ci'][0]:.2f}, {ra['ci'][1]:.2f}]",
               ("LEAKED: no verdict" if leaked(r) else x["verdict"]["verdict"] +
                ("" if r.get("full_size", True) else " (below full size: not stored)")),
               f"{x['count_error_b']:+,}" if x.get("count_error_b") is not None else
               ", ".join(f"{k} {v:+,}" for k, v in x["count_error_b_by_kind"].items()),
               "—" if x.get("units_needed_for_0.2") is None else
               f"{x['units_needed_for_0.2']}",
               ", ".join(h[:12] for h in r["theta_sha256"].split(","))])
    split = clock_split(results)
    return [t] + ([split] if split.rows else [])


CLOCKS = (("cpu_ns", "CPU clock less the JIT threads' (ticks)"),
          ("stime_ns", "kernel (stime, ticks, JIT threads included)"),
          ("utime_ns", "user (utime, ticks, JIT threads included)"),
          ("cpu_with_jit_ns", "CPU clock, JIT threads included"))


def clock_split(results: dict) -> Table:
    """Where the measured saving went, for the tests whose loads keep every clock (the shop
    pairs): each clock's A - B per unit, summed over the loads, its mean and 90% interval over
    units, and per page fault the kernel saw removed (minflt A - B); arithmetic on the stored
    loads, made again by --render."""
    t = Table("The measured saving by clock (shop pairs: A - B summed over the measured loads)",
              ["test", "clock", "A - B, ms [90% CI]",
               "per minor fault removed (the kernel's count of every fault, A - B), µs"])
    for r in results["tests"]:
        units = r.get("pairs") or []
        if not units or "minflt" not in units[0]["loads"]["A"][0]:
            continue
        diff = lambda k, u: sum(x[k] for x in u["loads"]["A"]) - sum(x[k] for x in u["loads"]["B"])
        faults = sum(diff("minflt", u) for u in units) / len(units)
        for key, name in CLOCKS:
            m = stats.paired_diff_ci([diff(key, u) for u in units], 0.90)
            t.add([r["name"], name, f"{m['mean'] / 1e6:,.2f} [{m['ci'][0] / 1e6:,.2f}, "
                                    f"{m['ci'][1] / 1e6:,.2f}] (n={m['n']})",
                   f"{m['mean'] / faults / 1e3:,.2f}" if faults > 0 and
                   r["name"] == "shop-pretouch" else "— (faults are not the only use removed)"
                   if faults > 0 else "—"])
    return t


NOTES = [
    "count removed: what the probes counted in one recorded load of arm A (count mode) less "
    "the uses the change keeps. Shop: accepts (links layer), one connection kept per load "
    "thread. Chat: native threads started (threads layer), none kept per load (the virtual "
    "scheduler's carriers start once). ipc: blocking writes (io layer), kept: each answer's bytes "
    "(A's written bytes over its calls) in whole 8 KiB buffers, per call; the reads the change "
    "also removes are shown, not priced. Pretouch: a fresh shop of arm A, warmed, recorded (mem "
    "layer) over --pretouch-loads loads, its user page faults inside the Java heap's range "
    "(read with jcmd GC.heap_info; 2 MiB granularity), none kept. Combined: the same shop "
    "recorded with the links, mem and threads layers: its accepts less one connection per "
    "load thread per load, its heap faults, and every thread it started in those loads (the "
    "bounded pool starts its workers before them). Arm B's recording scores that "
    "count only (count error: B's count less the uses kept).",
    "predicted by θ: count x θ (jvmos calibrate --in-situ: on jvmos's request server, the "
    "whole CPU per use fitted by dose-response: per connection for keep-alive; per thread "
    "started, less a pool's hand-off, for thread-pool; per write of the same bytes in fewer "
    "writes, for bigger-chunks; per first touch of a heap page, less the same page "
    "pretouched, for pretouch), its interval θ's with the leave-one-dose-out model error; "
    "C_os's part: count x C_link, C_nt, C_I/Ochunk or the calibrated page-fault cost, the "
    "OS's part only (the paper's prediction). Combined: each kind's count x its θ, summed; "
    "the standard errors combined in quadrature (Welch-Satterthwaite df).",
    "measured: per load, the server's CPU clock (every thread) less its JIT threads' CPU; A - "
    "B averaged per unit (a shop; a pair of live chat servers), the mean over units with its "
    "Student t 90% interval. dacapo-inflate: a unit is four bare runs, and its A - B is (A's "
    "2n run - A's n run) - (B's 2n - B's n), each run's CPU from wait4's rusage (every "
    "thread, the JIT's included), the arms' order balanced over pairs of units; its count "
    "removed is the difference of two recordings of A (2n - n), less one Inflater kept per "
    "worker per iteration; equal work: every run's own validation passed. Pretouch: a unit is "
    "a pair of fresh shops, and its A - B is "
    "summed over their --pretouch-loads measured loads (where the first touches fall), not "
    "averaged.",
    "confirmed: the ratio's 90% interval (delta method) inside [0.8, 1.25]; refuted: wholly "
    "outside; inconclusive: otherwise. No leak: the held-out program (its jar, by sha256 and "
    "name) is none of the programs θ was fitted on; otherwise no verdict is given.",
]


def drift(r: dict) -> Optional[dict]:
    """Whether the units' differences drift with the order they ran in (scipy's Spearman rank
    correlation against the unit's index, and its two-sided p): the t interval assumes they do
    not. None under 4 units."""
    from scipy import stats as sst
    d = r["analysis"].get("diffs_ns") or []
    if len(d) < 4:
        return None
    rho, p = sst.spearmanr(range(len(d)), d)
    return {"rho": float(rho), "p": float(p), "n": len(d)}


def notes_of(results: dict) -> list:
    out = []
    for r in results["tests"]:
        x = drift(r)
        if x:
            out.append(f"drift, {r['name']}: the units' A - B against the order they ran in, "
                       f"Spearman ρ = {x['rho']:+.2f} (p = {x['p']:.3f}, n = {x['n']})"
                       + (": the units' differences are not alike, and the t interval, which assumes "
                          "they are, may be too narrow" if x["p"] < 0.05 else ""))
    return NOTES + out + [f"skipped: {k} ({v})"
                          for k, v in (results.get("skipped") or {}).items()]


def render(src: Path) -> int:
    results = load_finished(src / "held-out.json", "held-out", "tests")
    notes = notes_of(results)
    if any("theta_programs_disjoint" not in r["analysis"] for r in results["tests"]):
        notes.append("this run predates the no-leak rule by program: it compared load sets' "
                     "sha256 with θ's runs only (a check that could not fail across programs)")
    write_outputs(src, "held-out", tables(results), results, notes)
    print((src / "held-out.md").read_text())
    return 0


RUNS = {"shop-keep-alive": run_shop_keep_alive, "chat-virtual": run_chat_virtual,
        "ipc-buffered": run_ipc_buffered, "shop-pretouch": run_shop_pretouch,
        "shop-combined": run_shop_combined, "dacapo-inflate": run_dacapo_inflate}


def cannot_run(name: str, a, platform: dict):
    """Why held-out test NAME cannot run here (no θ for it, or θ's JDK cannot run it), or
    None."""
    if name == "shop-combined":
        try:
            combined_thetas(platform, str(select_jdks([a.jdk] if a.jdk else None)[0].home), 0)
        except JvmosError as e:
            return str(e)
        return None
    what_if = {"shop-keep-alive": "keep-alive", "chat-virtual": "thread-pool",
               "ipc-buffered": "bigger-chunks", "shop-pretouch": "pretouch",
               "dacapo-inflate": "reuse-native-buffers"}[name]
    theta = (chat_theta(platform, a) if name == "chat-virtual" else
             th.of(platform, what_if, str(select_jdks([a.jdk] if a.jdk else None)[0].home)))
    try:
        if not theta:
            return f"no θ {what_if} on this machine (jvmos calibrate --in-situ)"
        if name == "chat-virtual":
            chat_jvm(theta, a)
        else:
            why = th.stale(theta, str(select_jdks([a.jdk] if a.jdk else None)[0].home))
            if why:
                return why
    except JvmosError as e:
        return str(e)
    return None


def main(argv) -> int:
    a = parse(argv)
    if a.render:
        return render(Path(a.render))
    platform_file = cal.platform_path(a.platform)
    platform = cal.load(platform_file) or {}
    out = out_dir(a.out, "held-out")
    results = {"experiment": "held-out", "date": time.strftime("%Y-%m-%d"),
               "commit": iv.git_commit(), "analysis_plan": __doc__.split("\n\n")[2],
               "tests": [], "skipped": {}}
    names = a.only.split(",") if a.only else []
    for name in ([] if a.only else TESTS):
        # not asked for by name: a test this machine cannot run is skipped, saying why
        why = cannot_run(name, a, platform)
        if why:
            results["skipped"][name] = why
            log(f"held-out {name} skipped: {why}")
        else:
            names.append(name)
    for name in names:
        # one test: its recordings and servers in the run's directory; several: each its own
        here = out if len(names) == 1 else out / name
        here.mkdir(parents=True, exist_ok=True)
        results["tests"].append(RUNS[name](a, platform, platform_file, here))
        results["tests"][-1]["full_size"] = full_size(name, a)
        # each finished test is kept at once: a later one that fails loses nothing
        write_outputs(out, "held-out", tables(results), results, notes_of(results))
        (here / PARTIAL).unlink(missing_ok=True)
    if not results["tests"]:
        raise JvmosError("no held-out test can run on this machine: " + "; ".join(
            f"{k}: {v}" for k, v in results["skipped"].items()))
    print((out / "held-out.md").read_text())
    log(f"results: {out}")
    if any(leaked(r) for r in results["tests"]):
        raise JvmosError("the held-out program or a load set is among θ's inputs: the test "
                         f"leaked; its figures are in {out}/held-out.json, but no verdict is "
                         f"stored")
    # only a full-size test speaks for θ
    store_verdicts({**results, "tests": [r for r in results["tests"] if full_size(r["name"], a)]},
                   platform_file)
    return 0


def store_verdicts(results: dict, platform_file: Path) -> None:
    """Each held-out verdict beside its θ in the platform file (predict --what-if prints it)."""
    platform = cal.load(platform_file) or {}
    for r in results["tests"]:
        # the θ it tested, wherever it is kept (the latest, its JDK's); a θ fitted again
        # since is another θ: the verdict is not about it
        for t in th.all_of(platform, r.get("what_if", "keep-alive")):
            if t.get("theta_sha256") != r["theta_sha256"]:
                continue
            t.setdefault("held_out", {})[r["name"]] = {
                "verdict": r["analysis"]["verdict"]["verdict"],
                "ratio": r["analysis"]["ratio"], "date": results["date"],
                "count_hooks": r["recorded"]["A"]["count_hooks"],
                "commit": results["commit"]}
    cal.save(platform_file, platform)
