"""The JPetStore-style shop (workloads/java/shop) on embedded Tomcat, as `jvmos run tomcat`
(Figure 2) and `jvmos run heuristic` (Table 7) drive it: the server started and stopped, loads
of THREADSxPAGES run bare or with jvmos attached to the server, and one load level measured
(recorded, then bare; optionally a warm pair for the probe effect).
"""
import subprocess
import time
from pathlib import Path
from typing import List, Optional, Tuple

from jvmos import JvmosError
from jvmos import cputime
from jvmos import record as rec
from jvmos.cputime import cpu_split
from jvmos.heuristic import model
from jvmos.tools import SHOP_JAR, jar
from jvmos.experiments.common import last_json, log
from jvmos.experiments.common import probe_effect, probe_effect_median, probe_totals

# the layers attached to the server: the paper's four resources
LAYERS = ("io", "threads", "links", "mem")


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
