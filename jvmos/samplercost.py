"""What a CPU profile costs the JVM it samples (`jvmos calibrate --sampler`), so that the
agent's --sample windows can be sized within --max-overhead as its probes are.

async-profiler's cpu event takes a sample every INTERVAL of a thread's CPU time: a signal, a
walk of the thread's stack, a record in the profile. A window also costs the JVM something
whatever its length: the attach (jattach's command, answered by the JVM's attach listener),
the start (a perf event opened per thread) and the stop (the JFR file written). So the model
has two constants, both CPU time of the sampled JVM's process (every thread, the kernel's time
on its behalf included):

    cost of a window = ns_per_window + ns_per_sample x samples

Measured on a fixed CPU loop (workloads/java/io SamplerLoad: one thread, a xorshift over a
4 KiB table at the bottom of DEPTH nested Java calls), in segments of the same number of units
of work, three arms in blocks of six segments in the order bare, sampled, window, window,
sampled, bare (ABCCBA: a linear drift cancels within a block):

  * bare: the loop alone;
  * sampled: a window at CALIBRATION_INTERVAL_NS around the segment (started before it, stopped
    after it), its samples counted afterwards from its JFR by async-profiler's converter;
  * window: a window around the segment at an interval longer than the segment (no sample, or
    one): what starting and stopping a window costs.

Per block: ns_per_window = mean(window) - mean(bare), ns_per_sample = (mean(sampled) -
mean(window)) / mean(samples of the sampled segments); each constant is the mean over blocks
with Student's t 95% interval (n = blocks). The process CPU is the kernel's process-wide clock
(jvmos.cputime), read before the window starts and after it stopped.

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
from typing import Callable, Dict, List, Optional

from jvmos import JvmosError
from jvmos.jdk import Jvm

DEPTH = 64
# 10x the agent's rate (jvmos.profiles.INTERVAL_MS): the samples stand out of the loop's noise
CALIBRATION_INTERVAL_NS = 1_000_000
SEGMENT_S = 1.0                 # the CPU a segment's units take, bare (sized by a pilot)
ORDER = ("idle", "window", "bare", "sampled", "sampled", "bare", "window", "idle")
METHOD = ("ABBA blocks of idle / window gaps and bare / sampled loops (a fixed CPU loop, one "
          "thread at a depth of {depth} Java calls), process CPU; per block ns_per_window = "
          "window - idle, ns_per_sample = (sampled - bare - ns_per_window) / samples; mean over "
          "blocks, Student's t 95% (n = {n})")


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
    r = subprocess.run([jattach, str(pid), "load", str(sampling.lib()), "true", opts],
                       capture_output=True, text=True, timeout=60)
    out = (r.stdout + r.stderr).strip()
    if r.returncode != 0 or "return code: 0" not in out:
        raise JvmosError(f"async-profiler '{opts.split(',')[0]}' in pid {pid}: "
                         + (out.splitlines() or ["no output"])[-1])


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


IDLE_S = 0.3                    # an idle gap: the window's start and stop, or nothing


def segment(loop: Loop, units: int, arm: str, jfr: Optional[Path], interval_ns: int) -> dict:
    """One segment: the process CPU (ns) of `units` of the loop (arm "bare"), or of the loop
    inside a window (arm "sampled": started before the loop, stopped after it), or of an idle
    gap of IDLE_S with (arm "window", at an interval no idle JVM reaches) or without (arm
    "idle") a window's start and stop in it."""
    from jvmos.cputime import process_cpu_ns
    c0 = process_cpu_ns(loop.pid)
    t0 = time.monotonic()
    if arm in ("sampled", "window"):
        every = interval_ns if arm == "sampled" else 10 * 10**9
        _jattach(loop.pid, f"start,event=cpu,interval={every},jfr,file={jfr}")
    r = loop.run(units) if arm in ("bare", "sampled") else {}
    if arm in ("sampled", "window"):
        _jattach(loop.pid, "stop")
    if arm in ("idle", "window"):
        time.sleep(max(IDLE_S - (time.monotonic() - t0), 0.0))
    c1 = process_cpu_ns(loop.pid)
    return {"arm": arm, "cpu_ns": c1 - c0, "wall_ns": int((time.monotonic() - t0) * 1e9),
            "thread_cpu_ns": r.get("thread_cpu_ns"), "jfr": str(jfr) if jfr else None}


def calibrate(jvm: Jvm, blocks: int = 4, log: Callable[[str], None] = print,
              interval_ns: int = CALIBRATION_INTERVAL_NS, depth: int = DEPTH,
              segment_s: float = SEGMENT_S) -> dict:
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
            # the first load of the library and a first window, not measured
            segment(loop, units, "sampled", tmpd / "warm.jfr", interval_ns)
            segment(loop, units, "window", tmpd / "warm-idle.jfr", interval_ns)
            log(f"sampler cost: {blocks} blocks of {len(ORDER)} segments (loops of {units} "
                f"units, ~{segment_s:g} s of CPU; idle gaps of {IDLE_S:g} s), JDK "
                f"{jvm.version}, interval {interval_ns / 1e6:g} ms, depth {depth}")
            for b in range(blocks):
                for i, arm in enumerate(ORDER):
                    jfr = tmpd / f"b{b}-{i}-{arm}.jfr" if arm != "bare" else None
                    row = segment(loop, units, arm, jfr, interval_ns)
                    row["block"] = b
                    rows.append(row)
        finally:
            loop.close()
        for row in rows:
            if row["arm"] == "sampled":
                row["samples"] = count_samples(Path(row["jfr"]))
            row.pop("jfr")
    return fit(rows, jvm, interval_ns, depth, units)


def fit(rows: List[dict], jvm, interval_ns: int, depth: int, units: int) -> dict:
    """The constants from the segments (per block, then mean and interval over blocks)."""
    per_sample, per_window, rate = [], [], []
    for b in sorted({r["block"] for r in rows}):
        arm = {a: [r for r in rows if r["block"] == b and r["arm"] == a] for a in set(ORDER)}
        if not all(arm.values()):
            continue
        cpu = {a: sum(r["cpu_ns"] for r in v) / len(v) for a, v in arm.items()}
        samples = sum(r["samples"] for r in arm["sampled"]) / len(arm["sampled"])
        if samples <= 0:
            raise JvmosError(f"block {b}: the sampled segments have no sample: is "
                             "async-profiler's cpu event available here?")
        window = cpu["window"] - cpu["idle"]
        per_window.append(window)
        per_sample.append((cpu["sampled"] - cpu["bare"] - window) / samples)
        rate.append(samples / (cpu["sampled"] / 1e9))
    if len(per_sample) < 2:
        raise JvmosError("fewer than 2 complete blocks: no interval")
    return {
        "jdk": jvm.version, "home": str(jvm.home),
        "method": METHOD.format(depth=depth, n=len(per_sample)),
        "depth": depth, "interval_ns": interval_ns, "units_per_segment": units,
        "idle_s": IDLE_S,
        "ns_per_sample": _mean_ci(per_sample),
        "ns_per_window": _mean_ci(per_window),
        # what the interval promises: a sample per interval of CPU (1e9 / interval_ns per s)
        "samples_per_cpu_s": _mean_ci(rate),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "segments": rows,
    }


def validate(model: Optional[dict]) -> Optional[str]:
    """Why a platform file's sampler model cannot be used (None: it can)."""
    if not model:
        return "not calibrated (jvmos calibrate --sampler)"
    for k in ("ns_per_sample", "ns_per_window"):
        v = (model.get(k) or {}).get("mean")
        if not isinstance(v, (int, float)) or not math.isfinite(v):
            return f"{k} is missing or not a number"
    return None


def cost_ns(model: Dict, samples: float, windows: float = 1.0) -> float:
    """The model's estimate of what `windows` windows with `samples` samples cost (CPU ns);
    a constant measured below 0 (noise around a small cost) counts as 0."""
    return (max(model["ns_per_window"]["mean"], 0.0) * windows
            + max(model["ns_per_sample"]["mean"], 0.0) * samples)


def _ci_text(v: dict, scale: float, unit: str) -> str:
    ci = v.get("ci95")
    return (f"{v['mean'] / scale:.3g} {unit} (95% CI {ci[0] / scale:.3g}..{ci[1] / scale:.3g}, "
            f"n {v['n']})" if ci else f"{v['mean'] / scale:.3g} {unit} (n {v['n']}, no interval)")


def summary(model: dict) -> str:
    """The sampler's cost as `jvmos calibrate` prints it."""
    per_s = model["ns_per_sample"]["mean"] / 10 ** 7     # at the agent's 10 ms
    return (f"sampler (async-profiler, JDK {model['jdk']}, stacks {model['depth']} Java calls "
            f"deep): {_ci_text(model['ns_per_sample'], 1e3, 'µs')} of CPU per sample, "
            f"{_ci_text(model['ns_per_window'], 1e6, 'ms')} per window started and stopped; "
            f"at a sample per 10 ms of CPU that is {100 * per_s:.2g}% of the sampled JVM's CPU "
            "while a window runs")


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
