#!/usr/bin/env python3
"""Sampled CPU time in the frames a pattern names, for recordings made with `jvmos record
--sample` or `--mode sample` (their profile-<pid>.collapsed files, every JVM of the run together).

A question the categories of `jvmos report` do not answer: how much of the sampled CPU went
through a given Java method, whatever it called. For each pattern (a regular expression searched
in each frame, async-profiler's annotation such as _[j] removed) it prints

  inclusive   samples whose stack holds a matching frame (each sample once)
  self        samples whose leaf frame matches
  ms          samples x the sampling interval, with a 95% interval for the sampling error
              only (exact Poisson interval of the count: the run-to-run variation of the
              workload is not in it, and periodic sampling is treated as Poisson)
  % of all    inclusive samples / every sample of the run's profiles (the denominator: the
              sampled CPU of the JVMs profiled, from the agent's start: in launch mode their
              start-up, JIT compilers and GC included; no process that is not a JVM)

  .venv/bin/python scripts/frames.py RUN_DIR [RUN_DIR ...] \\
      -p 'DataInputStream\\.readInt$' -p 'DataOutputStream\\.writeInt$' [--per-run 10] [--json]

--per-run N divides every time by N (the number of workload runs inside one recording: the
mean per run; start-up is then shared among them too).
"""
import argparse
import json
import re
import sys
from pathlib import Path
from typing import Dict, List

from scipy.stats import chi2

from jvmos import JvmosError
from jvmos.analyzers.stacks import BadLine, parse_collapsed, strip
from jvmos.export import sampling_interval_ns
from jvmos.sampling import INTERVAL_NS


def poisson_ci95(n: int) -> tuple:
    """The exact (Garwood) 95% interval of a Poisson mean, given a count n."""
    lo = 0.0 if n == 0 else chi2.ppf(0.025, 2 * n) / 2
    hi = chi2.ppf(0.975, 2 * (n + 1)) / 2
    return lo, hi


def interval_of(run_dir: Path) -> int:
    """The sampling interval the run was made with (what its manifest's sampler names: jvmos
    samples at sampling.INTERVAL_NS); a different one is refused, not rescaled."""
    m = run_dir / "manifest.json"
    try:
        manifest = json.loads(m.read_text()) if m.is_file() else {}
    except (OSError, json.JSONDecodeError) as e:
        raise JvmosError(f"{m}: unreadable ({e})")
    iv = sampling_interval_ns(manifest, {})
    if iv != INTERVAL_NS:
        raise JvmosError(f"{run_dir}: sampled every {iv} ns, not {INTERVAL_NS}: "
                         "pass --interval-ns")
    return INTERVAL_NS


def read_profiles(run_dir: Path) -> tuple:
    """(stacks as (frames, count), profiles read); a line that is not 'frames COUNT' with a
    count > 0 is refused with its place, not skipped."""
    files = sorted(run_dir.glob("profile-*.collapsed"))
    if not files:
        raise JvmosError(f"{run_dir}: no profile-*.collapsed (was it recorded with --sample?)")
    stacks = []
    for f in files:
        try:
            text = f.read_text(errors="replace")
        except OSError as e:
            raise JvmosError(f"{f}: cannot be read ({e.strerror or e})")
        try:
            stacks += [([fr for fr in frames if fr], n)
                       for frames, n in parse_collapsed(text.splitlines(), strict=True)]
        except BadLine as e:
            raise JvmosError(f"{f}:{e.number}: not a collapsed stack ('frame;...;frame COUNT', "
                             f"COUNT > 0): {e.line[:80]!r}")
    return stacks, len(files)


def measure(run_dir: Path, patterns: List[str], interval_ns: int, per_run: int = 1) -> Dict:
    stacks, profiles = read_profiles(run_dir)
    total = sum(n for _, n in stacks)
    if total == 0:
        raise JvmosError(f"{run_dir}: the profiles hold no samples")
    compiled = [(p, re.compile(p)) for p in patterns]
    inclusive = {p: 0 for p in patterns}
    leaf = {p: 0 for p in patterns}
    for frames, n in stacks:
        names = [strip(fr) for fr in frames]
        for p, rx in compiled:
            if any(rx.search(x) for x in names):
                inclusive[p] += n
            if rx.search(names[-1]):
                leaf[p] += n

    def ms(n: float) -> float:
        return n * interval_ns / 1e6 / per_run

    out = {}
    for p in patterns:
        lo, hi = poisson_ci95(inclusive[p])
        out[p] = {"inclusive_samples": inclusive[p], "self_samples": leaf[p],
                  "inclusive_ms": ms(inclusive[p]), "inclusive_ci95_ms": [ms(lo), ms(hi)],
                  "self_ms": ms(leaf[p]),
                  "share_of_all_pct": 100.0 * inclusive[p] / total,
                  "matched": inclusive[p] > 0}
    return {"run_dir": str(run_dir), "profiles": profiles, "samples_total": total,
            "interval_ns": interval_ns, "per_run": per_run, "all_ms": ms(total),
            "patterns": out}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dirs", nargs="+", type=Path)
    ap.add_argument("-p", "--pattern", action="append", required=True,
                    help="a regular expression searched in each frame (repeatable)")
    ap.add_argument("--interval-ns", type=int,
                    help=f"the sampling interval, for profiles not made by jvmos (default: "
                         f"jvmos's, {INTERVAL_NS} ns, checked against the run's manifest)")
    ap.add_argument("--per-run", type=int, default=1,
                    help="divide the times by this many workload runs per recording")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if (a.interval_ns is not None and a.interval_ns <= 0) or a.per_run <= 0:
        ap.error("--interval-ns and --per-run must be positive")
    for p in a.pattern:
        try:
            re.compile(p)
        except re.error as e:
            ap.error(f"--pattern {p!r}: {e}")
    try:
        results = [measure(d, a.pattern, a.interval_ns or interval_of(d), a.per_run)
                   for d in a.run_dirs]
    except JvmosError as e:
        print(f"frames.py: error: {e}", file=sys.stderr)
        return 1
    if a.json:
        print(json.dumps(results, indent=1))
        return 0
    unit = f"ms per run (mean of {a.per_run})" if a.per_run > 1 else "ms"
    print(f"sampled CPU, {unit}; [95% interval of the sampling error only]")
    for r in results:
        print(f"{r['run_dir']}: {r['samples_total']} samples in {r['profiles']} profiles, "
              f"{r['all_ms']:.1f} of sampled CPU in all")
        for p, v in r["patterns"].items():
            lo, hi = v["inclusive_ci95_ms"]
            note = "" if v["matched"] else "   (no frame matched)"
            print(f"  {p:40s} inclusive {v['inclusive_ms']:8.1f} [{lo:.1f}–{hi:.1f}] "
                  f"({v['share_of_all_pct']:.1f}% of all)  self {v['self_ms']:.1f}{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
