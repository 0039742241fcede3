"""jvmos run sampler-cost: what a profile window costs a real server, by sampling engine, and
does the calibrated price hold?

`jvmos calibrate --sampler` prices an async-profiler window on a fixed CPU loop: its start and
stop (ns_per_window), each second it is open (ns_per_window_s) and each sample
(ns_per_sample); `jvmos agent --sample` sizes its windows within --max-overhead with those
numbers. This experiment tests that price on a program it was not fitted on, jvmos's chat
server (20 rooms x 20 users, open loop at 7.5 messages a second per user), and compares
async-profiler's two CPU engines there: `itimer` (setitimer(ITIMER_PROF): a signal per
interval of the process's CPU; the agent's) and `cpu` (a perf event per thread).

The analysis, stated before the data. Triples of loads on one warmed server, in the orders
bare, itimer, cpu and cpu, itimer, bare alternately (each arm's mean position the same over
two triples). A sampled load runs in a window at --interval-ms (10, the agent's) started
before the load with a timeout that ends it after the load, as the agent's windows end; every
load's server CPU is read as long after its start. Per triple and engine: measured extra CPU
= (the sampled load's server CPU per delivered message - the bare load's) x the sampled
load's deliveries (a load that delivered fewer messages is not counted as cheaper); its
samples (async-profiler's converter, from the window's JFR) against those due (the load's
server CPU / the interval); predicted = ns_per_window + ns_per_window_s x the window's
seconds + ns_per_sample x its samples. Per engine: the mean measured with Student's t 95%
interval over the triples; the price is not rejected for itimer if that interval holds the
mean predicted (the cpu engine is priced alike, to show what the itimer price would miss). N: a
pilot of --pilot triples, then as many as a 95% half-width of 25% of the itimer prediction
needs at the pilot's spread, at most --max-triples. Every triple is kept, misses included.
"""
import argparse
import math
import statistics
import tempfile
import time
from pathlib import Path
from typing import List, Optional

from jvmos import JvmosError
from jvmos.analyzers.tables import Table
from jvmos.tools import CHAT_JAR
from jvmos.experiments.common import (headline, jdk_label, load_finished, log, out_dir,
                                      publish, select_jdks)
from jvmos.experiments.server import save_partial
from jvmos.samplercost import _mean_ci
from jvmos.experiments.agent_overhead import (ROOMS, USERS_PER_ROOM, arm_of, chat_load_cmd,
                                              chat_server, ns, own_jar, warm_up)

ENGINES = ("itimer", "cpu")
HALF_WIDTH = 0.25          # the 95% half-width goal, as a share of the itimer prediction

EXAMPLES = """\
examples:
  jvmos run sampler-cost                       # a pilot of 4 triples, then as many as it asks
  jvmos run sampler-cost --pilot 2 --max-triples 2 --messages 15 --out /tmp/sampler-cost
  jvmos run sampler-cost --render results/sampler-cost
"""


def parse(argv):
    p = argparse.ArgumentParser(prog="jvmos run sampler-cost", epilog=EXAMPLES,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--pilot", type=int, default=4, help="pilot triples (even; default 4)")
    p.add_argument("--max-triples", type=int, default=12,
                   help="at most this many triples when the pilot asks for more (default 12)")
    p.add_argument("--messages", type=int, default=75,
                   help="messages each user sends per load (default 75: 10 s at 7.5/s)")
    p.add_argument("--rate", type=float, default=7.5,
                   help="messages per second each user sends, open loop (default 7.5)")
    p.add_argument("--interval-ms", type=float, default=10.0,
                   help="the sampled loads' interval, ms of CPU per sample (default 10, the "
                        "agent's)")
    p.add_argument("--platform", help="platform file with the sampler's cost (default: "
                                      "jvmos's)")
    p.add_argument("--jdk", help="JDK home (default: the first found)")
    p.add_argument("--out", help="output directory (default results/runs/<time>-sampler-cost)")
    p.add_argument("--render", metavar="DIR",
                   help="write DIR's tables and notes again from DIR/sampler-cost.json")
    a = p.parse_args(argv)
    if a.render:
        return a
    if a.pilot < 2 or a.pilot % 2 or a.max_triples < a.pilot:
        p.error("--pilot must be even and 2 or more, --max-triples at least --pilot")
    if a.messages <= 0 or not 0 < a.rate <= 1000 or not 1 <= a.interval_ms <= 1000:
        p.error("--messages must be positive, --rate above 0 and at most 1000, --interval-ms "
                "1 to 1000")
    return a


def model_of(platform_arg: Optional[str]) -> dict:
    from jvmos import calibrate as cal, samplercost
    path = cal.platform_path(platform_arg)
    m = (cal.load(path) or {}).get("sampler")
    why = samplercost.validate(m)
    if why:
        raise JvmosError(f"{path}: the sampler's cost is {why}")
    return m


def window_seconds(a) -> int:
    """A sampled load's window: the load's planned length and 2 s (it must outlast the load)."""
    return math.ceil(a.messages / a.rate) + 2


def timed_load(srv, load, seconds: int, engine: Optional[str] = None,
               interval_ns: int = 0, jfr: Optional[Path] = None) -> dict:
    """One load, in a window of `seconds` of engine at interval_ns (None: bare); the server's
    CPU from before the window's start to GAP_S after its timeout (a bare load: as long)."""
    from jvmos import samplercost
    t0 = time.monotonic()
    c0 = srv.cpu_ns()
    if engine is not None:
        samplercost._jattach(srv.pid, f"start,event={engine},interval={interval_ns},jfr,"
                                      f"file={jfr},timeout={seconds}")
    got = load()
    late = time.monotonic() - t0 > seconds
    time.sleep(max(seconds + samplercost.GAP_S - (time.monotonic() - t0), 0.0))
    arm = dict(arm_of(got, srv.cpu_ns() - c0), window_s=seconds)
    if late:
        raise JvmosError(f"the load outlasted its {seconds} s window")
    if engine is not None:
        arm["samples"] = samplercost.count_samples(jfr)
        arm["samples_due"] = arm["server_cpu_ns"] / interval_ns
        jfr.unlink(missing_ok=True)
        jfr.with_suffix(".collapsed").unlink(missing_ok=True)
    return arm


def figures(t: dict, model: dict) -> dict:
    """Per engine: measured and predicted extra CPU (ns), samples taken / due (None: a load of
    the triple has no figure)."""
    from jvmos.samplercost import cost_ns
    out = {}
    b = (t.get("bare") or {}).get("cpu_ns_per_message")
    for e in ENGINES:
        s = t.get(e) or {}
        if b is None or s.get("cpu_ns_per_message") is None or s.get("samples") is None:
            out[e] = None
            continue
        out[e] = {"measured_ns": (s["cpu_ns_per_message"] - b) * s["deliveries"],
                  "predicted_ns": cost_ns(model, s["samples"], s["window_s"]),
                  "samples": s["samples"], "samples_due": s["samples_due"],
                  "taken_of_due": s["samples"] / s["samples_due"] if s["samples_due"] else None}
    return out


def analyse(results: dict) -> dict:
    out = {}
    for e in ENGINES:
        figs = [t["figures"][e] for t in results["triples"] if (t.get("figures") or {}).get(e)]
        st = _mean_ci([f["measured_ns"] for f in figs]) if len(figs) >= 2 else None
        pred = statistics.fmean(f["predicted_ns"] for f in figs) if figs else None
        taken = [f["taken_of_due"] for f in figs if f["taken_of_due"] is not None]
        row = {"n": len(figs), "misses": len(results["triples"]) - len(figs),
               "measured": st, "predicted_mean_ns": pred,
               "taken_of_due": statistics.fmean(taken) if taken else None,
               "method": f"Student's t over {len(figs)} triples ({max(len(figs) - 1, 0)} df), "
                         "measured extra CPU per sampled load"}
        if st and pred:
            lo, hi = st["ci95"]
            row.update(ratio=st["mean"] / pred, ratio_ci95=[lo / pred, hi / pred],
                       holds=lo <= pred <= hi)
        out[e] = row
    return out


def triples_wanted(measured: List[float], predicted: float, cap: int, pilot: int) -> int:
    """Triples for a 95% half-width of HALF_WIDTH x the prediction at the pilot's spread."""
    from scipy import stats
    if len(measured) < 2 or predicted <= 0:
        return cap
    sd = statistics.stdev(measured)
    for n in range(pilot, cap + 1):
        if stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n) <= HALF_WIDTH * predicted:
            return min(n + (n % 2), cap)    # whole pairs of triples (both orders)
    return cap


def one_triple(i: int, srv, load, a, model: dict, seconds: int, tmp: Path) -> dict:
    order = ("bare",) + ENGINES if i % 2 == 0 else tuple(reversed(ENGINES)) + ("bare",)
    t = {"triple": i + 1, "order": list(order)}
    interval_ns = int(a.interval_ms * 1e6)
    try:
        for arm in order:
            log(f"triple {i + 1}: {arm}")
            t[arm] = (timed_load(srv, load, seconds) if arm == "bare" else
                      timed_load(srv, load, seconds, arm, interval_ns, tmp / f"t{i}-{arm}.jfr"))
        t["figures"] = figures(t, model)
    except JvmosError as e:             # a miss: kept, left out of the analysis
        log(f"triple {i + 1}: {e}")
        t["error"] = str(e)
    return t


def chat_test(a, jvm, model: dict, results: dict, out: Path) -> None:
    java = str(jvm.home / "bin" / "java")
    seconds = window_seconds(a)
    with own_jar(CHAT_JAR, out, "chat") as server_jar, \
            tempfile.TemporaryDirectory(prefix="jvmos-sampler-cost-") as tmp:
        load_cmd = chat_load_cmd(java, a.messages, a.rate)
        srv = chat_server(java, out, server_jar, load_cmd)
        with srv:
            results.update({"server_command": " ".join(srv.argv), "load_command": srv.load_cmd})
            load = lambda: srv.load(str(ROOMS))  # noqa: E731
            log(f"chat server: JVM pid {srv.pid}; warm-up loads, not sampled")
            results["warmups"] = warm_up(srv, load)
            target, i = a.pilot, 0
            while i < target:
                results["triples"].append(one_triple(i, srv, load, a, model, seconds,
                                                     Path(tmp)))
                save_partial(out, "sampler-cost", results)
                i += 1
                if i == a.pilot:
                    figs = [t["figures"]["itimer"] for t in results["triples"]
                            if (t.get("figures") or {}).get("itimer")]
                    pred = statistics.fmean(f["predicted_ns"] for f in figs) if figs else 0.0
                    target = triples_wanted([f["measured_ns"] for f in figs], pred,
                                            a.max_triples, a.pilot)
                    results["sizing"] = {"pilot_triples": a.pilot, "triples": target,
                                         "half_width_share": HALF_WIDTH, "cap": a.max_triples}
                    log(f"pilot: {target} triples in all (a 95% half-width of "
                        f"{HALF_WIDTH:.0%} of the itimer prediction, at most {a.max_triples})")


def _ms(v: Optional[float]) -> str:
    return "—" if v is None else f"{v / 1e6:.0f}"


def tables(results: dict) -> List[Table]:
    t = Table(f"The chat server ({ROOMS}x{USERS_PER_ROOM}, open loop at {results['rate']:g} "
              f"messages/s per user, {results['messages']} messages per user a load; "
              f"{results['jdk_label']}): bare, and in a window of async-profiler's itimer and "
              f"cpu engines at {results['interval_ms']:g} ms; the extra server CPU measured and "
              "predicted by the platform's price (ms), and the samples taken / due",
              ["triple", "order", "bare CPU/message (µs)", "itimer: measured / predicted",
               "itimer samples taken / due", "cpu: measured / predicted",
               "cpu samples taken / due", "p99 latency bare / itimer / cpu (µs)"])
    for x in results["triples"]:
        f = x.get("figures") or {}
        cells = []
        for e in ENGINES:
            g = f.get(e)
            cells += ["—", "—"] if not g else [
                f"{_ms(g['measured_ns'])} / {_ms(g['predicted_ns'])}",
                f"{g['samples']:,} / {g['samples_due']:,.0f}"]
        b = x.get("bare") or {}
        t.add([x["triple"], "/".join(x["order"]),
               "—" if b.get("cpu_ns_per_message") is None
               else f"{b['cpu_ns_per_message'] / 1e3:.2f}", *cells,
               " / ".join(ns((x.get(arm) or {}).get("latency_p99_us"))
                          for arm in ("bare",) + ENGINES)
               + (f" (miss: {x['error']})" if x.get("error") else "")])
    s = Table("Per engine, over the triples: the extra CPU of a sampled load (ms), mean "
              "[Student's t 95%]",
              ["engine", "n triples", "measured", "predicted (mean)", "measured / predicted",
               "samples taken / due", "reading"])
    for e in ENGINES:
        st = (results.get("analysis") or {}).get(e) or {}
        m = st.get("measured")
        s.add([e, st.get("n", 0),
               "—" if not m else f"{m['mean'] / 1e6:.0f} [{m['ci95'][0] / 1e6:.0f}, "
                                 f"{m['ci95'][1] / 1e6:.0f}]",
               _ms(st.get("predicted_mean_ns")),
               "—" if st.get("ratio") is None else
               f"{st['ratio']:.2f} [{st['ratio_ci95'][0]:.2f}, {st['ratio_ci95'][1]:.2f}]",
               "—" if st.get("taken_of_due") is None else f"{st['taken_of_due']:.2f}",
               "—" if "holds" not in st else
               ("not rejected (the interval holds the price)" if st["holds"] else
                "the price misses (the interval does not hold it)")])
    return [t, s]


def notes_for(results: dict) -> List[str]:
    ref = results["model"]
    return [
        f"The platform file's constants (async-profiler's {ref.get('event')} event), means: "
        f"{ref['ns_per_sample']['mean'] / 1e3:.1f} µs per sample, "
        f"{ref['ns_per_window']['mean'] / 1e6:.1f} ms per window, "
        f"{ref['ns_per_window_s']['mean'] / 1e6:.1f} ms per second open; the price predicted "
        f"here is the agent's, each constant at its 95% interval's upper end (at least 0) "
        f"where the model has one, measured {ref.get('measured_at', '?')} on JDK "
        f"{ref.get('jdk')} ({ref.get('method')}).",
        "CPU: the server's process-wide CPU clock (every thread, the kernel's time on its "
        "behalf), from before a window's start to 0.6 s after its timeout (a bare load: as "
        "long); the load generator's own CPU is not in it.",
        "measured extra = (the sampled load's server CPU per delivered message - the bare "
        "load's) x the sampled load's deliveries; samples due = the sampled load's server CPU "
        "/ the interval; the cpu engine is priced with the same (itimer) constants.",
        "Triples alternate bare, itimer, cpu and cpu, itimer, bare on one warmed server; a "
        "triple with a miss is kept in the table and left out of the analysis.",
    ]


def render(out: Path) -> int:
    results = load_finished(out / "sampler-cost.json", "sampler-cost", "triples")
    results["analysis"] = analyse(results)
    publish(out, "sampler-cost", tables(results), results, notes_for(results))
    return 0


def main(argv) -> int:
    a = parse(argv)
    if a.render:
        return render(Path(a.render))
    model = model_of(a.platform)
    out = out_dir(a.out, "sampler-cost").resolve()
    jvm = select_jdks([a.jdk] if a.jdk else None)[0]
    results = {"experiment": "sampler-cost", "jdk": str(jvm.home), "jdk_label": jdk_label(jvm),
               "model": {k: v for k, v in model.items() if k != "segments"},
               "rate": a.rate, "messages": a.messages, "interval_ms": a.interval_ms,
               "triples": []}
    chat_test(a, jvm, model, results, out)
    results["analysis"] = analyse(results)
    st = results["analysis"]["itimer"]
    if st.get("ratio_ci95"):
        results["headline"] = headline(
            f"chat server, itimer windows at {a.interval_ms:g} ms: measured / predicted extra "
            f"CPU (mean, 95%: {st['method']})",
            f"{st['ratio']:.2f} [{st['ratio_ci95'][0]:.2f}, {st['ratio_ci95'][1]:.2f}]")
    publish(out, "sampler-cost", tables(results), results, notes_for(results))
    (out / "sampler-cost.partial.json").unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(None))
