"""`jvmos run ipc`: seed 000's suite on this machine: two JVMs on 127.0.0.1 talking through
Java sockets (object streams) or XML-RPC, the nano (SS, SV, VS, VV) and micro (GRAB, FACT, GCD,
REV) benchmarks, each run as seed 000's ExperimentCampaign (its Figure 2): start the server,
pause, N trials of the client (each a new client JVM, timed by the OS around the process and by
the language around the calls, every answer validated), pause between trials; the network
consumption of the campaign counted in the kernel (probes/net.bt on the loopback interface, for
every size, the large ones included), and each JVM's garbage collection from its own record.

Statistics as the seed reports them: mean, standard deviation, 99% confidence interval, Welch's
t-test between the two primitives at alpha = 0.01 (its Table 5), and the percent change R-delta%
when XML-RPC replaces sockets (its equations 2-4).
"""
import argparse
import contextlib
import time
from pathlib import Path
from typing import Dict, List, Optional

from jvmos import JvmosError
from jvmos.analyzers import stats
from jvmos.analyzers.tables import Table, fmt_count
from jvmos.netcount import NetCounter
from jvmos.tools import IPC_JAR, jar
from jvmos.experiments.common import (Progress, boundary_counts, headline, jdk_label,
                                      last_json, load_finished, log, out_dir, per_extra,
                                      record_script, select_jdks, write_outputs)
from jvmos.experiments.server import CommandServer, kept_so_far, save_partial

EXAMPLES = """\
examples:
  jvmos run ipc                                    # every campaign, 10 trials each (~8 min)
  jvmos run ipc --quick                            # 2 trials, every benchmark at size 5
  jvmos run ipc --campaigns VV:5000,VV:50000 --trials 20

A campaign is BENCHMARK:SIZE (size(V), the vector length; ignored by SS and GRAB), run with
every primitive of --primitives. Outputs: ipc.md/.csv/.json (response times with 99% intervals
under both timers, t-tests, R-delta%, network and GC tables), figures ipc-nano.png, ipc-micro.png
(bars with +-1 sd, both timers), ipc-size.png (response time against size(V)) and
ipc-ecdf.png (the ECDF of VV at 5,000), each also as .svg.
"""

PRIMITIVES = ("sockets", "xmlrpc")
TIMERS = ("os", "language")
# seed 000 §5.3: its socket code wrote with writeChars and read with readLine (text, no
# object streams); the workload has it as a third primitive, run only when asked for
KNOWN_PRIMITIVES = PRIMITIVES + ("sockets-text",)
NANO = ("SS", "SV", "VS", "VV")
MICRO = ("GRAB", "FACT", "GCD", "REV")
BENCHMARKS = NANO + MICRO
# benchmarks whose messages do not depend on size(V): SS and GRAB send and receive one value;
# FACT sends one and receives the factors of a random number (SV, by contrast, receives a
# vector of size(V))
NO_SIZE = ("SS", "GRAB", "FACT")
# seed 000: Figures 3-4 at size(V) = 5; Table 3 / Figure 5: SV, VS, VV at 5, 50, 500; Table 4
# and Figure 6: VV at 5,000, 10,000, 50,000
DEFAULT_CAMPAIGNS = ([f"{b}:5" for b in BENCHMARKS]
                     + [f"{b}:{s}" for s in (50, 500) for b in ("SV", "VS", "VV")]
                     + [f"VV:{s}" for s in (5000, 10000, 50000)])
# --quick shows the result (seed 000's Figures 3-4: every benchmark at size(V) = 5), it does
# not prove it: 2 trials, no larger sizes (make demo)
QUICK_CAMPAIGNS = [f"{b}:5" for b in BENCHMARKS]
# seed 000 Table 5: the pairs its t-tests compare (sockets vs XML-RPC), under one timer or
# the other there; here every pair is tested under both timers
TTEST_PAIRS = ["SS:5", "VV:5", "REV:5", "GRAB:5", "GCD:5", "SV:500", "VS:500", "VV:500",
               "VV:5000", "VV:10000", "VV:50000"]


def parse_campaigns(text: str) -> List[tuple]:
    out = []
    for part in text.split(","):
        b, _, s = part.strip().partition(":")
        b = b.upper()
        if b not in BENCHMARKS:
            raise JvmosError(f"unknown benchmark '{part.strip()}' (known: "
                             f"{', '.join(BENCHMARKS)}; write BENCHMARK:SIZE, e.g. VV:500)")
        try:
            size = int(s) if s else 5
        except ValueError:
            size = 0
        if size <= 0 or size > 1_000_000:
            raise JvmosError(f"bad size(V) in '{part.strip()}': a whole number 1..1,000,000")
        if (b, size) in out:
            raise JvmosError(f"campaign {b}:{size} is given twice")
        out.append((b, size))
    return out


def parse(argv):
    p = argparse.ArgumentParser(prog="jvmos run ipc", epilog=EXAMPLES,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--campaigns", help="BENCHMARK:SIZE,... (default: seed 000's: every "
                                       "benchmark at 5, SV/VS/VV at 50 and 500, VV at 5,000, "
                                       "10,000, 50,000)")
    p.add_argument("--primitives", default=",".join(PRIMITIVES),
                   help="comma-separated: sockets, xmlrpc, sockets-text (default sockets,xmlrpc)")
    p.add_argument("--trials", type=int, default=10, help="trials per campaign (default 10)")
    p.add_argument("--calls", type=int, default=1,
                   help="calls per trial (default 1; seed 000 does not give its count: one "
                        "call per client JVM makes the OS timer the cost of one exchange)")
    p.add_argument("--pause", type=float, default=1.0,
                   help="seconds between trials and after the server starts (default 1)")
    p.add_argument("--boundary", help="campaigns whose OS boundary is recorded per call, "
                                      f"BENCHMARK:SIZE,... (default {DEFAULT_BOUNDARY}; "
                                      "'none' for none)")
    p.add_argument("--boundary-calls", type=int, default=100,
                   help="K: the boundary is (1 + K calls - 1 call) / K (default 100; a small K "
                        "leaves the two runs' start-up noise in the per-call figures)")
    p.add_argument("--socket-buffer", type=int, default=0, metavar="BYTES",
                   help="socket primitives: buffered streams of BYTES on both sides (default 0: "
                        "the socket's own streams, as seed 000)")
    p.add_argument("--tcp-nodelay", action="store_true",
                   help="socket primitives: TCP_NODELAY on both sides (default off, as seed 000)")
    p.add_argument("--no-net", dest="net", action="store_false",
                   help="do not count packets (no bpftrace; no root needed)")
    p.add_argument("--jdk", help="JDK home (default: the first found)")
    p.add_argument("--out", help="output directory (default results/runs/<time>-ipc)")
    p.add_argument("--quick", action="store_true",
                   help="2 trials, size(V) = 5 only, short pauses, the boundary at VV:5")
    p.add_argument("--render", metavar="DIR",
                   help="write DIR's tables and figures again from DIR/ipc.json (no measuring)")
    a = p.parse_args(argv)
    if a.quick:
        a.trials = min(a.trials, 2)
        a.pause = min(a.pause, 0.2)
    a.campaigns = parse_campaigns(a.campaigns or ",".join(
        QUICK_CAMPAIGNS if a.quick else DEFAULT_CAMPAIGNS))
    b = a.boundary or (QUICK_BOUNDARY if a.quick else DEFAULT_BOUNDARY)
    a.boundary = [] if b == "none" else parse_campaigns(b)
    if a.boundary_calls <= 0:
        raise JvmosError("--boundary-calls must be positive")
    a.primitives = [x.strip() for x in a.primitives.split(",") if x.strip()]
    bad = [x for x in a.primitives if x not in KNOWN_PRIMITIVES]
    if bad or not a.primitives:
        raise JvmosError(f"unknown primitive(s) {', '.join(bad) or '(none)'} "
                         f"(known: {', '.join(KNOWN_PRIMITIVES)})")
    if a.trials < 2:
        raise JvmosError("--trials must be at least 2 (a standard deviation needs two)")
    if a.calls <= 0 or a.pause < 0:
        raise JvmosError("--calls must be positive and --pause not negative")
    if not 0 <= a.socket_buffer <= 64 << 20:
        raise JvmosError("--socket-buffer must be 0..67,108,864 bytes")
    if (a.socket_buffer or a.tcp_nodelay) and not any(x.startswith("sockets")
                                                      for x in a.primitives):
        raise JvmosError("--socket-buffer and --tcp-nodelay apply to the socket primitives, "
                         "and none is in --primitives")
    return a


def socket_options(primitive: str, a) -> str:
    """The workload's socket options for a socket primitive (nothing for XML-RPC)."""
    if not primitive.startswith("sockets"):
        return ""
    return ((f" --buffer {a.socket_buffer}" if a.socket_buffer else "")
            + (" --tcp-nodelay" if a.tcp_nodelay else ""))


def campaign(java: str, primitive: str, bench: str, size: int, a, out: Path) -> dict:
    """Seed 000's ExperimentCampaign(B, P, N): server, pause, N trials, network counted over
    them; every trial a new client JVM."""
    name = f"{primitive}-{bench}-{size}"
    opts = socket_options(primitive, a)
    server = (f"{java} -cp {jar(IPC_JAR)} org.jvmos.workloads.ipc.IpcServer "
              f"--primitive {primitive} --port 0 --max-seconds 3600{opts}")
    client = (f"{java} -cp {jar(IPC_JAR)} org.jvmos.workloads.ipc.IpcClient "
              f"--primitive {primitive} --port {{port}} --benchmark {bench} --size {{level}} "
              f"--calls {a.calls} --max-seconds 600{opts}")
    srv = CommandServer(server, client, out / "servers" / name)
    trials = []
    with srv:
        time.sleep(a.pause)
        counter = NetCounter(srv.port, out / "net") if a.net else None
        with counter or contextlib.nullcontext():
            for i in range(a.trials):
                r = srv.load(str(size))
                if r.get("validated") != a.calls:
                    raise JvmosError(f"{name} trial {i + 1}: {r.get('validated')} of {a.calls} "
                                     "answers validated")
                trials.append(r)
                time.sleep(a.pause)
    server_end = last_json((srv.dir / "server-stdout.txt").read_text(errors="replace"))
    os_s = [t["load_wall_s"] for t in trials]
    lang_s = [t["language_ns"] / 1e9 for t in trials]
    c = {"primitive": primitive, "benchmark": bench, "size": size, "trials": trials,
         "os_s": os_s, "language_s": lang_s,
         "os": stats.summary(os_s, 0.99), "language": stats.summary(lang_s, 0.99),
         "gc": {"client_per_trial": gc_means(trials), "server": gc_of(server_end)},
         "server_end": server_end}
    if counter:
        n = counter.result
        c["network"] = n
        c["network_per_trial"] = {d: {k: (v / a.trials if isinstance(v, (int, float))
                                          and k != "mean_packet_bytes" else v)
                                      for k, v in n[d].items()}
                                  for d in ("to_port", "from_port")}
    return c


GC_FIELDS = ("gc_young_count", "gc_young_ms", "gc_full_count", "gc_full_ms",
             "gc_concurrent_count", "gc_concurrent_ms", "allocated_bytes")


def gc_of(j: dict) -> Optional[dict]:
    """A JVM's GC record (its JSON line's gc_* fields and allocated bytes); None if absent."""
    if not j or "gc_young_count" not in j:
        return None
    return {k: (None if k == "allocated_bytes" and j.get(k, -1) < 0 else j.get(k))
            for k in GC_FIELDS}


def gc_means(trials: List[dict]) -> Optional[dict]:
    """The client JVMs' GC records, mean per trial (each trial is a new JVM)."""
    recs = [gc_of(t) for t in trials]
    if not recs or None in recs:
        return None
    return {k: (None if any(r[k] is None for r in recs) else sum(r[k] for r in recs) / len(recs))
            for k in GC_FIELDS}


# ------------------------------------------------------------ the boundary, per primitive

DEFAULT_BOUNDARY = "GRAB:5,REV:5,VV:5,VV:500,VV:5000"
QUICK_BOUNDARY = "VV:5"

# the client's bound is long: recorded, an unbuffered socket client of VV at 50,000 made 78
# calls in 180 s (24 Nov); no helper process (sleep, cat): every process of a traced tree gets the process-scope
# uprobes, and their teardown is what a recording waits for; the client waits for the port
SCRIPT = """#!/bin/sh
# one recorded campaign of jvmos run ipc: the server and one client JVM in the traced tree
d={dir}
{java} -cp {jar} org.jvmos.workloads.ipc.IpcServer --primitive {prim} --port 0{opts} \\
    --port-file "$d/port" --max-seconds 2400 > "$d/server.out" 2> "$d/server.err" &
s=$!
echo $s > "$d/server.pid"
{java} -cp {jar} org.jvmos.workloads.ipc.IpcClient --primitive {prim} --port-file "$d/port"{opts} \\
    --benchmark {bench} --size {size} --calls {calls} --max-seconds 1800 > "$d/client.out" &
c=$!
echo $c > "$d/client.pid"
wait $c
rc=$?
kill -TERM $s
wait $s
exit $rc
"""


def boundary(java: str, prim: str, bench: str, size: int, extra_calls: int, out: Path,
             opts: str = "") -> dict:
    """The boundary cost of one call: the campaign's server and a client recorded twice with
    the io, threads, links and mem layers, making 1 call and 1 + extra_calls calls; the
    difference divided by extra_calls is what one more call costs at the OS boundary (JVM
    start-up and connection set-up cancel out), per JVM and for both."""
    runs = {}
    for calls in (1, 1 + extra_calls):
        name = f"boundary-{prim}-{bench}-{size}-calls{calls}"
        res, d = record_script(out, name, "campaign.sh", lambda d, calls=calls: SCRIPT.format(
            dir=d, java=java, jar=jar(IPC_JAR), prim=prim, bench=bench, size=size, calls=calls,
            opts=opts))
        client = last_json((d / "client.out").read_text(errors="replace"))
        if client.get("validated") != calls:
            raise JvmosError(f"{name}: {client.get('validated')} of {calls} answers validated")
        pids = {"server": (d / "server.pid").read_text().strip(),
                "client": (d / "client.pid").read_text().strip()}
        s = res.summary
        runs[calls] = {"run_dir": str(res.run_dir.relative_to(out)), "client_json": client,
                       "both": boundary_counts(s, None),
                       **{role: boundary_counts(s, pid) for role, pid in pids.items()},
                       "probe_overhead_ns": s["totals"].get("probe_overhead_ns")}
    lo, hi = runs[1], runs[1 + extra_calls]
    app = lambda r: ((r["client_json"].get("bytes_sent_app") or 0)  # noqa: E731
                     + (r["client_json"].get("bytes_received_app") or 0))
    app_bytes = app(hi) - app(lo)
    per_call = {role: per_extra(lo[role], hi[role], extra_calls)
                for role in ("both", "server", "client")}
    return {"primitive": prim, "benchmark": bench, "size": size, "extra_calls": extra_calls,
            "runs": {str(k): v for k, v in runs.items()}, "per_call": per_call,
            "app_bytes_per_call": app_bytes / extra_calls}


def boundary_table(results) -> Table:
    t = Table("The OS boundary per call (jvmos recordings of server and client, io, threads, "
              "links and mem layers: (run with 1 + K calls - run with 1 call) / K; both JVMs; "
              "a difference of two recordings, so the JVMs' start-up noise is in it and a "
              "figure can come out negative)",
              ["benchmark", "size(V)", "primitive",
               "app bytes / call (sockets: the object stream's; XML-RPC: HTTP bodies, headers "
               "not counted; not comparable across primitives)", "I/O syscalls / call",
               "bytes through I/O syscalls / call (what the kernel copies)",
               "heap<->native copied bytes / call (JNI + NIO)",
               "allocator calls / call", "page faults / call", "futex / call",
               "context switches / call", "threads created / call", "accepts / call",
               "kernel copy / call (µs, estimated: bytes x calibrated cost)",
               "guaranteed overhead / call (µs; 'known terms' when a term's time is unknown)",
               "I/O (µs)", "memory (µs)", "threads (µs)", "links (µs)",
               "guaranteed overhead / byte through I/O syscalls (ns)"])
    f1 = lambda v: "—" if v is None else f"{v:,.1f}"  # noqa: E731
    us = lambda v: "—" if v is None else f"{v / 1e3:,.1f}"  # noqa: E731
    for b in results.get("boundary", {}).values():
        p = b["per_call"]["both"]
        g = p["guaranteed_ns"]
        per_byte = g / p["io_bytes"] if g is not None and (p["io_bytes"] or 0) > 0 else None
        known = " (known terms)" if p.get("guaranteed_unknown") else ""
        res = [p[k] for k in ("io_ns", "mem_ns", "threads_ns", "links_ns")]
        t.add([b["benchmark"], size_cell(b), b["primitive"], f1(b["app_bytes_per_call"]),
               f1(p["io_syscalls"]), f1(p["io_bytes"]), f1(p["copy_bytes"]),
               f1(p["malloc_calls"]), f1(p["page_faults"]), f1(p["futex"]),
               f1(p["context_switches"]), f1(p["threads_created"]), f1(p["accepts"]),
               us(p.get("kernel_copy_ns")), us(g) + known] + [us(v) for v in res]
              + ["—" if per_byte is None else f"{per_byte:,.2f}" + known],
              [b["benchmark"], b["size"], b["primitive"], b["app_bytes_per_call"],
               p["io_syscalls"], p["io_bytes"], p["copy_bytes"], p["malloc_calls"],
               p["page_faults"], p["futex"], p["context_switches"], p["threads_created"],
               p["accepts"], p.get("kernel_copy_ns"), g] + res + [per_byte])
    return t


def main(argv) -> int:
    a = parse(argv)
    if a.render:
        return render(Path(a.render))
    jvm = select_jdks([a.jdk] if a.jdk else None)[0]
    java = str(jvm.home / "bin" / "java")
    jar(IPC_JAR)
    out = out_dir(a.out, "ipc")
    results = {"experiment": "ipc", "jdk": str(jvm.home), "jdk_label": jdk_label(jvm),
               "trials": a.trials, "calls_per_trial": a.calls, "pause_s": a.pause,
               "net_counted": a.net, "socket_buffer": a.socket_buffer,
               "tcp_nodelay": a.tcp_nodelay, "campaigns": {}, "boundary": {}}
    try:
        with Progress(len(a.campaigns) * len(a.primitives), "ipc", unit="campaign") as bar:
            for bench, size in a.campaigns:
                for prim in a.primitives:
                    key = f"{prim}:{bench}:{size}"
                    log(f"[{key}] {a.trials} trials")
                    results["campaigns"][key] = campaign(java, prim, bench, size, a, out)
                    save_partial(out, "ipc", results)
                    bar.step()
    except JvmosError as e:
        raise kept_so_far(e, out, "ipc")
    try:
        with Progress(len(a.boundary) * len(a.primitives), "ipc boundary",
                      unit="pair") as bar:
            for bench, size in a.boundary:
                for prim in a.primitives:
                    key = f"{prim}:{bench}:{size}"
                    log(f"[boundary {key}] recorded with 1 and {1 + a.boundary_calls} calls")
                    results["boundary"][key] = boundary(java, prim, bench, size,
                                                        a.boundary_calls, out,
                                                        socket_options(prim, a))
                    save_partial(out, "ipc", results)
                    bar.step()
    except JvmosError as e:
        # the campaigns are finished: their tables and figures are written all the same
        results["boundary_error"] = str(e)
        write_all(out, results)
        raise JvmosError(f"{e} (the campaigns' tables, and the boundaries measured before, "
                         f"are written in {out}/ipc.md)")
    write_all(out, results)
    print(f"\nresults: {out}/ipc.md (and .csv, .json, figures); servers' output in "
          f"{out}/servers/")
    return 0


def render(out: Path) -> int:
    """--render DIR: the tables, notes and figures written again from DIR/ipc.json (a
    finished run's measurements; nothing is measured)."""
    src = out / "ipc.json"
    results = load_finished(src, "ipc", "campaigns")
    write_all(out, results)
    print(f"results: {out}/ipc.md written again from {src}")
    return 0


def write_all(out: Path, results: dict):
    tables = [response_table(results)]
    if pairs(results):
        tables += [ttest_table(results), delta_table(results)]
    else:
        log("no campaign ran with both sockets and xmlrpc: no t-tests and no R-delta%")
    if results.get("net_counted"):
        tables.append(network_table(results))
    tables.append(gc_table(results))
    if results.get("boundary"):
        tables.append(boundary_table(results))
    notes = notes_for(results)
    if results.get("boundary_error"):
        notes.append(f"The boundary recordings stopped early: {results['boundary_error']}")
    figs = figures(results, out)
    results["figures"] = [f.name for f in figs]
    results["headline"] = headlines(results)
    write_outputs(out, "ipc", tables, results, notes)
    (out / "ipc.partial.json").unlink(missing_ok=True)
    for t in tables:
        print(t.markdown())


def sec(v):
    return "—" if v is None else f"{v:.4f}"


def ci_text(s):
    return "—" if not s.get("ci") else f"[{s['ci'][0]:.4f}, {s['ci'][1]:.4f}]"


def socket_text(results) -> str:
    """The socket primitives' options, as the tables' titles name them."""
    return ", ".join(x for x in (
        f"socket streams buffered by {results['socket_buffer']:,} bytes"
        if results.get("socket_buffer") else "", "TCP_NODELAY" if results.get("tcp_nodelay")
        else "") if x) or "the socket's own streams, unbuffered"


def response_table(results) -> Table:
    sock = socket_text(results)
    t = Table(f"Response time per campaign ({results['jdk_label']}; {results['trials']} trials "
              f"of {results['calls_per_trial']} call(s); seconds; 99% intervals; sockets: "
              f"{sock})",
              ["benchmark", "size(V)", "primitive", "OS timer: mean",
               "sigma (eq. 7, over n)", "sd (over n - 1)", "99% CI", "language timer: mean",
               "sigma (eq. 7, over n)", "sd (over n - 1)", "99% CI",
               "language timer with the connection set-up: mean"])
    for key, c in results["campaigns"].items():
        o, g = c["os"], c["language"]
        conn = [t_["language_incl_connect_ns"] / 1e9 for t_ in c["trials"]
                if t_.get("language_incl_connect_ns") is not None]
        wc = sum(conn) / len(conn) if len(conn) == len(c["trials"]) else None
        t.add([c["benchmark"], size_cell(c), c["primitive"], sec(o["mean"]),
               sec(o.get("sigma")), sec(o["sd"]), ci_text(o), sec(g["mean"]),
               sec(g.get("sigma")), sec(g["sd"]), ci_text(g), sec(wc)],
              [c["benchmark"], c["size"], c["primitive"], o["mean"], o.get("sigma"), o["sd"],
               o["ci"], g["mean"], g.get("sigma"), g["sd"], g["ci"], wc])
    return t


def size_cell(c):
    return "—" if c["benchmark"] in NO_SIZE else fmt_count(c["size"])


def pairs(results):
    """(benchmark, size) -> {primitive: campaign} for the campaigns run with both."""
    by: Dict[tuple, dict] = {}
    for c in results["campaigns"].values():
        by.setdefault((c["benchmark"], c["size"]), {})[c["primitive"]] = c
    return {k: {p: v[p] for p in PRIMITIVES} for k, v in by.items()
            if all(p in v for p in PRIMITIVES)}


def ttest_table(results) -> Table:
    t = Table("Welch's t-test, sockets vs XML-RPC (H0: equal mean response time; alpha = 0.01; "
              "t of sockets - XML-RPC: negative when XML-RPC is slower; seed 000 Table 5's "
              "pairs first)",
              ["benchmark", "size(V)", "timer", "sockets 99% CI", "XML-RPC 99% CI", "t", "df",
               "p", "H0 rejected"])
    order = sorted(pairs(results).items(),
                   key=lambda kv: (f"{kv[0][0]}:{kv[0][1]}" not in TTEST_PAIRS, kv[0]))
    for (b, size), both in order:
        s, x = both["sockets"], both["xmlrpc"]
        for timer in TIMERS:
            w = stats.welch(s[f"{timer}_s"], x[f"{timer}_s"], 0.01)
            t.add([b, size_cell(s), timer, ci_text(s[timer]), ci_text(x[timer]),
                   "—" if w["t"] is None else f"{w['t']:.2f}",
                   "—" if w["df"] is None else f"{w['df']:.1f}", f"{w['p']:.2g}",
                   "yes" if w["reject"] else "no"],
                  [b, s["size"], timer, s[timer]["ci"], x[timer]["ci"], w["t"], w["df"],
                   w["p"], w["reject"]])
    return t


def size5_groups(results) -> Dict[str, list]:
    """The nano and micro benchmarks run with both primitives at size(V) = 5: {group:
    [(benchmark, sockets' campaign, XML-RPC's)]}, in the delta table's order."""
    groups: Dict[str, list] = {"nano": [], "micro": []}
    for (b, size), both in sorted(pairs(results).items()):
        if size == 5:
            groups["nano" if b in NANO else "micro"].append((b, both["sockets"],
                                                             both["xmlrpc"]))
    return groups


def group_deltas(groups: Dict[str, list]) -> Dict[str, tuple]:
    """Per group with campaigns: (its items, equation 4's mean of the R-delta%, the R-delta%
    of the group's mean response times, the difference of those means), each per timer."""
    out = {}
    for g, items in groups.items():
        if not items:
            continue
        eq4, of_means, diff = {}, {}, {}
        for timer in TIMERS:
            pcs = [stats.pct_change(s[timer]["mean"], x[timer]["mean"])
                   for _, s, x in items if s[timer]["mean"]]
            eq4[timer] = sum(pcs) / len(pcs) if pcs else None
            ms_ = sum(s[timer]["mean"] for _, s, _ in items) / len(items)
            mx_ = sum(x[timer]["mean"] for _, _, x in items) / len(items)
            diff[timer] = mx_ - ms_
            of_means[timer] = stats.pct_change(ms_, mx_) if ms_ else None
        out[g] = (items, eq4, of_means, diff)
    return out


def headlines(results) -> List[dict]:
    """The delta table's group figures, as seed 000 quotes its own: per group (nano, micro)
    run at size(V) = 5, the R-delta% of the group's mean response time under both timers;
    without either group, the R-delta% of every campaign run with both primitives."""
    pct = lambda v: "unknown" if v is None else f"{v:+.1f}%"  # noqa: E731
    what = ("change in mean response time when XML-RPC replaces sockets, % of the sockets' "
            "(seed 000's R-delta%; negative: XML-RPC faster)")
    trials = f"{results['trials']} trials"
    out = []
    for g, (items, _, of_means, _) in group_deltas(size5_groups(results)).items():
        out.append(headline(
            f"{what}, {g} benchmarks at size(V) = 5 ({', '.join(b for b, _, _ in items)}; "
            f"mean over them of each one's mean over {trials}), OS timer / language timer",
            f"{pct(of_means['os'])} OS, {pct(of_means['language'])} language"))
    if out:
        return out
    both = sorted(pairs(results).items())
    per = [f"{b}:{size} " + " / ".join(pct(stats.pct_change(c['sockets'][t]['mean'],
                                                            c['xmlrpc'][t]['mean'])
                                           if c['sockets'][t]['mean'] else None)
                                       for t in TIMERS) for (b, size), c in both]
    return [headline(f"{what}, per campaign (BENCHMARK:size(V); mean over {trials}), OS "
                     "timer / language timer",
                     "; ".join(per) if per else
                     "unknown (no campaign ran with both sockets and XML-RPC)")]


def delta_table(results) -> Table:
    t = Table("Change in response time when XML-RPC replaces sockets (seed 000 equations 2-4; "
              "means; positive = XML-RPC slower)",
              ["benchmark", "size(V)", "R-delta OS (s)", "R-delta% OS", "R-delta language (s)",
               "R-delta% language"])
    for (b, size), both in sorted(pairs(results).items()):
        s, x = both["sockets"], both["xmlrpc"]
        row, vals = [b, size_cell(s)], [b, s["size"]]
        for timer in TIMERS:
            d = x[timer]["mean"] - s[timer]["mean"]
            pc = stats.pct_change(s[timer]["mean"], x[timer]["mean"]) \
                if s[timer]["mean"] else None
            row += [f"{d:+.4f}", "—" if pc is None else f"{pc:+.1f}%"]
            vals += [d, pc]
        t.add(row, vals)
    cell = lambda v: "—" if v is None else f"{v:+.1f}%"  # noqa: E731
    for g, (items, eq4, of_means, diff) in group_deltas(size5_groups(results)).items():
        names = ", ".join(b for b, _, _ in items)
        t.add([f"eq. 4: mean of the {len(items)} {g} benchmarks' R-delta% ({names})", "5", "",
               cell(eq4["os"]), "", cell(eq4["language"])],
              [f"eq. 4 mean {g} ({names})", 5, None, eq4["os"], None, eq4["language"]])
        t.add([f"R-delta% of the {g} group's mean response times ({names}; how seed 000 "
               "quotes its group figures)", "5", f"{diff['os']:+.4f}", cell(of_means["os"]),
               f"{diff['language']:+.4f}", cell(of_means["language"])],
              [f"group means {g} ({names})", 5, diff["os"], of_means["os"], diff["language"],
               of_means["language"]])
    return t


def network_table(results) -> Table:
    t = Table("Network consumption per trial on the loopback interface (seed 000 Table 7; "
              "counted in the kernel by probes/net.bt, every packet of the server's port)",
              ["benchmark", "size(V)", "primitive", "packets to server", "packets from server",
               "mean packet size to server (bytes)", "mean packet size from server (bytes)",
               "bytes per trial (W)",
               "payload bytes per trial", "connections per trial"])
    for c in results["campaigns"].values():
        n = c.get("network")
        if not n:
            continue
        pt = c["network_per_trial"]
        to, fr = n["to_port"], n["from_port"]
        w = pt["to_port"]["bytes"] + pt["from_port"]["bytes"]
        pay = pt["to_port"]["payload_bytes"] + pt["from_port"]["payload_bytes"]
        conns = pt["to_port"]["connections"]
        mp = lambda d: "—" if d["mean_packet_bytes"] is None else f"{d['mean_packet_bytes']:,.0f}"  # noqa: E731
        t.add([c["benchmark"], size_cell(c), c["primitive"], f"{pt['to_port']['packets']:,.1f}",
               f"{pt['from_port']['packets']:,.1f}", mp(to), mp(fr), f"{w:,.0f}",
               f"{pay:,.0f}", f"{conns:,.1f}"],
              [c["benchmark"], c["size"], c["primitive"], pt["to_port"]["packets"],
               pt["from_port"]["packets"], to["mean_packet_bytes"], fr["mean_packet_bytes"], w,
               pay, conns])
    return t


def gc_table(results) -> Table:
    t = Table("Garbage collection of both JVMs (seed 000 Table 6; the JVMs' own record, as "
              "jstat reads it: the client's mean per trial, each trial a new JVM; the server's "
              "over the whole campaign)",
              ["benchmark", "size(V)", "primitive", "client young GCs", "client young GC ms",
               "client full GCs", "client full GC ms", "client allocated (MB)",
               "server young GCs (whole campaign)", "server young GC ms (whole campaign)",
               "server full GCs (whole campaign)", "server full GC ms (whole campaign)",
               "server allocated (MB, whole campaign: start-up and every trial)"])
    num = lambda v, f="{:,.1f}": "—" if v is None else f.format(v)  # noqa: E731
    for c in results["campaigns"].values():
        cl, sv = c["gc"]["client_per_trial"] or {}, c["gc"]["server"] or {}
        mb = lambda r: None if r.get("allocated_bytes") is None else r["allocated_bytes"] / 1e6  # noqa: E731
        vals = [cl.get("gc_young_count"), cl.get("gc_young_ms"), cl.get("gc_full_count"),
                cl.get("gc_full_ms"), mb(cl), sv.get("gc_young_count"), sv.get("gc_young_ms"),
                sv.get("gc_full_count"), sv.get("gc_full_ms"), mb(sv)]
        t.add([c["benchmark"], size_cell(c), c["primitive"]] + [num(v) for v in vals],
              [c["benchmark"], c["size"], c["primitive"]] + vals)
    return t


def notes_for(results) -> List[str]:
    return ["OS timer = the client process's wall time measured by jvmos around it (JVM start, "
            "connection, the calls, JVM exit), as seed 000's /usr/bin/time; language timer = "
            "System.nanoTime around the calls in the client. Each trial is a new client JVM; "
            "every answer is validated by the client against its own computation.",
            "The language timer does not cover the same work for both primitives: the socket "
            "client connects and exchanges the object streams' headers once, before the timer "
            "starts; the XML-RPC client opens an HTTP connection inside every call. The column "
            "'with the connection set-up' times both from before the connection to after the "
            "last answer.",
            "sigma = seed 000's standard deviation (its equation 7, divided by n), the error bars "
            "of the figures; sd divides by n - 1. 99% CI = the mean's interval from Student's t "
            "with n - 1 degrees of freedom and sd (scipy.stats); the t-test is Welch's (unequal variances), two-sided, alpha 0.01.",
            "Network: probes/net.bt counts, in the kernel, every packet handed to the loopback "
            "device whose source or destination port is the server's, over all the campaign's "
            "trials (divided by the trials here); bytes include the 14-byte link header that "
            "/proc/net/dev's lo counters leave out. tcpdump's kernel filter dropped packets at "
            "large sizes in seed 000; this count has no per-packet copy to user space."]


def figures(results, out: Path) -> list:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from jvmos.analyzers import figures as fig_io
    saved = []
    camp = results["campaigns"]
    prims = sorted({c["primitive"] for c in camp.values()})
    colours = {"sockets": "#1b9e77", "xmlrpc": "#d95f02"}

    def timer_pair(stem: str, draw):
        """One figure, a panel per timer: draw(ax, timer) fills each."""
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for ax, timer in zip(axes, TIMERS):
            draw(ax, timer)
        fig.tight_layout()
        return fig_io.save(fig, out / stem)

    for group, benches, stem in (("nano", NANO, "ipc-nano"), ("micro", MICRO, "ipc-micro")):
        present = [b for b in benches if any(c["benchmark"] == b and c["size"] == 5
                                             for c in camp.values())]
        if not present:
            continue

        def bars(ax, timer, group=group, present=present):
            width = 0.8 / max(1, len(prims))
            for j, prim in enumerate(prims):
                cs = [camp.get(f"{prim}:{b}:5") for b in present]
                xs = [i + j * width for i in range(len(present))]
                ax.bar(xs, [c[timer]["mean"] if c else 0 for c in cs], width,
                       yerr=[(c[timer].get("sigma") or 0) if c else 0 for c in cs],
                       capsize=3, color=colours.get(prim), label=prim)
            ax.set_xticks([i + 0.4 - width / 2 for i in range(len(present))], present)
            ax.set_ylabel("response time (s), mean ± σ (eq. 7)")
            ax.set_title(f"{group} benchmarks, size(V) = 5: {timer} timer", fontsize=9)
            ax.legend(fontsize=8)
        saved += timer_pair(stem, bars)
    by_size = {}
    for c in camp.values():
        if c["benchmark"] in ("SV", "VS", "VV"):
            by_size.setdefault((c["benchmark"], c["primitive"]), []).append(c)
    if by_size:
        def against_size(ax, timer):
            for (b, prim), cs in sorted(by_size.items()):
                cs = sorted(cs, key=lambda c: c["size"])
                ax.errorbar([c["size"] for c in cs], [c[timer]["mean"] for c in cs],
                            yerr=[c[timer].get("sigma") or 0 for c in cs], marker="o",
                            capsize=3,
                            label=f"{b} {prim}",
                            linestyle="-" if prim == "sockets" else "--")
            ax.set_xscale("log")
            ax.set_xlabel("size(V)")
            ax.set_ylabel("response time (s)")
            ax.set_title(f"response time against size(V): {timer} timer", fontsize=9)
            ax.legend(fontsize=7)
        saved += timer_pair("ipc-size", against_size)
    ecdf = [camp[k] for k in (f"{p}:VV:5000" for p in prims) if k in camp]
    if ecdf:
        def steps(ax, timer):
            for c in ecdf:
                xs = sorted(c[f"{timer}_s"])
                ax.step(xs, [(i + 1) / len(xs) for i in range(len(xs))], where="post",
                        label=c["primitive"], color=colours.get(c["primitive"]))
            ax.set_xlabel("response time (s)")
            ax.set_ylabel("fraction of trials")
            ax.set_title(f"ECDF of VV, size(V) = 5,000: {timer} timer", fontsize=9)
            ax.legend(fontsize=8)
        saved += timer_pair("ipc-ecdf", steps)
    return saved
