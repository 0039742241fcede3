"""The probe effect: what jvmos's own probes cost, measured on this machine.

`jvmos calibrate --probes` runs workloads/c/probecal bare and under bpftrace in one invocation,
several trials, and derives per-hit costs:

Times are the probecal process's CPU time (COST below), per iteration or per hit.

  tracepoint, uprobe, uprobe_pair   a minimal probe (one count()), for reference
  jni_copy_time_hit                 what one JNI copy costs the target under --mode time: the
                                    real io.bt entry+return blocks attached to a function with
                                    the signature of jni_GetByteArrayRegion
  jni_copy_count_hit                the same under --mode count (entry block only)
  jni_copy_time_window              the part of jni_copy_time_hit that falls between the two
                                    clock reads, i.e. what a measured JNI copy time over-states
  io_syscall_hit, io_syscall_window the same for an I/O syscall and io.bt's tracepoint pair

and, for the other layers (each with the real blocks of its .bt file, loaded with common.bt):

  sched_switch_{links,threads,mem}_hit  what one switch out of a traced thread costs with that
                                    layer's sched_switch blocks: two threads pinned to one CPU
                                    yield to each other; the bare time is scaled to the
                                    switches of the probed run (getrusage counts both)
  futex_threads_hit                 threads.bt's futex pair, on FUTEX_WAKE with no waiter
  span_syscall_threads_hit          threads.bt's pair on its span syscalls, outside a span
                                    (madvise)
  vm_syscall_mem_hit                mem.bt's pair on a memory syscall (madvise)
  link_syscall_hit                  links.bt's pair (close(-1))
  page_fault_mem_hit                mem.bt's page_fault_user block, on first touches of pages
  malloc_mem_{time,count}_hit       mem.bt's allocator blocks, attached to probecal's function
  thread_common_hit                 common.bt's task_newtask and sched_process_exit blocks, on
                                    pthread_create + join: per hit of either

Each of these divides (probed - bare) by the hits that the script's own maps counted (the
same maps a recording uses, analyzers/overhead.py), not by the iterations asked for.

The summary subtracts hits x window from measured times and reports hits x hit as the
slowdown jvmos imposed (analyzers/overhead.py).
"""
import json
import subprocess
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from jvmos import JvmosError
from jvmos.jdk import symbols
from jvmos.probegen import render
from jvmos import session
from jvmos.tools import c_program
from jvmos.analyzers import rawparse
from jvmos.analyzers.overhead import hits_by_pid
from jvmos.analyzers.stats import floor_fit, mean_ci

MINIMAL = {
    "tracepoint": ("getpid", "tracepoint:syscalls:sys_enter_getpid /pid == cpid/ { @n = count(); }"),
    "uprobe": ("call", "uprobe:{bin}:jvmos_probe_target /pid == cpid/ { @n = count(); }"),
    "uprobe_pair": ("call", "uprobe:{bin}:jvmos_probe_target /pid == cpid/ { @t[tid] = nsecs; }\n"
                            "uretprobe:{bin}:jvmos_probe_target /pid == cpid/ "
                            "{ @s = sum(nsecs - @t[tid]); delete(@t[tid]); }"),
}


def _result(stdout: str) -> dict:
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if line.startswith('{"mode"'):
            return json.loads(line)
    raise JvmosError("probecal printed no result")


# What a run costs: the process's CPU time, not the loop's wall time. A probe runs in the
# context of the task it hits, so its cost is in that task's CPU time; on a shared machine the
# wall time also holds the waits for a CPU that other processes cause (several microseconds per
# iteration of the thread and yield loops here, far more than a probe costs).
COST = "cpu_ns"


def _elapsed(stdout: str) -> int:
    return int(_result(stdout)[COST])


def _bare(prog: Path, mode: str, n: int, full: bool = False):
    r = subprocess.run([str(prog), "--mode", mode, "--iterations", str(n)],
                       capture_output=True, text=True, timeout=300)
    if r.returncode:
        raise JvmosError(f"probecal --mode {mode} failed: {r.stderr.strip()}")
    return _result(r.stdout) if full else _elapsed(r.stdout)


def _traced(prog: Path, mode: str, n: int, script: str):
    res, raw = _traced_full(prog, mode, n, script)
    return int(res["elapsed_ns"]), raw


def _traced_full(prog: Path, mode: str, n: int, script: str):
    """probecal's result line and the maps, run under bpftrace with this script."""
    r = session.run_command(script, f"{prog} --mode {mode} --iterations {n}",
                            "calibrating probes")
    return _result(r.stdout), rawparse.parse_lines(r.stdout.splitlines())


def io_script(prog: Path, mode: str) -> str:
    """io.bt as jvmos runs it, its GetByteArrayRegion blocks attached to probecal's target."""
    addr = symbols(prog).get("jvmos_probe_target")
    if addr is None:
        raise JvmosError(f"{prog} has no symbol jvmos_probe_target: rebuild it (make build)")
    fake = lambda p: {"jni_GetByteArrayRegion": addr} if Path(p) == prog else {}
    return render(["io"], {"LIBJVM": [prog]}, fake, mode=mode, root="cpid").text


def layer_script(prog: Path, layers: List[str], mode: str = "time") -> str:
    """common.bt and these layers as jvmos renders them, tracing probecal (its child). The
    allocator blocks of mem.bt are attached to probecal's function (as malloc); the other
    uprobes of the layers find no library and are left out: only their tracepoints run."""
    addr = symbols(prog).get("jvmos_probe_target")
    if addr is None:
        raise JvmosError(f"{prog} has no symbol jvmos_probe_target: rebuild it (make build)")
    fake = lambda p: {"malloc": addr} if Path(p) == prog else {}
    return render(layers, {"LIBC": [prog]}, fake, mode=mode, root="cpid").text


# cost key -> (probecal mode, iterations, layers, script mode, kinds whose hits divide)
LAYER_COSTS = {
    "sched_switch_links_hit": ("yield", 100_000, ["links"], "time", ["links:sched_switch"]),
    "sched_switch_threads_hit": ("yield", 100_000, ["threads"], "time", ["threads:sched_switch"]),
    "sched_switch_mem_hit": ("yield", 100_000, ["mem"], "time", ["mem:sched_switch"]),
    "futex_threads_hit": ("futex", 200_000, ["threads"], "time", ["threads:futex_pair"]),
    "span_syscall_threads_hit": ("madvise", 200_000, ["threads"], "time",
                                 ["threads:span_syscall"]),
    "vm_syscall_mem_hit": ("madvise", 200_000, ["mem"], "time", ["mem:vm_syscall_pair"]),
    "link_syscall_hit": ("close", 200_000, ["links"], "time", ["links:syscall_pair"]),
    "page_fault_mem_hit": ("fault", 200_000, ["mem"], "time", ["mem:page_fault"]),
    "malloc_mem_time_hit": ("call", 200_000, ["mem"], "time", ["mem:malloc_pair"]),
    "malloc_mem_count_hit": ("call", 200_000, ["mem"], "count", ["mem:malloc_pair"]),
    "thread_common_hit": ("thread", 5_000, [], "time",
                          ["common:task_newtask", "common:sched_process_exit"]),
}


def per_hit(bare: dict, probed: dict, hits: int, scale_by_switches: bool = False) -> float:
    """(probed - bare) / hits; in yield mode the bare time is first scaled to the number of
    switches the probed run made (each switch is the loop's unit of work there)."""
    if hits <= 0:
        raise JvmosError(f"probe calibration ({probed.get('mode')}): the probes counted no hit")
    base = bare[COST]
    if scale_by_switches:
        if not bare.get("switches") or not probed.get("switches"):
            raise JvmosError("probe calibration (yield): probecal counted no context switch")
        base = base * probed["switches"] / bare["switches"]
    return (probed[COST] - base) / hits


def calibrate_layers(prog: Path, trials: int, add, log=print) -> Dict[str, List[float]]:
    """The per-hit cost of each LAYER_COSTS key, one sample per trial; returns the hits the
    maps counted per loop iteration, per key and trial (a check that each probe attached)."""
    per_iteration: Dict[str, List[float]] = {}
    scripts = {k: layer_script(prog, v[2], v[3]) for k, v in LAYER_COSTS.items()}
    for t in range(trials):
        log(f"layer probe-cost trial {t + 1}/{trials}")
        bare = {}
        for key, (mode, n, _layers, _m, kinds) in LAYER_COSTS.items():
            if mode not in bare:
                bare[mode] = _bare(prog, mode, n, full=True)
                if mode != "call":   # bare_call is added by calibrate()
                    add(f"bare_{mode}", bare[mode][COST] / n)
            b = bare[mode]
            probed, raw = _traced_full(prog, mode, n, scripts[key])
            per = hits_by_pid(raw)
            hits = sum(k.get(kind, 0) for k in per.values() for kind in kinds)
            if mode == "yield":
                # every switch of the two yielding threads is a hit: the maps must agree
                if hits < 0.9 * probed["switches"]:
                    raise JvmosError(f"probe calibration ({key}): {hits} hits counted for "
                                     f"{probed['switches']} switches: probes did not attach")
            elif hits < 0.9 * n * (2 if key == "thread_common_hit" else 1):
                raise JvmosError(f"probe calibration ({key}): {hits} hits counted for {n} "
                                 f"iterations: probes did not attach")
            add(key, per_hit(b, probed, hits, scale_by_switches=(mode == "yield")))
            per_iteration.setdefault(key, []).append(round(hits / n, 4))
    return per_iteration


def _stat(xs: List[float]) -> dict:
    m, lo, hi = mean_ci(xs)
    return {"mean_ns": m, "ci95_ns": [lo, hi], "samples_ns": [round(x, 2) for x in xs]}


def calibrate(trials: int = 5, n: int = 200_000, log=print) -> dict:
    prog = c_program("probecal")
    samples: Dict[str, List[float]] = {}
    add = lambda k, v: samples.setdefault(k, []).append(v)
    scripts = {"time": io_script(prog, "time"), "count": io_script(prog, "count")}
    for t in range(trials):
        log(f"probe-cost trial {t + 1}/{trials}")
        bare = {m: _bare(prog, m, n) for m in ("call", "write", "getpid")}
        for name, (mode, text) in MINIMAL.items():
            el, _ = _traced(prog, mode, n, text.replace("{bin}", str(prog)))
            add(name, (el - bare[mode]) / n)
        # the real bookkeeping: time mode on calls and on writes, count mode on calls
        el, raw = _traced(prog, "call", n, scripts["time"])
        add("jni_copy_time_hit", (el - bare["call"]) / n)
        timed = sum(v for k, v in raw.keyed("@time").items() if k[1] == "jni_copy")
        calls = sum(v for k, v in raw.keyed("@calls").items() if k[1] == "jni_copy")
        if calls < n:
            raise JvmosError(f"probe calibration saw {calls} of {n} calls: probes did not attach")
        add("jni_copy_time_window", timed / calls - bare["call"] / n)
        el, _ = _traced(prog, "call", n, scripts["count"])
        add("jni_copy_count_hit", (el - bare["call"]) / n)
        el, raw = _traced(prog, "write", n, scripts["time"])
        add("io_syscall_hit", (el - bare["write"]) / n)
        timed = sum(v for k, v in raw.keyed("@time").items() if k[1] == "io_syscall")
        calls = sum(v for k, v in raw.keyed("@calls").items() if k[1] == "io_syscall")
        # the window of a syscall is measured against the whole bare call (user to user)
        add("io_syscall_window", timed / calls - bare["write"] / n)
        for m, v in bare.items():
            add(f"bare_{m}", v / n)
    per_iteration = calibrate_layers(prog, trials, add, log=log)
    out = {k: _stat(v) for k, v in samples.items()}
    out["usdt"] = calibrate_usdt(out, trials=trials, log=log)   # per JDK home
    out["hits_per_iteration"] = per_iteration
    out["iterations"] = n
    out["trials"] = trials
    out["method"] = ("probecal run bare and under bpftrace in the same invocation, its process "
                     "CPU time compared; per-hit cost "
                     "= (probed - bare) / iterations (the layers' costs: / the hits their maps "
                     "counted); window = measured time per call - bare time per call")
    return out


def hit_costs(probes: Optional[dict], mode: str) -> Dict[str, Optional[float]]:
    """Per-hit costs by what is hit, for the slowdown estimate (None when uncalibrated)."""
    if not probes:
        return {}
    g = lambda k: probes.get(k, {}).get("mean_ns")
    return {"jni_copy": g("jni_copy_time_hit") if mode == "time" else g("jni_copy_count_hit"),
            "io_syscall": g("io_syscall_hit"), "uprobe": g("uprobe")}


def calibrate_jni_model(jvm, window_ns: float, io_jar: Path, sizes=(10, 4096),
                        n: int = 100_000, log=print) -> dict:
    """Cost of a JNI Region copy on this JDK, for --mode count: FileOutputStream writes of
    two sizes traced in time mode; corrected time per GetByteArrayRegion = measured - window;
    a line through the two sizes gives ns_per_call and ns_per_byte."""
    libs = {"LIBJVM": [jvm.libjvm], "LIBNIO": [jvm.libnio] if jvm.libnio else []}
    script = render(["io"], libs, symbols, mode="time", root="cpid")
    text = script.text
    pts = []
    for size in sizes:
        log(f"JNI copy cost of JDK {jvm.version}: {n:,} writes of {size} bytes, traced")
        cmd = (f"{jvm.home}/bin/java -cp {io_jar} org.jvmos.workloads.BlockingIo "
               f"--iterations {n} --size {size} --target /dev/null")
        r = session.run_command(text, cmd, f"calibrating the JNI copy cost of {jvm.home}")
        raw = rawparse.parse_lines(r.stdout.splitlines())
        calls = time = 0
        for (pid, cat, probe), v in raw.keyed("@calls").items():
            if cat == "jni_copy" and script.addresses.get(probe.split(":", 1)[1]) == "jni_GetByteArrayRegion":
                calls += v
        for (pid, cat, probe), v in raw.keyed("@time").items():
            if cat == "jni_copy" and script.addresses.get(probe.split(":", 1)[1]) == "jni_GetByteArrayRegion":
                time += v
        if calls < n:
            raise JvmosError(f"JNI copy calibration on {jvm.home} saw {calls} of {n} copies")
        per_call = time / calls - window_ns
        if per_call <= 0:
            raise JvmosError(f"JNI copy calibration on {jvm.home}: {size}-byte copies took "
                             f"{time / calls:.0f} ns per call traced, not more than the probe "
                             f"window ({window_ns:.0f} ns): the window or this run is wrong; "
                             "recalibrate on a quieter machine ('jvmos calibrate --probes')")
        pts.append((size, per_call))
    (s0, t0), (s1, t1) = pts[0], pts[-1]
    b = (t1 - t0) / (s1 - s0)
    model = {"ns_per_byte": b, "points": pts, "jdk_version": jvm.version,
             "what": "GetByteArrayRegion time per call in --mode time minus the calibrated "
                     "probe window, at two sizes; a line through the two points"}
    floor_fit(model, "ns_per_byte")
    model["ns_per_call"] = t0 - model["ns_per_byte"] * s0
    return floor_fit(model, "ns_per_call")


# ---- USDT probes of HotSpot's JNI functions beside the symbol uprobe+uretprobe pair ----
# Measured on the JVM itself (probecal has no USDT notes): BlockingIo writes `size` bytes to
# /dev/null n times, one GetByteArrayRegion per write. Cost per hit = (CPU time of the traced
# JVM - CPU time of a bare one) / hits: the probe's work runs on the traced thread, and CPU time
# (rusage of the process) is far less disturbed than wall time on a shared, loaded machine.
# bpftrace cannot take usdt probes with -c (it looks for them in the child before the JVM is
# mapped), so, as `jvmos record` does, the JVM waits at a gate until the probes are attached.
_USDT_FN = "GetByteArrayRegion"


def _loop_elapsed(stdout: str) -> int:
    for line in reversed(stdout.splitlines()):
        if line.startswith("{") and '"elapsed_ns"' in line:
            return int(json.loads(line)["elapsed_ns"])
    raise JvmosError("BlockingIo printed no result")


def _jvm_loop(jvm, n: int, size: int, script: Optional[str] = None):
    """(CPU ns of the JVM process, parsed bpftrace output or None): BlockingIo bare, or traced
    by script (which names the JVM's pid $1 and prints jvmos-ready once attached)."""
    from jvmos.tools import IO_JAR, jar
    cmd = [str(jvm.home / "bin" / "java"), "-cp", str(jar(IO_JAR)),
           "org.jvmos.workloads.BlockingIo", "--iterations", str(n), "--size", str(size),
           "--target", "/dev/null"]
    with tempfile.TemporaryDirectory() as d:
        bt_file, out_file, err_file, jerr = (Path(d) / x for x in ("p.bt", "out.json", "err",
                                                                   "jerr"))
        bt_file.write_text(script or "")

        def abort(msg, status, code):
            raise JvmosError(f"bpftrace failed while calibrating USDT probes: {msg}")

        with session.Session() as s:
            s.launch(cmd, stdout=Path(d) / "jout", stderr=jerr)
            child = s.child
            if script is not None:
                s.start_bpftrace(bt_file, [child.pid], out_file, err_file)
                s.wait_ready(out_file, err_file, abort, launched=True, timeout=300)
            s.release()
            code, _, cpu_ns = s.wait_command(watch_bpftrace=False)
            if s.bt is not None and s.bt.poll() is None:
                s.interrupt(timeout=300)    # SIGINT again if bpftrace misses it
        stdout = (Path(d) / "jout").read_text(errors="replace")
        if code:
            raise JvmosError(f"BlockingIo on {jvm.home} failed: "
                             f"{jerr.read_text(errors='replace').strip()[:200]}")
        _loop_elapsed(stdout)   # it ran to its end
        raw = rawparse.parse_lines(out_file.read_text().splitlines()) if script else None
        return cpu_ns, raw


def _usdt_scripts(jvm) -> Dict[str, str]:
    """The probe variants compared, each on GetByteArrayRegion of this JVM: a pair (entry
    stores the clock, return sums the span) and an entry alone, as USDT and as symbol probes."""
    lib = jvm.libjvm
    addr = symbols(lib)["jni_" + _USDT_FN]
    head = "BEGIN { printf(\"jvmos-ready\\n\"); }\n"
    entry = " /pid == $1/ { @n = count(); @t[tid] = nsecs; }\n"
    ret = " /pid == $1/ { @s = sum(nsecs - @t[tid]); delete(@t[tid]); }\n"
    u_in, u_out = (f"usdt:{lib}:hotspot_jni:{_USDT_FN}__entry",
                   f"usdt:{lib}:hotspot_jni:{_USDT_FN}__return")
    s_in, s_out = f"uprobe:{lib}:0x{addr:x}", f"uretprobe:{lib}:0x{addr:x}"
    return {"usdt_pair": head + u_in + entry + u_out + ret,
            "uprobe_pair": head + s_in + entry + s_out + ret,
            "usdt_entry": head + u_in + entry,
            "uprobe_entry": head + s_in + entry}


def usdt_capable(jvm) -> bool:
    """This JVM's libjvm has armed (semaphore-free) USDT probes of GetByteArrayRegion and the
    symbol, so that the two kinds can be compared on it."""
    from jvmos.jdk import usdt_probes
    notes = usdt_probes(jvm.libjvm)
    sites = [s for k in ("__entry", "__return")
             for s in notes.get(("hotspot_jni", _USDT_FN + k), [])]
    return (bool(sites) and not any(s.semaphore for s in sites)
            and "jni_" + _USDT_FN in symbols(jvm.libjvm))


def calibrate_usdt(base: dict, jvms=None, trials: int = 5, n: int = 300_000,
                   size: int = 10, log=print) -> dict:
    """Per JDK home: what HotSpot's USDT probes cost beside the symbol uprobe(+uretprobe).

      usdt_pair_hit, uprobe_pair_hit         entry+return pair, CPU ns per call
      usdt_entry_hit, uprobe_entry_hit       entry probe alone (--mode count)
      usdt_pair_window, uprobe_pair_window   time between the pair's two clock reads per call
                                             (GetByteArrayRegion's own time included)
      usdt_jni_copy_time_hit/_window,        io.bt's figures (jni_copy_time_hit/_window,
      usdt_jni_copy_count_hit                jni_copy_count_hit, calibrated on probecal with
                                             symbol probes, in `base`) + the USDT - symbol
                                             difference measured here (same bookkeeping in
                                             both: only the kind of probe differs). Derived.
    """
    from jvmos.jdk import discover_jdks
    jvms = [j for j in (jvms if jvms is not None else discover_jdks()) if usdt_capable(j)]
    g = lambda k: (base.get(k) or {}).get("mean_ns")
    res: Dict[str, dict] = {}
    for jvm in jvms:
        scripts = _usdt_scripts(jvm)
        samples: Dict[str, List[float]] = {}
        add = lambda k, v: samples.setdefault(k, []).append(v)
        for t in range(trials):
            log(f"USDT probe cost on JDK {jvm.version}: trial {t + 1}/{trials}")
            bare, _ = _jvm_loop(jvm, n, size)
            add("bare_cpu_per_call", bare / n)
            for kind, text in scripts.items():
                cpu, raw = _jvm_loop(jvm, n, size, text)
                hits = _scalar(raw, "@n")
                if not hits or hits < n:
                    raise JvmosError(f"USDT calibration on {jvm.home}: {kind} saw {hits} of "
                                     f"{n} calls: the probes did not attach")
                add(f"{kind}_hit", (cpu - bare) / hits)
                if kind.endswith("_pair"):
                    add(f"{kind}_window", _scalar(raw, "@s") / hits)
            last = lambda k: samples[k][-1]
            if g("jni_copy_time_hit") is not None:
                add("usdt_jni_copy_time_hit", g("jni_copy_time_hit")
                    + last("usdt_pair_hit") - last("uprobe_pair_hit"))
                add("usdt_jni_copy_time_window", g("jni_copy_time_window")
                    + last("usdt_pair_window") - last("uprobe_pair_window"))
            if g("jni_copy_count_hit") is not None:
                add("usdt_jni_copy_count_hit", g("jni_copy_count_hit")
                    + last("usdt_entry_hit") - last("uprobe_entry_hit"))
        out = {k: _stat(v) for k, v in samples.items()}
        out.update({"iterations": n, "trials": trials, "size": size,
                    "jdk_version": jvm.version, "libjvm": str(jvm.libjvm),
                    "method": "BlockingIo (one GetByteArrayRegion per write), bare and traced, "
                              "the JVM held at a gate until the probes attach; per-hit cost = "
                              "(CPU time of the traced JVM - bare) / hits; usdt_jni_copy_* = "
                              "the probecal figure of the symbol pair + (USDT - symbol) "
                              "measured here"})
        res[str(jvm.home)] = out
    return res


def _scalar(raw, name: str):
    v = raw.maps.get(name)
    if isinstance(v, dict):
        return sum(v.values()) if v else None
    return v


def probes_for(probes: Optional[dict], script, jvm_homes) -> Tuple[Optional[dict], List[str]]:
    """The probe costs that apply to a script: where its JNI copy probes are USDT, the USDT
    figures of that JDK replace the symbol pair's (unknown, with a warning, when uncalibrated)."""
    if not probes:
        return probes, []
    out = dict(probes)
    # the threads and mem layers' uprobe pairs, and --scope process's libc I/O wrappers, stay
    # symbol uprobes: they keep these figures
    for k in ("jni_copy_time_hit", "jni_copy_time_window", "jni_copy_count_hit"):
        if k in probes:
            out["symbol_pair_" + k[len("jni_copy_"):]] = probes[k]
    if not any(k == "usdt" for k in script.kinds.values()):
        return out, []
    homes = list(jvm_homes)
    cal = [(probes.get("usdt") or {}).get(str(h)) for h in homes]
    keys = ("jni_copy_time_hit", "jni_copy_time_window", "jni_copy_count_hit")
    if len(cal) == 1 and cal[0] and all(("usdt_" + k) in cal[0] for k in keys):
        for k in keys:
            out[k] = dict(cal[0]["usdt_" + k], source=f"usdt ({homes[0]})")
        return out, []
    for k in keys:      # absent = unknown: the symbol pair's figures must not stand in
        out.pop(k, None)
    if len(cal) > 1:
        why = (f"{len(homes)} JDKs were probed and their USDT probe costs differ: which one "
               "ran is not known when the costs are applied")
    else:
        why = ("their cost is not calibrated for " + (", ".join(map(str, homes)) or "this JVM")
               + " (run 'jvmos calibrate --probes')")
    out["usdt_unknown"] = why
    return out, [f"the JNI probes are USDT probes and {why}: JNI copy times are uncorrected "
                 "and their probe cost unknown"]
