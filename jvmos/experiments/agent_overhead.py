"""`jvmos run agent-overhead`: what `jvmos agent` costs a busy JVM, and the rest of the host.

The chat server of `jvmos run chat` (platform threads; every message broadcast to the 20
members of its room) at 20 rooms x 20 users, loaded by a separate client JVM for longer than
the chat experiment does (--messages per user, default 300: 2.4 million deliveries, 13 to
31 s a load on the 2-core reference machine, 26 Nov) so that the agent's intervals pass
during it. --trials pairs of loads on one warmed server, each
a bare load and a load while `jvmos agent` watches the server, their order alternating (bare
first in odd pairs). The agent runs as deployed: its defaults (--layers io, --mode count,
--interval 5, --max-overhead 2%, --shed-backoff 60), a --match that selects the server by its
jar and nothing else; it is started for the pair, the load begins once it has attached, and it
is stopped after the load and one more interval.

Beside every load (both arms) a bystander C process (workloads/c/bystander, the overhead
experiment's) makes 10-byte write(2) calls and malloc+free pairs; its CPU time per call beside
the watched server is compared with the same beside the bare one.

Reported per pair: messages/s (the load generator's), the ratio, the server's CPU time, what
the agent said (its estimated probe effect and guaranteed overhead, the layers it shed and
when), the agent's own CPU time during the load (its process and its engines), and the
bystander's CPU per call. Nothing is asserted: the figures are printed as measured.
"""
import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import List, Optional

from jvmos import ROOT, JvmosError
from jvmos.analyzers.tables import Table
from jvmos.tools import CHAT_JAR, jar
from jvmos.experiments.common import (jdk_label, load_finished, log, out_dir, publish,
                                      select_jdks, write_outputs)
from jvmos.experiments.overhead import Bystander
from jvmos.experiments.server import _bare_load, rate, save_partial

EXAMPLES = """\
examples:
  jvmos run agent-overhead                      # 20x20, 300 messages per user, 3 pairs
  jvmos run agent-overhead --quick              # 100 messages per user, 2 pairs
  jvmos run agent-overhead --trials 5 --max-overhead 5% --out /tmp/agent-ovh
"""

ROOMS = 20
USERS_PER_ROOM = 20
ATTACH_WAIT_S = 120


def parse(argv):
    p = argparse.ArgumentParser(prog="jvmos run agent-overhead", epilog=EXAMPLES,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--messages", type=int, help="messages each user sends per load (default "
                                                "300; --quick 100)")
    p.add_argument("--trials", type=int, help="pairs of loads (default 3; --quick 2)")
    p.add_argument("--max-overhead", default="2%",
                   help="the agent's --max-overhead (default 2%%)")
    p.add_argument("--layers", default="io", help="the agent's --layers (default io)")
    p.add_argument("--jdk", help="JDK home of the server and the load (default: the first found)")
    p.add_argument("--out", help="output directory (default results/runs/<time>-agent-overhead)")
    p.add_argument("--quick", action="store_true", help="100 messages per user, 2 pairs")
    p.add_argument("--render", metavar="DIR",
                   help="write DIR's tables and notes again from DIR/agent-overhead.json (no "
                        "measuring)")
    a = p.parse_args(argv)
    a.messages = a.messages or (100 if a.quick else 300)
    a.trials = a.trials or (2 if a.quick else 3)
    if a.messages <= 0 or a.trials <= 0:
        p.error("--messages and --trials must be positive")
    from jvmos import agentconfig
    try:
        a.max_pct = agentconfig.parse_max_overhead(a.max_overhead)
        a.layer_list = agentconfig.parse_layers(a.layers)
    except JvmosError as e:
        p.error(str(e))
    return a


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class AgentRun:
    """`jvmos agent` for one arm: started, awaited until it watches the server, its metrics
    read, stopped (SIGTERM: it detaches every engine)."""

    def __init__(self, a, server_jar: Path, log_path: Path):
        self.port = _free_port()
        self.log_path = log_path
        self.argv = [sys.executable, "-m", "jvmos.cli", "agent", "--listen",
                     f"127.0.0.1:{self.port}", "--match", f"jar={server_jar}",
                     "--layers", ",".join(a.layer_list), "--max-overhead", a.max_overhead]
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL,
                                     stderr=open(log_path, "w"), cwd=ROOT)

    def samples(self) -> List:
        from prometheus_client.parser import text_string_to_metric_families
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10) as r:
            text = r.read().decode()
        return [s for f in text_string_to_metric_families(text) for s in f.samples]

    def value(self, samples, name: str, **labels) -> Optional[float]:
        got = [s.value for s in samples if s.name == name
               and all(s.labels.get(k) == str(v) for k, v in labels.items())]
        return sum(got) if got else None

    def wait(self, pred, timeout: float, what: str):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise JvmosError(f"the agent exited ({self.proc.returncode}) while waiting "
                                 f"for {what}: see {self.log_path}")
            try:
                got = self.samples()
            except OSError:
                got = None
            if got is not None and pred(got):
                return got
            time.sleep(0.2)
        raise JvmosError(f"the agent did not show {what} within {timeout:.0f} s: see "
                         f"{self.log_path}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def figures_of(ag: AgentRun, s, pid: int) -> dict:
    """What the agent's metrics say of the server at one scrape."""
    v = lambda name, **kw: ag.value(s, name, pid=pid, **kw)  # noqa: E731
    return {"t": time.monotonic(),
            "agent_cpu_s": ag.value(s, "jvmos_agent_cpu_seconds_total"),
            "server_cpu_s": v("jvmos_jvm_cpu_seconds_total"),
            "probe_s": v("jvmos_probe_effect_estimated_seconds_total"),
            "guaranteed_s": v("jvmos_guaranteed_overhead_estimated_seconds_total"),
            "intervals": v("jvmos_jvm_intervals_total"),
            "sheds": {layer: v("jvmos_probe_sheds_total", layer=layer)
                      for layer in ("jni", "mem", "io", "threads", "links")
                      if v("jvmos_probe_sheds_total", layer=layer)}}


def delta(after: dict, before: dict, key: str) -> Optional[float]:
    a, b = after.get(key), before.get(key) or 0.0
    return None if a is None else a - b


def watched_load(srv, load, a, out: Path, tag: str, server_jar: Path) -> dict:
    """One load while the agent watches the server (the agent started for it)."""
    ag = AgentRun(a, server_jar, out / f"agent-{tag}.log")
    try:
        t0 = time.monotonic()
        s = ag.wait(lambda s: ag.value(s, "jvmos_jvm_info", pid=srv.pid) is not None,
                    ATTACH_WAIT_S, f"the server (pid {srv.pid}) watched")
        attached_s = time.monotonic() - t0
        before = figures_of(ag, s, srv.pid)
        by = Bystander().start()
        c0 = srv.cpu_ns()
        got = load()
        cpu = srv.cpu_ns() - c0
        by.join()
        n = figures_of(ag, ag.samples(), srv.pid)["intervals"] or 0

        def accounted(s) -> bool:
            """The interval the load's end fell in is in the counters: one more interval,
            or every layer shed (the shed added the engine's last maps; nothing follows)."""
            shed = [x.value for x in s if x.name == "jvmos_probes_shed"
                    and x.labels.get("pid") == str(srv.pid)]
            return ((ag.value(s, "jvmos_jvm_intervals_total", pid=srv.pid) or 0) > n
                    or (bool(shed) and all(v == 1 for v in shed)))
        after = figures_of(ag, ag.wait(accounted, 60, "the interval after the load"), srv.pid)
    finally:
        ag.stop()
    text = ag.log_path.read_text(errors="replace")
    shed_lines = [line.split("jvmos agent: ", 1)[-1] for line in text.splitlines()
                  if ": shed " in line]
    return {"rate": got.get("rate"), "load_wall_s": got.get("load_wall_s"),
            "server_cpu_ns": cpu, "attach_wait_s": attached_s,
            "agent": {"probe_ns": (delta(after, before, "probe_s") or 0.0) * 1e9,
                      "guaranteed_ns": (delta(after, before, "guaranteed_s") or 0.0) * 1e9,
                      "watched_cpu_ns": (delta(after, before, "server_cpu_s") or 0.0) * 1e9,
                      "intervals": delta(after, before, "intervals"),
                      "agent_cpu_ns": (delta(after, before, "agent_cpu_s") or 0.0) * 1e9,
                      "agent_wall_s": after["t"] - before["t"],
                      "sheds": after["sheds"], "shed_log": shed_lines,
                      "log": str(ag.log_path.relative_to(out))},
            "bystander": by.per_call(None), "bystander_error": by.error}


def bare_load(srv, load) -> dict:
    by = Bystander().start()
    got = _bare_load(srv, load)
    by.join()
    return {"rate": got.get("rate"), "load_wall_s": got.get("load_wall_s"),
            "server_cpu_ns": got["server_cpu_ns"], "bystander": by.per_call(None),
            "bystander_error": by.error}


def med(vals) -> Optional[float]:
    vals = [v for v in vals if isinstance(v, (int, float))]
    return statistics.median(vals) if vals else None


def ms(ns) -> str:
    return "—" if ns is None else f"{ns / 1e6:,.1f}"


def tables(results: dict) -> List[Table]:
    pairs = results["pairs"]
    name = f"{ROOMS}x{USERS_PER_ROOM}"
    t = Table(f"Messages/s the chat server delivers bare and while `jvmos agent` watches it "
              f"({results['jdk_label']}; agent --layers {results['layers']}, --max-overhead "
              f"{results['max_overhead']}, defaults otherwise; {results['messages']} messages "
              "per user)",
              ["load", "pairs", "messages/s bare (median)", "messages/s watched (median)",
               "watched / bare (median of pairs)", "range of pairs",
               "server CPU bare (ms, median)", "server CPU watched (ms, median)",
               "probe effect the agent estimated (ms, median)",
               "of the server's CPU while probes were on", "pairs in which a layer was shed",
               "agent CPU during the load (ms, median)"])
    ratios = [p["ratio"] for p in pairs if p["ratio"] is not None]
    w = [p["watched"] for p in pairs]
    probe = med([x["agent"]["probe_ns"] for x in w])
    shares = [x["agent"]["probe_ns"] / x["agent"]["watched_cpu_ns"] for x in w
              if x["agent"]["watched_cpu_ns"]]
    shed = sum(1 for x in w if x["agent"]["sheds"])
    row = [name, str(len(pairs)), rate(med([p["bare"]["rate"] for p in pairs])),
           rate(med([x["rate"] for x in w])),
           "—" if not ratios else f"{100 * statistics.median(ratios):.1f}%",
           "—" if not ratios else f"{100 * min(ratios):.0f}%–{100 * max(ratios):.0f}%",
           ms(med([p["bare"]["server_cpu_ns"] for p in pairs])),
           ms(med([x["server_cpu_ns"] for x in w])), ms(probe),
           "—" if not shares else f"{100 * statistics.median(shares):.2f}% (median)",
           f"{shed} of {len(pairs)}", ms(med([x["agent"]["agent_cpu_ns"] for x in w]))]
    t.add(row, row)
    b = Table("A bystander C process beside each load: CPU time per call (ns, median over its "
              "rounds, all pairs)",
              ["loop", "bare (ns/call)", "watched (ns/call)", "watched / bare", "rounds bare",
               "rounds watched"])
    for loop, _ in Bystander.PLAN:
        # a run made before a loop was added to the bystander has none of its rounds
        bv = [v for p in pairs for v in
              p["bare"]["bystander"].get(loop, {}).get("cpu_ns_per_call_rounds", [])]
        wv = [v for p in pairs for v in
              p["watched"]["bystander"].get(loop, {}).get("cpu_ns_per_call_rounds", [])]
        bm, wm = med(bv), med(wv)
        r = [loop, "—" if bm is None else f"{bm:.1f}", "—" if wm is None else f"{wm:.1f}",
             "—" if not bm or wm is None else f"{100 * wm / bm:.1f}%", str(len(bv)),
             str(len(wv))]
        b.add(r, [loop, bm, wm, wm / bm if bm and wm is not None else None, len(bv), len(wv)])
    return [t, b]


def notes_for(results: dict) -> List[str]:
    """The notes under the tables (they say how each figure was obtained)."""
    return [
        "messages/s: deliveries per second from the first send to the last delivery, as the "
        "load generator measured it (every load checks each message reached each member "
        "once); watched / bare: the median of the pairs' ratios, range their smallest and "
        f"largest (n = {len(results['pairs'])} pairs: no interval is claimed from so few).",
        "watched: `jvmos agent` started for the pair with its defaults and --match "
        "jar=<the server's copy of the chat jar, a name of this run's own>; the load starts once the agent watches the server (its "
        "engine attached) and the agent is stopped after the interval in which the load "
        "ended. Its cost to the server is in the watched load's rate and CPU; the agent's own "
        "process and engines run on the same two cores (their CPU time: the last column).",
        "probe effect the agent estimated: the increase of jvmos_probe_effect_estimated_seconds"
        "_total over the load (hits x calibrated cost per hit, while its probes were "
        "attached); its share is of jvmos_jvm_cpu_seconds_total over the same intervals (the "
        "server's CPU in the agent's intervals: once every layer is shed no interval runs, so "
        "that CPU is the part of the load the probes were on for, not the whole load).",
        "the agent is started fresh for each watched load, so the load sees its first "
        "interval with every layer attached and what the limit does after it: a layer shed "
        "stays off for --shed-backoff (60 s) and then gets one interval to show its rate fell "
        "(the back-off doubling each time it did not, up to 900 s): a long-running agent on a "
        "server this busy keeps its probes on for one interval per back-off, less than the "
        "share of this load they were on for.",
        "bystander: workloads/c/bystander beside each load (both arms), CPU time per call "
        "(user + system), rounds that ran during the load's first seconds; process-scope "
        "uprobes (the io layer) trap in the watched JVM only, so a difference here is the "
        "machine's noise or the agent's own CPU, not a probe in the bystander.",
    ]


def render(out: Path) -> int:
    """--render DIR: the tables and notes written again from DIR/agent-overhead.json."""
    src = out / "agent-overhead.json"
    results = load_finished(src, "agent-overhead", "pairs")
    write_outputs(out, "agent-overhead", tables(results), results, notes_for(results))
    print(f"results: {out}/agent-overhead.md written again from {src}")
    return 0


def main(argv) -> int:
    a = parse(argv)
    if a.render:
        return render(Path(a.render))
    from jvmos.experiments.chat import load_cmd, server_cmd
    from jvmos.experiments.server import CommandServer
    jvm = select_jdks([a.jdk] if a.jdk else None)[0]
    java = str(jvm.home / "bin" / "java")
    out = out_dir(a.out, "agent-overhead")
    # the server runs a copy of the chat jar under a name of this run's own: the agent's
    # --match jar= selects this server and no other chat server on the host
    server_jar = out / f"jvmos-chat-{os.getpid()}-{int(time.time())}.jar"
    shutil.copyfile(jar(CHAT_JAR), server_jar)
    load_args = argparse.Namespace(users_per_room=USERS_PER_ROOM, messages=a.messages,
                                   message_bytes=40)
    results = {"experiment": "agent-overhead", "jdk": str(jvm.home), "jdk_label": jdk_label(jvm),
               "rooms": ROOMS, "users_per_room": USERS_PER_ROOM, "messages": a.messages,
               "trials": a.trials, "layers": ",".join(a.layer_list),
               "max_overhead": a.max_overhead, "pairs": []}
    srv = CommandServer(server_cmd(java, "platform", 4 * 3600).replace(
                            str(jar(CHAT_JAR)), str(server_jar)),
                        load_cmd(java, load_args), out / "server", rate_key="messages_per_s")
    with srv:
        results.update({"server_command": " ".join(srv.argv), "load_command": srv.load_cmd})
        log(f"chat server: JVM pid {srv.pid} on port {srv.port}; warm-up load, unwatched")
        results["warmup"] = srv.load(str(ROOMS))
        load = lambda: srv.load(str(ROOMS))  # noqa: E731
        for i in range(a.trials):
            tag = f"pair{i + 1}"
            if i % 2 == 0:
                log(f"[{tag}] bare")
                b = bare_load(srv, load)
                log(f"[{tag}] watched by the agent")
                w = watched_load(srv, load, a, out, tag, server_jar)
            else:
                log(f"[{tag}] watched by the agent")
                w = watched_load(srv, load, a, out, tag, server_jar)
                log(f"[{tag}] bare")
                b = bare_load(srv, load)
            ratio = (w["rate"] / b["rate"] if isinstance(w["rate"], (int, float))
                     and isinstance(b["rate"], (int, float)) and b["rate"] > 0 else None)
            results["pairs"].append({"order": "bare first" if i % 2 == 0 else "watched first",
                                     "bare": b, "watched": w, "ratio": ratio})
            log(f"[{tag}] messages/s bare {rate(b['rate'])}, watched {rate(w['rate'])}"
                + ("" if ratio is None else f" ({100 * ratio:.1f}%)")
                + (f"; shed: {'; '.join(w['agent']['shed_log'])}" if w["agent"]["shed_log"]
                   else "; nothing shed"))
            save_partial(out, "agent-overhead", results)
    notes = notes_for(results)
    publish(out, "agent-overhead", tables(results), results, notes)
    (out / "agent-overhead.partial.json").unlink(missing_ok=True)
    server_jar.unlink(missing_ok=True)
    return 0
