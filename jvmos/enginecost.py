"""The compiled engine's probe effect, measured on this machine (`jvmos calibrate --engine bpf`).

The same method as jvmos/probecost.py (bpftrace's costs), with the engine's own programs:
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
                                    the pair itself, not borrowed from the JNI pair
  thread_common_hit                 common.bpf.c on pthread_create + join, per task_newtask or
                                    sched_process_exit hit

A window is the measured time per call minus the bare time per call: what a measured time
over-states. The placement of each probe (offset, instruction, emulated or single-stepped) is
kept beside the figures: a recording whose probe lands on another class than the one
calibrated is not corrected with these figures without saying so.
"""
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from jvmos import JvmosError
from jvmos import engine as eng
from jvmos.jdk import libc_of, symbols
from jvmos.probecost import COST, _bare, _result, _stat
from jvmos.session import Session
from jvmos.tools import c_program

MEASURED_WITH = {
    "uprobe": "calib.bpf.c's minimal uprobe (filter + one count) on probecal's function",
    "uprobe_pair": "calib.bpf.c's minimal uprobe + uretprobe on probecal's function",
    "tracepoint": "calib.bpf.c's minimal tracepoint (filter + one count) on getpid(2)",
    "jni_copy_time_hit": "io.bpf.c's jni_get_region + jni_ret on probecal's copy function",
    "jni_copy_time_window": "io.bpf.c's jni_get_region + jni_ret: timed per call - bare per call",
    "jni_copy_count_hit": "io.bpf.c's jni_get_region on probecal's copy function",
    "io_syscall_hit": "io.bpf.c's sys_write + sys_io_exit on write(2) to /dev/null",
    "io_syscall_window": "io.bpf.c's tracepoint pair on write(2): timed per call - bare per call",
    "symbol_pair_time_hit": "io.bpf.c's libc_write + libc_ret on libc's write wrapper, as placed",
    "symbol_pair_time_window": "io.bpf.c's libc pair on write: timed per call - bare per call",
    "thread_common_hit": "common.bpf.c on pthread_create + join, per task_newtask or "
                         "sched_process_exit hit",
}
# kinds whose cost these figures measure on the kind's own programs (not borrowed)
OWN_KINDS = ["io:syscall_upair"]


def run_traced(prog: Path, mode: str, n: int, **kw):
    """probecal --mode MODE under the engine: (its result line, the engine's final maps as
    Raw, the ready event)."""
    out, raw, ready = run_cmd([str(prog), "--mode", mode, "--iterations", str(n)], **kw)
    return _result(out), raw, ready


@dataclass(frozen=True)
class Calibration:
    """One probe cost a compiled layer declares (its module's CALIBRATIONS): probecal --mode
    MODE run bare and under the engine with LAYERS loaded; the cost per hit is (probed -
    bare) / the hits of KINDS (analyzers/overhead.py's kinds) that the maps counted."""
    key: str                    # the cost key (engine_probes[key]; overhead.KINDS name it)
    mode: str                   # probecal --mode
    iterations: int
    layers: Tuple[str, ...]
    kinds: Tuple[str, ...]
    measured_with: str
    run_mode: str = "time"      # the recording mode the cost is for
    scope: str = "process"
    # yield mode: each switch is the loop's unit: the bare time is scaled to the switches of
    # the probed run (getrusage counts both), and the hits must match the switches
    per_switch: bool = False
    # symbols of a library placeholder that probecal's jvmos_probe_target stands in for (the
    # allocator, probed on a function with no side effects): {"LIBC": ("malloc",)}
    target_as: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()


def run_cmd(cmd: List[str], *, layers=(), scope="process", libs=None, extra_uprobes=(),
            extra_tps=(), run_mode="time", log=lambda m: None, workload=None,
            symbols_of=symbols):
    """A command under the engine with these programs, launched at the gate: (its stdout,
    the engine's final maps as Raw, the ready event). workload: called once the command is
    let go (a bystander beside it)."""
    with tempfile.TemporaryDirectory(prefix="jvmos-enginecal-") as tmp:
        tmp = Path(tmp)
        session = Session(log)
        with session:
            pid = session.launch(list(cmd), stdout=tmp / "out", stderr=tmp / "err")
            plan = eng.build_plan(list(layers), libs or {}, symbols_of, mode=run_mode, scope=scope,
                                  root=pid, counting=True, follow=False,
                                  extra_uprobes=extra_uprobes, extra_tps=extra_tps)
            e = eng.Engine(plan, tmp / "plan.json", tmp / "engine.stderr", log)
            try:
                ev = e.wait_ready(120, lambda: session.interrupted is not None)
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
            return (tmp / "out").read_text(errors="replace"), eng.to_raw(maps, plan), e.ready


def _calib_hits(raw) -> int:
    return sum(int(v) for v in raw.keyed("@calib").values()) if "@calib" in raw.maps else 0


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
        calls = sum(int(v) for k, v in raw.keyed("@calls").items() if k[1] == cat)
        timed = sum(int(v) for k, v in raw.keyed("@time").items() if k[1] == cat)
        return calls, timed

    for t in range(trials):
        log(f"engine probe-cost trial {t + 1}/{trials}")
        bare = {m: _bare(prog, m, n, full=True) for m in ("call", "write", "getpid")}
        bare["thread"] = _bare(prog, "thread", THREADS, full=True)
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
        # common.bpf.c on thread creation
        res, raw, _ = run_traced(prog, "thread", THREADS)
        hits = sum(int(v) for k, v in raw.keyed("@hits").items()
                   if k[1] in ("common:task_newtask", "common:sched_process_exit"))
        _check(hits, THREADS, "thread_common_hit")
        add("thread_common_hit", (res[COST] - bare["thread"][COST]) / hits)
        # each compiled layer's own probe costs
        for c in layer_calibrations(layers):
            add(c.key, _layer_cost(c, prog, target, libc, bare, log))
    what = dict(MEASURED_WITH, **{c.key: c.measured_with for c in layer_calibrations()})
    out = {k: dict(_stat(v), measured_with=what.get(k, k)) for k, v in samples.items()}
    out["own_kinds"] = list(OWN_KINDS)
    out["placement"] = placement
    out["iterations"] = n
    out["trials"] = trials
    out["engine"] = eng.version()
    out["method"] = ("probecal run bare and under jvmos-engine in the same invocation, "
                     "interleaved per trial, its process CPU time over the loop compared; "
                     "per-hit cost = (probed - bare) / the hits the programs' maps counted; "
                     "window = measured time per call - bare time per call")
    return out


def layer_calibrations(layers: Optional[List[str]] = None) -> List[Calibration]:
    from jvmos.enginelayers import MODULES
    return [c for name, m in MODULES.items() if layers is None or name in layers
            for c in getattr(m, "CALIBRATIONS", [])]


def _layer_cost(c: Calibration, prog: Path, target: str, libc: Path, bare: dict, log) -> float:
    from jvmos.analyzers.overhead import hits_by_pid
    if c.mode not in bare:
        bare[c.mode] = _bare(prog, c.mode, c.iterations, full=True)
    libs = {"LIBC": [libc]}
    symbols_of = symbols
    if c.target_as:
        addr = symbols(prog)[target]
        stand_in = {sym for _, syms in c.target_as for sym in syms}
        for ph, _ in c.target_as:
            libs[ph] = [prog]
        symbols_of = (lambda p: {s: addr for s in stand_in} if Path(p) == prog  # noqa: E731
                      else symbols(p))
    res, raw, _ = run_traced(prog, c.mode, c.iterations, layers=c.layers, scope=c.scope,
                             libs=libs, run_mode=c.run_mode, symbols_of=symbols_of, log=log)
    per = hits_by_pid(raw, c.scope)
    hits = sum(k.get(kind, 0) for k in per.values() for kind in c.kinds)
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
        "jni_copy_count_hit", "io_syscall_hit", "io_syscall_window", "symbol_pair_time_hit",
        "symbol_pair_time_window", "thread_common_hit")


def all_keys(layers: Optional[List[str]] = None) -> List[str]:
    return list(KEYS) + [c.key for c in layer_calibrations(layers)]


def incomplete(probes: Optional[dict], layers: Optional[List[str]] = None) -> bool:
    """The costs a recording of these layers needs (None: every compiled layer) are not all
    there."""
    return not probes or any(k not in probes for k in all_keys(layers))


def print_summary(probes: dict) -> str:
    lines = ["engine probe costs (ns per hit, mean and 95% interval; jvmos calibrate --engine bpf):"]
    for k in all_keys():
        e = probes.get(k) or {}
        if e.get("mean_ns") is None:
            continue
        ci = e.get("ci95_ns") or [None, None]
        lines.append(f"  {k:26s} {e['mean_ns']:10.1f}  [{ci[0]:.1f}, {ci[1]:.1f}]")
    for k, s in sorted((probes.get("placement") or {}).items()):
        lines.append(f"  placed {k}: +{s.get('shift')} {s.get('insn')} ({s.get('class')})")
    return "\n".join(lines)


if __name__ == "__main__":      # a quick look: python -m jvmos.enginecost
    print(json.dumps(calibrate(trials=2, n=100_000), indent=1))
