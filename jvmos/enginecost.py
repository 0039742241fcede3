"""The compiled engine's probe effect, measured on this machine (`jvmos calibrate --probes`;
stored as the platform file's "engine_probes"), and the JNI copy cost model that --mode count
estimates JNI copy times with (calibrate_jni_model, stored per JDK as copy.jni_region).

workloads/c/probecal runs bare and under the engine, interleaved, in several trials; its own
CPU time over the loop (probecal measures it itself) is compared, and the difference divided
by the hits that the programs' maps counted.

  uprobe, uprobe_pair, tracepoint   calib.bpf.c's minimal programs (the filter and one count):
                                    the floor of a compiled probe at these points
  jni_copy_time_hit, _window        io.bpf.c's jni_get_region + jni_ret on probecal's copy
                                    function (the signature of GetByteArrayRegion; it begins
                                    with push %rbp, emulated, like libjvm's JNI functions)
  jni_copy_count_hit                jni_get_region alone (--mode count)
  io_syscall_hit, _window           io.bpf.c's sys_write + sys_io_exit on write(2)'s
                                    tracepoints (--scope host)
  symbol_pair_time_hit, _window     io.bpf.c's libc_write + libc_ret on libc's write wrapper,
                                    where the engine places it (--scope process): measured on
                                    the pair itself (borrowed from the JNI pair only when it
                                    is not resolved from the noise, and then labelled so)
  thread_common_hit                 common.bpf.c on pthread_create + join, per task_newtask or
                                    sched_process_exit hit

A window is the measured time per call minus the bare time per call: what a measured time
over-states. The placement of each probe (offset, instruction, emulated or single-stepped) is
kept beside the figures: a recording whose probe lands on another class than the one
calibrated is not corrected with these figures without saying so.
"""
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

from jvmos import JvmosError
from jvmos import engine as eng
from jvmos.analyzers.stats import floor_fit, mean_ci
from jvmos.jdk import libc_of, symbols
from jvmos.session import Session
from jvmos.tools import IO_JAR, c_program, jar
from jvmos.enginecalib import Calibration  # noqa: F401 (the layer modules' declarations)

# not a probe's cost: what any task of the host pays per syscall while a syscall tracepoint
# is enabled (reported beside a recording that enabled one; optional, never required)
TAX_KEY = "syscall_tracepoint_tax"

MEASURED_WITH = {
    "uprobe": "calib.bpf.c's minimal uprobe (filter + one count) on probecal's function",
    "uprobe_pair": "calib.bpf.c's minimal uprobe + uretprobe on probecal's function",
    "tracepoint": "calib.bpf.c's minimal tracepoint (filter + one count) on getpid(2)",
    TAX_KEY: "probecal's write(2) loop, which no program sees, while one idle syscall "
             "tracepoint (calib.bpf.c's minimal program on getppid) is enabled: per write - "
             "bare per write",
    "jni_copy_time_hit": "io.bpf.c's jni_get_region + jni_ret on probecal's copy function",
    "jni_copy_time_window": "io.bpf.c's jni_get_region + jni_ret: timed per call - bare per call",
    "jni_copy_count_hit": "io.bpf.c's jni_get_region on probecal's copy function",
    "io_syscall_hit": "io.bpf.c's sys_write + sys_io_exit on write(2) to /dev/null",
    "io_syscall_window": "io.bpf.c's tracepoint pair on write(2): timed per call - bare per call",
    "symbol_pair_time_hit": "io.bpf.c's libc_write + libc_ret on libc's write wrapper, as placed",
    "symbol_pair_time_window": "io.bpf.c's libc pair on write: timed per call - bare per call",
    "thread_common_hit": "common.bpf.c's task_newtask and sched_process_exit programs on "
                         "pthread_create + join: their in-kernel run time (BPF statistics, every "
                         "run) per traced hit, an upper bound of the programs' own cost; the raw "
                         "tracepoint's dispatch is not in it",
    "io_uprobe_hit": "io.bpf.c's nio_native program on probecal's function (Unsafe_CopyMemory0's "
                     "program, which also reads its size from the stack, is charged the same)",
}
# kinds whose cost these figures measure on the kind's own programs (not borrowed), and the
# cost key each such kind takes here where it differs from bpftrace's (analyzers/overhead.py)
OWN_KINDS = ["io:syscall_upair", "io:uprobe", "io:jni_copy", "io:syscall_pair",
             "common:task_newtask", "common:sched_process_exit"]
KIND_KEYS = {"io:uprobe": "io_uprobe_hit"}
# per-hit costs the loop's clock may not resolve on a busy machine, and the engine's measured
# cost of the same shape each then borrows (labelled so): a syscall tracepoint pair with map
# bookkeeping, a uprobe pair with bookkeeping, one tracepoint
# Only donors of the same shape: a syscall tracepoint pair with per-thread bookkeeping for the
# layers' syscall pairs, a uprobe pair with bookkeeping for the allocator's and libc's pairs,
# an entry uprobe for an entry uprobe. The sched_switch programs (raw tracepoints) and the
# io tracepoint pair itself have none: unresolved, they stay unknown.
# The layers' scheduler handlers run from one filter program (common.bpf.h's chain): what a
# layer adds per switch is a handler of a few map lookups, which the yield loop's clock may
# not resolve from 0 on this VM (sched_switch_mem_hit: -16 ns [-296, +264] in one CI run).
# Unresolved, such a cost is floored at 0 with its interval's upper end kept, as a window is,
# instead of leaving every recording's estimate unknown.
FLOOR_IF_UNRESOLVED = ("sched_switch_threads_hit", "sched_switch_links_hit",
                       "sched_switch_mem_hit")
BORROW_IF_UNRESOLVED = {
    "span_syscall_threads_hit": "io_syscall_hit", "futex_threads_hit": "io_syscall_hit",
    "vm_syscall_mem_hit": "io_syscall_hit", "link_syscall_hit": "io_syscall_hit",
    "malloc_mem_time_hit": "jni_copy_time_hit", "malloc_mem_count_hit": "jni_copy_count_hit",
    "symbol_pair_time_hit": "jni_copy_time_hit", "io_uprobe_hit": "uprobe",
}


# What a probecal run costs: the process's CPU time, not the loop's wall time. A probe runs
# in the context of the task it hits, so its cost is in that task's CPU time; on a shared
# machine the wall time also holds the waits for a CPU that other processes cause (several
# microseconds per iteration of the thread and yield loops, far more than a probe costs).
COST = "cpu_ns"


def _result(stdout: str) -> dict:
    """probecal's result line (its last JSON object with a "mode")."""
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if line.startswith('{"mode"'):
            return json.loads(line)
    raise JvmosError("probecal printed no result")


def _bare(prog: Path, mode: str, n: int) -> dict:
    """probecal --mode MODE run without probes: its result line."""
    r = subprocess.run([str(prog), "--mode", mode, "--iterations", str(n)],
                       capture_output=True, text=True, timeout=300)
    if r.returncode:
        raise JvmosError(f"probecal --mode {mode} failed: {r.stderr.strip()}")
    return _result(r.stdout)


def _stat(xs: List[float]) -> dict:
    m, lo, hi = mean_ci(xs)
    return {"mean_ns": m, "ci95_ns": [lo, hi], "samples_ns": [round(x, 2) for x in xs]}


def run_traced(prog: Path, mode: str, n: int, **kw):
    """probecal --mode MODE under the engine: (its result line, the engine's final maps as
    Records, the ready event)."""
    out, raw, ready = run_cmd([str(prog), "--mode", mode, "--iterations", str(n)], **kw)
    return _result(out), raw, ready


def run_cmd(cmd: List[str], *, layers=(), scope="process", libs=None, extra_uprobes=(),
            extra_tps=(), run_mode="time", log=lambda m: None, workload=None,
            symbols_of=symbols, stand_ins=None, stats=False):
    """A command under the engine with these programs, launched at the gate: (its stdout,
    the engine's final maps as Records, the ready event). workload: called once the command is
    let go (a bystander beside it). stand_ins: {(path, symbol): real symbol}: a uprobe the
    plan puts on a stand-in name is attached to the real symbol of that file (the engine
    places a probe by the symbol its file defines; the figures keep the stand-in's name)."""
    with tempfile.TemporaryDirectory(prefix="jvmos-enginecal-") as tmp:
        tmp = Path(tmp)
        session = Session(log)
        with session:
            pid = session.launch(list(cmd), stdout=tmp / "out", stderr=tmp / "err")
            plan = eng.build_plan(list(layers), libs or {}, symbols_of, mode=run_mode, scope=scope,
                                  root=pid, counting=True, follow=False,
                                  extra_uprobes=extra_uprobes, extra_tps=extra_tps)
            for u in plan.doc["uprobes"]:
                u["symbol"] = (stand_ins or {}).get((u["path"], u["symbol"]), u["symbol"])
            plan.doc["stats"] = stats
            t_spawn = time.monotonic()
            e = eng.Engine(plan, tmp / "plan.json", tmp / "engine.stderr", log)
            try:
                ev = e.wait_ready(120, lambda: session.interrupted is not None)
                if ev is not None and ev.get("event") == "ready":
                    # what a recording's attach_seconds measures: engine start to ready
                    ev["spawn_to_ready_s"] = time.monotonic() - t_spawn
                if ev is None or ev.get("event") != "ready":
                    raise JvmosError(f"probe calibration (engine): the engine did not start: "
                                     f"{e.first_error()}")
                session.release()
                if workload is not None:
                    workload()
                code, _, _ = session.wait_command(watch_bpftrace=False, timeout=900)
                if code:
                    raise JvmosError(f"{' '.join(cmd)[:80]} exited with status {code}")
                maps = e.stop()
                if maps is None:
                    raise JvmosError(f"probe calibration (engine): no maps: {e.first_error()}")
            finally:
                if e.alive():
                    e.kill()
            return (tmp / "out").read_text(errors="replace"), eng.decode(maps, plan), e.ready


def _calib_hits(raw) -> int:
    return sum(int(v) for v in raw.keyed("calib").values()) if "calib" in raw.maps else 0


def calibrate(trials: int = 5, n: int = 200_000, log=print,
              layers: Optional[List[str]] = None) -> dict:
    """Every cost below, and the costs of these compiled layers' CALIBRATIONS (None: every
    compiled layer's)."""
    prog = c_program("probecal")
    target = "jvmos_probe_target"
    if target not in symbols(prog):
        raise JvmosError(f"{prog} has no symbol {target}: rebuild it (make build)")
    libc = libc_of(None)
    if libc is None:
        raise JvmosError("probe calibration (engine): libc not found")
    samples: Dict[str, List[float]] = {}
    add = lambda k, v: samples.setdefault(k, []).append(v)
    placement: Dict[str, dict] = {}
    jni = lambda ret: [{"path": str(prog), "symbol": target, "object": "io",
                        "program": "jni_get_region", "value": 1, "has_bytes": True,
                        **({"ret_program": "jni_ret"} if ret else {})}]
    minimal = lambda ret: [{"path": str(prog), "symbol": target, "object": "calib",
                            "program": "min_uprobe",
                            **({"ret_program": "min_uretprobe"} if ret else {})}]

    def keep_sites(ready, measured=(target, "write")):
        # the sites whose hits were measured (the others of a plan were attached, not hit)
        for s in (ready or {}).get("sites") or []:
            if s["symbol"] not in measured:
                continue
            placement[f"{Path(s['path']).name}:{s['symbol']}"] = {
                k: s.get(k) for k in ("shift", "insn", "class", "why")}

    def calls_time(raw, cat):
        calls = sum(int(v) for k, v in raw.keyed("calls").items() if k[1] == cat)
        timed = sum(int(v) for k, v in raw.keyed("time").items() if k[1] == cat)
        return calls, timed

    for t in range(trials):
        log(f"engine probe-cost trial {t + 1}/{trials}")
        bare = {m: _bare(prog, m, n) for m in ("call", "write", "getpid")}
        bare["thread"] = _bare(prog, "thread", THREADS)
        for m in ("call", "write", "getpid"):
            add(f"bare_{m}", bare[m][COST] / n)
        # the floor: minimal programs
        res, raw, ready = run_traced(prog, "call", n, extra_uprobes=minimal(False))
        keep_sites(ready)
        hits = _calib_hits(raw)
        _check(hits, n, "uprobe")
        add("uprobe", (res[COST] - bare["call"][COST]) / hits)
        res, raw, _ = run_traced(prog, "call", n, extra_uprobes=minimal(True))
        hits = _calib_hits(raw) / 2
        _check(hits, n, "uprobe_pair")
        add("uprobe_pair", (res[COST] - bare["call"][COST]) / hits)
        res, raw, _ = run_traced(prog, "getpid", n, extra_tps=[
            {"object": "calib", "group": "syscalls", "name": "sys_enter_getpid",
             "program": "min_tp"}])
        hits = _calib_hits(raw)
        _check(hits, n, "tracepoint")
        add("tracepoint", (res[COST] - bare["getpid"][COST]) / hits)
        # the host-wide tax of an enabled syscall tracepoint: the write loop, which no program
        # sees (the tracepoint is on getppid, which nothing calls), pays the syscall slow path
        # that every task of the host takes while any syscall tracepoint is enabled
        res, _, _ = run_traced(prog, "write", n, extra_tps=[
            {"object": "calib", "group": "syscalls", "name": "sys_enter_getppid",
             "program": "min_tp"}])
        add(TAX_KEY, (res[COST] - bare["write"][COST]) / n)
        # the io layer's JNI copy programs
        res, raw, _ = run_traced(prog, "call", n, extra_uprobes=jni(True), run_mode="time")
        calls, timed = calls_time(raw, "jni_copy")
        _check(calls, n, "jni_copy_time_hit")
        add("jni_copy_time_hit", (res[COST] - bare["call"][COST]) / calls)
        add("jni_copy_time_window", timed / calls - bare["call"][COST] / n)
        res, raw, _ = run_traced(prog, "call", n, extra_uprobes=jni(False), run_mode="count")
        calls, _ = calls_time(raw, "jni_copy")
        _check(calls, n, "jni_copy_count_hit")
        add("jni_copy_count_hit", (res[COST] - bare["call"][COST]) / calls)
        # the io layer's single entry programs (libnio's natives, Unsafe_CopyMemory0): the
        # nio_native program, as io:uprobe's own cost (not the minimal uprobe's)
        res, raw, _ = run_traced(prog, "call", n, extra_uprobes=[
            {"path": str(prog), "symbol": target, "object": "io", "program": "nio_native"}])
        calls = sum(int(v) for k, v in raw.keyed("calls").items() if k[1] == "nio_native")
        _check(calls, n, "io_uprobe_hit")
        add("io_uprobe_hit", (res[COST] - bare["call"][COST]) / calls)
        # the io layer's I/O call programs: tracepoints (host) and libc's wrapper (process)
        res, raw, _ = run_traced(prog, "write", n, layers=["io"], scope="host")
        calls, timed = calls_time(raw, "io_syscall")
        _check(calls, n, "io_syscall_hit")
        add("io_syscall_hit", (res[COST] - bare["write"][COST]) / calls)
        add("io_syscall_window", timed / calls - bare["write"][COST] / n)
        res, raw, ready = run_traced(prog, "write", n, layers=["io"], scope="process",
                                     libs={"LIBC": [libc]})
        keep_sites(ready)
        calls, timed = calls_time(raw, "io_syscall")
        _check(calls, n, "symbol_pair_time_hit")
        add("symbol_pair_time_hit", (res[COST] - bare["write"][COST]) / calls)
        add("symbol_pair_time_window", timed / calls - bare["write"][COST] / n)
        # common.bpf.c on thread creation. Its cost per hit (a few hundred ns) is far below
        # the noise of a thread's creation (tens of µs, varying by µs), so the loop's clock
        # cannot resolve it: the kernel's run-time statistics of the programs measure it,
        # all their runs (other processes' early returns too) over the traced hits, an upper
        # bound of the programs' own cost; the raw tracepoint's dispatch is not in it
        res, raw, _ = run_traced(prog, "thread", THREADS, stats=True)
        hits = sum(int(v) for k, v in raw.keyed("hits").items()
                   if k[1] in ("common:task_newtask", "common:sched_process_exit"))
        _check(hits, THREADS, "thread_common_hit")
        ps = getattr(raw, "prog_stats", {}) or {}
        run_ns = sum(v[1] for k, v in ps.items()
                     if k in ("common:proc_newtask", "common:proc_exit"))
        if not run_ns:
            raise JvmosError("probe calibration (engine, thread_common_hit): no BPF run "
                             "statistics for common.bpf.c's programs")
        add("thread_common_hit", run_ns / hits)
        # each compiled layer's own probe costs
        for c in layer_calibrations(layers):
            add(c.key, _layer_cost(c, prog, target, libc, bare, log))
    return _aggregate(samples, placement, layers, n, trials, log)


def _aggregate(samples: Dict[str, List[float]], placement: dict,
               layers: Optional[List[str]], n: int, trials: int, log) -> dict:
    """The trials' samples of each cost made into the platform file's engine_probes: mean and
    interval, windows floored at 0 where unresolved, unresolved costs kept apart (or
    borrowed), and what they were measured on."""
    what = dict(MEASURED_WITH, **{c.key: c.measured_with for c in layer_calibrations()})
    out, unresolved = {}, {}
    for k, v in samples.items():
        st = dict(_stat(v), measured_with=what.get(k, k))
        if k.startswith("bare_") or st["mean_ns"] > 0:
            out[k] = st
        elif (k.endswith("_window") or k in FLOOR_IF_UNRESOLVED) and st["ci95_ns"][1] > 0:
            # a window (what a timed span over-states) is not negative, nor is a scheduler
            # handler's cost: one whose mean came out at or below 0 with an interval reaching
            # above it is small beside the noise, floored at 0 with the interval's upper end
            # kept (corrections and the probe-effect interval then carry it), and labelled
            # so; the measured mean is kept beside it
            out[k] = dict(st, mean_ns=0.0, ci95_ns=[0.0, st["ci95_ns"][1]], floored=True,
                          fit_mean_ns=st["mean_ns"], fit_ci95_ns=st["ci95_ns"],
                          measured_with=st["measured_with"] + (
                              f" (not resolved from 0: mean {st['mean_ns']:.1f} ns over "
                              f"{len(v)} trials, floored at 0, the 95% interval's upper end "
                              "kept)"))
            log(f"warning: engine probe {'window' if k.endswith('_window') else 'cost'} {k} "
                f"not resolved from 0 (mean "
                f"{st['mean_ns']:.1f} ns, 95% interval [{st['ci95_ns'][0]:.0f}, "
                f"{st['ci95_ns'][1]:.0f}] ns over {len(v)} trials): floored at 0, its upper "
                "end kept")
        elif k.endswith("_window"):
            # a window whose whole interval is below 0: the span the pair times came out
            # shorter than the bare call timed from user space (which holds the syscall's
            # or the call's way in and out, outside the span): the probes over-state nothing
            # that this measures, so nothing is subtracted (0, interval [0, 0]), flagged and
            # labelled; a corrected time is then the span as timed, a lower bound of the call
            out[k] = dict(st, mean_ns=0.0, ci95_ns=[0.0, 0.0], floored=True, below_zero=True,
                          fit_mean_ns=st["mean_ns"], fit_ci95_ns=st["ci95_ns"],
                          measured_with=st["measured_with"] + (
                              f" (below 0: mean {st['mean_ns']:.1f} ns, 95% interval "
                              f"[{st['ci95_ns'][0]:.1f}, {st['ci95_ns'][1]:.1f}] over "
                              f"{len(v)} trials: the timed span is shorter than the bare call; "
                              "nothing subtracted, floored at 0)"))
            log(f"warning: engine probe window {k} measured below 0 (mean "
                f"{st['mean_ns']:.1f} ns, 95% interval [{st['ci95_ns'][0]:.1f}, "
                f"{st['ci95_ns'][1]:.1f}] ns over {len(v)} trials): the span it times is "
                "shorter than the bare call; floored at 0 (nothing subtracted)")
        else:
            # a cost that came out zero or negative was not resolved from the noise: kept
            # apart with its samples (never used as a 0)
            unresolved[k] = st
            log(f"warning: engine probe cost {k} not resolved: mean {st['mean_ns']:.1f} ns, "
                f"95% interval {st['ci95_ns']} over {len(v)} trials")
    # a per-hit cost that was not resolved takes the measured cost of the engine's nearest
    # program of the same shape, labelled borrowed, with what was measured for it; a window
    # (a part of a span) is never borrowed: what needs it stays unknown
    borrow_unresolved(out, unresolved)
    out["unresolved"] = {k: v for k, v in unresolved.items() if k not in out}
    out["own_kinds"] = list(OWN_KINDS) + [k for c in layer_calibrations(layers)
                                           for k in c.kinds]
    out["kind_keys"] = dict(KIND_KEYS)
    out["placement"] = placement
    out["iterations"] = n
    out["trials"] = trials
    out["engine"] = eng.version()
    # the programs the costs were measured on: a layer whose object changed since is
    # measured again (incomplete)
    out["objects_sha256"] = objects_sha256(layers)
    out["method"] = ("probecal run bare and under jvmos-engine in the same invocation, "
                     "interleaved per trial, its process CPU time over the loop compared; "
                     "per-hit cost = (probed - bare) / the hits the programs' maps counted; "
                     "window = measured time per call - bare time per call")
    return out


def borrow_unresolved(out: dict, unresolved: dict) -> None:
    """Give each unresolved per-hit cost with a same-shape donor (BORROW_IF_UNRESOLVED) the
    donor's measured mean, labelled borrowed, without an interval."""
    for k, st in unresolved.items():
        src = BORROW_IF_UNRESOLVED.get(k)
        # only from a cost measured on its own programs (never from another borrowed one)
        if src and src in out and not out[src].get("borrowed"):
            ci = st["ci95_ns"]
            # the donor's mean, but no interval: the donor's would claim a precision this
            # probe's cost does not have (the overhead's total interval is then unknown)
            out[k] = {"mean_ns": out[src]["mean_ns"], "ci95_ns": None, "borrowed": True,
                      "borrowed_from": src, "samples_ns": st["samples_ns"],
                      "measured_with": (
                          f"{out[src]['measured_with']} (borrowed from {src}: {k} itself was "
                          f"not resolved from the noise, mean {st['mean_ns']:.0f} ns, 95% "
                          f"interval [{ci[0]:.0f}, {ci[1]:.0f}] ns over "
                          f"{len(st['samples_ns'])} trials)")}


def layer_calibrations(layers: Optional[List[str]] = None) -> List[Calibration]:
    from jvmos.enginelayers import MODULES
    return [c for name, m in MODULES.items() if layers is None or name in layers
            for c in getattr(m, "CALIBRATIONS", [])]


def _layer_cost(c: Calibration, prog: Path, target: str, libc: Path, bare: dict, log) -> float:
    from jvmos.analyzers.overhead import hits_by_pid
    if c.mode not in bare:
        bare[c.mode] = _bare(prog, c.mode, c.iterations)
    libs = {"LIBC": [libc]}
    symbols_of = symbols
    stand_ins = None
    if c.target_as:
        addr = symbols(prog)[target]
        stand_in = {sym for _, syms in c.target_as for sym in syms}
        for ph, _ in c.target_as:
            libs[ph] = [prog]
        symbols_of = (lambda p: {s: addr for s in stand_in} if Path(p) == prog  # noqa: E731
                      else symbols(p))
        stand_ins = {(str(prog), s): target for s in stand_in}
    res, raw, _ = run_traced(prog, c.mode, c.iterations, layers=c.layers, scope=c.scope,
                             libs=libs, run_mode=c.run_mode, symbols_of=symbols_of, log=log,
                             stand_ins=stand_ins, stats=bool(c.kernel_stats))
    per = hits_by_pid(raw, c.scope)
    hits = sum(k.get(kind, 0) for k in per.values() for kind in c.kinds)
    if c.kernel_stats:
        _check(hits, c.iterations, c.key)
        ps = getattr(raw, "prog_stats", {}) or {}
        run_ns = sum(v[1] for k, v in ps.items() if k in c.kernel_stats)
        if not run_ns:
            raise JvmosError(f"probe calibration (engine, {c.key}): no BPF run statistics for "
                             f"{', '.join(c.kernel_stats)}")
        return run_ns / hits
    base = bare[c.mode][COST]
    if c.per_switch:
        if not bare[c.mode].get("switches") or not res.get("switches"):
            raise JvmosError(f"probe calibration (engine, {c.key}): no context switch counted")
        if hits < 0.9 * res["switches"]:
            raise JvmosError(f"probe calibration (engine, {c.key}): {hits} hits for "
                             f"{res['switches']} switches: the probes did not attach")
        base = base * res["switches"] / bare[c.mode]["switches"]
    else:
        _check(hits, c.iterations, c.key)
    return (res[COST] - base) / hits


def _check(hits, n, key) -> None:
    if hits < 0.9 * n:
        raise JvmosError(f"probe calibration (engine, {key}): {hits:,.0f} hits counted for "
                         f"{n:,} iterations: the probes did not attach")


THREADS = 20_000     # pthread_create + join: ~30 µs each, noisy: many of them

KEYS = ("uprobe", "uprobe_pair", "tracepoint", "jni_copy_time_hit", "jni_copy_time_window",
        "jni_copy_count_hit", "io_uprobe_hit", "io_syscall_hit", "io_syscall_window", "symbol_pair_time_hit",
        "symbol_pair_time_window", "thread_common_hit")


def all_keys(layers: Optional[List[str]] = None) -> List[str]:
    return list(KEYS) + [c.key for c in layer_calibrations(layers)]


def merge(old: Optional[dict], new: dict) -> dict:
    """A calibration of some layers added to an earlier one: new costs replace old ones; the
    lists and tables that name kinds and sites are united, not replaced (a calibration of
    one layer must not make another layer's measured costs look borrowed)."""
    out = dict(old or {}, **new)
    o = old or {}
    out["own_kinds"] = sorted(set(o.get("own_kinds") or ()) | set(new.get("own_kinds") or ()))
    for k in ("kind_keys", "placement", "objects_sha256"):
        out[k] = dict(o.get(k) or {}, **(new.get(k) or {}))
    unresolved = dict(o.get("unresolved") or {}, **(new.get("unresolved") or {}))
    # a cost resolved now is no longer unresolved
    out["unresolved"] = {k: v for k, v in unresolved.items() if k not in new or k in
                         (new.get("unresolved") or {})}
    return out


def objects_sha256(layers: Optional[List[str]] = None) -> Dict[str, Optional[str]]:
    """sha256 of the compiled objects (common and each layer's; None: every compiled layer)."""
    import hashlib
    from jvmos.enginelayers import MODULES
    out = {}
    for name, path in eng.objects_for([x for x in MODULES if layers is None
                                       or x in layers]).items():
        try:
            out[name] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        except OSError:
            out[name] = None
    return out


def stale_objects(probes: Optional[dict], layers: Optional[List[str]] = None) -> List[str]:
    """The objects (of these layers, and common) whose programs changed since their costs
    were measured, or whose costs name no object (measured before objects were recorded)."""
    import os
    if os.environ.get("JVMOS_ENGINE_OBJECTS"):
        return []       # a developer's (or a test's) objects: not what any calibration measured
    had = (probes or {}).get("objects_sha256") or {}
    now = objects_sha256(layers)
    return [k for k, v in now.items() if v is not None and had.get(k) != v]


def incomplete(probes: Optional[dict], layers: Optional[List[str]] = None) -> bool:
    """The costs a recording of these layers needs (None: every compiled layer) are not all
    there, or were measured on programs that have changed since."""
    return (not probes or any(k not in probes and k not in (probes.get("unresolved") or {})
                              for k in all_keys(layers))
            or bool(stale_objects(probes, layers)))


def print_summary(probes: dict) -> str:
    lines = ["engine probe costs (ns per hit, mean and 95% interval; jvmos calibrate --probes):"]
    for k in all_keys():
        e = probes.get(k) or {}
        if e.get("mean_ns") is None:
            continue
        ci = e.get("ci95_ns")
        lines.append(f"  {k:26s} {e['mean_ns']:10.1f}  "
                     + (f"[{ci[0]:.1f}, {ci[1]:.1f}]" if ci else
                        f"(borrowed from {e.get('borrowed_from')}, no interval)"))
    for k, s in sorted((probes.get("placement") or {}).items()):
        lines.append(f"  placed {k}: +{s.get('shift')} {s.get('insn')} ({s.get('class')})")
    return "\n".join(lines)


# ---- the JNI copy cost model (--mode count) ----
# BlockingIo writes SIZE bytes to /dev/null WRITES times: each write is one
# GetByteArrayRegion (FileOutputStream.writeBytes copies the array out before write(2)).
# Traced in --mode time, the engine sums the time between jni_get_region and jni_ret per
# probe; that time per call minus the window calibrated above (what the pair adds between its
# two clock reads) is the copy's own cost at that size. A run's time per call moves by a
# hundred ns or more from one run to the next on a shared 2-core machine (whole runs slowed
# by another process), more than the copy's own cost: each size is run in several trials,
# interleaved, and their median taken.
JNI_REGION_SYMBOL = "jni_GetByteArrayRegion"
JNI_MODEL_SIZES = (10, 4096)
JNI_MODEL_WRITES = 100_000
JNI_MODEL_TRIALS = 3
# where the window was calibrated: probecal's copy function (engine_probes["placement"])
WINDOW_SITE = "probecal:jvmos_probe_target"


def jni_model_unavailable(jvm, probes: Optional[dict]) -> Optional[str]:
    """Why no JNI copy model can be measured for this JDK with these engine probe costs
    (None: it can be)."""
    if JNI_REGION_SYMBOL not in symbols(Path(jvm.libjvm)):
        return (f"{jvm.libjvm} has no symbol {JNI_REGION_SYMBOL} (stripped): the engine's "
                "calibrated window is that of its uprobe pair on a function's symbol")
    w = (probes or {}).get("jni_copy_time_window")
    if w is None or w.get("mean_ns") is None:
        if "jni_copy_time_window" in ((probes or {}).get("unresolved") or {}):
            return ("the engine's JNI copy window (jni_copy_time_window) was not resolved from "
                    "the noise; re-run 'jvmos calibrate --probes' on a quieter machine")
        return ("the engine's JNI copy window (jni_copy_time_window) is not calibrated; run "
                "'jvmos calibrate --probes'")
    return None


def _region_copies(raw, libjvm: Path):
    """(calls, summed ns) of GetByteArrayRegion in the engine's maps, this libjvm's only."""
    name = f"uprobe:{libjvm}:{JNI_REGION_SYMBOL}"
    calls = sum(int(v) for k, v in raw.keyed("calls").items()
                if k[1] == "jni_copy" and k[2] == name)
    time_ns = sum(int(v) for k, v in raw.keyed("time").items()
                  if k[1] == "jni_copy" and k[2] == name)
    return calls, time_ns


def copy_interval(traced: List[float], window: dict) -> Optional[dict]:
    """The traced time per call minus the window, as a difference of two means (the traced
    trials' and the window's calibration trials', raw: before any floor) with its 95%
    interval (Welch's t, which takes both samples' spread); None when either has fewer than
    two values (a window of a platform file made before its samples were kept). It decides
    whether the copy is resolved; the model's points subtract the window's calibrated mean
    from the traced median, as before."""
    from scipy import stats
    w = [float(x) for x in window.get("samples_ns") or []]
    if len(traced) < 2 or len(w) < 2:
        return None
    t = stats.ttest_ind(traced, w, equal_var=False)
    ci = t.confidence_interval(0.95)
    return {"mean_ns": statistics.fmean(traced) - statistics.fmean(w),
            "ci95_ns": [float(ci.low), float(ci.high)],
            "method": f"Welch t, {len(traced)} traced trials and {len(w)} window trials"}


def copy_below_window(traced_per_call: float, diff: Optional[dict], window_ci) -> bool:
    """The traced copies took less time than the window itself, beyond both's noise: the
    whole 95% interval of their difference is below 0 (or, without the window's samples, the
    traced median is below the low end of the window's interval)."""
    if diff is not None:
        return diff["ci95_ns"][1] < 0
    return traced_per_call < window_ci[0]


def _below_what(diff: Optional[dict], window_ci) -> str:
    if diff is not None:
        lo, hi = diff["ci95_ns"]
        return (f"traced minus window (difference of means) {diff['mean_ns']:.0f} ns, 95% interval {lo:.0f} to "
                f"{hi:.0f} ns ({diff['method']}), all below 0: the window's noise or its "
                "context swallows the copy")
    return (f"below the low end of the window's 95% interval ({window_ci[0]:.0f} ns): the "
            "window's noise swallows the copy")


class JniModelUnresolved(JvmosError):
    """The JNI copy model's runs were measured, but the probe window's noise swallows them
    (the traced copies took less time than the window, the whole 95% interval of the
    difference below 0; copy_below_window): no model can be made from them.
    `unresolved` is what the platform file keeps instead, so that it is not measured again
    until the window changes."""

    def __init__(self, msg: str, unresolved: dict):
        super().__init__(msg)
        self.unresolved = unresolved


def calibrate_jni_model(jvm, probes: dict, sizes=JNI_MODEL_SIZES, n: int = JNI_MODEL_WRITES,
                        trials: int = JNI_MODEL_TRIALS, log=print) -> dict:
    """The cost of one GetByteArrayRegion on this JDK as ns_per_call + bytes x ns_per_byte:
    BlockingIo under the engine's io layer in --mode time, n writes of each size in each
    trial, and once with no write (the JVM's own copies at start and exit, taken off each
    run's); per size, the median over the trials of the loop's time per call, minus the
    engine's jni_copy_time_window (probes: the platform file's engine_probes); a line through
    the two sizes' points."""
    why = jni_model_unavailable(jvm, probes)
    if why:
        raise JvmosError(f"JNI copy calibration on {jvm.home}: {why}")
    if n <= 0 or trials <= 0 or len(sizes) != 2 or sizes[0] == sizes[1] or min(sizes) <= 0:
        raise JvmosError(f"JNI copy calibration: needs a positive number of writes (not {n}) "
                         f"and of trials (not {trials}), and two distinct positive sizes (not "
                         f"{list(sizes)})")
    window = probes["jni_copy_time_window"]
    window_ns = float(window["mean_ns"])
    window_ci = window.get("ci95_ns") or [window_ns, window_ns]
    calibrated = ((probes.get("placement") or {}).get(WINDOW_SITE) or {}).get("class")
    libjvm = Path(jvm.libjvm)
    libs = {"LIBJVM": [libjvm], "LIBNIO": [Path(jvm.libnio)] if jvm.libnio else []}

    def traced(writes: int, size: int):
        cmd = [str(Path(jvm.home) / "bin" / "java"), "-cp", str(jar(IO_JAR)),
               "org.jvmos.workloads.BlockingIo", "--iterations", str(writes),
               "--size", str(size), "--target", "/dev/null"]
        _, raw, ready = run_cmd(cmd, layers=["io"], libs=libs, run_mode="time")
        site = next((s for s in (ready or {}).get("sites") or []
                     if s.get("symbol") == JNI_REGION_SYMBOL and Path(s["path"]) == libjvm), {})
        return _region_copies(raw, libjvm), site

    log(f"JNI copy cost of JDK {jvm.version}: the JVM's own copies (a run of no write)")
    (start_calls, start_ns), site = traced(0, sizes[0])
    if calibrated and site.get("class") and site["class"] != calibrated:
        raise JvmosError(f"JNI copy calibration on {jvm.home}: the engine placed its probe of "
                         f"{JNI_REGION_SYMBOL} on {site.get('insn')} ({site['class']}), the "
                         f"window was calibrated on {calibrated}: it does not apply")
    loop_calls_by_size = {str(size): [] for size in sizes}
    traced_by_size = {str(size): [] for size in sizes}
    for t in range(trials):
        for size in sizes:
            log(f"JNI copy cost of JDK {jvm.version}: trial {t + 1}/{trials}, {n:,} writes "
                f"of {size} bytes, traced")
            (calls, time_ns), _ = traced(n, size)
            loop_calls = calls - start_calls
            if loop_calls != n:
                raise JvmosError(f"JNI copy calibration on {jvm.home}: {loop_calls:,} "
                                 f"{JNI_REGION_SYMBOL} calls counted for {n:,} writes of "
                                 f"{size} bytes (the run's minus those of a run of no write)")
            loop_calls_by_size[str(size)].append(loop_calls)
            traced_by_size[str(size)].append((time_ns - start_ns) / n)
    pts, below = [], {}
    for size in sizes:
        traced_per_call = statistics.median(traced_by_size[str(size)])
        below[str(size)] = copy_interval(traced_by_size[str(size)], window)
        if copy_below_window(traced_per_call, below[str(size)], window_ci):
            why = (f"{size}-byte copies took {traced_per_call:.0f} ns per call traced (median "
                   f"of {trials} trials), less than the engine's calibrated window: "
                   + _below_what(below[str(size)], window_ci)
                   + " ('jvmos calibrate --probes' on a quieter machine measures both again)")
            raise JniModelUnresolved(
                f"JNI copy calibration on {jvm.home}: {why}",
                {"unresolved": why, "jdk_version": jvm.version, "engine": eng.version(),
                 "traced_ns_per_call_by_size": {k: statistics.median(v) for k, v in
                                                traced_by_size.items() if v},
                 "traced_minus_window_by_size": below,
                 "window": {"key": "jni_copy_time_window", "mean_ns": window_ns,
                            "ci95_ns": list(window_ci)}})
        pts.append([size, traced_per_call - window_ns])
    (s0, t0), (s1, t1) = pts
    slope = (t1 - t0) / (s1 - s0)
    engine = eng.version()
    model = {"ns_per_byte": slope, "points": pts, "jdk_version": jvm.version,
             "engine": engine, "writes": n, "trials": trials,
             "loop_calls_by_size": loop_calls_by_size,
             "traced_ns_per_call_by_size": {k: [round(x, 2) for x in v]
                                            for k, v in traced_by_size.items()},
             "calls_in_a_run_of_no_write": start_calls,
             "traced_minus_window_by_size": below,
             "window": {"key": "jni_copy_time_window", "mean_ns": window_ns,
                        "ci95_ns": list(window_ci), "calibrated_on": calibrated,
                        "probe_placed_on": site.get("class")},
             "what": (f"{engine}: io.bpf.c's jni_get_region + jni_ret (--mode time) on "
                      f"{JNI_REGION_SYMBOL} of {libjvm}; BlockingIo writing {n:,} times to "
                      f"/dev/null at {s0} and {s1} bytes, {trials} trials each; per size, the "
                      f"median over the trials of the loop's traced time per call (a run's "
                      f"calls and time minus those of a run of no write) minus the engine's "
                      f"calibrated jni_copy_time_window ({window_ns:.1f} ns, mean); a line "
                      "through the two points: slope ns_per_byte, intercept ns_per_call")}
    floor_fit(model, "ns_per_byte")
    model["ns_per_call"] = t0 - model["ns_per_byte"] * s0
    # the intercept with the window at the high and at the low end of its 95% interval (the
    # slope does not depend on the window): how far the window resolves ns_per_call
    model["ns_per_call_at_window_ci95_ends"] = [
        model["ns_per_call"] - (window_ci[1] - window_ns),
        model["ns_per_call"] + (window_ns - window_ci[0])]
    return floor_fit(model, "ns_per_call")


if __name__ == "__main__":      # a quick look: python -m jvmos.enginecost
    print(json.dumps(calibrate(trials=2, n=100_000), indent=1))
