"""What a CPU profile costs the JVM it samples (`jvmos calibrate --sampler`), so that the
agent's --sample windows can be sized within --max-overhead as its probes are.

async-profiler's itimer engine (EVENT) takes a sample every INTERVAL of the process's CPU
time: a signal, a walk of the running thread's stack, a record in the profile. A window also
costs the JVM something whatever its length: the attach (jattach's command, answered by the
JVM's attach listener), the start and the stop (the JFR file written). And while it is open,
with or without samples, the profiler costs the JVM something every second (an empty window
of 4 s cost more than one of 1 s, by hand and in every calibration since). So the model has
three constants, all CPU time of the sampled JVM's process (every thread, the kernel's time
on its behalf included):

    cost of a window = ns_per_window + ns_per_window_s x its seconds + ns_per_sample x samples

Measured on a fixed CPU loop (workloads/java/io SamplerLoad: one thread, a xorshift over a
4 KiB table at the bottom of DEPTH nested Java calls). Each window is made as the agent makes
its own: one jattach command, `start,...,timeout=T`, and async-profiler stops by itself T
seconds later and closes its JFR. A block is sixteen segments of six arms in the order idle,
window, short idle, short window, loaded, sampled, sampled, loaded, loaded, sampled, sampled,
loaded, short window, short idle, window, idle (each arm's mean position is the block's
middle, so a linear drift cancels; four loops of each kind, for a sample costs the loop about
0.7% of its CPU, less than the loop's own spread from one segment to the next, about 1%):

  * window / idle: a window of LONG_S seconds with no sample (an interval no idle JVM
    reaches), or the JVM idle as long;
  * short window / short idle: the same with a 1 s window;
  * loaded: the loop (SEGMENT_S of CPU) inside a T s window with no sample (an interval of
    100 s), started and stopped as a sampled one is;
  * sampled: the loop inside a T s window at CALIBRATION_INTERVAL_NS (its timeout ends after
    the loop); its samples counted afterwards from its JFR by async-profiler's converter.
    A sampled segment differs from a loaded one only by its samples, so their difference is
    the samples' cost alone, with none of the window's noise in it (an earlier design took
    the samples' cost as sampled - bare - window: the windows' noise, tens of ms, swamped the
    samples' few ms, and one calibration priced a sample at -17.6 µs).

Each segment's figure is the process CPU (the kernel's process-wide clock, jvmos.cputime),
read before the window's jattach and GAP_S after its timeout. Per block, with W = window -
idle and S = short window - short idle: ns_per_window_s = (W - S) / (LONG_S - 1),
ns_per_window = S - ns_per_window_s, ns_per_sample = (sampled - loaded) / samples; each
constant is the mean over blocks with Student's t 95% interval (n = blocks).

itimer's signal comes at the kernel's tick at the earliest: below the tick's length (4 ms at
CONFIG_HZ 250) an interval gives a sample per tick, not per interval. The model keeps the
kernel's tick rate where the kernel says it (tick_hz), and the samples per CPU second it got.

Limits, said where the constants are shown: the cost of a sample grows with the depth of the
stack it walks (the calibration's is DEPTH Java frames requested; a server's stacks are often
deeper), and with the number of threads at a window's start (one busy thread here).
"""
import json
import math
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from jvmos import JvmosError
from jvmos.jdk import Jvm

DEPTH = 64
# async-profiler's CPU sampling engine for the agent's windows: setitimer(ITIMER_PROF), a
# signal per interval of the process's CPU. On the chat server at 10 ms (results/sampler-cost,
# 12 triples) its "cpu" engine (a perf event per thread) cost 982 ms of CPU a 12 s loaded
# window and took 0.46 of the samples due; itimer 109 ms (the interval holding 0) and all.
EVENT = "itimer"
# 10x the agent's rate (jvmos.profiles.INTERVAL_MS): the samples stand out of the loop's noise
CALIBRATION_INTERVAL_NS = 1_000_000
SEGMENT_S = 0.6                 # the CPU a segment's units take, unsampled (sized by a pilot)
ORDER = ("idle", "window", "short_idle", "short_window", "loaded", "sampled", "sampled",
         "loaded", "loaded", "sampled", "sampled", "loaded", "short_window", "short_idle",
         "window", "idle")
METHOD = ("ABBA blocks of idle / window gaps of {L} s and 1 s and loops in {T} s windows "
          "without (loaded) and with samples (sampled) (a fixed CPU loop, one thread at a "
          "depth of {depth} Java calls; each window one jattach start that stops by its "
          "timeout, as the agent's), process CPU; per block W = window - idle, S = short "
          "window - short idle, ns_per_window_s = (W - S) / ({L} - 1), ns_per_window = S - "
          "ns_per_window_s, ns_per_sample = (sampled - loaded) / samples; mean over blocks, "
          "Student's t 95% (n = {n})")


def kernel_hz() -> Optional[int]:
    """The kernel's tick rate (CONFIG_HZ) from its build configuration, where the system keeps
    it (/boot/config-RELEASE or /proc/config.gz); None when neither says."""
    import gzip
    import os
    release = os.uname().release
    for path, opener in ((f"/boot/config-{release}", open), ("/proc/config.gz", gzip.open)):
        try:
            with opener(path, "rt") as f:
                for line in f:
                    if line.startswith("CONFIG_HZ="):
                        return int(line.split("=", 1)[1])
        except (OSError, ValueError):
            continue
    return None


def _mean_ci(xs: List[float]) -> dict:
    from scipy import stats
    n = len(xs)
    m = sum(xs) / n
    if n < 2:
        return {"mean": m, "ci95": None, "n": n}
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    h = float(stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    return {"mean": m, "ci95": [m - h, m + h], "n": n, "sd": sd}


class Loop:
    """The SamplerLoad JVM, driven a segment at a time."""

    def __init__(self, jvm: Jvm, depth: int = DEPTH):
        from jvmos.tools import IO_JAR, jar
        java = jvm.home / "bin" / "java"
        self.p = subprocess.Popen(
            [str(java), "-Xmx64m", "-XX:+UseSerialGC", "-cp", str(jar(IO_JAR)),
             "org.jvmos.workloads.SamplerLoad", "--depth", str(depth), "--max-seconds", "900"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = self._line()
        if not first.get("ready"):
            raise JvmosError(f"SamplerLoad did not start: {first}")
        self.pid = self.p.pid

    def _line(self) -> dict:
        """The program's next JSON line (async-profiler writes its own messages, such as
        "Profiling started", on the JVM's stdout too: skipped)."""
        while True:
            line = self.p.stdout.readline()
            if not line:
                err = self.p.stderr.read().strip().splitlines()
                raise JvmosError("SamplerLoad ended early: "
                                 + (err[-1] if err else "no output"))
            if line.startswith("{"):
                return json.loads(line)

    def run(self, units: int) -> dict:
        self.p.stdin.write(f"run {units}\n")
        self.p.stdin.flush()
        return self._line()

    def close(self) -> None:
        try:
            self.p.stdin.write("quit\n")
            self.p.stdin.close()
            self.p.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.p.kill()
            self.p.wait()


def _jattach(pid: int, opts: str) -> None:
    """async-profiler's command in pid, through jattach (as the agent's windows are)."""
    import shutil
    from jvmos import sampling
    jattach = shutil.which("jattach")
    if not jattach:
        raise JvmosError("the sampler's cost is measured through jattach, as the agent samples "
                         "(apt-get install jattach; make deps installs it)")
    sampling.jattach_load(jattach, pid, opts, 60, f"async-profiler '{opts.split(',')[0]}'")


def count_samples(jfr: Path) -> int:
    """The CPU samples in a JFR file async-profiler wrote (its converter's collapsed stacks)."""
    from jvmos import sampling
    java = sampling._converter_java()
    if not sampling.CONVERTER.exists() or not java:
        raise JvmosError(f"no converter ({sampling.CONVERTER}) or no java to run it")
    out = jfr.with_suffix(".collapsed")
    r = subprocess.run([java, "-jar", str(sampling.CONVERTER), "--cpu", "-o", "collapsed",
                        str(jfr), str(out)], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise JvmosError("the converter failed: "
                         + (r.stderr.strip().splitlines() or ["no output"])[-1])
    if not out.exists():          # a window without a sample: nothing to write
        return 0
    n = 0
    for line in out.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack:
            n += int(count)
    return n


GAP_S = 0.6                     # after a window's timeout, before the CPU is read
LONG_S = 4                      # the long windows without a sample (the short ones: 1 s)


def segment(loop: Loop, units: int, arm: str, jfr: Optional[Path], interval_ns: int,
            timeout_s: int, event: str = None) -> dict:
    """One segment (the arms above): its process CPU (ns) from before the window's jattach to
    GAP_S after its timeout (timeout_s with the loop, LONG_S or 1 s without)."""
    from jvmos.cputime import process_cpu_ns
    event = event or EVENT
    seconds = (1 if arm.startswith("short") else LONG_S if arm in ("window", "idle")
               else timeout_s)
    c0 = process_cpu_ns(loop.pid)
    t0 = time.monotonic()
    if arm in ("sampled", "loaded", "window", "short_window"):
        every = interval_ns if arm == "sampled" else 100 * 10**9
        _jattach(loop.pid, f"start,event={event},interval={every},jfr,file={jfr},"
                           f"timeout={seconds}")
    r = loop.run(units) if arm in ("loaded", "sampled") else {}
    time.sleep(max(seconds + GAP_S - (time.monotonic() - t0), 0.0))
    c1 = process_cpu_ns(loop.pid)
    return {"arm": arm, "cpu_ns": c1 - c0, "wall_ns": int((time.monotonic() - t0) * 1e9),
            "thread_cpu_ns": r.get("thread_cpu_ns"), "jfr": str(jfr) if jfr else None}


def calibrate(jvm: Jvm, blocks: int = 4, log: Callable[[str], None] = print,
              interval_ns: int = CALIBRATION_INTERVAL_NS, depth: int = DEPTH,
              segment_s: float = SEGMENT_S, event: str = EVENT) -> dict:
    """The two constants of the model above, measured on jvm."""
    if blocks < 2:
        raise JvmosError("the sampler's cost needs at least 2 blocks (an interval needs n >= 2)")
    loop = Loop(jvm, depth)
    rows: List[dict] = []
    with tempfile.TemporaryDirectory(prefix="jvmos-sampler-") as tmp:
        tmpd = Path(tmp)
        try:
            pilot = loop.run(20)
            units = max(1, round(20 * segment_s * 1e9 / max(pilot["thread_cpu_ns"], 1)))
            # a sampled loop's window ends after it (the loop's wall time, sampled: longer)
            timeout = math.ceil(1.5 * segment_s * pilot["elapsed_ns"]
                                / max(pilot["thread_cpu_ns"], 1)) + 1
            # the first load of the library and a first window, not measured
            segment(loop, units, "sampled", tmpd / "warm.jfr", interval_ns, timeout, event)
            segment(loop, units, "window", tmpd / "warm-idle.jfr", interval_ns, timeout, event)
            segment(loop, units, "short_window", tmpd / "warm-short.jfr", interval_ns, timeout,
                    event)
            log(f"sampler cost: {blocks} blocks of {len(ORDER)} segments (loops of {units} "
                f"units, ~{segment_s:g} s of CPU; windows of {timeout} s and 1 s), JDK "
                f"{jvm.version}, interval {interval_ns / 1e6:g} ms, depth {depth}")
            for b in range(blocks):
                for i, arm in enumerate(ORDER):
                    jfr = tmpd / f"b{b}-{i}-{arm}.jfr"
                    row = segment(loop, units, arm, jfr, interval_ns, timeout, event)
                    row["block"] = b
                    rows.append(row)
        finally:
            loop.close()
        for row in rows:
            if row["arm"] == "sampled":
                row["samples"] = count_samples(Path(row["jfr"]))
            row.pop("jfr")
    model = fit(rows, jvm, interval_ns, depth, units, timeout)
    model["event"] = event
    return model


def fit(rows: List[dict], jvm, interval_ns: int, depth: int, units: int,
        timeout_s: int) -> dict:
    """The constants from the segments (per block, then mean and interval over blocks)."""
    long_s = LONG_S
    per_sample, per_window, per_second, rate = [], [], [], []
    for b in sorted({r["block"] for r in rows}):
        arm = {a: [r for r in rows if r["block"] == b and r["arm"] == a] for a in set(ORDER)}
        if not all(arm.values()):
            continue
        cpu = {a: sum(r["cpu_ns"] for r in v) / len(v) for a, v in arm.items()}
        samples = sum(r["samples"] for r in arm["sampled"]) / len(arm["sampled"])
        if samples <= 0:
            raise JvmosError(f"block {b}: the sampled segments have no sample: is "
                             "async-profiler's cpu event available here?")
        long_w = cpu["window"] - cpu["idle"]
        short_w = cpu["short_window"] - cpu["short_idle"]
        g = (long_w - short_w) / (long_s - 1)
        f = short_w - g
        per_second.append(g)
        per_window.append(f)
        per_sample.append((cpu["sampled"] - cpu["loaded"]) / samples)
        rate.append(samples / (arm_cpu(arm["sampled"]) / 1e9))
    if len(per_sample) < 2:
        raise JvmosError("fewer than 2 complete blocks: no interval")
    return {
        "jdk": jvm.version, "home": str(jvm.home),
        "method": METHOD.format(depth=depth, n=len(per_sample), T=timeout_s, L=long_s),
        "depth": depth, "interval_ns": interval_ns, "units_per_segment": units,
        "window_s": timeout_s, "long_window_s": long_s, "gap_s": GAP_S,
        "ns_per_sample": _mean_ci(per_sample),
        "ns_per_window": _mean_ci(per_window),
        "ns_per_window_s": _mean_ci(per_second),
        # what the interval promises: a sample per interval of the sampled thread's CPU
        "samples_per_cpu_s": _mean_ci(rate),
        "tick_hz": kernel_hz(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "segments": rows,
    }


def arm_cpu(rows: List[dict]) -> float:
    """The sampled loop's own CPU (its thread's, as the JVM measured it), or the process's."""
    vals = [r.get("thread_cpu_ns") or r["cpu_ns"] for r in rows]
    return sum(vals) / len(vals)


def validate(model: Optional[dict]) -> Optional[str]:
    """Why a platform file's sampler model cannot be used (None: it can)."""
    if not model:
        return "not calibrated (jvmos calibrate --sampler)"
    if model.get("event") != EVENT:
        return (f"measured with async-profiler's {model.get('event', 'cpu')} event, the agent "
                f"samples with {EVENT} (jvmos calibrate --sampler measures it again)")
    if "ns_per_window_s" not in model:
        return ("measured before its cost per second of a window was (jvmos calibrate "
                "--sampler measures it again)")
    if any(r.get("arm") == "bare" for r in model.get("segments") or []):
        return ("measured with a design that took a sample's cost from the windows' noise "
                "(jvmos calibrate --sampler measures it again)")
    for k in ("ns_per_sample", "ns_per_window", "ns_per_window_s"):
        v = model.get(k) or {}
        ci = v.get("ci95")
        if not (isinstance(v.get("mean"), (int, float)) and math.isfinite(v["mean"])
                and ci and all(isinstance(x, (int, float)) and math.isfinite(x) for x in ci)):
            return f"{k} is missing, not a number or without its interval"
    # a sample and a window's start and stop cost the JVM something: a price whose whole 95%
    # interval is at or below 0 is not a cost (a mean below 0 with an interval above it is a
    # small cost the blocks did not resolve: priced at the interval's upper end)
    for k, unit, scale in (("ns_per_sample", "µs", 1e3), ("ns_per_window", "ms", 1e6)):
        if model[k]["ci95"][1] <= 0:
            return (f"{k} came out at {model[k]['mean'] / scale:.3g} {unit}, its 95% interval "
                    f"at or below 0 (up to {model[k]['ci95'][1] / scale:.3g} {unit}): not a "
                    "cost (jvmos calibrate --sampler measures it again)")
    return None


def constants(model: Dict) -> Tuple[float, float, float]:
    """(ns_per_sample, ns_per_window, ns_per_window_s) as the agent prices with them: the
    upper ends of their 95% intervals (at least 0), so that a window's budget holds for any
    cost the calibration could not tell from its mean (a sample costs the loop about 0.7% of
    its CPU, the loop's own spread is about 1%: two blocks once gave a mean below 0)."""
    return tuple(max(model[k]["ci95"][1], 0.0)
                 for k in ("ns_per_sample", "ns_per_window", "ns_per_window_s"))


def cost_ns(model: Dict, samples: float, seconds: float, windows: float = 1.0) -> float:
    """What `windows` windows open `seconds` in all with `samples` samples cost (CPU ns), an
    upper estimate: each constant at its 95% interval's upper end (constants)."""
    c, f, g = constants(model)
    return f * windows + g * seconds + c * samples


def _ci_text(v: dict, scale: float, unit: str) -> str:
    ci = v.get("ci95")
    return (f"{v['mean'] / scale:.3g} {unit} (95% CI {ci[0] / scale:.3g}..{ci[1] / scale:.3g}, "
            f"n {v['n']})" if ci else f"{v['mean'] / scale:.3g} {unit} (n {v['n']}, no interval)")


def summary(model: dict) -> str:
    """The sampler's cost as `jvmos calibrate` prints it."""
    share = constants(model)[0] / 10 ** 7      # samples alone, at the agent's 10 ms (floored)
    per_s = model.get("ns_per_window_s")
    return (f"sampler (async-profiler's {model.get('event', 'cpu')} event, JDK {model['jdk']}, "
            f"stacks {model['depth']} Java calls "
            f"deep): {_ci_text(model['ns_per_sample'], 1e3, 'µs')} of CPU per sample, "
            f"{_ci_text(model['ns_per_window'], 1e6, 'ms')} per window started and stopped"
            + (f", {_ci_text(per_s, 1e6, 'ms')} per second a window is open" if per_s else "")
            + f"; at a sample per 10 ms of CPU the samples alone are at most "
            f"{100 * share:.2g}% of the "
            "sampled JVM's CPU while a window runs (the agent prices windows with the upper "
            "ends of the intervals)")


def main(argv=None) -> int:
    """python -m jvmos.samplercost --platform FILE [--blocks N] [--jdk HOME]: the sampler's
    cost measured and saved into an existing platform file, alone (the agent runs it so, in
    a process of its own)."""
    import argparse
    import sys
    from jvmos import calibrate as cal
    from jvmos.jdk import discover_jdks
    ap = argparse.ArgumentParser(prog="python -m jvmos.samplercost")
    ap.add_argument("--platform", required=True)
    ap.add_argument("--blocks", type=int, default=3)
    ap.add_argument("--jdk")
    a = ap.parse_args(argv)
    try:
        path = Path(a.platform)
        platform = cal.load(path)
        if platform is None:
            raise JvmosError(f"no platform file at {path}: run 'jvmos calibrate' first")
        if a.jdk:
            from jvmos.experiments.common import select_jdks
            jvms = select_jdks([a.jdk])
        else:
            jvms = discover_jdks()
        if not jvms:
            raise JvmosError("no JDK found to measure the sampler's cost on")
        platform["sampler"] = calibrate(jvms[0], blocks=a.blocks,
                                        log=lambda m: print(m, file=sys.stderr, flush=True))
        cal.save(path, platform)
        print(summary(platform["sampler"]))
        return 0
    except JvmosError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
