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

from jvmos.analyzers.tables import fmt_count
from jvmos.experiments.common import Progress, jdk_label, log, out_dir, select_jdks
from jvmos.experiments.server import (LAYERS, add_repeats_option, check_repeats, finish,
                                      load_results)
from jvmos.experiments.shop import Shop, measure_level, parse_levels

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
    add_repeats_option(p)
    p.add_argument("--render", metavar="DIR",
                   help="write DIR's table, notes and figure again from DIR/figure2.json (no "
                        "measuring)")
    a = p.parse_args(argv)
    check_repeats(a, p)
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
    if a.render:
        out = Path(a.render)
        return write_results(out, load_results(out / "figure2.json", "tomcat"))
    jvm = select_jdks([a.jdk] if a.jdk else None)[0]
    java = str(jvm.home / "bin" / "java")
    out = out_dir(a.out, "tomcat")
    results = {"experiment": "tomcat", "jdk": str(jvm.home), "jdk_label": jdk_label(jvm),
               "page_bytes": a.page_bytes, "keepalive": a.keepalive, "layers": list(LAYERS),
               "repeats": a.repeats,
               "levels": {}}
    with Shop(java, out / "server", a.page_bytes) as shop:
        results["server_command"] = shop.cmd
        if a.warmup_pages:
            log(f"warm-up: {a.warmup_pages} pages, untraced")
            shop.load(4, max(1, a.warmup_pages // 4), a.keepalive)
        with Progress(len(a.levels), "tomcat", unit="level") as bar:
            for t, p in a.levels:
                name = f"{t}x{p}"
                results["levels"][name] = measure_level(shop, t, p, out, name, a.keepalive,
                                                        pair=a.warm_pair, repeats=a.repeats)
                bar.step()
    return write_results(out, results)


def write_results(out: Path, results: dict) -> int:
    """figure2.md/.csv/.json and the figure, from the measured levels."""
    return finish(
        out, "figure2", results, "load (threads x pages)", "pages_per_s", "pages/s",
        f"Figure 2: guaranteed overhead of the shop under load ({results['jdk_label']}, "
        f"{results['page_bytes']:,}-byte pages; ms of server CPU time)",
        f"Shop on Tomcat: guaranteed overhead by resource ({results['jdk_label']})",
        "load: client threads x pages per thread (% = overhead / the bar's CPU time)",
        extra=[("connections", lambda L: (fmt_count(L["connections"]), L["connections"]))],
        extra_notes=[PAPER_NOTE], paper_band=(15, 45))


PAPER_NOTE = ("The paper's Figure 2 (JPetStore on Tomcat, Solaris) found a guaranteed overhead "
              "of 15% to 45% of execution time; here the table gives the share of the bare load's "
              "CPU time and of the recorded load's (less jvmos's probe-effect estimate), and "
              "the figure's bars use the latter when every level has it. The connector's thread pool grows during the first recorded load of a "
              "level, which the bare load after it does not pay.")
