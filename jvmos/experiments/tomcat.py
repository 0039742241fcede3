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
import subprocess
import time
from pathlib import Path
from typing import List, Optional, Tuple

from jvmos import JvmosError
from jvmos import cputime
from jvmos import record as rec
from jvmos.analyzers import figures
from jvmos.analyzers.tables import Table, fmt_count
from jvmos.heuristic import model
from jvmos.tools import SHOP_JAR, jar
from jvmos.experiments.common import jdk_label, last_json, log, out_dir, select_jdks, write_outputs
from jvmos.experiments.common import (PROBE_EFFECT_HEADERS, probe_effect, probe_effect_cells,
                     probe_effect_median, probe_totals)

EXAMPLES = """\
examples:
  jvmos run tomcat                                  # loads 10x10, 20x20, 30x30, 40x40 pages
  jvmos run tomcat --quick                          # 4x4 .. 10x10, small pages
  jvmos run tomcat --levels 10x10,50x20 --page-bytes 32768 --keepalive

cost: all four layers are on while the server is loaded (the mem layer's uprobes slow every
process using libc, the load generator too): the loads are also run bare, and the recorded
figures are corrected for the probe effect.
"""

LAYERS = ("io", "threads", "links", "mem")
DEFAULT_LEVELS = "10x10,20x20,30x30,40x40"
QUICK_LEVELS = "4x4,6x6,8x8,10x10"
RESOURCES = (("io", "I/O (JNI/NIO and kernel copies)", "#d95f02"),
             ("mem", "memory (libc allocator, kernel)", "#1b9e77"),
             ("threads", "threads (native creation)", "#7570b3"),
             ("links", "links (accept, open/close)", "#e7298a"))


def parse_levels(text: str) -> List[Tuple[int, int]]:
    out = []
    for part in text.split(","):
        try:
            t, p = part.lower().split("x")
            t, p = int(t), int(p)
        except ValueError:
            raise JvmosError(f"bad load level '{part}': write THREADSxPAGES, e.g. 10x20")
        if t <= 0 or p <= 0:
            raise JvmosError(f"bad load level '{part}': threads and pages must be positive")
        out.append((t, p))
    return out


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


class Shop:
    """The petstore server: started, warmed up, loaded, stopped."""

    def __init__(self, java: str, run_dir: Path, page_bytes: int, max_seconds: int = 3600,
                 jvm_args=()):
        self.java, self.dir, self.page_bytes = java, run_dir, page_bytes
        self.jvm_args = list(jvm_args)
        self.max_seconds = max_seconds
        self.proc: Optional[subprocess.Popen] = None
        self.port: Optional[int] = None

    def __enter__(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        port_file = self.dir / "server.port"
        port_file.unlink(missing_ok=True)
        cmd = [self.java, "-Xms1g", "-Xmx1g"] + self.jvm_args + ["-jar", str(jar(SHOP_JAR)),
               "--page-bytes", str(self.page_bytes), "--max-threads", "500",
               "--min-spare-threads", "4", "--port", "0",
               "--port-file", str(port_file), "--max-seconds", str(self.max_seconds)]
        self.cmd = cmd
        self.proc = subprocess.Popen(cmd, stdout=open(self.dir / "server-stdout.txt", "wb"),
                                     stderr=open(self.dir / "server-stderr.txt", "wb"))
        t0 = time.monotonic()
        while not port_file.exists():
            if self.proc.poll() is not None:
                raise JvmosError(f"the shop exited ({self.proc.returncode}) before listening; "
                                 f"see {self.dir}/server-stderr.txt")
            if time.monotonic() - t0 > 180:
                raise JvmosError("the shop did not start listening within 180 s")
            time.sleep(0.1)
        self.port = int(port_file.read_text().strip())
        return self

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def load(self, threads: int, pages: int, keepalive: bool = False,
             max_seconds: int = 900) -> dict:
        cmd = [self.java, "-cp", str(jar(SHOP_JAR)), "org.jvmos.workloads.shop.ShopLoad",
               "--port", str(self.port), "--threads", str(threads), "--pages", str(pages),
               "--max-seconds", str(max_seconds), "--expect-min-bytes", str(self.page_bytes)]
        if keepalive:
            cmd.append("--keepalive")
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=max_seconds + 120)
        res = last_json(r.stdout)
        if r.returncode != 0 or not res:
            tail = (r.stderr.strip().splitlines() or ["no output"])[-1]
            raise JvmosError(f"the load generator failed (exit {r.returncode}): {tail}")
        return res

    def cpu_ns(self) -> int:
        """The server's CPU time so far, ns (its process CPU clock: every thread, those that
        have exited included). JvmosError if the server is gone."""
        try:
            return cputime.process_cpu_ns(self.proc.pid)
        except cputime.ProcessGone as e:
            raise JvmosError(f"the shop's CPU time cannot be read: {e} (did the server exit? "
                             f"see {self.dir}/server-stderr.txt)")


def cpu_split(bare_cpu_ns: Optional[float], recorded_cpu_ns: Optional[float],
              overhead_ns: float) -> dict:
    """A load's CPU time split into the guaranteed overhead and Java execution, on the bare
    run (which the probes did not inflate): Java execution = bare CPU - overhead, overhead % =
    overhead / bare CPU. The recorded run's CPU is the probe effect's figure: recorded - bare,
    and recorded / bare. An overhead larger than the bare CPU time is not clamped: Java
    execution is then negative and `overhead_exceeds_bare_cpu` says so."""
    ok = bool(bare_cpu_ns)
    out = {"java_exec_ns": bare_cpu_ns - overhead_ns if ok else None,
           "overhead_pct_of_bare_cpu": 100.0 * overhead_ns / bare_cpu_ns if ok else None,
           "overhead_exceeds_bare_cpu": overhead_ns > bare_cpu_ns if ok else None,
           "probe_effect_cpu_ns": None, "recorded_over_bare_cpu": None}
    if ok and recorded_cpu_ns is not None:
        out["probe_effect_cpu_ns"] = recorded_cpu_ns - bare_cpu_ns
        out["recorded_over_bare_cpu"] = recorded_cpu_ns / bare_cpu_ns
    return out


def _recorded_load(shop: Shop, threads: int, pages: int, keepalive: bool, layers, run_dir: Path,
                   name: str):
    """One load with jvmos attached to the server: (recording, load result, server CPU ns)."""
    box = {}

    def drive():
        box["cpu0"] = shop.cpu_ns()
        box["load"] = shop.load(threads, pages, keepalive)
        box["cpu1"] = shop.cpu_ns()

    # the teardown is awaited: a bare load follows, and uprobes still on the server (detached
    # one grace period at a time) would trap in it, uncounted
    res = rec.record(rec.Options(pid=shop.proc.pid, layers=list(layers), out=run_dir,
                                 workload=drive, log=lambda m: log(f"  [{name}] {m}"),
                                 wait_teardown=True))
    if res.status != "complete":
        raise JvmosError(f"recording of {name} ended {res.status}")
    return res, box["load"], box["cpu1"] - box["cpu0"]


def _bare_load(shop: Shop, threads: int, pages: int, keepalive: bool) -> dict:
    c0 = shop.cpu_ns()
    bare = shop.load(threads, pages, keepalive)
    bare["server_cpu_ns"] = shop.cpu_ns() - c0
    return bare


def warm_pair(shop: Shop, threads: int, pages: int, keepalive: bool, layers, out: Path,
              name: str, bare_before: dict) -> dict:
    """The probe effect measured on a server in one state: the level's first recorded load
    grows the connector's pool and touches the heap's pages for the first time (first-touch
    page faults that a later bare load does not pay), so recorded minus that bare load is
    not the probes' cost. Here a second recorded load runs between two bare loads, all three
    on the warmed server: observed = recorded - mean(bare before, bare after), beside
    jvmos's estimate for that same recording."""
    log(f"[{name}] probe effect: a second recorded load between two bare ones")
    res, load, cpu = _recorded_load(shop, threads, pages, keepalive, layers,
                                     out / "runs" / f"{name}-warm", f"{name}-warm")
    after = _bare_load(shop, threads, pages, keepalive)
    bares = [bare_before["server_cpu_ns"], after["server_cpu_ns"]]
    return {"run_dir": str(res.run_dir.relative_to(out)), "server_cpu_ns": cpu,
            "bare_cpu_ns": bares, "bare_mean_cpu_ns": sum(bares) / 2,
            "pages_per_s": load.get("pages_per_s"),
            "bare_after_pages_per_s": after.get("pages_per_s"),
            "probe_totals": probe_totals(res.summary["totals"])}


def measure_level(shop: Shop, threads: int, pages: int, out: Path, name: str,
                  keepalive: bool = False, layers=LAYERS, pair: bool = False) -> dict:
    """One load level: recorded (jvmos attached to the server for the load), then bare.
    Recorded first, so that the threads Tomcat's pool starts for a load it has not seen yet
    are created while jvmos watches. pair: the probe effect is measured on a warm pair too
    (warm_pair)."""
    log(f"[{name}] {threads} threads x {pages} pages, recorded ({','.join(layers)})")
    res, load, cpu = _recorded_load(shop, threads, pages, keepalive, layers,
                                    out / "runs" / name, name)
    log(f"[{name}] {threads} threads x {pages} pages, bare")
    bare = _bare_load(shop, threads, pages, keepalive)
    bare_cpu = bare["server_cpu_ns"]
    warm = None
    if pair:
        try:
            warm = warm_pair(shop, threads, pages, keepalive, layers, out, name, bare)
        except JvmosError as e:     # the level's figures stand; its probe effect is the cold one
            log(f"warning: [{name}] the warm pair failed ({e}): the probe effect is the first "
                "recorded load's, warm-up included")
            warm = {"error": str(e)}
    s = res.summary
    t = s["totals"]
    by = t.get("guaranteed_by_resource") or {}
    overhead = sum(by.values())
    if t.get("guaranteed_overhead_unknown"):
        log(f"warning: {threads}x{pages}: the overhead leaves out "
            f"{', '.join(t['guaranteed_overhead_unknown'])} (time unknown): a lower bound")
    return {
        "threads": threads, "pages": pages, "connections": load.get("connections"),
        "bare": bare, "recorded": load, "run_dir": str(res.run_dir.relative_to(out)),
        "server_cpu_ns": cpu, "bare_cpu_ns": bare_cpu,
        "cpu_clock": "the server's process CPU clock (clock_gettime, ns, every thread)",
        "wall_ns": t["wall_ns"],
        "guaranteed_ns": overhead, "by_resource": by,
        **cpu_split(bare_cpu, cpu, overhead),
        "counts": model.counts_from_summary(s),
        "mem_parts": model.mem_parts_from_summary(s),
        "probe_overhead_ns": t.get("probe_overhead_ns"),
        "probe_totals": probe_totals(t),
        **({"warm_pair": warm} if warm else {}),
    }


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


def warm_of(L: dict) -> Optional[dict]:
    """A level's (or repeat's) warm pair, when it ran and did not fail."""
    w = L.get("warm_pair")
    return w if w and "error" not in w else None


def level_probe_effect(L: dict) -> dict:
    """Estimated probe effect beside the observed one: the server's CPU time recorded minus
    bare at the same load (the median over repeats when a level has several); from the warm
    pair when the level has one (warm_pair: the first recorded load pays the server's
    warm-up, which is not the probes' cost)."""
    reps = L.get("repeats") or [L]
    effects = []
    for r in reps:
        w = warm_of(r)
        if w:
            effects.append(probe_effect(w["probe_totals"], w["server_cpu_ns"],
                                        w["bare_mean_cpu_ns"],
                                        "server CPU time, warm: a second recorded load minus "
                                        "the mean of the bare loads before and after it"))
        else:
            effects.append(probe_effect(
                r.get("probe_totals") or {"probe_overhead_ns": r.get("probe_overhead_ns")},
                r.get("server_cpu_ns"), (r.get("bare") or {}).get("server_cpu_ns"),
                "server CPU time"))
    return probe_effect_median(effects)


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
