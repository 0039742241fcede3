"""`jvmos run overhead`: what jvmos costs the traced JVM, and what it costs the rest of the host.

One invocation, every figure side by side:
  - the traced JVM: a Java loop of 10-byte writes to /dev/null (BlockingIo: one JNI
    GetByteArrayRegion and one write(2) per iteration) and a Java loop of native allocations
    (NativeAlloc: one direct ByteBuffer, i.e. one libc malloc, per iteration), run bare and under
    each configuration; the cost per operation is (loop time under probes - bare loop time) / N.
  - the cost floor: minimal compiled programs (probes/calib.bpf.c: the traced-process filter
    and one count, or a clock pair) on the same JNI copy and libc write the io layer probes,
    attached by the engine for the traced process only, at the probe points of each mode.
  - what merely enabling a syscall tracepoint costs every other process (one idle program on
    getppid), and the tax of a --scope host recording's syscall tracepoints, interleaved.
  - jvmos itself: each layer in --mode count and --mode time, with --scope process (default)
    and --scope host (the syscall tracepoints), a full recording (every layer at once), and
    --mode sample.
  - a bystander beside every run: an unrelated C process (workloads/c/bystander) doing 10-byte
    write(2) calls, malloc+free pairs and a pipe ping-pong with a child process (context
    switches: the scheduler's hooks run for every task) while the probes are attached; its
    CPU time per call (per round trip) is
    compared with the same loop beside the untraced JVM (the control row). Only rounds that
    ended while the traced loop was still running count (both clocks are CLOCK_MONOTONIC).

Goals (issues 12 and 23), printed as reached or not, never asserted: a bystander slowed by less
than 5% in every row of jvmos; jvmos --mode count within 1.2x of the minimal compiled counter's
cost per write, and --mode time within 1.2x of the minimal compiled timing pair's; a full
recording's set-up and teardown each within 0.5 s (issue 31; 1 s in issue 23).

The rows measured with bpftrace's probe scripts before they were retired (issue 23) are kept in
results/overhead/overhead.md, beside the engine's of the same run.
"""
import argparse
import json
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional

from jvmos import JvmosError
from jvmos import record as rec
from jvmos.analyzers.tables import Table
from jvmos.jdk import libc_of
from jvmos.tools import IO_JAR, c_program, jar
from jvmos.experiments.common import (headline, jdk_label, last_json, load_finished, log,
                                      out_dir, publish, run_bare, select_jdks)

EXAMPLES = """\
examples:
  jvmos run overhead                       # every layer and mode, both scopes
  jvmos run overhead --quick               # the io layer, the floors, one full recording
  jvmos run overhead --layers io,mem --writes 2000000 --out /tmp/ovh
  jvmos run overhead --render results/overhead   # the tables again, nothing measured
"""

BYSTANDER_GOAL_PCT = 5.0
MIN_ROUNDS = 3          # bystander rounds beside a loop below which no verdict is given
FLOOR_GOAL = 1.2
SETUP_GOAL_S = 0.5      # a full recording's set-up, and its teardown, each (issue 31)
LAYERS_ALL = ("io", "mem", "threads", "links")
FULL_LAYERS = ("io", "threads", "links", "mem")


def parse(argv):
    p = argparse.ArgumentParser(prog="jvmos run overhead", epilog=EXAMPLES,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--writes", type=int, help="iterations of the Java write loop "
                   "(default 2,000,000; --quick 1,000,000)")
    p.add_argument("--allocs", type=int, help="iterations of the Java allocation loop "
                   "(default 300,000; --quick 150,000)")
    p.add_argument("--layers", help=f"layers to measure (default {','.join(LAYERS_ALL)}; "
                   "--quick: io)")
    p.add_argument("--repeat", type=int, default=3, help="bare runs of each loop (median)")
    p.add_argument("--jdk", help="JDK home of the traced JVM (default: the first found)")
    p.add_argument("--out", help="output directory (default results/runs/<time>-overhead)")
    p.add_argument("--quick", action="store_true",
                   help="io layer only (count and time at process scope, host scope once), "
                        "the floors, and the engine's full recording")
    p.add_argument("--no-paired", dest="paired", action="store_false",
                   help="compare every row's bystander with the one control row only, not "
                        "with a control run just before it (faster, noisier)")
    p.add_argument("--tax-rounds", type=int, help="interleaved rounds of the syscall-"
                   "tracepoint tax measurement (default 6, --quick 2; 0: leave it out)")
    p.add_argument("--tax-only", action="store_true",
                   help="only the two interleaved tables of what a recording costs the rest "
                        "of the host (the syscall-tracepoint tax and the scheduler programs' "
                        "tax), not the rows of the traced loops")
    p.add_argument("--no-full", dest="full", action="store_false",
                   help="leave out the full recording (io,threads,links,mem together)")
    p.add_argument("--render", metavar="DIR",
                   help="write DIR's tables and notes again from DIR/overhead.json (no measuring)")
    a = p.parse_args(argv)
    if a.tax_rounds is None:
        a.tax_rounds = 2 if a.quick else 6
    if a.tax_rounds < 0:
        p.error("--tax-rounds must be 0 or more")
    if a.tax_only and a.tax_rounds < 2:
        p.error("--tax-only needs --tax-rounds 2 or more (a paired interval needs two rounds)")
    a.writes = a.writes or (1_000_000 if a.quick else 2_000_000)
    a.allocs = a.allocs or (150_000 if a.quick else 300_000)
    layers = (a.layers or ("io" if a.quick else ",".join(LAYERS_ALL))).split(",")
    bad = [x for x in layers if x not in LAYERS_ALL]
    if bad:
        p.error(f"unknown layer(s) {', '.join(bad)} (known: {', '.join(LAYERS_ALL)})")
    a.layers = layers
    if min(a.writes, a.allocs, a.repeat) <= 0:
        p.error("--writes, --allocs and --repeat must be positive")
    return a


# ---------------------------------------------------------------------------- the bystander
class Bystander:
    """workloads/c/bystander beside a run: a write round and a malloc round in turn, so that
    both loops run early in the traced loop, bounded in rounds and time."""
    # write(2) and malloc meet a syscall tracepoint or a libc uprobe; the ping-pong meets the
    # scheduler's hooks (sched_switch, sched_wakeup), which run for every task on the host
    PLAN = (("write", 300_000), ("malloc", 500_000), ("pingpong", 20_000))
    ROUNDS = 5
    SECONDS = 3.0

    def __init__(self, delay_s: float = 0.3):
        self.delay_s = delay_s
        self.rounds: List[dict] = []
        self.error: Optional[str] = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def _run(self):
        time.sleep(self.delay_s)           # past the traced JVM's start-up, into its loop
        t0 = time.monotonic()
        for _ in range(self.ROUNDS):
            for loop, count in self.PLAN:
                # the ping-pong on one CPU (its child inherits it): a wakeup across idle
                # vCPUs costs more than the switches it is there to meet
                pin = ["taskset", "-c", "0"] if loop == "pingpong" else []
                r = subprocess.run(pin + [str(c_program("bystander")), "--loop", loop, "--count",
                                    str(count)], capture_output=True, text=True, timeout=120)
                if r.returncode != 0:
                    self.error = f"bystander --loop {loop} failed: {r.stderr.strip()[:200]}"
                    return
                self.rounds += [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
            if time.monotonic() - t0 > self.SECONDS:
                return

    def join(self):
        self.thread.join(timeout=300)

    def per_call(self, loop_end_ns: Optional[int],
                 loop_start_ns: Optional[int] = None) -> Dict[str, dict]:
        """Median ns per call of each loop over the rounds that ran wholly inside the traced
        loop (all rounds when its ends are unknown), with how many rounds counted."""
        out = {}
        for loop, _ in self.PLAN:
            rs = [r for r in self.rounds if r["loop"] == loop]
            inside = [r for r in rs if (loop_end_ns is None or r["end_ns"] <= loop_end_ns)
                      and (loop_start_ns is None or r["start_ns"] >= loop_start_ns)]
            # CPU time, not wall time: on a 2-core machine the bystander also waits for a CPU
            # while the traced JVM, the engine or a sampler run, which is not what a probe costs it
            out[loop] = {"ns_per_call": statistics.median(r["cpu_ns"] / r["count"] for r in inside)
                         if inside else None,
                         "wall_ns_per_call": statistics.median(r["ns"] / r["count"] for r in inside)
                         if inside else None,
                         "rounds": len(inside), "rounds_outside_loop": len(rs) - len(inside),
                         "cpu_ns_per_call_rounds": [r["cpu_ns"] / r["count"] for r in inside]}
        return out


LOOPS = tuple(loop for loop, _ in Bystander.PLAN)


def merged(*per_calls: Dict[str, dict]) -> Dict[str, dict]:
    """Bystander.per_call results of several runs as one: the median over all their rounds."""
    out = {}
    for loop, _ in Bystander.PLAN:
        vals = [v for pc in per_calls for v in (pc.get(loop) or {}).get("cpu_ns_per_call_rounds", [])]
        out[loop] = {"ns_per_call": statistics.median(vals) if vals else None,
                     "rounds": len(vals), "cpu_ns_per_call_rounds": vals}
    return out


# ---------------------------------------------------------------------------- the floor
def idle_tracepoints(names) -> List[dict]:
    """calib.bpf.c's minimal program (the traced-set filter and a count) on these syscall
    tracepoints, as the engine's extra tracepoints."""
    return [{"group": "syscalls", "name": t, "program": "min_tp", "object": "calib"}
            for t in names]


def run_idle_tracepoint(cmd: List[str]) -> dict:
    """The traced loop with one compiled program on a syscall tracepoint that neither the loop
    nor the bystander calls (getppid), a bystander beside it: what merely enabling a syscall
    tracepoint costs every other process. The kernel marks every task for the syscall
    slow path while any syscall tracepoint is enabled (syscall_regfunc), so each syscall of
    each process on the host takes it, traced or not, probed or not."""
    from jvmos import enginecost
    box = {}
    out, raw, ready = enginecost.run_cmd(
        cmd, extra_tps=idle_tracepoints(["sys_enter_getppid"]),
        workload=lambda: box.setdefault("by", Bystander().start()))
    box["by"].join()
    return {"workload": last_json(out), "bystander": box["by"],
            "attach_seconds": (ready or {}).get("spawn_to_ready_s")}


def syscall_tracepoints_of_layers(layers=("io", "threads", "links", "mem"),
                                  scope="process") -> List[str]:
    """The syscall tracepoints these compiled layers put on at this scope, from their own
    plan (the libraries are left out: only the tracepoints are wanted). At --scope process
    none since the threads layer moved to libc's functions (27 Nov); at --scope host every
    syscall the layers watch."""
    from jvmos import engine as eng
    plan = eng.build_plan(list(layers), {}, lambda path: {}, root=0, counting=False,
                          follow=False, scope=scope)
    return sorted({t["name"] for t in plan.doc["tracepoints"] if t["group"] == "syscalls"})


TAX_CALLS = 1_000_000


def tracepoint_tax(rounds: int) -> dict:
    """What enabled syscall tracepoints cost a process that never triggers them, measured
    interleaved: the bystander's write loop (TAX_CALLS calls, its CPU time per call) alone,
    with one idle tracepoint (getppid), and with a --scope host recording's set (at --scope
    process a recording enables none), each a
    minimal compiled program that returns at once for an untraced process; `rounds` turns
    of the three arms in a row, so that the machine's drift falls on each arm alike."""
    cmd = [str(c_program("bystander")), "--loop", "write", "--count", str(TAX_CALLS)]
    # the bystander's own write(2) would run the write tracepoints' programs: left out, so
    # that the arm measures the tax alone, as its title says
    layer_tps = [t for t in syscall_tracepoints_of_layers(scope="host")
                 if t not in ("sys_enter_write", "sys_exit_write")]
    arms = [("none", []), ("one idle syscall tracepoint (getppid)", ["sys_enter_getppid"]),
            (f"a --scope host recording's syscall tracepoints but write's, {len(layer_tps)} "
             f"(every layer's; at --scope process none)", layer_tps)]
    return _interleaved(cmd, [(name, {"extra_tps": idle_tracepoints(tps)} if tps else None,
                               len(tps)) for name, tps in arms], rounds, "tracepoint tax",
                        "write", {"calls_per_round": TAX_CALLS})


def _beside_engine(cmd: List[str], engine_kwargs: Optional[dict]):
    """The bystander command while a placeholder process (a shell polling for a file) runs,
    traced by the engine with these programs (enginecost.run_cmd's keywords), or untraced
    when engine_kwargs is None: the same background in both arms. The bystander itself is
    never traced."""
    from jvmos import enginecost
    with tempfile.TemporaryDirectory(prefix="jvmos-tax-") as tmp:
        done = Path(tmp) / "done"
        placeholder = ["sh", "-c", f"while [ ! -e '{done}' ]; do sleep 0.05; done"]
        box = {}

        def bystander():
            try:
                box["r"] = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            finally:
                done.write_text("")
        if engine_kwargs is None:
            p = subprocess.Popen(placeholder)
            try:
                bystander()
            finally:
                p.wait(timeout=60)
        else:
            enginecost.run_cmd(placeholder, workload=bystander, **engine_kwargs)
    return box.get("r")


def _interleaved(cmd: List[str], arms: list, rounds: int, what: str, unit: str,
                 extra: dict) -> dict:
    """`rounds` turns of the arms [(name, engine keywords or None, tracepoints)], in a row and
    in alternating order, the bystander's median CPU ns per call in each: the machine's
    drift falls on each arm alike."""
    got = {name: [] for name, _, _ in arms}

    def per_call(stdout: str) -> float:
        recs = [json.loads(x) for x in stdout.splitlines() if x.strip().startswith("{")]
        return statistics.median(r["cpu_ns"] / r["count"] for r in recs)
    for i in range(rounds):
        # the arms' order alternates (A B C, C B A, ...): a drift within a round falls on
        # each arm alike over two rounds
        for name, kw, _ in (arms if i % 2 == 0 else arms[::-1]):
            r = _beside_engine(cmd, kw)
            if r is None or r.returncode != 0:
                raise JvmosError(f"the bystander failed ({what}, {name}): "
                                 + (r.stderr.strip()[:200] if r is not None else "not run"))
            got[name].append(per_call(r.stdout))
        log(f"  {what}, round {i + 1}/{rounds}: "
            + ", ".join(f"{v[-1]:.0f}" for v in got.values()) + f" ns per {unit}")
    base = statistics.median(got[arms[0][0]])
    return dict(extra, rounds=rounds,
                arms=[{"arm": name, "tracepoints": n, "ns_per_call_rounds": got[name],
                       "median_ns": statistics.median(got[name]),
                       "slowdown_pct": 100.0 * (statistics.median(got[name]) - base) / base}
                      for name, _, n in arms])


PINGPONG_TRIPS = 20_000
FULL = ("io", "threads", "links", "mem")


def scheduler_tax(rounds: int) -> dict:
    """What a recording at --scope process costs another process that context-switches: the
    bystander's pipe ping-pong (PINGPONG_TRIPS round trips a round, 3 rounds a run, its and
    its child's CPU per round trip) alone, and while the engine records a placeholder process
    with each layer alone in --mode count, with every layer in --mode count, and with every
    layer in --mode time (which adds the run-queue wait's sched_wakeup program). No syscall
    tracepoint is on; what remains host-wide is the BTF tracepoint programs (one sched_switch
    program for threads, links and mem together, common.bpf.h's chain, none for io alone;
    sched_wakeup in --mode time; page faults, process and thread events), which run for
    every task and return at once for an untraced one."""
    # both processes on one CPU (the child inherits the affinity): a wakeup across the VM's
    # idle vCPUs costs more than the switch itself, and varies with what else runs
    cmd = ["taskset", "-c", "0", str(c_program("bystander")), "--loop", "pingpong", "--count",
           str(PINGPONG_TRIPS), "--rounds", "3"]

    def rec(layers, mode):
        return {"layers": list(layers), "scope": "process", "run_mode": mode,
                "libs": {"LIBC": [libc_of()]}}
    arms = [("none", None, 0)]
    arms += [(f"a recording (--layers {layer}, --mode count, --scope process) of another "
              "process", rec([layer], "count"), 0) for layer in FULL]
    arms += [(f"a full recording ({','.join(FULL)}, --mode {mode}, --scope process) of "
              "another process", rec(FULL, mode), 0) for mode in ("count", "time")]
    return _interleaved(cmd, arms, rounds, "scheduler tax", "round trip",
                        {"trips_per_round": PINGPONG_TRIPS})


def run_ref_engine(kind: str, cmd: List[str], libjvm: Path) -> dict:
    """The traced loop under the compiled floor: calib.bpf.c's minimal programs on the same
    two functions (jni_GetByteArrayRegion, libc's write, where the engine places them),
    attached by the engine for the traced process only, a bystander beside it."""
    from jvmos import enginecost
    libc = libc_of()
    if kind == "count":
        # the probe points of --mode count: the JNI copy's entry, and libc's write wrapper
        # entry and return (count mode reads an I/O call's bytes from its return value)
        jni = {"program": "min_uprobe"}
        write = {"program": "min_uprobe", "ret_program": "min_uretprobe"}
    else:
        jni = write = {"program": "min_time_entry", "ret_program": "min_time_ret"}
    ups = [dict(jni, path=str(libjvm), symbol="jni_GetByteArrayRegion", object="calib"),
           dict(write, path=str(libc), symbol="write", object="calib")]
    box = {}
    out, raw, ready = enginecost.run_cmd(cmd, extra_uprobes=ups,
                                         workload=lambda: box.setdefault("by", Bystander().start()))
    box["by"].join()
    # set-up as the jvmos rows measure it (their manifests' attach_seconds): from the
    # engine's start to its ready line, loading and placement included
    return {"workload": last_json(out), "bystander": box["by"],
            "attach_seconds": (ready or {}).get("spawn_to_ready_s")}


# ---------------------------------------------------------------------------- jvmos rows
def run_jvmos(name: str, cmd: List[str], out: Path, **kw) -> dict:
    run_dir = out / "runs" / name
    run_dir.mkdir(parents=True, exist_ok=True)
    box = {}

    def beside():
        box["by"] = Bystander().start()
    if kw.get("mode") == "sample":
        beside()    # sampling starts with the command (the agent is loaded at JVM start-up)
    res = rec.record(rec.Options(cmd=cmd, out=run_dir, stdout=run_dir / "stdout.txt",
                                 stderr=run_dir / "stderr.txt",
                                 workload=None if "by" in box else beside,
                                 # every link is closed when record returns: the next
                                 # configuration's bystander never meets these probes
                                 log=lambda m: log(f"  [{name}] {m}"), **kw))
    box["by"].join()
    if res.status != "complete":
        raise JvmosError(f"recording {name} ended {res.status}: {res.reason}")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    # set-up: until every probe was open; teardown: the engine closing its links (awaited)
    return {"workload": last_json((run_dir / "stdout.txt").read_text()), "bystander": box["by"],
            "run_dir": str(run_dir.relative_to(out)), "summary": res.summary,
            "attach_seconds": manifest.get("attach_seconds"),
            "teardown_seconds": manifest.get("teardown_seconds")}


# ---------------------------------------------------------------------------- the table
def workload_commands(a, jvm):
    """The traced loops ({name: (command, iterations)}: the Java write and direct-allocation
    loops) and the C write loop run bare beside them."""
    java = str(jvm.home / "bin" / "java")
    cp = str(jar(IO_JAR))
    loops = {
        "write": ([java, "-cp", cp, "org.jvmos.workloads.BlockingIo", "--iterations",
                   str(a.writes), "--size", "10", "--target", "/dev/null"], a.writes),
        "alloc": ([java, "-XX:MaxDirectMemorySize=4g", "-cp", cp,
                   "org.jvmos.workloads.NativeAlloc", "--direct", str(a.allocs),
                   "--size", "64"], a.allocs),
    }
    c_write = [str(c_program("blocking_io")), "--iterations", str(a.writes), "--size", "10",
               "--target", "/dev/null"]
    return loops, c_write


def configurations(a) -> list:
    """(layer, loop, mode, scope) of every jvmos row: each layer in both modes and scopes
    (--quick: time mode at process scope only), and with --full the full recording."""
    configs = []
    for layer in a.layers:
        loop = "alloc" if layer == "mem" else "write"
        for mode in ("count", "time"):
            for sc in (("process", "host") if not a.quick or mode == "count" else ("process",)):
                configs.append((layer, loop, mode, sc))
    if a.full:
        # a full recording, every layer at once, on the write loop: its set-up and teardown
        # (goal: <= 0.5 s each) and what it costs the bystander
        configs.append((",".join(FULL_LAYERS), "write", "count", "process"))
    return configs


def bare_loops(loops: dict, c_write: list, a) -> dict:
    """The loops bare, interleaved, each a median of --repeat runs."""
    bare = {"write": [], "alloc": [], "c_write": []}
    for r in range(a.repeat):
        log(f"bare loops {r + 1}/{a.repeat}")
        bare["write"].append(run_bare(loops["write"][0])["elapsed_ns"])
        bare["alloc"].append(run_bare(loops["alloc"][0])["elapsed_ns"])
        bare["c_write"].append(run_bare(c_write)["elapsed_ns"])
    med = {k: statistics.median(v) for k, v in bare.items()}
    return {"runs_ns": bare, "median_ns": med,
            "per_op_ns": {"java_write": med["write"] / a.writes,
                          "java_alloc": med["alloc"] / a.allocs,
                          "c_write": med["c_write"] / a.writes}}


def score_rows(rows: list) -> dict:
    """Each row's bystander slowdown against its baseline (its paired controls, else the
    control row), and the jvmos io rows' ratio to the compiled floor. Returns the control
    row's bystander ns per call."""
    # the bystander's control per call, and each row's slowdown against it
    control = next(r["bystander"] for r in rows if r["kind"] == "control")
    ctl = {b: control[b]["ns_per_call"] for b in LOOPS}
    if None in ctl.values():
        log("warning: the control bystander ran no round beside the untraced loop: rows "
            "without a paired control have no baseline")
    for r in rows:
        pc = r.get("paired_control") or {}
        for b in LOOPS:
            v = r["bystander"][b]["ns_per_call"]
            own = (pc.get(b) or {}).get("ns_per_call")
            if own and (pc.get(b) or {}).get("rounds", 0) >= MIN_ROUNDS:
                base, how = own, "paired controls"
            else:
                base, how = ctl[b], "control row"
            r["bystander"][b]["baseline_ns"] = base
            r["bystander"][b]["baseline"] = how if base else None
            r["bystander"][b]["slowdown_pct"] = (None if v is None or not base
                                                 else 100.0 * (v - base) / base)
    # against the minimal compiled programs at the same probe points (process scope only)
    floor = {(r["kind"][4:], r["scope"]): r["added_ns_per_op"] for r in rows
             if r["kind"] in ("ref-count", "ref-time")}
    for r in rows:
        if r["kind"] in ("jvmos-count", "jvmos-time"):
            r["floor_ratio"] = None     # the floor is at the io layer's probe points only
        if r["kind"] in ("jvmos-count", "jvmos-time") and r.get("layer") == "io":
            f = floor.get((r["mode"], r["scope"]))
            r["floor_ratio"] = r["added_ns_per_op"] / f if f and f > 0 else None
    return ctl


def measure_taxes(results: dict, rounds: int) -> None:
    """The syscall-tracepoint tax and the scheduler programs' tax, each measured interleaved,
    kept in results."""
    log(f"the syscall-tracepoint tax: {rounds} interleaved rounds")
    results["tracepoint_tax"] = tracepoint_tax(rounds)
    log(f"the scheduler programs' tax: {rounds} interleaved rounds")
    results["scheduler_tax"] = scheduler_tax(rounds)


def tax_tables(results: dict) -> List[Table]:
    """The tables of the taxes results holds (none when measured with --tax-rounds 0)."""
    return (([tax_table(results)] if results.get("tracepoint_tax") else [])
            + ([sched_tax_table(results)] if results.get("scheduler_tax") else []))


def tax_table(results: dict) -> Table:
    """The syscall-tracepoint tax, measured interleaved (results["tracepoint_tax"]), tabled;
    each arm's paired slowdown is kept in results."""
    tax = results["tracepoint_tax"]
    tt = Table("What enabled syscall tracepoints cost a process that never triggers them "
               f"(the bystander's write loop, {tax.get('calls_per_round', TAX_CALLS):,} calls "
               "per round, "
               f"{tax['rounds']} interleaved rounds per arm; CPU ns per call)",
               ["arm", "tracepoints", "median", "rounds",
                "slowdown: median against the arm without tracepoints",
                "slowdown: each round against the same round's arm without, geometric mean "
                "[95%, t on logs]"])
    base = tax["arms"][0]["ns_per_call_rounds"]
    for arm in tax["arms"]:
        pr = paired_rounds(arm["ns_per_call_rounds"], base)
        arm["paired_slowdown"] = pr
        tt.add([arm["arm"], str(arm["tracepoints"]), f"{arm['median_ns']:.0f} ns",
                ", ".join(f"{v:.0f}" for v in arm["ns_per_call_rounds"]),
                "—" if arm["tracepoints"] == 0 else f"{arm['slowdown_pct']:+.0f}%",
                "—" if arm["tracepoints"] == 0 else paired_text(pr)],
               [arm["arm"], arm["tracepoints"], arm["median_ns"],
                " ".join(f"{v:.1f}" for v in arm["ns_per_call_rounds"]),
                None if arm["tracepoints"] == 0 else arm["slowdown_pct"],
                None if arm["tracepoints"] == 0 or not pr else
                f"{pr['pct']:.2f} [{pr['ci_pct'][0]:.2f}, {pr['ci_pct'][1]:.2f}]"])
    return tt


def paired_rounds(xs: List[float], base: List[float]) -> Optional[dict]:
    """The arm's rounds against the same rounds of the arm without (the arms run in turn
    within a round, so a drift between rounds falls on both): the geometric mean of the
    per-round ratios as a slowdown in %, with its 95% Student t interval on the logarithms
    (n - 1 df); None under two rounds."""
    import math
    from jvmos.analyzers.stats import paired_diff_ci
    logs = [math.log(x / b) for x, b in zip(xs, base) if x > 0 and b > 0]
    if len(logs) < 2:
        return None
    ci = paired_diff_ci(logs, level=0.95)
    return {"pct": 100 * (math.exp(ci["mean"]) - 1),
            "ci_pct": [100 * (math.exp(v) - 1) for v in ci["ci"]], "n": ci["n"]}


def paired_text(pr: Optional[dict]) -> str:
    if not pr:
        return "— (fewer than 2 rounds)"
    return f"{pr['pct']:+.0f}% [{pr['ci_pct'][0]:+.0f}, {pr['ci_pct'][1]:+.0f}], n={pr['n']}"


BYSTANDER_HEADERS = {"write": ["bystander write(2), CPU", "write slowdown"],
                     "malloc": ["bystander malloc+free, CPU", "malloc slowdown"],
                     "pingpong": ["bystander pipe ping-pong, CPU per round trip",
                                  "ping-pong slowdown"]}


def cost_table(results: dict) -> Table:
    """The main table: every configuration's added cost per op, bystander slowdowns, goals."""
    rows = results["rows"]
    loops = bystander_loops(rows)
    control = next((r["bystander"] for r in rows if r["kind"] == "control"), None)
    t = Table(f"What jvmos costs the traced JVM and the host ({results['jdk']}; bystander: "
              "C loops beside the run)",
              ["configuration", "scope", "traced loop", "added per op", "vs floor"]
              + [h for n in loops for h in BYSTANDER_HEADERS[n]]
              + ["bystander goal <5%", "set-up s", "teardown s"])
    for r in rows:
        bys = [(n, r["bystander"][n]) for n in loops]

        def cell(b):
            if b["ns_per_call"] is None:
                return "— (no round inside the loop)"
            s = f"{b['ns_per_call']:.0f} ns, {b['rounds']} rounds"
            if b.get("slowdown_pct") is None or r["kind"] == "control":
                return s
            mark = "" if b.get("baseline") == "paired controls" else " (control row)"
            return s + f" vs {b['baseline_ns']:.0f}{mark}"

        def pct(b):
            return ("—" if b.get("slowdown_pct") is None or r["kind"] == "control"
                    else f"{b['slowdown_pct']:+.0f}%")
        g = None if r["kind"] == "control" else bystander_goal(r, loops, control)
        goal, goal_csv = ("—", "—") if g is None else (goal_text(g), goal_raw(g))
        fr = r.get("floor_ratio")
        full = "," in (r.get("layer") or "")

        def secs(v):
            # the goal (a full recording's set-up and teardown each within 0.5 s) is judged on
            # the full recording's row only
            if v is None:
                return "—"
            if not full:
                return f"{v:.2f}"
            return f"{v:.2f} (goal ≤{SETUP_GOAL_S:g} s " + \
                ("reached)" if v <= SETUP_GOAL_S else "NOT reached)")
        t.add([r["name"], r["scope"] or "—", r["loop"], f"{r['added_ns_per_op']:+.0f} ns",
               f"{fr:.2f}x" + (" (goal ≤1.2x reached)" if fr <= FLOOR_GOAL else " (goal ≤1.2x NOT reached)")
               if fr is not None else "—"]
              + [c for _, b in bys for c in (cell(b), pct(b))]
              + [goal, secs(r.get("attach_seconds")), secs(r.get("teardown_seconds"))],
              [r["name"], r["scope"], r["loop"], r["added_ns_per_op"], fr]
              + [c for _, b in bys for c in (b["ns_per_call"], b.get("slowdown_pct"))]
              + [goal_csv, r.get("attach_seconds"), r.get("teardown_seconds")])
    return t


def bystander_loops(rows: list) -> List[str]:
    """The bystander's loops every row has (a run made before the ping-pong has two)."""
    return [n for n in LOOPS if all(n in r["bystander"] for r in rows)]


GOAL_NAMES = {"write": "write", "malloc": "malloc", "pingpong": "ping-pong"}


def bystander_interval(rounds: List[float], base: List[float]) -> Optional[dict]:
    """One bystander's rounds (CPU ns per call) against its baseline's rounds: the ratio of
    their geometric means as a slowdown in %, with its 95% Welch t interval on the logarithms
    (unequal variances, Welch-Satterthwaite df; scipy); None under two values on a side."""
    import math
    from jvmos.analyzers.stats import welch_diff_ci
    xs = [math.log(v) for v in rounds if v and v > 0]
    bs = [math.log(v) for v in base if v and v > 0]
    if len(xs) < 2 or len(bs) < 2:
        return None
    w = welch_diff_ci(xs, bs, level=0.95)
    return {"pct": 100 * (math.exp(w["diff"]) - 1),
            "ci_pct": [100 * (math.exp(v) - 1) for v in w["ci"]],
            "n": len(xs), "n_base": len(bs)}


def _baseline_rounds(r: dict, n: str, control: Optional[dict]) -> List[float]:
    """The rounds of the baseline score_rows chose for a row's bystander n: its paired
    controls' (with MIN_ROUNDS or more), else the control row's."""
    pc = (r.get("paired_control") or {}).get(n) or {}
    if pc.get("rounds", 0) >= MIN_ROUNDS and pc.get("cpu_ns_per_call_rounds"):
        return pc["cpu_ns_per_call_rounds"]
    return ((control or {}).get(n) or {}).get("cpu_ns_per_call_rounds") or []


def bystander_goal(r: dict, loops: List[str], control: Optional[dict] = None) -> dict:
    """A row's bystanders against the goal (issue 45), each judged on its 95% interval
    (bystander_interval: its rounds against its paired controls' rounds, else the control
    row's, `control` being that row's bystander): only the loops with at least MIN_ROUNDS
    rounds. {"verdict": "NOT reached" when a judged interval lies wholly at or above the goal;
    else "too few rounds" when a loop was not judged; else "met" when every interval's upper
    end is under the goal; else "unresolved", "judged": [(loop, interval)], "unjudged": [loop],
    "worst_median": the worst median slowdown in % of the judged loops, or None}."""
    judged, unjudged, medians = [], [], []
    for n in loops:
        b = r["bystander"][n]
        iv = (bystander_interval(b.get("cpu_ns_per_call_rounds") or [],
                                 _baseline_rounds(r, n, control))
              if b.get("slowdown_pct") is not None and b["rounds"] >= MIN_ROUNDS else None)
        if iv is None:
            unjudged.append(n)
        else:
            judged.append((n, iv))
            medians.append(b["slowdown_pct"])
    if any(iv["ci_pct"][0] >= BYSTANDER_GOAL_PCT for _, iv in judged):
        verdict = "NOT reached"
    elif unjudged:
        verdict = "too few rounds"
    elif all(iv["ci_pct"][1] < BYSTANDER_GOAL_PCT for _, iv in judged):
        verdict = "met"
    else:
        verdict = "unresolved"
    return {"verdict": verdict, "judged": judged, "unjudged": unjudged,
            "worst_median": max(medians, default=None)}


def goal_text(g: dict) -> str:
    """A row's bystander verdict as overhead.md prints it: each judged loop's slowdown
    [95%], n = its rounds vs its baseline's."""
    if g["verdict"] == "too few rounds":
        return f"too few rounds for {' and '.join(g['unjudged'])}"
    label = {"NOT reached": "NOT reached", "met": "met",
             "unresolved": "not shown (unresolved)"}[g["verdict"]]
    return label + ": " + "; ".join(
        f"{GOAL_NAMES.get(n, n)} {iv['pct']:+.1f}% [{iv['ci_pct'][0]:+.1f}, "
        f"{iv['ci_pct'][1]:+.1f}], n={iv['n']} vs {iv['n_base']}" for n, iv in g["judged"])


def goal_raw(g: dict) -> str:
    """The verdict as overhead.csv keeps it: goal_text, and the worst median slowdown of the
    judged loops (what runs before issue 45 printed as the verdict)."""
    w = g["worst_median"]
    return goal_text(g) + ("" if w is None else f" (worst median {w:+.0f}%)")


def sched_tax_table(results: dict) -> Table:
    """The host-wide cost of a process-scope recording, layer by layer and in full, to a
    process that context-switches, measured interleaved (results["scheduler_tax"]), tabled;
    each arm's paired slowdown is kept in results."""
    tax = results["scheduler_tax"]
    tt = Table("What a recording at --scope process costs another process that "
               f"context-switches, layer by layer and in full (the bystander's pipe ping-pong "
               "on one CPU, "
               f"{tax['trips_per_round']:,} round trips per round, 3 rounds a run, "
               f"{tax['rounds']} interleaved runs per arm; its and its child's CPU ns per "
               "round trip)",
               ["arm", "median", "runs", "slowdown: median against the arm without jvmos",
                "slowdown: each run against the same round's run without, geometric mean "
                "[95%, t on logs]"])
    base = tax["arms"][0]["ns_per_call_rounds"]
    for i, arm in enumerate(tax["arms"]):
        pr = paired_rounds(arm["ns_per_call_rounds"], base)
        arm["paired_slowdown"] = pr
        tt.add([arm["arm"], f"{arm['median_ns']:.0f} ns",
                ", ".join(f"{v:.0f}" for v in arm["ns_per_call_rounds"]),
                "—" if i == 0 else f"{arm['slowdown_pct']:+.0f}%",
                "—" if i == 0 else paired_text(pr)],
               [arm["arm"], arm["median_ns"],
                " ".join(f"{v:.1f}" for v in arm["ns_per_call_rounds"]),
                None if i == 0 else arm["slowdown_pct"],
                None if i == 0 or not pr else
                f"{pr['pct']:.2f} [{pr['ci_pct'][0]:.2f}, {pr['ci_pct'][1]:.2f}]"])
    return tt


TAX_NOTE = (
    "the tracepoint tax: each arm's programs are calib.bpf.c's min_tp (the traced-set filter "
    "and a count), attached by the engine while it traces a placeholder process; the "
    "bystander is not traced and never makes those syscalls. The arms run in turn, round "
    "after round, in alternating order, so that the machine's drift falls on each alike. What "
    "the bystander pays is the kernel's syscall slow path, which every task takes while any "
    "syscall tracepoint is enabled.")
SCHED_TAX_NOTE = (
    "the scheduler programs' tax: the engine records a placeholder process at --scope "
    "process with each layer alone and with every layer (no syscall tracepoint; what runs "
    "for every task on the host is one sched_switch program when a layer with a scheduler "
    "handler is on (threads, links, mem; io has none, so its arm has no sched_switch "
    "program), whose filter hands a switch of a traced process on to the layers' handlers; "
    "sched_wakeup in --mode time only; and the programs on new and exiting tasks and, with "
    "mem, on page faults, each returning at once for an untraced task), while the "
    "bystander, untraced, bounces a byte between two pipes with a "
    "child process, both pinned to CPU 0: each round trip blocks and wakes both processes, "
    "so it meets those programs on every switch. The arm without jvmos runs the same "
    "placeholder, untraced. The arms run in turn, run after run, in alternating order; the "
    "paired column compares each run with the same round's run without jvmos.")


def notes_of(results: dict) -> list:
    """What each column of the tables is, and how it was measured."""
    bt = results["bare"]["per_op_ns"]
    ctl = results["bystander_control_ns_per_call"]
    # runs made before results kept these: the bare runs kept, a row with paired controls
    repeat = results.get("repeat", len(results["bare"]["runs_ns"]["write"]))
    paired = results.get("paired", any(r.get("paired_control") is not None
                                       for r in results["rows"]))
    notes = [
        f"bare loops (median of {repeat}): Java write {bt['java_write']:.0f} ns, C write "
        f"{bt['c_write']:.0f} ns, Java direct-buffer allocation {bt['java_alloc']:.0f} ns per op; "
        f"{results['writes']:,} writes, {results['allocs']:,} allocations.",
        "added per op: (loop time under the configuration - bare loop time) / iterations, from "
        "the loop's own clock; the write loop makes one JNI GetByteArrayRegion and one write(2) "
        "per op, the allocation loop one malloc (and the direct buffer's bookkeeping).",
        "vs floor: added per write over the minimal compiled programs', at process scope (count "
        "mode vs the counting programs, time mode vs the timing pair), at the probe points of "
        "the mode: count, the JNI copy's entry and libc write's entry and return (jvmos "
        "--mode count reads an I/O call's bytes from its return value); time, entry and "
        "return on both. The floor's programs are calib.bpf.c's: the traced-process filter "
        "and one count, or a clock pair.",
        "bystander: median CPU ns per call (its own user + system time, which holds any trap "
        "into a probe; waiting for a CPU is left out) over the rounds that ended while the "
        "traced loop was still running, shown as 'ns, rounds vs baseline (slowdown)'; no "
        f"verdict on fewer than {MIN_ROUNDS} rounds. "
        + ("The baseline of each row is its paired controls: the same bystander beside the "
           "untraced write loop, run just before and just after that configuration, the "
           "median of both runs' rounds (the bystander's speed drifts between minutes on this "
           "VM by more than the effects sought); '(control row)' marks a row whose paired "
           "controls had too few rounds"
           if paired else "The baseline is the control row")
        + f"; the control row: {ctl['write']:.0f} ns per write, {ctl['malloc']:.1f} ns per "
        f"malloc+free"
        + (f", {ctl['pingpong']:.0f} ns per ping-pong round trip (one byte each way through "
           "two pipes, the parent's and the child's CPU: at least two context switches)"
           if ctl.get("pingpong") else "")
        + f" beside the untraced JVM. Goal: < {BYSTANDER_GOAL_PCT:.0f}%.",
        f"bystander goal <{BYSTANDER_GOAL_PCT:g}% (issue 45): each bystander with "
        f"{MIN_ROUNDS} rounds or more is judged on its 95% interval: the geometric mean of its "
        "rounds' CPU ns per call over its paired controls' rounds (cpu_ns_per_call_rounds "
        "against paired_control; the control row's where the paired controls had fewer), "
        "Welch's t on the logarithms, n = its rounds vs the controls'. met: every interval "
        f"below +{BYSTANDER_GOAL_PCT:g}%; NOT reached: an interval wholly above; too few "
        f"rounds: a bystander under {MIN_ROUNDS} rounds and none wholly above; otherwise not "
        "shown (unresolved). overhead.csv adds the worst median of the judged bystanders, "
        "the verdict of runs before issue 45.",
        "scope process: uprobes trap only in the traced process (uprobe_multi links with its "
        "pid), libc's wrappers stand for the io and mem layers' syscalls; scope host: those "
        "layers' syscall tracepoints instead. Syscall and scheduler tracepoints are host-wide "
        "at either scope: every process's events run through them, and the untraced return "
        "at the first line.",
        "one run per configuration on a shared 2-core machine: differences of a few percent "
        "are within its noise.",
        "jvmos rows: the compiled probes (probes/*.bpf.c) loaded by jvmos's engine, each "
        "uprobe on an emulated instruction where one comes first. set-up: seconds until every "
        "probe was open (the manifest's attach_seconds: loading and placement included); "
        "teardown: seconds until every link was closed, awaited. "
        f"Goal: each <= {SETUP_GOAL_S:g} s.",
        "one idle syscall tracepoint: a minimal compiled program on sys_enter_getppid, which "
        "neither loop calls. While any syscall tracepoint is enabled the kernel sends every "
        "syscall of every task on the host through its slow path (syscall_regfunc marks each "
        "task): its bystander write(2) slowdown is the tax every layer that uses a syscall "
        "tracepoint (every layer at --scope host; none at --scope process) puts on the host, "
        "whatever its programs do. Its scope says so: host.",
        f"the full recording: --layers {','.join(FULL_LAYERS)} at once on the write loop, "
        "count mode, process scope.",
    ]
    notes += (([TAX_NOTE] if results.get("tracepoint_tax") else [])
              + ([SCHED_TAX_NOTE] if results.get("scheduler_tax") else []))
    return notes


def main(argv) -> int:
    a = parse(argv)
    if a.render:
        out = Path(a.render)
        return report(out, load_finished(out / "overhead.json", "overhead", "experiment"))
    out = out_dir(a.out, "overhead")
    # --tax-only: the two interleaved tables, no traced loop (and so no JDK)
    results = ({"experiment": "overhead", "tax_only": True} if a.tax_only
               else traced_loops(a, out))
    if a.tax_rounds:
        measure_taxes(results, a.tax_rounds)
    return report(out, results)


def traced_loops(a, out: Path) -> dict:
    """The rows of the traced loops: bare, the control, the floors, the idle tracepoint, every
    jvmos configuration and --mode sample, each with its bystander, scored."""
    jvm = select_jdks([a.jdk] if a.jdk else None)[0]
    loops, c_write = workload_commands(a, jvm)
    results = {"experiment": "overhead", "jdk": jdk_label(jvm), "writes": a.writes,
               "allocs": a.allocs, "repeat": a.repeat, "paired": a.paired, "layers": a.layers,
               "bare": {}, "rows": []}

    results["bare"] = bare_loops(loops, c_write, a)
    med = results["bare"]["median_ns"]

    rows = []

    def add(name, kind, loop, scope, measured, extra=None, n=None, base_per_op=None):
        got, pc = measured
        wl = got["workload"]
        n = n or loops[loop][1]
        base = base_per_op if base_per_op is not None else med[loop] / loops[loop][1]
        per_op = wl["elapsed_ns"] / n - base
        by = got["bystander"].per_call(wl.get("loop_end_ns"), wl.get("loop_start_ns"))
        row = {"name": name, "kind": kind, "loop": loop, "scope": scope,
               "loop_ns": wl["elapsed_ns"], "added_ns_per_op": per_op, "bystander": by,
               "bystander_error": got["bystander"].error}
        row["paired_control"] = pc
        row.update(extra or {})
        rows.append(row)
        log(f"  {name}: {per_op:+.0f} ns per {loop}")

    # the control: the bystander beside the same JVM running untraced; the loop is made long
    # enough (>= 3,000,000 writes) that every bystander round runs beside it, as it does beside
    # a traced loop, which probes make slower
    n_ctl = max(a.writes, 3_000_000)
    ctl_cmd = [x if x != str(a.writes) else str(n_ctl) for x in loops["write"][0]]

    def control_round():
        """The bystander beside the untraced write loop, now: (the loop's result, the
        bystander)."""
        by = Bystander().start()
        wl = run_bare(ctl_cmd)
        by.join()
        return wl, by

    def one_control():
        wl, by = control_round()
        return by.per_call(wl.get("loop_end_ns"), wl.get("loop_start_ns"))

    def between_controls(what, run):
        """run() with its paired controls around it: the bystander's speed drifts on a shared
        VM by more than the effects sought (a single control 200 ns one minute, 270 the
        next), so each row is compared with the bystander measured right before and right
        after it (the median of both controls' rounds). (run's result, the paired control or
        None with --no-paired)."""
        if not a.paired:
            return run(), None
        log(f"  paired control before {what}")
        first = one_control()
        got = run()
        log("  paired control after it")
        return got, merged(first, one_control())

    log(f"control: {n_ctl:,} untraced writes, bystander beside them")
    wl, by = control_round()
    ctl_per_op = wl["elapsed_ns"] / n_ctl
    rows.append({"name": "control (untraced JVM, no probes)", "kind": "control", "loop": "write",
                 "scope": None, "loop_ns": wl["elapsed_ns"],
                 "added_ns_per_op": wl["elapsed_ns"] / n_ctl - med["write"] / a.writes,
                 "bystander": by.per_call(wl.get("loop_end_ns"), wl.get("loop_start_ns")),
                 "bystander_error": by.error})

    libjvm = jvm.libjvm
    # the compiled floor: the same two probe points, minimal programs, the engine's links
    for kind in ("count", "time"):
        log(f"minimal compiled {kind} programs, process scope")
        got = between_controls(f"the minimal compiled {kind} programs",
                               lambda: run_ref_engine(kind, loops["write"][0], libjvm))
        add(f"minimal compiled {kind} programs", f"ref-{kind}", "write", "process", got,
            {"attach_seconds": got[0]["attach_seconds"]})
    log("an idle syscall tracepoint: getppid, called by neither loop")
    # the loop is not slowed by a probe it never hits: the control's length, so that the
    # bystander's rounds run beside it
    got = between_controls("the idle syscall tracepoint", lambda: run_idle_tracepoint(ctl_cmd))
    # its loop is the control's: added per write against the control row's loop
    add("one idle syscall tracepoint (compiled, getppid)", "ref-idle-tp", "write", "host",
        got, {"attach_seconds": got[0]["attach_seconds"]}, n=n_ctl, base_per_op=ctl_per_op)

    for layer, loop, mode, sc in configurations(a):
        short = "full" if "," in layer else layer
        name = f"jvmos {short} {mode} {sc}"
        log(name)
        got = between_controls(name, lambda: run_jvmos(
            name.replace(" ", "-"), loops[loop][0], out, layers=layer.split(","), mode=mode,
            scope=sc))
        r = got[0]
        add(f"jvmos --layers {layer} --mode {mode}", f"jvmos-{mode}", loop, sc, got,
            {"layer": layer, "mode": mode, "run_dir": r["run_dir"],
             "attach_seconds": r["attach_seconds"], "teardown_seconds": r["teardown_seconds"]})
    log("jvmos --mode sample")
    got = between_controls("--mode sample",
                           lambda: run_jvmos("jvmos-sample", loops["write"][0], out, mode="sample"))
    add("jvmos --mode sample (async-profiler)", "jvmos-sample", "write", None, got,
        {"mode": "sample", "run_dir": got[0]["run_dir"]})

    ctl = score_rows(rows)
    results["rows"] = rows
    results["bystander_control_ns_per_call"] = ctl
    return results


def report(out: Path, results: dict) -> int:
    """overhead.md/.csv/.json and the notes, from the measured runs (also --render's): the
    traced loops' table and the tax tables, or (--tax-only) the tax tables alone."""
    tables = ([] if results.get("tax_only") else [cost_table(results)]) + tax_tables(results)
    # after the tables: the tax tables keep each arm's paired slowdown in results
    results["headline"] = (([] if results.get("tax_only") else loop_headlines(results))
                           + tax_headlines(results))
    publish(out, "overhead", tables, _jsonable(results),
            [TAX_NOTE, SCHED_TAX_NOTE] if results.get("tax_only") else notes_of(results))
    return 0


def loop_headlines(results: dict) -> List[dict]:
    """The traced loops' table in two figures: what the io layer in count mode at process
    scope adds to a write of the traced JVM (and its ratio to the compiled floor), and how
    many jvmos rows kept the bystander within the goal."""
    # a run of both engines side by side (before issue 23) keeps the retired bpftrace rows
    rows = [r for r in results["rows"] if r.get("engine") != "bpftrace"]
    left = len(rows) < len(results["rows"])
    io = next((r for r in rows if r["kind"] == "jvmos-count" and r.get("layer") == "io"
               and r["scope"] == "process"), None)
    fr = (io or {}).get("floor_ratio")
    loops = bystander_loops(results["rows"])
    control = next((r["bystander"] for r in results["rows"] if r["kind"] == "control"), None)
    goals = [bystander_goal(r, loops, control)["verdict"] for r in rows
             if r["kind"].startswith("jvmos")]
    met, few, unresolved = (goals.count(v) for v in ("met", "too few rounds", "unresolved"))
    names = {"write": "write(2)", "malloc": "malloc+free", "pingpong": "pipe ping-pong"}
    return [
        headline("added time per write of the traced JVM's loop of 10-byte writes under jvmos "
                 "--layers io --mode count --scope process ((loop time - bare loop time) / "
                 "writes, ns), and its ratio to the minimal compiled counting programs' at the "
                 f"same probe points (x; goal ≤ {FLOOR_GOAL:g}x)"
                 + (", the compiled engine's row" if left else ""),
                 "unknown" if io is None else f"{io['added_ns_per_op']:+.0f} ns"
                 + (", vs floor unknown" if fr is None else f", {fr:.2f}x the floor")),
        headline("jvmos rows (every layer, mode and scope run, --mode sample included"
                 + ("; the retired bpftrace rows left out" if left else "") + ") whose "
                 f"bystander ({', '.join(names[n] for n in loops)} loops of an untraced C "
                 f"process beside the run) slowed < {BYSTANDER_GOAL_PCT:g}% (the goal): every "
                 f"loop with ≥ {MIN_ROUNDS} rounds, its 95% interval (Welch t on the logs of "
                 "its rounds against its paired controls', else the control row's) wholly "
                 "under the goal",
                 f"{met} of {len(goals)}"
                 + "".join(f", {k} {what}" for k, what in ((unresolved, "unresolved"),
                                                           (few, "with too few rounds")) if k)
                 if goals else "unknown")]


def tax_headlines(results: dict) -> List[dict]:
    """The tax tables' widest arm each, by its paired column: every syscall tracepoint of the
    run against a bystander's write(2), and the full recording in count mode against a
    bystander that context-switches."""
    out = []
    paired = lambda a: "unknown" if not a.get("paired_slowdown") else (  # noqa: E731
        f"{a['paired_slowdown']['pct']:+.0f}% [{a['paired_slowdown']['ci_pct'][0]:+.0f}, "
        f"{a['paired_slowdown']['ci_pct'][1]:+.0f}], n={a['paired_slowdown']['n']}")
    tp = results.get("tracepoint_tax")
    if tp and len(tp["arms"]) > 1:
        arm = max(tp["arms"], key=lambda a: a["tracepoints"])
        out.append(headline(
            f"slowdown of a bystander's write(2) (CPU per call; it never triggers them) with "
            f"{arm['arm']} enabled, against none: the geometric mean of the interleaved "
            "rounds' ratios, % [95%, t on logs]", paired(arm)))
    st = results.get("scheduler_tax")
    if st and len(st["arms"]) > 1:
        arm = next((a for a in st["arms"] if a["arm"].startswith("a full recording")
                    and "--mode count" in a["arm"]), st["arms"][-1])
        out.append(headline(
            "slowdown of an untraced bystander that context-switches (a pipe ping-pong on one "
            f"CPU, CPU per round trip) beside {arm['arm']}, against beside none: the "
            "geometric mean of the interleaved runs' ratios, % [95%, t on logs] (goal < "
            f"{BYSTANDER_GOAL_PCT:g}%)", paired(arm)))
    return out


def _jsonable(results: dict) -> dict:
    return json.loads(json.dumps(results, default=lambda o: None))
