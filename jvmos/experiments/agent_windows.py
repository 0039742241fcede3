"""jvmos run agent-windows: do the agent's windows bias its extrapolated rates?

`results/agent-overhead` found the agent's extrapolated io rates 4-7% below a full `jvmos
record` of the same load, on the chat server (io counted 11% of the time) and on Tomcat
(47%). This experiment asks whether counting in windows is the cause. On one warmed chat
server, pairs of watched loads in ABBA order: the agent as configured (`--max-overhead 2%`:
io in windows, "windowed") and with no limit (io on all the time, coverage 1, "full"). In
each load, agent-overhead's agreement: a 10 s `jvmos record --mode count --layers io` of
the server while the agent watches it, and the agent's calls per second of each io
category over the span of its intervals around the recording, divided by the recording's.

The analysis, stated before the data: per load, the ratio agent / recording of io_syscall
calls per second (nio_copy alike, reported beside it), the agent's per second of the time
its counters cover (jvmos_jvm_counted_seconds_total; the first run, made before that
series, per second of the span between two scrapes); per pair, d = ratio(full) -
ratio(windowed); the mean of d with its 95% t interval over the complete pairs. If the
windows cause the low rates, ratio(full) is near 1 and d's interval is above 0; if it holds
0 and both arms are low, the cause is not the windows (the load, the span, the recording's
own probes). Every load is kept, misses included."""
import argparse
import copy
import statistics
from pathlib import Path
from typing import List, Optional

from jvmos import JvmosError
from jvmos.analyzers.tables import Table
from jvmos.tools import CHAT_JAR
from jvmos.experiments.common import (headline, jdk_label, load_finished, log, out_dir,
                                      publish, select_jdks)
from jvmos.experiments.server import save_partial
from jvmos.experiments.agent_overhead import (ROOMS, USERS_PER_ROOM, agreement,
                                              agreement_messages, chat_load_cmd, chat_server,
                                              ns, own_jar, warm_up, watched_load)

CATEGORIES = ("io_syscall", "nio_copy")
ARMS = ("windowed", "full")

EXAMPLES = """\
examples:
  jvmos run agent-windows                 # 4 pairs (8 watched loads), a 10 s recording in each
  jvmos run agent-windows --pairs 2 --out /tmp/agent-windows
"""


def parse(argv):
    p = argparse.ArgumentParser(prog="jvmos run agent-windows", epilog=EXAMPLES,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=int, default=4,
                   help="pairs of loads, windowed and full, in ABBA order (even; default 4)")
    p.add_argument("--rate", type=float, default=7.5,
                   help="messages per second each user sends, open loop (default 7.5)")
    p.add_argument("--agree-seconds", type=int, default=10,
                   help="length of the recording in each load (default 10)")
    p.add_argument("--max-overhead", default="2%",
                   help="the windowed arm's --max-overhead (default 2%%); the full arm has none")
    p.add_argument("--jdk", help="JDK home of the server and the load (default: the first found)")
    p.add_argument("--out", help="output directory (default results/runs/<time>-agent-windows)")
    p.add_argument("--render", metavar="DIR",
                   help="write DIR's tables and notes again from DIR/agent-windows.json (no "
                        "measuring)")
    a = p.parse_args(argv)
    if a.render:
        return a
    if a.pairs < 2 or a.pairs % 2 or not 0 < a.rate <= 1000 or a.agree_seconds < 4:
        p.error("--pairs must be even and 2 or more (an interval needs two; ABBA is balanced "
                "over whole pairs of pairs), --rate above 0 and at most 1000, --agree-seconds "
                "at least 4")
    from jvmos import agentconfig
    try:
        a.max_pct = agentconfig.parse_max_overhead(a.max_overhead)
    except JvmosError as e:
        p.error(str(e))
    if a.max_pct is None:
        p.error("--max-overhead: the windowed arm needs a limit (the full arm has none)")
    a.layer_list = ("io",)
    a.messages = agreement_messages(a)
    return a


def arm_settings(a, arm: str):
    """The agent's settings of one arm (a copy of a)."""
    b = copy.copy(a)
    b.max_overhead = a.max_overhead if arm == "windowed" else "none"
    return b


def order(pairs: int) -> List[str]:
    """ABBA: windowed, full, full, windowed, windowed, full, ..."""
    out = []
    for i in range(pairs):
        out += list(ARMS if i % 2 == 0 else reversed(ARMS))
    return out


# the agent's side of a ratio: its count per second of the time its counters cover (the
# intervals' summed lengths), or, in a run made before that series, per second of the span
# between the two scrapes around the recording
PER_COUNTED, PER_SPAN = "agent_estimated_per_counted_s", "agent_estimated_per_s"


def basis_of(loads: List[dict]) -> str:
    """Which of the two the run's ratios use: counted seconds when every load has them."""
    have = [x for x in loads if (x.get("agreement") or {}).get("categories")]
    return PER_COUNTED if have and all(
        PER_COUNTED in ((x["agreement"].get("categories") or {}).get("io_syscall") or {})
        for x in have) else PER_SPAN


def ratios_of(agree: Optional[dict], key: str = PER_COUNTED) -> dict:
    """category -> agent's estimated calls per second (key) / the recording's (None: no
    figure)."""
    out = {}
    for c in CATEGORIES:
        row = ((agree or {}).get("categories") or {}).get(c) or {}
        rec, est = row.get("recorded_per_s"), row.get(key)
        out[c] = est / rec if rec and est is not None else None
    return out


def analyse(loads: List[dict]) -> dict:
    """Per category, over the complete pairs only (both arms have a ratio): each arm's mean
    ratio, the pairs' differences full - windowed, their mean and 95% t interval
    (analyzers/stats.py's paired interval). The ratios are those basis_of names."""
    from jvmos.analyzers.stats import paired_diff_ci
    key = basis_of(loads)
    out = {"basis": key}
    for c in CATEGORIES:
        by_pair: dict = {}
        for x in loads:
            r = ratios_of(x.get("agreement"), key).get(c)
            by_pair.setdefault(x["pair"], {})[x["arm"]] = r
        done = [p for p in by_pair.values()
                if p.get("full") is not None and p.get("windowed") is not None]
        d = [p["full"] - p["windowed"] for p in done]
        arm_means = {arm: (statistics.fmean(p[arm] for p in done) if done else None)
                     for arm in ARMS}
        ci = paired_diff_ci(d, 0.95) if len(d) >= 2 else None
        out[c] = {"arm_mean_ratio": arm_means, "differences": d, "n": len(d),
                  "incomplete_pairs": len(by_pair) - len(done),
                  "mean_difference": statistics.fmean(d) if d else None,
                  "ci95": ci["ci"] if ci else None,
                  "method": f"paired t over {len(d)} complete pairs ({len(d) - 1} df), "
                            "full - windowed"}
    return out


def verdict(st: dict) -> str:
    if st["ci95"] is None:
        return "no interval (fewer than 2 complete pairs)"
    lo, hi = st["ci95"]
    if lo > 0:
        return "the windows lower the rate (interval above 0)"
    if hi < 0:
        return "the windows raise the rate (interval below 0)"
    return "no difference shown (interval holds 0)"


def tables(results: dict) -> List[Table]:
    t = Table(f"The agent's extrapolated io rate / a full recording's, io counted in windows "
              f"(--max-overhead {results['max_overhead']}) and all the time (none), on the "
              f"chat server ({results['jdk_label']}; {ROOMS}x{USERS_PER_ROOM}, open loop "
              f"at {results['rate']:g} messages/s per user; a {results['agree_seconds']} s "
              "recording in each load)",
              ["pair", "load", "arm", "io coverage (on-time / "
               + ("counted time)" if results["analysis"]["basis"] == PER_COUNTED
                  else "scrape span)"),
               "recorded io syscalls/s",
               "agent's estimate/s", "ratio io_syscall", "ratio nio_copy"])
    key = results["analysis"]["basis"]
    for x in results["loads"]:
        ag = x.get("agreement") or {}
        row = (ag.get("categories") or {}).get("io_syscall") or {}
        cov = ag.get("agent_coverage")
        if (cov is not None and ag.get("agent_coverage_basis") != "counted"
                and ag.get("agent_counted_s") and ag.get("agent_span_s")):
            # on-time per the time the counts cover: a run that stored it per scrape span
            cov = cov * ag["agent_span_s"] / ag["agent_counted_s"]
        r = ratios_of(ag, key)
        t.add([x["pair"], x["load"], x["arm"], "—" if cov is None else f"{cov:.3f}",
               ns(row.get("recorded_per_s")), ns(row.get(key)),
               _ratio(r.get("io_syscall")), _ratio(r.get("nio_copy"))
               + (f" (miss: {x['error']})" if x.get("error") else "")])
    s = Table("Full minus windowed, paired by pair (95% t interval; complete pairs only, the "
              "arms' means over the same pairs)",
              ["category", "mean ratio, windowed", "mean ratio, full", "mean difference",
               "95% interval", "n pairs", "reading"])
    for c in CATEGORIES:
        st = results["analysis"][c]
        m = st["arm_mean_ratio"]
        s.add([c, _ratio(m.get("windowed")), _ratio(m.get("full")),
                   "—" if st["mean_difference"] is None else f"{st['mean_difference']:+.3f}",
                   "—" if st["ci95"] is None else f"[{st['ci95'][0]:+.3f}, {st['ci95'][1]:+.3f}]",
                   st["n"], verdict(st)])
    return [t, s]


def _ratio(v) -> str:
    return "—" if v is None else f"{v:.3f}"


def notes_for(results: dict) -> List[str]:
    return [
        "ratio: the agent's calls of the category between the two scrapes around the "
        "recording (extrapolated from its windows: count / coverage; exact where the coverage "
        "is 1), per second of "
        + ("the time its counters cover (the increase of jvmos_jvm_counted_seconds_total: "
           "its intervals' summed lengths)" if results["analysis"]["basis"] == PER_COUNTED
           else "the span between those scrapes (a run made before the agent counted its "
                "covered seconds)")
        + ", / the recording's calls over its wall time. Both are counts the probes saw, no "
        "time model is involved.",
        "The arms alternate ABBA on one warmed server; each load starts a new agent, so each "
        "arm's first interval is its own. Each load also runs a first 1 s recording, not "
        "compared (agent-overhead's agreement).",
        "The recording's own probes are on in both arms alike: what they change in the "
        "server's behaviour is in both ratios' denominators and numerators.",
    ]


def render(out: Path) -> int:
    """--render DIR: the tables and notes written again from DIR/agent-windows.json."""
    src = out / "agent-windows.json"
    results = load_finished(src, "agent-windows", "loads")
    results["analysis"] = analyse(results["loads"])
    publish(out, "agent-windows", tables(results), results, notes_for(results))
    return 0


def main(argv) -> int:
    a = parse(argv)
    if a.render:
        return render(Path(a.render))
    out = out_dir(a.out, "agent-windows").resolve()
    jvm = select_jdks([a.jdk] if a.jdk else None)[0]
    java = str(jvm.home / "bin" / "java")
    results = {"experiment": "agent-windows", "jdk": str(jvm.home), "jdk_label": jdk_label(jvm),
               "rate": a.rate, "messages": a.messages, "agree_seconds": a.agree_seconds,
               "max_overhead": a.max_overhead, "pairs": a.pairs, "order": order(a.pairs),
               "loads": []}
    with own_jar(CHAT_JAR, out, "chat") as server_jar:
        load_cmd = chat_load_cmd(java, a.messages, a.rate)
        srv = chat_server(java, out, server_jar, load_cmd)
        with srv:
            results.update({"server_command": " ".join(srv.argv), "load_command": srv.load_cmd})
            load = lambda: srv.load(str(ROOMS))  # noqa: E731
            log(f"chat server: JVM pid {srv.pid}; warm-up loads, unwatched")
            results["warmups"] = warm_up(srv, load)
            for i, arm in enumerate(results["order"]):
                pair = i // 2 + 1
                tag = f"{arm}-{i + 1}"
                log(f"load {i + 1}/{len(results['order'])}: pair {pair}, {arm}")
                b = arm_settings(a, arm)
                entry = {"pair": pair, "load": i + 1, "arm": arm,
                         "max_overhead": b.max_overhead}
                try:
                    w = watched_load(srv, load, b, out, tag, server_jar,
                                     during=agreement(b, srv, out, f"recording-{tag}"))
                except JvmosError as e:          # a miss: kept, its pair left out
                    log(f"load {i + 1}: {e}")
                    entry.update({"agreement": None, "error": str(e)})
                else:
                    agree = w.get("agreement")
                    entry.update({"agreement": agree, "watched": w})
                    if agree and agree.get("error"):
                        entry["error"] = agree["error"]
                results["loads"].append(entry)
                save_partial(out, "agent-windows", results)
    results["analysis"] = analyse(results["loads"])
    st = results["analysis"]["io_syscall"]
    if st["ci95"] is not None:
        results["headline"] = headline(
            "agent/recording io syscalls per second, full minus windowed (mean, 95% interval: "
            f"{st['method']})",
            f"{st['mean_difference']:+.3f} [{st['ci95'][0]:+.3f}, {st['ci95'][1]:+.3f}]")
    publish(out, "agent-windows", tables(results), results, notes_for(results))
    (out / "agent-windows.partial.json").unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(None))
