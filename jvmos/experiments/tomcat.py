"""`jvmos run tomcat`: the paper's Figure 2 (section 5) on this machine.

A JPetStore-style shop (workloads/java/shop) on embedded Tomcat 10, 1 GB heap, large
connector pool, 127.0.0.1 only, loaded by a client with the paper's two parameters: concurrent
threads, and pages each thread retrieves before it halts (a new connection per page). Four
load levels, both parameters growing (a quadratic growth of the work, as in the paper). At each
level the load runs once while jvmos is attached to the server with the io, threads, links and
mem layers, then once bare. The guaranteed overhead is split into I/O, memory, threads and
links, beside the server's Java execution time (its CPU time during the bare load, read in ns,
less the overhead), drawn as stacked bars; the recorded load's CPU time is given beside it as
the probe effect.
"""
import argparse
from pathlib import Path
from typing import List

from jvmos.analyzers import figures
from jvmos.analyzers.tables import Table, fmt_count
from jvmos.experiments.common import jdk_label, log, out_dir, select_jdks, write_outputs
from jvmos.experiments.common import PROBE_EFFECT_HEADERS, probe_effect_cells
from jvmos.experiments.shop import (LAYERS, Shop, level_probe_effect, measure_level,
                                    parse_levels, warm_of)

EXAMPLES = """\
examples:
  jvmos run tomcat                                  # loads 10x10, 20x20, 30x30, 40x40 pages
  jvmos run tomcat --quick                          # 4x4 .. 10x10, small pages
  jvmos run tomcat --levels 10x10,50x20 --page-bytes 32768 --keepalive

cost: all four layers are on while the server is loaded (the mem layer's uprobes slow every
process using libc, the load generator too): the loads are also run bare, and the recorded
figures are corrected for the probe effect.
"""

DEFAULT_LEVELS = "10x10,20x20,30x30,40x40"
QUICK_LEVELS = "4x4,6x6,8x8,10x10"
RESOURCES = (("io", "I/O (JNI/NIO and kernel copies)", "#d95f02"),
             ("mem", "memory (libc allocator, kernel)", "#1b9e77"),
             ("threads", "threads (native creation)", "#7570b3"),
             ("links", "links (accept, open/close)", "#e7298a"))


def parse(argv):
    p = argparse.ArgumentParser(prog="jvmos run tomcat", epilog=EXAMPLES,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--levels", help=f"load levels THREADSxPAGES,... (default {DEFAULT_LEVELS})")
    p.add_argument("--page-bytes", type=int, default=65536, help="page size (default 65536)")
    p.add_argument("--keepalive", action="store_true",
                   help="one connection per client thread instead of one per page")
    p.add_argument("--warmup-pages", type=int, default=400, help="untraced pages first")
    p.add_argument("--jdk", help="JDK home (default: the first found)")
    p.add_argument("--out", help="output directory (default results/runs/<time>-tomcat)")
    p.add_argument("--quick", action="store_true", help=f"levels {QUICK_LEVELS}, 16 kB pages")
    p.add_argument("--no-warm-pair", dest="warm_pair", action="store_false",
                   help="skip the probe-effect pair (a second recorded load between two bare "
                        "ones at each level: doubles the experiment's time)")
    a = p.parse_args(argv)
    if a.quick:
        a.levels = a.levels or QUICK_LEVELS
        a.page_bytes = min(a.page_bytes, 16384)
        a.warmup_pages = min(a.warmup_pages, 100)
    a.levels = parse_levels(a.levels or DEFAULT_LEVELS)
    if a.page_bytes <= 0 or a.warmup_pages < 0:
        p.error("--page-bytes must be positive, --warmup-pages not negative")
    return a


def main(argv) -> int:
    a = parse(argv)
    jvm = select_jdks([a.jdk] if a.jdk else None)[0]
    java = str(jvm.home / "bin" / "java")
    out = out_dir(a.out, "tomcat")
    results = {"experiment": "tomcat", "jdk": str(jvm.home), "jdk_label": jdk_label(jvm),
               "page_bytes": a.page_bytes, "keepalive": a.keepalive, "layers": list(LAYERS),
               "levels": {}}
    with Shop(java, out / "server", a.page_bytes) as shop:
        results["server_command"] = shop.cmd
        if a.warmup_pages:
            log(f"warm-up: {a.warmup_pages} pages, untraced")
            shop.load(4, max(1, a.warmup_pages // 4), a.keepalive)
        for t, p in a.levels:
            name = f"{t}x{p}"
            results["levels"][name] = measure_level(shop, t, p, out, name, a.keepalive,
                                                    pair=a.warm_pair)
    table = figure2_table(results)
    notes = notes_for(results)
    figs = figure2(results, out / "figure2")
    results["figures"] = [f.name for f in figs]
    write_outputs(out, "figure2", [table], results, notes)
    print(table.markdown())
    for n in notes:
        print(f"- {n}")
    print(f"\nresults: {out}/figure2.md (and .csv, .json, figure2.png/.svg); recordings in "
          f"{out}/runs/")
    return 0


def ms(ns):
    return "—" if ns is None else f"{ns / 1e6:,.1f}"


def pct(v):
    return "—" if v is None else f"{v:.1f}%"


def recorded_cpu_text(L) -> str:
    """'recorded CPU (+difference, ratio x)' of a level, in ms."""
    rec_ns, d, r = L.get("server_cpu_ns"), L.get("probe_effect_cpu_ns"), L.get("recorded_over_bare_cpu")
    if rec_ns is None:
        return "—"
    if d is None or r is None:
        return ms(rec_ns)
    return f"{ms(rec_ns)} ({'+' if d >= 0 else '-'}{abs(d) / 1e6:,.1f}, {r:.2f}x)"


def figure2_table(results) -> Table:
    t = Table(f"Figure 2: guaranteed overhead of the shop under load ({results['jdk_label']}, "
              f"{results['page_bytes']:,}-byte pages; ms of server CPU time)",
              ["load (threads x pages)", "connections", "pages/s (bare)", "pages/s (recorded)",
               "I/O", "memory", "threads", "links", "Java execution (bare CPU - overhead)",
               "overhead / bare CPU", "bare CPU",
               "recorded CPU (recorded - bare, warm-up included)"]
              + PROBE_EFFECT_HEADERS)
    for name, L in results["levels"].items():
        by = L["by_resource"]
        row = [name, fmt_count(L["connections"]), f"{L['bare'].get('pages_per_s', 0):,.0f}",
               f"{L['recorded'].get('pages_per_s', 0):,.0f}",
               ms(by.get("io")), ms(by.get("mem")), ms(by.get("threads")), ms(by.get("links")),
               ms(L["java_exec_ns"]) + (" (overhead > bare CPU)"
                                         if L.get("overhead_exceeds_bare_cpu") else ""),
               pct(L["overhead_pct_of_bare_cpu"]), ms(L.get("bare_cpu_ns")),
               recorded_cpu_text(L)]
        L["probe_effect"] = level_probe_effect(L)
        pe, pv = probe_effect_cells(L["probe_effect"])
        t.add(row + pe, [name, L["connections"], L["bare"].get("pages_per_s"),
                    L["recorded"].get("pages_per_s"), by.get("io"), by.get("mem"),
                    by.get("threads"), by.get("links"), L["java_exec_ns"],
                    L["overhead_pct_of_bare_cpu"], L.get("bare_cpu_ns"), L.get("server_cpu_ns")] + pv)
    return t


def notes_for(results) -> List[str]:
    return ["Each resource is the guaranteed overhead measured by its layer, corrected for the "
            "probe effect: I/O = jni_copy + nio_copy + kernel_copy, memory = malloc + free_estimated + vm, "
            "threads = thread_create, links = link + file (on-CPU). bare CPU = the server's "
            "CPU time during the bare load (its process CPU clock read in ns before and after "
            "the load: every thread, those that exited during the load included). Java "
            "execution = bare CPU minus the overhead; overhead = the sum / bare CPU (paper: "
            "15% to 45%). recorded CPU = the same clock over the recorded load; in brackets "
            "the probe effect: recorded - bare, and recorded / bare.",
            "pages/s bare and recorded are from the same invocation (recorded first, so that "
            "the connector's pool grows while jvmos watches; the bare run then finds it grown); "
            "the difference is the probe effect on the server and on the load generator, and "
            "that pool growth.",
            "probe effect: estimated = the probes that fired x their calibrated cost per hit; "
            "observed = server CPU time recorded - bare. "
            + ("Each level's figure is from its warm pair: a second recorded load run between "
               "two bare ones once the first recorded load has grown the pool and touched the "
               "heap's pages, so that the observed difference is not the server's warm-up "
               "(observed = that recording's CPU - the mean of the two bare loads)."
               if any(warm_of(L) for L in results["levels"].values()) else
               "The first recorded load pays the server's warm-up (pool growth, first-touch "
               "page faults of the heap) that the bare load after it does not: the observed "
               "difference overstates the probes' cost (run without --no-warm-pair to "
               "measure it on a warm server).")]


def figure2(results, stem: Path) -> list:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = list(results["levels"])
    fig, ax = plt.subplots(figsize=(8, 4.5))
    bottoms = [0.0] * len(names)
    for key, label, colour in RESOURCES:
        vals = [(results["levels"][n]["by_resource"].get(key) or 0.0) / 1e6 for n in names]
        ax.bar(names, vals, bottom=bottoms, color=colour, label=label)
        bottoms = [b + v for b, v in zip(bottoms, vals)]
    java = [(results["levels"][n]["java_exec_ns"] or 0.0) / 1e6 for n in names]
    ax.bar(names, java, bottom=bottoms, color="#bdbdbd", label="Java execution time")
    for i, n in enumerate(names):
        share = results["levels"][n]["overhead_pct_of_bare_cpu"]
        if share is not None:
            ax.text(i, bottoms[i] + max(java[i], 0.0), f"{share:.0f}%", ha="center",
                    va="bottom", fontsize=8)
    ax.set_xlabel("load: client threads x pages per thread (% = overhead / bare CPU time)")
    ax.set_ylabel("server CPU time during the bare load (ms)")
    ax.set_title(f"Shop on Tomcat: guaranteed overhead by resource ({results['jdk_label']})",
                 fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    return figures.save(fig, stem)
