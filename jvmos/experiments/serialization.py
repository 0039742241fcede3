"""`jvmos run serialization`: seed 002's serialization primitives on today's JDK: Java
Serializable, Externalizable, XML with XStream, and Kryo (a schema-free binary serializer in
use today), each serializing and deserializing the same object graphs (a vector of ints, a
linked list of ints, a small nested order graph) of growing size, every round trip validated
(workloads/java/ipc SerialBench): time per serialize and per deserialize (the mean over the
iterations after a warm-up) and bytes per object graph. Each configuration runs in a new JVM,
`--repeat` times; the table gives the mean of the repeats' means with its 99% interval (seed
000's level; seed 002 ran ten trials, the default here is 3 JVMs, so the intervals are wide).
"""
import argparse
from pathlib import Path

from jvmos import JvmosError
from jvmos.analyzers import stats
from jvmos.analyzers.tables import Table, fmt_count
from jvmos.tools import IPC_JAR, jar
from jvmos.experiments.common import (Progress, headline, jdk_label, load_finished, log,
                                      out_dir, parse_list, run_bare, select_jdks, write_outputs)
from jvmos.experiments.server import kept_so_far, save_partial

FORMATS = ("serializable", "externalizable", "xstream", "kryo")
GRAPHS = ("vector", "linkedlist", "nested")
DEFAULT_SIZES = "5,50,500,5000"
QUICK_SIZES = "5,500"

EXAMPLES = """\
examples:
  jvmos run serialization                         # every format, graph and size, 3 JVMs each
  jvmos run serialization --quick                 # sizes 5 and 500, 1 JVM each, fewer iterations
  jvmos run serialization --formats kryo,xstream --graphs nested --sizes 10,100
  jvmos run serialization --render results/serialization  # the table again, nothing measured

Outputs: serialization.md/.csv/.json, serialization-time.png and serialization-bytes.png
(also .svg).
"""


def parse(argv):
    p = argparse.ArgumentParser(prog="jvmos run serialization", epilog=EXAMPLES,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--formats", default=",".join(FORMATS), help="default: all four")
    p.add_argument("--graphs", default=",".join(GRAPHS), help="default: all three")
    p.add_argument("--sizes", help=f"elements (lines of the nested graph), default {DEFAULT_SIZES}")
    p.add_argument("--iterations", type=int, help="timed round trips (1000; --quick 200)")
    p.add_argument("--warmup", type=int, help="untimed round trips first (200; --quick 50)")
    p.add_argument("--repeat", type=int, help="JVMs per configuration (3; --quick 1)")
    p.add_argument("--jdk", help="JDK home (default: the first found)")
    p.add_argument("--out", help="output directory (default results/runs/<time>-serialization)")
    p.add_argument("--quick", action="store_true", help="sizes 5 and 500, 1 JVM, 200 iterations")
    p.add_argument("--render", metavar="DIR",
                   help="write DIR's table, notes and figures again from DIR/serialization.json "
                        "(no measuring)")
    a = p.parse_args(argv)
    # --quick changes the defaults only: an option given explicitly is kept
    if a.quick:
        a.sizes = a.sizes or QUICK_SIZES
    pick = lambda v, full, quick: v if v is not None else (quick if a.quick else full)  # noqa: E731
    a.iterations = pick(a.iterations, 1000, 200)
    a.warmup = pick(a.warmup, 200, 50)
    a.repeat = pick(a.repeat, 3, 1)
    a.formats = parse_list(a.formats, FORMATS, "format(s)")
    a.graphs = parse_list(a.graphs, GRAPHS, "graph(s)")
    try:
        a.sizes = [int(x) for x in (a.sizes or DEFAULT_SIZES).split(",")]
    except ValueError:
        raise JvmosError(f"bad --sizes '{a.sizes}': whole numbers, comma-separated")
    if any(s <= 0 or s > 1_000_000 for s in a.sizes):
        raise JvmosError("--sizes must be 1..1,000,000")
    if a.iterations <= 0 or a.warmup < 0 or a.repeat <= 0:
        raise JvmosError("--iterations and --repeat must be positive, --warmup not negative")
    return a


def main(argv) -> int:
    a = parse(argv)
    if a.render:
        out = Path(a.render)
        return report(out, load_finished(out / "serialization.json", "serialization", "runs"))
    jvm = select_jdks([a.jdk] if a.jdk else None)[0]
    java = str(jvm.home / "bin" / "java")
    out = out_dir(a.out, "serialization")
    results = {"experiment": "serialization", "jdk": str(jvm.home), "jdk_label": jdk_label(jvm),
               "iterations": a.iterations, "warmup": a.warmup, "repeat": a.repeat, "runs": {}}
    try:
        measure(java, a, out, results)
    except JvmosError as e:
        raise kept_so_far(e, out, "serialization")
    return report(out, results)


def report(out: Path, results: dict) -> int:
    """serialization.md/.csv/.json, the notes and the figures, from the measured runs (also
    --render's)."""
    table = make_table(results)
    figs = figures(results, out)
    results["figures"] = [f.name for f in figs]
    notes = ["Times are SerialBench's own (System.nanoTime around each serialize and each "
             "deserialize of the graph, to and from a byte array, after the warm-up), the mean "
             "over the iterations; with --repeat > 1 the table gives the mean of the JVMs' "
             "means and its 99% interval (Student's t, n - 1 degrees of freedom). Every round "
             "trip is validated (equals). bytes = the serialized form of one graph."]
    results["headline"] = headlines(results)
    write_outputs(out, "serialization", [table], results, notes)
    (out / "serialization.partial.json").unlink(missing_ok=True)
    print(table.markdown())
    print(f"\nresults: {out}/serialization.md (and .csv, .json, figures)")
    return 0


def headlines(results) -> list:
    """The table's round trip and bytes / Serializable's, every format, for the nested order
    graph (the most object-like of the three; else the first graph run) at its largest size."""
    runs = list(results["runs"].values())
    graph = next((g for g in ("nested",) + GRAPHS if any(r["graph"] == g for r in runs)), None)
    if graph is None:
        return []
    size = max(r["size"] for r in runs if r["graph"] == graph)
    rs = {r["format"]: r for r in runs if r["graph"] == graph and r["size"] == size}
    spread = (f"mean of {results['repeat']} JVMs' means" if results["repeat"] > 1
              else "mean over the iterations of 1 JVM")
    what = f"the {graph} graph of {size:,} {'lines' if graph == 'nested' else 'elements'}"
    base = (rs.get("serializable") or {}).get("bytes_per_object")
    trip = lambda r: (r["serialize"]["mean"] + r["deserialize"]["mean"]) / 1e3  # noqa: E731
    ratios = [f"{f} {rs[f]['bytes_per_object'] / base:.2f}x" for f in FORMATS
              if base and f in rs and f != "serializable"]
    return [
        headline(f"round trip (serialize + deserialize) of {what}, per format (µs, {spread})",
                 ", ".join(f"{f} {trip(rs[f]):,.0f} µs" for f in FORMATS if f in rs)),
        headline(f"bytes of {what} serialized, per format / Java Serializable's (x)",
                 f"{', '.join(ratios)} (Serializable: {base:,} bytes)" if ratios
                 else "unknown")]


def measure(java: str, a, out: Path, results: dict):
    """Every format x graph x size, `a.repeat` JVMs each; kept as each finishes."""
    with Progress(len(a.graphs) * len(a.sizes) * len(a.formats), "serialization",
                  unit="configuration") as bar:
        _measure(java, a, out, results, bar)


def _measure(java: str, a, out: Path, results: dict, bar):
    for graph in a.graphs:
        for size in a.sizes:
            for fmt in a.formats:
                key = f"{fmt}:{graph}:{size}"
                log(f"[{key}] {a.repeat} JVM(s) x {a.iterations} round trips")
                reps = []
                for _ in range(a.repeat):
                    r = run_bare([java, "-cp", str(jar(IPC_JAR)),
                                  "org.jvmos.workloads.ipc.SerialBench", "--format", fmt,
                                  "--graph", graph, "--size", str(size), "--iterations",
                                  str(a.iterations), "--warmup", str(a.warmup)])
                    if r.get("validated") != a.iterations + a.warmup:
                        raise JvmosError(f"{key}: {r.get('validated')} round trips validated "
                                         f"of {a.iterations + a.warmup}")
                    reps.append(r)
                ser = [r["ns_per_serialize"] for r in reps]
                de = [r["ns_per_deserialize"] for r in reps]
                results["runs"][key] = {
                    "format": fmt, "graph": graph, "size": size, "repeats": reps,
                    "library": reps[0].get("library"),
                    "bytes_per_object": reps[0]["bytes_per_object"],
                    "serialize": stats.summary(ser, 0.99) if len(ser) > 1 else {"mean": ser[0]},
                    "deserialize": stats.summary(de, 0.99) if len(de) > 1 else {"mean": de[0]}}
                save_partial(out, "serialization", results)
                bar.step()


def ci(s):
    return "" if not s.get("ci") else f" [{s['ci'][0] / 1e3:,.1f}, {s['ci'][1] / 1e3:,.1f}]"


def make_table(results) -> Table:
    spread = (f"mean of {results['repeat']} JVMs' means [99% CI]" if results["repeat"] > 1
              else "mean over the iterations of 1 JVM, no interval")
    t = Table(f"Serialization primitives ({results['jdk_label']}; µs per graph, {spread}; "
              "bytes per graph)",
              ["graph", "size", "format", "library", "bytes", "serialize (µs)",
               "deserialize (µs)", "round trip (µs)", "bytes / Serializable's"])
    base = {(r["graph"], r["size"]): r["bytes_per_object"] for r in results["runs"].values()
            if r["format"] == "serializable"}
    for r in results["runs"].values():
        s, d = r["serialize"], r["deserialize"]
        b0 = base.get((r["graph"], r["size"]))
        t.add([r["graph"], fmt_count(r["size"]), r["format"], r.get("library") or "—",
               fmt_count(r["bytes_per_object"]), f"{s['mean'] / 1e3:,.2f}{ci(s)}",
               f"{d['mean'] / 1e3:,.2f}{ci(d)}", f"{(s['mean'] + d['mean']) / 1e3:,.2f}",
               "—" if not b0 else f"{r['bytes_per_object'] / b0:.2f}"],
              [r["graph"], r["size"], r["format"], r.get("library"), r["bytes_per_object"],
               s["mean"], d["mean"], s["mean"] + d["mean"],
               None if not b0 else r["bytes_per_object"] / b0])
    return t


def figures(results, out: Path) -> list:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from jvmos.analyzers import figures as fig_io
    runs = list(results["runs"].values())
    graphs = sorted({r["graph"] for r in runs})
    saved = []
    for what, stem, label in (("time", "serialization-time", "round trip (µs), log scale"),
                              ("bytes", "serialization-bytes", "bytes per graph, log scale")):
        fig, axes = plt.subplots(1, len(graphs), figsize=(4.5 * len(graphs), 4), squeeze=False)
        for ax, g in zip(axes[0], graphs):
            for fmt in FORMATS:
                rs = sorted((r for r in runs if r["graph"] == g and r["format"] == fmt),
                            key=lambda r: r["size"])
                if not rs:
                    continue
                ys = [((r["serialize"]["mean"] + r["deserialize"]["mean"]) / 1e3)
                      if what == "time" else r["bytes_per_object"] for r in rs]
                ax.plot([r["size"] for r in rs], ys, marker="o", label=fmt)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("size (elements)")
            ax.set_ylabel(label)
            ax.set_title(f"{g} ({results['jdk_label']})", fontsize=9)
            ax.legend(fontsize=8)
        fig.tight_layout()
        saved += fig_io.save(fig, out / stem)
    return saved
