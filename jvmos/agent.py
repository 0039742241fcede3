"""`jvmos agent`: a long-running service that watches the host's HotSpot JVMs in count mode
and serves what the OS costs each of them as Prometheus metrics (jvmos/agentmetrics.py).

What it does, once per --scan seconds (default 1 s):
  * discovery: /proc is read for processes that map a libjvm.so (HotSpot). A process is
    identified by its pid and its start time (so a recycled pid is a new process); what was
    learnt of one (its JVM, user, main class, jar) is kept while it lives and dropped when it
    is gone. Processes that are not JVMs are looked at again when their executable changes,
    while they are young (a launcher maps libjvm.so a moment after its exec) and once a
    minute (an embedder may load a JVM late).
  * selection: --match user=, main=, jar= (shell patterns; conditions of one --match all hold,
    several --match are alternatives) picks the JVMs; the others are left alone.
  * attach: one compiled engine for the host (jvmos.hostengine), --mode count, --scope
    process, the layers --layers names, loaded once; each selected JVM is added to it with
    its own libraries' uprobes, scoped to its pid (its children are not followed: a child
    that is itself a JVM is added on its own, and no child is ever held at its exec). The
    engine starts with the first JVM and stops after the last one is gone.

Once per --interval seconds (default 5 s) per JVM (the first interval of each engine lasts
FIRST_INTERVAL_S, 1 s, so that the limit is judged soon after an attach): a snapshot of its engine's maps, the same
analyzers as `jvmos record` (a summary of the engine's figures so far), and the interval's
difference (jvmos.live.interval_of), added to that JVM's counters: calls, bytes and estimated
time per category, guaranteed overhead per resource, the JVM's CPU time, the probes'
estimated cost (hits x the calibrated cost per hit of the platform file's engine_probes).

The cost limit (--max-overhead, default 2% of the JVM's CPU time): when an interval's
estimated probe effect passes it, the layers are shed in the order SHED_ORDER (jni, mem, io,
threads, links), skipping those whose probes cost nothing in that interval, until the rest of
the estimate is under the limit; the JVM is added again without them (its final maps are
added first; its bits in the engine's traced map turn them off for that JVM alone). A shed layer comes back after --shed-backoff seconds (default 60): the
first interval with it back shows whether its hit rate fell; a layer shed again within three
intervals of its return waits twice as long next time (at most BACKOFF_MAX_S). Every shed and
return is logged with its figures and counted in the metrics. Probe costs whose calibration
is missing leave the estimate a lower bound: the limit is then judged on the known part.

Restarts: a JVM that exits is dropped (its links closed and its rows deleted in the engine,
its series gone at the next scrape); a JVM that execs is seen by the engine (the exec is in
its maps) or by its new command line: its watch ends and the new program is looked at as a
new process. The agent's engine dies with it (PR_SET_PDEATHSIG: SIGKILL when the agent dies; every link is a
file descriptor of the engine, so the kernel detaches them), and a new agent starts every
counter at zero with a new start time. SIGHUP re-reads --config (and the platform file); a
bad file is logged and the running configuration kept. SIGTERM or SIGINT stop every engine
and end the agent.
"""
import math
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from jvmos import JvmosError, __version__
from jvmos import cputime
from jvmos import dutycycle as dc
from jvmos.agentconfig import Config, load_config
from jvmos.catalogue import GUARANTEED
from jvmos.discovery import Discovery, JvmProc, error_text, proc_stat

BACKOFF_MAX_S = 900.0
# the order layers are shed in when a JVM's probe effect passes the limit: the JNI census
# (a hit per JNI call), then the allocator, then I/O, then threads and links
SHED_ORDER = ("jni", "mem", "io", "threads", "links")
# a layer shed again within this many intervals of its return doubles its back-off
RESHED_INTERVALS = 3
# the first interval after an engine attaches (or comes back with a layer) is this long, so
# that a layer over the limit costs the JVM about a second of probes, not a whole --interval
FIRST_INTERVAL_S = 1.0
# an interval in which the JVM used less CPU than this is not judged against the limit: a
# handful of probe hits in an idle moment says nothing about the rate
MIN_JUDGED_CPU_NS = 10_000_000
# how long an engine may take to load and attach, and to hand over a snapshot
ATTACH_TIMEOUT_S = 60.0
SNAPSHOT_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0
# attaching a JVM that failed is tried again after RETRY_S x failures, at most RETRIES times
RETRY_S = 30.0
RETRIES = 3


EXAMPLES = """\
examples:
  jvmos agent                                      # every HotSpot JVM, io layer, 2% limit, :9377
  jvmos agent --layers io,threads --match user=app --match main=com.example.*
  jvmos agent --config /etc/jvmos/agent.toml       # SIGHUP re-reads it
  curl -s 127.0.0.1:9377/metrics | grep jvmos_guaranteed

cost: one compiled engine for the host in --mode count (entry probes, uprobes in each watched
JVM only);
a JVM whose estimated probe effect passes --max-overhead has its layers shed (jni, mem, io,
threads, links in that order) and put back after --shed-backoff. Only the threads layer uses
syscall tracepoints (every process on the host pays a little per syscall while they are on:
the figure jvmos calibrate --probes measures); io, mem and links count on libc's functions in
the watched JVM only.
"""


def now_text() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def default_log(msg: str) -> None:
    print(f"{now_text()} jvmos agent: {msg}", file=sys.stderr, flush=True)


class EngineGone(JvmosError):
    """The host engine died under a watched JVM (every JVM's watch ends with it)."""


# --------------------------------------------------------------------------- one JVM

@dataclass
class Shed:
    """A layer taken off one JVM: since when, until when, why."""
    since: float                  # monotonic
    until: float
    backoff_s: float
    reason: str


@dataclass
class Totals:
    """One JVM's counters since the agent began watching it (sums of intervals)."""
    calls: Dict[str, int] = field(default_factory=lambda: defaultdict(int))
    bytes: Dict[str, int] = field(default_factory=lambda: defaultdict(int))
    # (category, method) -> ns
    time_ns: Dict[Tuple[str, str], float] = field(default_factory=lambda: defaultdict(float))
    floored: Dict[str, int] = field(default_factory=lambda: defaultdict(int))
    guaranteed_ns: Dict[str, float] = field(default_factory=lambda: defaultdict(float))
    guaranteed_unknown: Dict[str, int] = field(default_factory=lambda: defaultdict(int))
    cpu_ns: int = 0
    probe_ns: float = 0.0
    probe_by_layer_ns: Dict[str, float] = field(default_factory=lambda: defaultdict(float))
    probe_unknown_intervals: int = 0
    lost_events: int = 0
    intervals: int = 0
    counted_ns: float = 0.0        # the intervals' summed lengths (engine clock)
    sheds: Dict[str, int] = field(default_factory=lambda: defaultdict(int))
    returns: Dict[str, int] = field(default_factory=lambda: defaultdict(int))
    engine_starts: int = 0
    # duty cycling: each layer's on-time and the wall time of the intervals it was measured
    # over (coverage = on / period), the windows opened, and the counts extrapolated from
    # the windows (a category of a windowed layer: its count / its layer's coverage)
    on_ns: Dict[str, float] = field(default_factory=lambda: defaultdict(float))
    period_ns: Dict[str, float] = field(default_factory=lambda: defaultdict(float))
    windows: Dict[str, int] = field(default_factory=lambda: defaultdict(int))
    calls_est: Dict[str, float] = field(default_factory=lambda: defaultdict(float))
    bytes_est: Dict[str, float] = field(default_factory=lambda: defaultdict(float))


class Watch:
    """One JVM watched: its engine (replaced when layers are shed or come back), the previous
    snapshot the next interval is measured from, and its counters."""

    def __init__(self, proc: JvmProc, layers: Sequence[str]):
        self.proc = proc
        # duty cycling (jvmos/dutycycle.py): each windowed layer's window for this period
        # (s; None before it was sized), whether its probes are on, the on/off commands due
        # in this period [(monotonic, "on"|"off", layer)], the last interval's on-time and
        # coverage per layer, and per category its last windows (count, on-time) and rate
        self.window: Dict[str, Optional[float]] = {}
        self.on: Dict[str, bool] = {}
        self.last_off: Dict[str, float] = {}     # when each layer's last window closed
        # how much longer a layer's probes were on than the agent kept them on (its commands
        # are sent from a loop that also snapshots, and opening takes 7-15 ms): the next
        # window is commanded that much shorter; commanded: the last window's commanded length
        self.overshoot: Dict[str, float] = {}
        self.commanded: Dict[str, float] = {}
        self.events: List[Tuple[float, str, str]] = []
        self.last_on_s: Dict[str, float] = {}
        self.coverage: Dict[str, float] = {}
        self.history: Dict[str, deque] = {}
        self.rates: Dict[str, dict] = {}
        self.wanted: Tuple[str, ...] = tuple(layers)
        self.started_wall = time.time()
        self.eng = None
        self.plan = None
        self.layers: Tuple[str, ...] = ()
        self.sites: list = []
        self.engine_t0 = 0.0
        self.prev: Optional[dict] = None
        self.totals = Totals()
        self.shed: Dict[str, Shed] = {}
        self.returned_at: Dict[str, float] = {}
        self.backoff: Dict[str, float] = {}       # each layer's last back-off
        self.last_by_layer: Dict[str, float] = {}  # the last interval's probe cost per layer
        self.last_cpu: Optional[int] = None        # the JVM's CPU in the last interval
        self.sampler_cpu_per_s: Optional[float] = None   # its last profile window planned by
        self.last: Dict[str, Optional[float]] = {"guaranteed_ratio": None,
                                                  "probe_ratio": None, "interval_s": None,
                                                  "probe_complete": None}
        self.next_tick = math.inf
        self.seq = 0
        self.warned = False
        self.exec_seen: Optional[str] = None

    def attached_layers(self) -> Tuple[str, ...]:
        """The layers its engine has: a windowed layer that is shed keeps its place in the
        engine (its links are closed, not its programs)."""
        return tuple(layer for layer in self.wanted
                     if layer not in self.shed or layer in dc.WINDOWED_LAYERS)


# --------------------------------------------------------------------------- an interval

def snapshot_view(summary: dict, pid: str, cpu_ns: Optional[int], t_s: float,
                  lost: int, windows: Optional[list] = None,
                  ktime_ns: Optional[int] = None) -> dict:
    """What an interval is measured from in one snapshot of one JVM's engine: its process's
    categories (a child it forked may be counted by the tracepoint layers under its own
    pid: left out), its probe hits by kind, its CPU time, when, the engine's lost events."""
    return {"categories": ((summary.get("by_pid") or {}).get(pid) or {}).get("categories")
            or {},
            "hits": dict(((summary.get("totals") or {}).get("probe_hits_by_pid") or {})
                         .get(pid) or {}),
            "cpu_ns": cpu_ns, "t": t_s, "lost": lost, "ktime_ns": ktime_ns,
            # each layer's on-time so far (the engine's windows, this pid)
            "on_ns": {x["object"]: x["on_ns"] for x in windows or []
                      if str(x.get("pid")) == pid}}


def interval_figures(prev: dict, cur: dict, probes: Optional[dict]) -> dict:
    """The interval between two snapshot views: its categories and guaranteed overhead
    (jvmos.live.interval_of, as `record --interval` prints them), the JVM's CPU time in it,
    and the probes' estimated cost by layer (the hits' differences x the calibrated cost per
    hit; a kind without one makes the estimate incomplete, its known part kept)."""
    from jvmos import live
    from jvmos.analyzers import overhead
    e = live.interval_of({"categories": prev["categories"], "totals": {}},
                         {"categories": cur["categories"], "totals": {}},
                         prev["cpu_ns"], cur["cpu_ns"], 0, prev["t"], cur["t"])
    dhits = {k: n - prev["hits"].get(k, 0) for k, n in cur["hits"].items()
             if n - prev["hits"].get(k, 0) > 0}
    est = overhead.estimate(dhits, probes, "count")
    by_layer: Dict[str, float] = defaultdict(float)
    for kind, c in (est.get("probe_cost_per_hit_ns") or {}).items():
        if c.get("total_ns") is not None:
            by_layer[kind.split(":", 1)[0]] += c["total_ns"]
    return {"categories": e["categories"],
            "guaranteed_by_resource": e["guaranteed_by_resource"],
            "guaranteed_ns": e["guaranteed_overhead_ns"],
            "guaranteed_unknown_resources": sorted(
                r for r, names in GUARANTEED.items()
                if any(c in names for c in e["guaranteed_overhead_unknown"])),
            "cpu_ns": e["target_cpu_ns"],
            "probe_ns": float(est.get("probe_overhead_known_ns") or 0.0),
            "probe_complete": est.get("probe_overhead_ns") is not None,
            "probe_by_layer_ns": dict(by_layer),
            "lost": max(0, cur["lost"] - prev["lost"]),
            "interval_s": cur["t"] - prev["t"],
            # the interval on the engine's clock, the one its on-times are measured with
            "clock_s": ((cur["ktime_ns"] - prev["ktime_ns"]) / 1e9
                        if cur.get("ktime_ns") and prev.get("ktime_ns")
                        else cur["t"] - prev["t"]),
            # each layer's on-time in the interval (s), measured by the engine
            "on_s": {layer: max(0, ns - (prev.get("on_ns") or {}).get(layer, 0)) / 1e9
                     for layer, ns in (cur.get("on_ns") or {}).items()},
}


def add_interval(T: "Totals", f: dict) -> dict:
    """f (interval_figures) added to one JVM's counters; returns the interval's ratios (the
    last-interval gauges). A resource's guaranteed overhead is added only when all its
    categories' times are known (else its unknown-interval count grows): a counter never
    mixes known sums with partial ones."""
    T.intervals += 1
    span = f.get("clock_s") or f["interval_s"]
    T.counted_ns += span * 1e9
    on_s = f.get("on_s") or {}
    cov = layer_coverage(on_s, span)
    for layer, s in on_s.items():
        T.on_ns[layer] += s * 1e9
        T.period_ns[layer] += span * 1e9
    for name, c in f["categories"].items():
        share = coverage_of(name, cov)
        if (c.get("calls") or 0) > 0:
            T.calls[name] += int(c["calls"])
            if share:
                T.calls_est[name] += c["calls"] / share
        if (c.get("bytes") or 0) > 0:
            T.bytes[name] += int(c["bytes"])
            if share:
                T.bytes_est[name] += c["bytes"] / share
        if c.get("time_ns") is not None and c["time_ns"] > 0:
            T.time_ns[(name, c.get("method") or "unknown")] += float(c["time_ns"])
        if c.get("floored"):
            T.floored[name] += 1
    unknown = set(f["guaranteed_unknown_resources"])
    for res, ns in f["guaranteed_by_resource"].items():
        if res not in unknown and ns > 0:
            T.guaranteed_ns[res] += ns
    for res in unknown:
        T.guaranteed_unknown[res] += 1
    cpu = f["cpu_ns"]
    if cpu is not None and cpu > 0:
        T.cpu_ns += int(cpu)
    T.probe_ns += f["probe_ns"]
    for layer, ns in f["probe_by_layer_ns"].items():
        T.probe_by_layer_ns[layer] += ns
    if not f["probe_complete"]:
        T.probe_unknown_intervals += 1
    T.lost_events += f["lost"]
    g = f["guaranteed_ns"]
    if g is not None:
        # a windowed resource's part extrapolated to the whole interval (io: its layer's
        # coverage); a resource never on in it leaves the ratio unknown
        g = 0.0
        for res, ns in f["guaranteed_by_resource"].items():
            share = coverage_of(GUARANTEED[res][0], cov) if res in GUARANTEED else 1.0
            if not share:
                g = None
                break
            g += ns / share
    return {"guaranteed_ratio": g / cpu if g is not None and cpu and cpu > 0 else None,
            "probe_ratio": f["probe_ns"] / cpu if cpu and cpu > 0 else None,
            "probe_complete": f["probe_complete"], "interval_s": f["interval_s"]}


def layer_coverage(on_s: Dict[str, float], span_s: float) -> Dict[str, float]:
    """Each layer's share of the interval its probes were on (its on-time / the interval, on
    the engine's clock; 0 for an interval of no length)."""
    return {layer: min(1.0, s / span_s) if span_s and span_s > 0 else 0.0
            for layer, s in on_s.items()}


def coverage_of(category: str, coverage: Dict[str, float]) -> float:
    """The share of the interval a category was counted in: its windowed layer's coverage (1
    for a category of a layer that is not windowed, or when the engine did not say: an older
    engine has no windows; 0 for a layer off all the interval)."""
    layer = dc.layer_of(category)
    return coverage[layer] if layer is not None and layer in coverage else 1.0


def choose_sheds(by_layer: Dict[str, float], cpu_ns: float, attached: Sequence[str],
                 limit_pct: float) -> Tuple[List[str], float]:
    """(layers to shed, the estimate left without them): none while the interval's probe
    effect (by_layer: ns per layer, the common probes under "common") is within limit_pct of
    cpu_ns; else attached layers in SHED_ORDER, skipping those whose probes cost nothing in the
    interval, until what is left is within the limit (the common probes are never shed)."""
    remaining = sum(by_layer.values())
    drop: List[str] = []
    for layer in SHED_ORDER:
        if 100.0 * remaining / cpu_ns <= limit_pct:
            break
        if layer in attached and by_layer.get(layer, 0) > 0:
            drop.append(layer)
            remaining -= by_layer[layer]
    # a layer dropped early in the order whose cost fits once a later one went is kept:
    # shed what the limit needs, not more (latest dropped is the one that made it fit)
    for layer in list(drop[:-1]):
        if 100.0 * (remaining + by_layer[layer]) / cpu_ns <= limit_pct:
            drop.remove(layer)
            remaining += by_layer[layer]
    return drop, remaining


def next_backoff(prev: Optional[float], returned_recently: bool, base: float) -> float:
    """A shed layer's back-off: twice its last one (at most BACKOFF_MAX_S, or the base when
    that is longer) when it is shed again right after it came back, else the base."""
    return min(max(BACKOFF_MAX_S, base), 2 * prev) if prev and returned_recently else base


# --------------------------------------------------------------------------- the agent

class Agent:
    """The service: discovery, one Watch per selected JVM, the intervals, the cost limit. Its
    loop runs in the main thread (engines are started from it: PR_SET_PDEATHSIG follows the
    thread that forked them); the metrics endpoint reads `exposed()` from its own thread."""

    def __init__(self, cfg: Config, platform: Optional[dict], platform_file: Path,
                 state_dir: Path, log: Callable[[str], None] = default_log):
        self.cfg, self.platform, self.platform_file = cfg, platform, platform_file
        self.state_dir, self.log = state_dir, log
        self.lock = threading.Lock()
        self.watches: Dict[Tuple[int, int], Watch] = {}
        self.failed: Dict[Tuple[int, int], dict] = {}
        # selected JVMs left unwatched by --max-jvms at the last scan
        self.capped: Dict[Tuple[int, int], JvmProc] = {}
        self.engine_pids: set = set()
        self.host = None                   # jvmos.hostengine.HostEngine, while a JVM is watched
        self.host_starts = 0
        # the running engine's lost events (not by JVM), and those of the engines before it
        self.engine_lost: Dict[str, int] = {}
        self.engine_lost_base: Dict[str, int] = {}
        self.profiles = None               # --sample: jvmos.profiles.Profiles
        self.otlp = None                   # the OTLP push thread (jvmos.otlp.Pusher)
        self.set_sampling()
        self.discovery = Discovery(skip=self._own_pids, log=log)
        self.started_wall = time.time()
        self.stop_signal: Optional[int] = None
        self.reload_requested = False
        self.reloads = {"ok": 0, "failed": 0}
        self.attach_failures = 0
        self.engine_deaths = 0
        self.scan_seconds: Optional[float] = None
        self.reload_args = None          # the parsed command line, for SIGHUP
        self.live_engine_cpu: Callable[[], int] = self._live_engine_cpu

    def _own_pids(self) -> set:
        return {os.getpid()} | set(self.engine_pids)

    # ---- probe costs
    @property
    def probes(self) -> Optional[dict]:
        return (self.platform or {}).get("engine_probes")

    def summary_kw(self, w: Watch) -> dict:
        from jvmos.conclusion import summary_inputs
        jd = dict(w.proc.jvm.as_dict(), home=calibrated_home(w.proc.jvm, self.platform))
        manifest = {"probes": {"addresses": w.plan.script.addresses, "sites": w.sites},
                    "attach_pid": w.proc.pid, "jvms_probed": [jd], "layers": list(w.layers),
                    "mode": "count", "scope": "process"}
        kw, _, _ = summary_inputs(self.platform, manifest, {str(w.proc.pid): {"jvm": jd}})
        return kw

    # ---- engines
    def host_engine(self):
        """The host engine (jvmos.hostengine), started with the configured layers when none
        runs (the first JVM, or after the last one died)."""
        from jvmos.hostengine import HostEngine
        if self.host is not None and self.host.alive():
            return self.host
        if self.host is not None:
            self.stop_host()
        host = HostEngine(self.cfg.layers, self.state_dir, ATTACH_TIMEOUT_S,
                          lambda: self.stop_signal is not None)
        self.host = host
        self.host_starts += 1
        self.engine_pids = {host.proc.pid}
        self.log(f"host engine started (pid {host.proc.pid}, layers "
                 f"{','.join(host.layers)}) in {host.start_s:.2f} s")
        return host

    def stop_host(self) -> None:
        """The host engine stopped (every link and program closed) and reaped. It stays
        self.host until it is reaped: the agent's CPU figure counts it as live until then, as a
        reaped child after (never neither)."""
        host = self.host
        if host is None:
            return
        try:
            host.stop(timeout=STOP_TIMEOUT_S)
        finally:
            if host.alive():
                host.eng.kill()
            with self.lock:
                self.engine_lost_base = self.engine_totals_lost()
                self.engine_lost = {}
                self.host = None
            self.engine_pids.discard(host.proc.pid)
            for suffix in (".plan.json", ".stderr"):
                try:
                    (self.state_dir / f"host-engine{suffix}").unlink()
                except OSError:
                    pass

    def start_engine(self, w: Watch, layers: Tuple[str, ...]) -> None:
        """w's JVM added to the host engine with these layers, counting from its first
        snapshot (the interval baseline). JvmosError with the reason when it cannot."""
        from jvmos.jdk import libc_of, symbols
        pid = w.proc.pid
        jvm = w.proc.jvm
        libc = libc_of(pid)
        libs = {"LIBJVM": [jvm.libjvm], "LIBNIO": [jvm.libnio] if jvm.libnio else [],
                "LIBC": [libc] if libc else []}
        w.seq += 1
        base = self.state_dir / f"{pid}-{w.seq}"
        host = self.host_engine()
        t0 = time.monotonic()        # the JVM's attach alone (the engine's start is logged apart)
        eng = host.attach(pid, layers, libs, symbols, base, ATTACH_TIMEOUT_S)
        try:
            first = eng.snapshot(timeout=SNAPSHOT_TIMEOUT_S)
            if first is None:
                raise JvmosError(f"the engine handed over no first snapshot: "
                                 f"{eng.first_error()}")
        except BaseException:
            eng.kill()
            raise
        ev, plan = eng.ready, eng.plan
        w.eng, w.plan, w.layers = eng, plan, tuple(layers)
        w.sites = ev.get("sites") or []
        w.engine_t0 = t0
        w.totals.engine_starts += 1
        w.prev = None
        self._account(w, first, cputime.cpu_or_none(pid), baseline=True)
        # the first interval of an engine is short: a layer over the limit is shed after
        # FIRST_INTERVAL_S, not after a whole --interval of its cost
        now = time.monotonic()
        w.next_tick = now + min(self.cfg.interval_s, FIRST_INTERVAL_S)
        w.on = {layer: True for layer in layers}
        self.first_windows(w, now)
        stepped = sorted({s["symbol"] for s in w.sites if s.get("class") == "single-stepped"})
        self.log(f"{w.proc.describe()}: attached {','.join(layers)} ({ev.get('uprobes', 0)} "
                 f"uprobes) in "
                 f"{time.monotonic() - t0:.3f} s"
                 + (f"; single-stepped: {', '.join(stepped[:4])}" if stepped else ""))

    def stop_engine(self, w: Watch, account: bool = True) -> None:
        """w's engine stopped: its final maps added (account), every link closed. w.eng is
        cleared once the engine is reaped: until then the agent's CPU figure counts it as a
        live engine, after it as a reaped child (never neither)."""
        eng = w.eng
        if eng is None:
            return
        maps, cpu = None, None
        try:
            if account and eng.alive():
                cpu = cputime.cpu_or_none(w.proc.pid)
                maps = eng.stop(timeout=STOP_TIMEOUT_S)
        finally:
            if eng.alive():
                eng.kill()
            w.eng = None
        if maps is not None:
            self._account(w, maps, cpu)
        w.prev = None

    # ---- intervals
    def _account(self, w: Watch, maps: dict, cpu_ns: Optional[int],
                 baseline: bool = False) -> None:
        """One snapshot of w's engine: the interval since the previous one added to w's
        counters (none for the baseline)."""
        from jvmos import engine as engine_mod
        from jvmos.analyzers import summary as summ
        t = time.monotonic()
        raw = engine_mod.decode(maps, w.plan)
        pid = str(w.proc.pid)
        summary = summ.build(raw, wall_ns=int((t - w.engine_t0) * 1e9), status="running",
                             exit_code=None, **self.summary_kw(w))
        if not w.warned and summary.get("warnings"):
            w.warned = True
            for msg in summary["warnings"][:5]:
                self.log(f"{w.proc.describe()}: note: {msg}")
        cur = snapshot_view(summary, pid, cpu_ns, t - w.engine_t0, raw.lost_events or 0,
                            maps.get("windows"), maps.get("ktime_ns"))
        if maps.get("engine_lost") is not None:
            with self.lock:      # the engine's own, not keyed by JVM: shown once, apart
                self.engine_lost = {engine_mod.LOST_NAMES.get(int(k), f"lost kind {k}"): int(n)
                                    for k, n in maps["engine_lost"].items()}
        exec_name = raw.keyed("exec").get((pid,))
        if exec_name is not None:
            w.exec_seen = exec_name or "?"
        prev, w.prev = w.prev, cur
        if baseline or prev is None:
            return
        f = interval_figures(prev, cur, self.probes)
        rates = self.window_rates(w, f)
        with self.lock:
            w.last = add_interval(w.totals, f)
            w.last_by_layer = dict(f["probe_by_layer_ns"])
            w.last_cpu = f["cpu_ns"]
            for layer in self.cycled(w):
                asked, cmd = w.window.get(layer), w.commanded.get(layer)
                got = f["on_s"].get(layer)
                if asked and cmd and got and asked < f["interval_s"] - dc.END_MARGIN_S:
                    # the excess over what was commanded, so the correction settles
                    w.overshoot[layer] = min(max(got - cmd, 0.0), asked / 2)
            w.last_on_s = dict(f["on_s"])
            w.coverage = layer_coverage(f["on_s"], f["clock_s"])
            w.rates = rates

    def tick(self, w: Watch) -> None:
        """w's interval: a snapshot, its figures, the exec check, the cost limit."""
        w.next_tick = time.monotonic() + self.cfg.interval_s
        if w.eng is None:
            return
        if not w.eng.alive():
            host = w.eng.host
            if not host.death_counted:      # one death of the shared engine, not one per JVM
                host.death_counted = True
                self.engine_deaths += 1
            raise EngineGone(f"its engine stopped: {w.eng.first_error()}")
        maps = w.eng.snapshot(timeout=SNAPSHOT_TIMEOUT_S)
        cpu = cputime.cpu_or_none(w.proc.pid)
        if maps is None:
            self.log(f"{w.proc.describe()}: no snapshot within {SNAPSHOT_TIMEOUT_S:.0f} s; "
                     "the interval is skipped")
            return
        self._account(w, maps, cpu)
        if w.exec_seen is not None:
            return
        self.judge(w)
        if w.eng is not None:
            self.plan_period(w)

    def judge(self, w: Watch) -> None:
        """The cost limit on w's last interval: shed layers when the probe effect passed it."""
        limit = self.cfg.max_overhead_pct
        cpu, by_layer = w.last_cpu, w.last_by_layer
        if limit is None or not cpu or cpu < MIN_JUDGED_CPU_NS:
            return
        # the windowed layers are sized by plan_period: here the rest (their cost is left out
        # of this judgement, and given its own budget there)
        by_layer = {k: v for k, v in by_layer.items() if k not in dc.WINDOWED_LAYERS}
        total = sum(by_layer.values())
        drop, remaining = choose_sheds(by_layer, cpu, dc.unwindowed(w.layers), limit)
        if not drop:
            return        # under the limit, or what is over it is the common probes: kept
        now = time.monotonic()
        parts = []
        for layer in drop:
            backoff = next_backoff(w.backoff.get(layer), self.returned_recently(w, layer, now),
                                   self.cfg.shed_backoff_s)
            w.backoff[layer] = backoff
            share = 100.0 * by_layer[layer] / cpu
            reason = (f"probe effect {100.0 * total / cpu:.2f}% of the JVM's CPU over "
                      f"{w.last['interval_s']:.1f} s > --max-overhead {limit:g}%; "
                      f"{layer}'s probes {share:.2f}%")
            with self.lock:      # the metrics' thread reads w.shed
                w.shed[layer] = Shed(since=now, until=now + backoff, backoff_s=backoff,
                                     reason=reason)
                w.totals.sheds[layer] += 1
            parts.append(f"{layer} ({share:.2f}%, back in {backoff:g} s)")
        self.log(f"{w.proc.describe()}: probe effect estimated at {100.0 * total / cpu:.2f}% "
                 f"of its CPU ({total / 1e6:.1f} ms of {cpu / 1e6:.0f} ms) in the last "
                 f"{w.last['interval_s']:.1f} s, over --max-overhead {limit:g}%: shed "
                 + ", ".join(parts)
                 + f"; {100.0 * max(remaining, 0.0) / cpu:.2f}% estimated for what is left")
        self.reconfigure(w)

    def returned_recently(self, w: Watch, layer: str, now: float) -> bool:
        t = w.returned_at.get(layer)
        return t is not None and now - t <= RESHED_INTERVALS * self.cfg.interval_s + 1e-6

    def restore_due(self, w: Watch) -> None:
        now = time.monotonic()
        due = [layer for layer, s in w.shed.items() if now >= s.until]
        if not due:
            return
        for layer in due:
            w.returned_at[layer] = now
            with self.lock:
                del w.shed[layer]
                w.totals.returns[layer] += 1
            w.window.pop(layer, None)      # measured again from a first window
            if layer in self.cycled(w) and w.eng is not None:
                # the first window at once (the shortest), not at the next interval
                end = min(now + dc.FIRST_WINDOW_S, w.next_tick - dc.END_MARGIN_S)
                if end > now:
                    w.events += [(now, "on", layer), (end, "off", layer)]
                    w.events.sort()
        self.log(f"{w.proc.describe()}: putting back {', '.join(due)} after the back-off; the "
                 "next interval says whether the rate fell")
        if dc.unwindowed(due):
            self.reconfigure(w)

    def reconfigure(self, w: Watch) -> None:
        """w's engine replaced by one with the layers now wanted and not shed (none: no
        engine until a layer comes back)."""
        layers = w.attached_layers()
        if w.eng is not None and layers == w.layers:
            return
        self.stop_engine(w)
        if w.exec_seen is not None:
            return
        if not layers:
            w.layers = ()
            w.next_tick = math.inf
            with self.lock:        # no interval while nothing is attached: no last figures
                w.last = {k: None for k in w.last}
            self.log(f"{w.proc.describe()}: every layer is shed: no probe attached until one "
                     "comes back")
            return
        self.start_engine(w, layers)

    # ---- duty cycling (jvmos/dutycycle.py)
    def cycled(self, w: Watch) -> List[str]:
        """w's layers whose probes go on and off in windows: the windowed layers its engine
        has, when there is a limit to keep."""
        if self.cfg.max_overhead_pct is None:
            return []
        return dc.windowed(w.layers)

    def first_windows(self, w: Watch, now: float) -> None:
        """An engine just attached (every layer on): the first period (FIRST_INTERVAL_S)
        gives each cycled layer its known window, or a first one, from now on; a shed one is
        turned off at once."""
        w.events = []
        first = min(self.cfg.interval_s, FIRST_INTERVAL_S)
        for layer in self.cycled(w):
            if layer in w.shed:
                w.events.append((now, "off", layer))
                continue
            size = min(w.window.get(layer) or dc.FIRST_WINDOW_S, first)
            if size < first - dc.END_MARGIN_S:
                w.events.append((now + size, "off", layer))
        w.events.sort()

    def plan_period(self, w: Watch) -> None:
        """The windows of w's next period (--interval): each cycled layer's size from the
        last interval's probe cost per second of on-time, the JVM's CPU and the limit
        (dc.size_windows), placed at random in the period; a layer that even the shortest
        window would take over the limit is shed (with a back-off, as a layer that is not
        windowed is)."""
        layers = [layer for layer in self.cycled(w) if layer not in w.shed]
        now = time.monotonic()
        # the windows fit in what is left of this interval: tick() set its end before the
        # snapshot, so a window never runs into the next snapshot
        P = max(min(self.cfg.interval_s, w.next_tick - now), dc.MIN_WINDOW_S)
        w.events = [(now, "off", layer) for layer in self.cycled(w)
                    if layer in w.shed and w.on.get(layer)]
        # a layer left off by windows that are no more (a SIGHUP to --max-overhead none)
        w.events += [(now, "on", layer) for layer in dc.windowed(w.layers)
                     if layer not in self.cycled(w) and layer not in w.shed
                     and not w.on.get(layer, True)]
        if not layers:
            return
        span = w.last.get("interval_s")
        if not span or w.last_cpu is None or w.last_cpu < MIN_JUDGED_CPU_NS:
            # nothing to judge by (an idle JVM): the windows stay as they were
            sizes = {layer: w.window.get(layer) or dc.FIRST_WINDOW_S for layer in layers}
        else:
            cost = {layer: (w.last_by_layer.get(layer, 0.0) / w.last_on_s[layer]
                            if w.last_on_s.get(layer) else None) for layer in layers}
            fixed = sum(ns for layer, ns in w.last_by_layer.items()
                        if layer not in layers) / span
            # a profile window (--sample) in the period takes its share first
            fixed += self.sampler_reserve(w, w.last_cpu / span, self.cfg.interval_s)
            sizes = dc.size_windows(cost, w.last_cpu / span, fixed,
                                    self.cfg.max_overhead_pct, self.cfg.interval_s, w.window)
            for layer, size in sizes.items():
                if size is None:
                    self.shed_windowed(w, layer, cost[layer], w.last_cpu / span, now, fixed)
                    w.events.append((now, "off", layer))
        for layer, size in sizes.items():
            if size is None:
                continue
            w.window[layer] = size
            if size >= self.cfg.interval_s - dc.END_MARGIN_S:
                w.events.append((now, "on", layer))
                continue
            size = min(size, P - dc.END_MARGIN_S)
            t = dc.window_start(now, P, size, w.last_off.get(layer))
            if w.on.get(layer):
                # still on (a late command): closed before the new window opens
                w.events.append((now, "off", layer))
            # never shorter than the shortest window: its edges (10-100 ms) would swamp it
            cmd = max(size - w.overshoot.get(layer, 0.0), dc.MIN_WINDOW_S)
            w.commanded[layer] = cmd
            w.events += [(t, "on", layer), (t + cmd, "off", layer)]
        w.events.sort()

    def shed_windowed(self, w: Watch, layer: str, cost_per_on_s: float, cpu_per_s: float,
                      now: float, fixed_per_s: float = 0.0) -> None:
        backoff = next_backoff(w.backoff.get(layer), self.returned_recently(w, layer, now),
                               self.cfg.shed_backoff_s)
        w.backoff[layer] = backoff
        share = 100.0 * cost_per_on_s * dc.MIN_WINDOW_S / (cpu_per_s * self.cfg.interval_s)
        reason = (f"even a {dc.MIN_WINDOW_S:g} s window of {layer} in every "
                  f"{self.cfg.interval_s:g} s would cost {share:.2f}% of the JVM's CPU "
                  f"(its probes {100.0 * cost_per_on_s / cpu_per_s:.1f}% while on"
                  + (f"; {100.0 * fixed_per_s / cpu_per_s:.2f}% taken by the probes that stay "
                     "on and any profile window" if fixed_per_s > 0 else "")
                  + f") > --max-overhead {self.cfg.max_overhead_pct:g}%")
        with self.lock:
            w.shed[layer] = Shed(since=now, until=now + backoff, backoff_s=backoff,
                                 reason=reason)
            w.totals.sheds[layer] += 1
        w.window.pop(layer, None)
        self.log(f"{w.proc.describe()}: {reason}: shed {layer} (back in {backoff:g} s)")

    def run_windows(self, w: Watch) -> None:
        """The on/off commands of w's period that are due."""
        now = time.monotonic()
        while w.events and w.events[0][0] <= now and w.eng is not None:
            _, verb, layer = w.events.pop(0)
            if w.on.get(layer, False) == (verb == "on"):
                continue
            sent = time.monotonic()       # a window ends where its closing begins
            w.eng.window(verb, w.proc.pid, [layer])
            w.on[layer] = verb == "on"
            if verb == "off":
                w.last_off[layer] = sent
            if verb == "on":
                with self.lock:
                    w.totals.windows[layer] += 1

    def window_rates(self, w: Watch, f: dict) -> Dict[str, dict]:
        """Each windowed category's rate over its last dc.HISTORY windows, with its interval
        (dc.rate_interval), after this interval's (count, on-time) is added."""
        out = {}
        for cat, layer in dc.CATEGORY_LAYER.items():
            on = f["on_s"].get(layer)
            if layer not in w.layers or not on:
                continue
            c = f["categories"].get(cat) or {}
            h = w.history.setdefault(cat, deque(maxlen=dc.HISTORY))
            h.append((float(c.get("calls") or 0), on))
            r = dc.rate_interval(list(h))
            if r is not None:
                out[cat] = r
        return out

    # ---- the JVMs
    def watch(self, proc: JvmProc) -> None:
        fail = self.failed.get(proc.key)
        if fail is not None and time.monotonic() < fail["retry_at"]:
            return
        w = Watch(proc, self.cfg.layers)
        try:
            self.start_engine(w, w.attached_layers())
        except Exception as e:          # one JVM's failure never ends the agent
            self.fail_watch(w, e, "could not attach")
            return
        with self.lock:                 # the HTTP thread reads these (exposed)
            self.failed.pop(proc.key, None)
            self.capped.pop(proc.key, None)
            self.watches[proc.key] = w

    def fail_watch(self, w: Watch, e: Exception, what: str) -> None:
        """w's engine could not be started or read: the watch ends (its engine stopped, its
        series dropped) and the JVM is tried again as a new watch after RETRY_S x failures,
        at most RETRIES times."""
        proc = w.proc
        with self.lock:
            self.watches.pop(proc.key, None)
        if self.profiles is not None:
            self.profiles.forget(proc.pid)
        try:
            self.stop_engine(w, account=False)
        except Exception:
            if w.eng is not None:
                w.eng.kill()
        if not _alive(proc.pid):
            self.log(f"{proc.describe()}: exited ({what}: {error_text(e)})")
            return
        n = self.failed.get(proc.key, {}).get("count", 0) + 1
        self.attach_failures += 1
        if isinstance(e, EngineGone):
            # the shared engine died under every JVM: none of them is to blame, and each is
            # attached again to a new engine at the next scan, its attempts untouched
            n -= 1
            retry = time.monotonic()
        else:
            retry = math.inf if n >= RETRIES else time.monotonic() + RETRY_S * n
        with self.lock:
            self.failed[proc.key] = {"count": n, "retry_at": retry, "why": error_text(e),
                                     "proc": proc, "what": what}
        self.log(f"{proc.describe()}: {what}: {error_text(e)}"
                 + (" (attached again to a new engine at the next scan)"
                    if isinstance(e, EngineGone) else
                    f" (attempt {n} of {RETRIES}; again in {RETRY_S * n:.0f} s)"
                    if n < RETRIES else f" (gave up after {n} attempts)"))

    def set_sampling(self) -> None:
        """--sample on or off (at the start, and at a SIGHUP that changes it)."""
        from jvmos.profiles import Profiles, jattach
        if not self.cfg.sample:
            self.profiles = None
            return
        from jvmos.samplercost import validate
        jattach()                         # refused at once, in one line, without jattach
        model = (self.platform or {}).get("sampler")
        why = validate(model)
        if why and self.cfg.max_overhead_pct is not None:
            raise JvmosError(f"--sample within --max-overhead needs the sampler's cost, {why}: "
                             "run 'jvmos calibrate --sampler' once on this host, start the "
                             "agent without --no-calibrate, or give --max-overhead none")
        p = self.profiles
        if p is None:
            p = self.profiles = Profiles(self.state_dir, self.cfg.sample_window_s,
                                         self.cfg.sample_every_s, self.log)
        else:
            p.window_s, p.every_s = self.cfg.sample_window_s, self.cfg.sample_every_s
        p.model = None if why else model
        p.plan = self.planned_window

    def sampler_plan(self, pid: int,
                     record: bool = False) -> Tuple[Optional[int], int, Optional[str]]:
        """pid's next profile window: (interval_ns, seconds, "") within the sampler's share of
        --max-overhead (dc.sampler_window: a longer window or interval when the default does
        not fit), (None, seconds, why) to skip it, or (None, seconds, None) to wait until the
        JVM has a measured interval. Without a limit (or a model), the defaults. record: the
        plan of a window about to start (its CPU basis is kept for /status)."""
        from jvmos.profiles import INTERVAL_MS, run_seconds
        from jvmos.samplercost import constants
        base, seconds = INTERVAL_MS * 1_000_000, run_seconds(self.cfg.sample_window_s)
        limit, model = self.cfg.max_overhead_pct, self.profiles.model if self.profiles else None
        if limit is None or model is None:
            return base, seconds, ""
        w = next((w for w in self.watches.values() if w.proc.pid == pid), None)
        span = w.last.get("interval_s") if w is not None else None
        if not span or w.last_cpu is None:
            return None, seconds, None   # no interval measured yet: the window waits for one
        longest = max(seconds, int(self.cfg.sample_every_s // 2))
        if record:
            w.sampler_cpu_per_s = w.last_cpu / span    # what the plan went by (/status)
        c, f, g = constants(model)
        return dc.sampler_window(c, f, g, w.last_cpu / span, seconds, longest, limit, base)

    def planned_window(self, pid: int) -> Tuple[Optional[int], int, Optional[str]]:
        """Profiles' plan: the plan of a window about to start."""
        return self.sampler_plan(pid, record=True)

    def sampler_reserve(self, w: Watch, cpu_per_s: float, period_s: float) -> float:
        """What w's profile window is estimated to take (ns per second) in the next period,
        when one runs, is starting, or is due in it and would not be skipped: the probes'
        windows are sized with it (0 without --sample or a model)."""
        from jvmos.samplercost import constants
        p = self.profiles
        if p is None or p.model is None:
            return 0.0
        plan = p.window_plan(w.proc.pid, p.clock() + period_s)
        if plan == "due":
            interval, seconds, _ = self.sampler_plan(w.proc.pid)
            plan = (interval, seconds) if interval is not None else None
        if plan is None or plan[0] is None:
            return 0.0
        c, f, g = constants(p.model)
        cost = dc.sampler_cost_per_s(c, f, g, cpu_per_s, plan[1], plan[0])
        # never more than the share the sampler was planned within: a JVM whose CPU fell
        # since makes the window dearer per CPU second (its estimate says so), not the probes
        # shed
        return min(cost, dc.SAMPLER_SHARE * dc.TARGET * self.cfg.max_overhead_pct / 100.0
                   * cpu_per_s)

    def sample(self, w: Watch) -> float:
        """w's profile windows (--sample): returns when they next need a look (monotonic)."""
        if self.profiles is None:
            return math.inf
        due = self.profiles.step(w.proc.pid, time.time())
        return time.monotonic() + max(0.0, due - time.time())

    def unwatch(self, w: Watch, why: str) -> None:
        with self.lock:
            self.watches.pop(w.proc.key, None)
        if self.profiles is not None:
            self.profiles.forget(w.proc.pid)
        self.stop_engine(w, account=False)
        self.log(f"{w.proc.describe()}: {why}; its series are dropped")

    def scan(self) -> None:
        t0 = time.monotonic()
        try:
            jvms = self.discovery.scan()
        except Exception as e:     # noqa: BLE001 - the agent outlives one bad scan
            self.log(f"discovery failed this time ({error_text(e)}); the watched JVMs stay")
            return
        for key, w in list(self.watches.items()):
            cur = jvms.get(key)
            if cur is w.proc:
                if not self.cfg.selects(w.proc):
                    self.unwatch(w, "no longer selected by --match")
            elif not _alive(w.proc.pid):
                self.unwatch(w, "exited")
            else:
                # a new program in the same process (its command line or executable
                # changed): a JVM again is `cur`, watched anew below
                self.unwatch(w, "exec'd " + (" ".join(cur.cmdline)[:80] if cur else
                                             "a program that is not a HotSpot JVM"))
        cap = self.cfg.max_jvms
        if cap is not None and len(self.watches) > cap:
            # a SIGHUP lowered --max-jvms: the JVMs watched last go first
            for w in sorted(self.watches.values(), key=lambda w: w.started_wall)[cap:]:
                self.unwatch(w, f"--max-jvms lowered to {cap}")
        capped = {}
        for key, proc in jvms.items():
            if key not in self.watches and self.cfg.selects(proc) and self.stop_signal is None:
                if cap is not None and len(self.watches) >= cap and key not in self.failed:
                    capped[key] = proc           # a failed one stays listed as failed
                    continue
                self.watch(proc)
        if capped.keys() - self.capped.keys():
            self.log(f"--max-jvms {self.cfg.max_jvms} reached: not watched "
                     + ", ".join(p.describe() for k, p in capped.items()
                                 if k not in self.capped))
        with self.lock:
            self.capped = capped
            # a failed JVM leaves the list once it is gone or no longer selected
            for key in [k for k in self.failed if k not in jvms
                        or not self.cfg.selects(jvms[k])]:
                del self.failed[key]
        if not self.watches and self.host is not None:
            # nothing watched: no program of the agent stays attached on the host
            self.stop_host()
            self.log("no JVM watched: host engine stopped")
        self.scan_seconds = time.monotonic() - t0

    def step(self) -> float:
        """One pass of the loop; returns when the next is due (monotonic)."""
        now = time.monotonic()
        sample_due: List[float] = []
        if now >= self._next_scan:
            self.scan()
            self._next_scan = time.monotonic() + self.cfg.scan_s
        for w in list(self.watches.values()):
            if self.stop_signal is not None:
                break
            if w.proc.key not in self.watches:
                continue
            try:
                if w.shed:
                    self.restore_due(w)
                self.run_windows(w)
                sample_due.append(self.sample(w))
                if time.monotonic() >= w.next_tick:
                    self.tick(w)
            except Exception as e:      # one JVM's failure never ends the agent
                self.fail_watch(w, e, "its interval failed")
                continue
            if w.exec_seen is not None:
                self.unwatch(w, f"exec'd {w.exec_seen}")
                self.discovery.forget(w.proc.pid)
                self._next_scan = time.monotonic()
        due = [self._next_scan] + [w.next_tick for w in self.watches.values()]
        due += [w.events[0][0] for w in self.watches.values() if w.events]
        due += sample_due
        due += [s.until for w in self.watches.values() for s in w.shed.values()]
        return min(due)

    def run(self) -> None:
        self._next_scan = time.monotonic()
        self.log(f"started (jvmos {__version__}, pid {os.getpid()}): {self.cfg.describe()}")
        from jvmos.catalogue import TIMED_SPAN_LAYERS
        partial = [layer for layer in self.cfg.layers if layer in TIMED_SPAN_LAYERS]
        if partial:
            self.log(f"note: --mode count keeps the {', '.join(partial)} layer(s)' entry probes "
                     "only: their counts are exact, their per-layer times partial")
        while self.stop_signal is None:
            if self.reload_requested:
                self.reload_requested = False
                self.reload()
            due = self.step()
            while self.stop_signal is None and not self.reload_requested:
                left = due - time.monotonic()
                if left <= 0:
                    break
                time.sleep(min(left, 0.2))

    def shutdown(self) -> None:
        for w in list(self.watches.values()):
            self.stop_engine(w, account=False)
        with self.lock:
            self.watches.clear()
        self.stop_host()

    # ---- SIGHUP
    def reload(self) -> None:
        from jvmos import calibrate as cal
        args = self.reload_args
        try:
            cfg = load_config(args) if args is not None else self.cfg
            platform_file = cal.platform_path(cfg.platform)
            platform = load_platform(platform_file, cfg)
        except (JvmosError, OSError) as e:
            self.reloads["failed"] += 1
            self.log(f"SIGHUP: configuration not reloaded, the running one is kept: {e}")
            return
        if cfg.listen != self.cfg.listen:
            self.log(f"SIGHUP: listen {cfg.listen[0]}:{cfg.listen[1]} needs a restart; still "
                     f"serving on {self.cfg.listen[0]}:{self.cfg.listen[1]}")
            cfg.listen = self.cfg.listen
        self.reloads["ok"] += 1
        old = self.cfg
        self.cfg, self.platform, self.platform_file = cfg, platform, platform_file
        self.log(f"SIGHUP: configuration reloaded: {cfg.describe()}")
        if self.otlp is not None:
            self.otlp.kick()                 # its endpoint and period, at once
        try:
            self.set_sampling()
        except JvmosError as e:
            self.log(f"SIGHUP: --sample left off: {e}")
            self.profiles = None
        if cfg.layers != old.layers and self.host is not None:
            # the host engine loaded the old layers: every JVM is added again to a new one
            for w in list(self.watches.values()):
                self.stop_engine(w)
            self.stop_host()
        for w in list(self.watches.values()):
            if not cfg.selects(w.proc):
                self.unwatch(w, "no longer selected by --match")
                continue
            if cfg.layers != old.layers:
                with self.lock:
                    w.wanted = cfg.layers
                    for layer in [x for x in w.shed if x not in cfg.layers]:
                        del w.shed[layer]
                try:
                    self.reconfigure(w)
                except Exception as e:
                    self.fail_watch(w, e, "could not attach the new layers")
        self._next_scan = time.monotonic()

    def engine_totals_lost(self) -> Dict[str, int]:
        out = dict(self.engine_lost_base)
        for k, n in self.engine_lost.items():
            out[k] = out.get(k, 0) + n
        return out

    # ---- what the metrics read
    def _live_engine_cpu(self) -> int:
        host = self.host
        return (cputime.cpu_or_none(host.proc.pid) or 0) if host is not None and host.alive() \
            else 0

    def cpu_seconds(self) -> float:
        """The agent's own CPU time: its process, the children it has reaped (engines that
        were stopped, nm) and its live engines."""
        me = resource.getrusage(resource.RUSAGE_SELF)
        ch = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (me.ru_utime + me.ru_stime + ch.ru_utime + ch.ru_stime
                + self.live_engine_cpu() / 1e9)

    def exposed(self) -> dict:
        """A consistent copy of what the metrics show."""
        with self.lock:
            jvms = []
            for w in self.watches.values():
                T = w.totals
                jvms.append({
                    "labels": w.proc.labels(), "proc": w.proc, "start": w.started_wall,
                    "layers_wanted": w.wanted, "layers_attached": w.layers if w.eng else (),
                    "shed": {k: {"since_s": time.monotonic() - s.since,
                                 "reason": s.reason} for k, s in w.shed.items()},
                    "calls": dict(T.calls), "bytes": dict(T.bytes),
                    "time_ns": dict(T.time_ns), "floored": dict(T.floored),
                    "guaranteed_ns": dict(T.guaranteed_ns),
                    "guaranteed_unknown": dict(T.guaranteed_unknown),
                    "cpu_ns": T.cpu_ns, "probe_ns": T.probe_ns,
                    "probe_by_layer_ns": dict(T.probe_by_layer_ns),
                    "probe_unknown_intervals": T.probe_unknown_intervals,
                    "lost_events": T.lost_events, "intervals": T.intervals,
                    "counted_ns": T.counted_ns, "sheds": dict(T.sheds), "returns": dict(T.returns),
                    "engine_starts": T.engine_starts, "last": dict(w.last),
                    "cycled": self.cycled(w) if w.eng else [],
                    "coverage": dict(w.coverage), "window_s": dict(w.window),
                    "on_ns": dict(T.on_ns), "period_ns": dict(T.period_ns),
                    "windows": dict(T.windows), "calls_est": dict(T.calls_est),
                    "bytes_est": dict(T.bytes_est), "rates": dict(w.rates)})
            unwatched = [{"labels": p.labels(), "proc": p, "reason": "max_jvms",
                          "detail": f"--max-jvms {self.cfg.max_jvms} reached"}
                         for p in self.capped.values()]
            unwatched += [{"labels": f["proc"].labels(), "proc": f["proc"],
                           "reason": "attach_failed" if f["what"] == "could not attach"
                           else "watch_failed",
                           "detail": f"{f['what']}: {f['why']} (attempt {f['count']})"}
                          for f in self.failed.values() if "proc" in f]
            profiles = self.profiles.exposed() if self.profiles is not None else {}
            by_pid = {w.proc.pid: w for w in self.watches.values()}
            for j in jvms:
                j["profiles"] = profiles.get(j["proc"].pid)
                w = by_pid.get(j["proc"].pid)
                if j["profiles"] is not None and w is not None:
                    # the JVM's CPU (ns per second) the last window was planned by
                    j["profiles"]["planned_cpu_per_s"] = w.sampler_cpu_per_s
            return {"start": self.started_wall, "cfg": self.cfg, "jvms": jvms,
                    "unwatched": unwatched,
                    "failed": len(self.failed), "attach_failures": self.attach_failures,
                    "engine_deaths": self.engine_deaths, "reloads": dict(self.reloads),
                    "scan_seconds": self.scan_seconds, "host_starts": self.host_starts,
                    "otlp_pushes": (dict(self.otlp.counts) if self.otlp is not None
                                    else {}),
                    "engine_lost": self.engine_totals_lost(),
                    "host_engine": ({"pid": self.host.proc.pid,
                                     "layers": list(self.host.layers)}
                                    if self.host is not None else None)}


def calibrated_home(jvm, platform: Optional[dict]) -> str:
    """The JDK home under which the platform file keeps this JVM's per-JDK calibrations (NIO
    copy, JNI copy model): its own, or a calibrated home whose libjvm.so is the very same file
    (the agent in a mount namespace of its own, e.g. a sandboxed systemd unit, sees a host
    JVM's JDK as /proc/PID/root/<home>)."""
    home = str(jvm.home)
    copy = (platform or {}).get("copy") or {}
    known = set(copy.get("nio_heap_to_direct") or {}) | set(copy.get("jni_region") or {})
    if home in known:
        return home
    try:
        st = os.stat(jvm.libjvm)
    except OSError:
        return home
    for h in sorted(known):
        for rel in ("lib/server/libjvm.so", "jre/lib/amd64/server/libjvm.so"):
            try:
                o = os.stat(Path(h) / rel)
            except OSError:
                continue
            if (o.st_dev, o.st_ino) == (st.st_dev, st.st_ino):
                return h
    return home


def _alive(pid: int) -> bool:
    st = proc_stat(pid)
    return st is not None and st[0] not in ("Z", "X")


def load_platform(path: Path, cfg: Config, calibrate: bool = False,
                  log=None) -> Optional[dict]:
    """The platform file, checked for what the agent needs: the compiled engine's probe costs
    of the layers (the limit and the correction rest on them). What is missing is measured
    first when calibrate is set (at the agent's start, as jvmos record does: about a minute of
    microbenchmarks on the host, said in the log), else refused (--no-calibrate, and a
    SIGHUP, which never pauses a running agent for that)."""
    from jvmos import calibrate as cal
    from jvmos import enginecost
    platform = cal.load(path)
    cal.validate_platform(platform)
    if enginecost.incomplete((platform or {}).get("engine_probes"), list(cfg.layers)):
        if cfg.max_overhead_pct is None:
            return platform
        if not calibrate:
            raise JvmosError(f"{path} has no (or an incomplete) calibration of the compiled "
                             f"engine's probe costs for {','.join(cfg.layers)}: --max-overhead "
                             "needs them (run 'jvmos calibrate --probes' once on this host, "
                             "start the agent without --no-calibrate, or give --max-overhead "
                             "none)")
        platform = cal.ensure_calibrated(platform, path, [], list(cfg.layers), "count",
                                         log or print)
        cal.validate_platform(platform)
    if cfg.sample and cfg.max_overhead_pct is not None and calibrate and platform:
        from jvmos import samplercost
        from jvmos.jdk import discover_jdks
        why = samplercost.validate(platform.get("sampler"))
        jdks = discover_jdks()
        if why and jdks:
            from jvmos.writable import check_writable
            check_writable(path, "platform file")
            (log or print)(f"the sampler's cost is {why}: measuring it once on JDK "
                           f"{jdks[0].version} (--sample within --max-overhead; about two "
                           "minutes of a CPU loop and idle windows on the host)")
            # in a process of its own: its statistics (scipy) never load into the agent
            try:
                r = subprocess.run([sys.executable, "-m", "jvmos.samplercost", "--platform",
                                    str(path), "--blocks", "3"], capture_output=True,
                                   text=True, timeout=600)
            except subprocess.TimeoutExpired:
                raise JvmosError("measuring the sampler's cost took over 600 s; --sample with "
                                 "--max-overhead needs it")
            for line in (r.stdout + r.stderr).strip().splitlines():
                (log or print)(f"  {line}")
            if r.returncode != 0:
                raise JvmosError("the sampler's cost could not be measured (above); --sample "
                                 "with --max-overhead needs it")
            platform = cal.load(path)
    return platform


STATE_PREFIX = "jvmos-agent-"


def _clear_engine_files(d: Path) -> None:
    for pattern in ("*-*.plan.json", "*-*.stderr", "profile-*.jfr"):
        for p in d.glob(pattern):
            p.unlink()


def prepare_state_dir(arg: Optional[str]) -> Tuple[Path, bool]:
    """(the directory for the engines' plans and logs, whether the agent made it and removes
    it at its end). A given directory is emptied of a previous agent's files; without one, a
    temporary directory named after the agent's pid, and those a killed agent left (their pid
    gone) are removed."""
    if arg:
        d = Path(arg)
        try:
            d.mkdir(parents=True, exist_ok=True)
            _clear_engine_files(d)
            probe = d / ".jvmos-agent-write-test"
            probe.write_text("")
            probe.unlink()
        except OSError as e:
            raise JvmosError(f"--state-dir {d}: {e.strerror or e}")
        return d, False
    tmp = Path(tempfile.gettempdir())
    for old in tmp.glob(STATE_PREFIX + "*-*"):
        owner = old.name[len(STATE_PREFIX):].split("-", 1)[0]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists() and old.is_dir():
            try:
                _clear_engine_files(old)
                old.rmdir()
            except OSError:
                pass
    return Path(tempfile.mkdtemp(prefix=f"{STATE_PREFIX}{os.getpid()}-")), True


def main(args, log: Callable[[str], None] = default_log) -> int:
    """`jvmos agent` (cli.cmd_agent): checks, the endpoint, then the loop until a signal."""
    from jvmos import calibrate as cal
    from jvmos import engine as engine_mod
    from jvmos import agentmetrics
    from jvmos.record import _can_load_bpf
    from jvmos.tools import ensure_tracefs
    cfg = load_config(args)
    if not _can_load_bpf():
        raise JvmosError("jvmos agent needs root (or CAP_BPF with CAP_PERFMON; see the "
                         "systemd unit in deploy/): it loads BPF programs")
    if getattr(args, "state_dir", None):
        # before a calibration of the platform file may take minutes
        from jvmos.writable import check_writable
        check_writable(args.state_dir, "--state-dir", "dir")
    engine_mod.check_env()
    engine_mod.check_built(cfg.layers)
    ensure_tracefs()
    platform_file = cal.platform_path(cfg.platform)
    platform = load_platform(platform_file, cfg,
                             calibrate=not getattr(args, "no_calibrate", False), log=log)
    state_dir, own_dir = prepare_state_dir(getattr(args, "state_dir", None))
    try:
        agent = Agent(cfg, platform, platform_file, state_dir, log)
        agent.reload_args = args
        try:
            server = agentmetrics.serve(cfg.listen, agent)
        except OSError as e:
            raise JvmosError(f"--listen {cfg.listen[0]}:{cfg.listen[1]}: {e.strerror or e}")
        log(f"metrics at http://{agentmetrics.url_host(cfg.listen[0])}:{cfg.listen[1]}/metrics")
        from jvmos.otlp import Pusher
        agent.otlp = Pusher(agent, agentmetrics.registry_for(agent), log, __version__,
                            start_s=agent.started_wall).start()

        def on_stop(signum, _frame):
            agent.stop_signal = signum

        def on_hup(_signum, _frame):
            agent.reload_requested = True
        old = {s: signal.signal(s, on_stop) for s in (signal.SIGTERM, signal.SIGINT)}
        old[signal.SIGHUP] = signal.signal(signal.SIGHUP, on_hup)
        try:
            agent.run()
        finally:
            for s, h in old.items():
                signal.signal(s, h)
            agent.otlp.stop()               # its last push: the counters' final values
            agent.shutdown()
            server.shutdown()
            server.server_close()
    finally:
        if own_dir:
            import shutil
            shutil.rmtree(state_dir, ignore_errors=True)
    sig = agent.stop_signal
    log(f"stopped ({signal.Signals(sig).name if sig else 'end'}): every engine detached")
    return 0
