#!/usr/bin/env python3
"""Sampled CPU time in the frames a pattern names, for recordings made with `jvmos record
--sample` (their profile-<pid>.collapsed files, every JVM of the run together).

A question the categories of `jvmos report` do not answer: how much of the target's CPU went
through a given Java method, whatever it called. For each pattern (a regular expression searched
in each frame, async-profiler's annotation removed) it prints

  inclusive   samples whose stack holds a matching frame (each sample once)
  self        samples whose leaf frame matches
  ms          samples x the sampling interval, with a 95% sampling error (Poisson, 1.96 sqrt(n))
  % of all    inclusive samples / every sample of the run (the denominator: all the run's
              sampled CPU, JVM start-up, JIT compilers and GC included)

  .venv/bin/python scripts/frames.py --interval-ns 1000000 RUN_DIR [RUN_DIR ...] \\
      -p 'DataInputStream\\.readInt' -p 'DataOutputStream\\.writeInt' [--per-run 10] [--json]

--per-run N divides the times by N (the number of workload runs inside one recording).
"""
import argparse
import json
import math
import re
import sys
from pathlib import Path
from typing import Dict, List

from jvmos.analyzers.stacks import parse_collapsed, strip


def measure(run_dir: Path, patterns: List[str], interval_ns: int, per_run: int = 1) -> Dict:
    files = sorted(run_dir.glob("profile-*.collapsed"))
    if not files:
        raise SystemExit(f"frames.py: error: {run_dir}: no profile-*.collapsed "
                         "(was it recorded with --sample?)")
    compiled = [(p, re.compile(p)) for p in patterns]
    total = 0
    inclusive = {p: 0 for p in patterns}
    leaf = {p: 0 for p in patterns}
    for f in files:
        for frames, n in parse_collapsed(f.read_text(errors="replace").splitlines()):
            names = [strip(fr) for fr in frames]
            total += n
            for p, rx in compiled:
                if any(rx.search(x) for x in names):
                    inclusive[p] += n
                if names and rx.search(names[-1]):
                    leaf[p] += n

    def ms(n: int) -> float:
        return n * interval_ns / 1e6 / per_run

    def err(n: int) -> float:
        return 1.96 * math.sqrt(n) * interval_ns / 1e6 / per_run

    return {
        "run_dir": str(run_dir), "profiles": len(files), "samples_total": total,
        "interval_ns": interval_ns, "per_run": per_run,
        "all_ms": ms(total),
        "patterns": {p: {"inclusive_samples": inclusive[p], "self_samples": leaf[p],
                         "inclusive_ms": ms(inclusive[p]), "inclusive_err95_ms": err(inclusive[p]),
                         "self_ms": ms(leaf[p]),
                         "share_of_all_pct": 100.0 * inclusive[p] / total if total else None}
                     for p in patterns},
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dirs", nargs="+", type=Path)
    ap.add_argument("-p", "--pattern", action="append", required=True,
                    help="a regular expression searched in each frame (repeatable)")
    ap.add_argument("--interval-ns", type=int, required=True,
                    help="the sampling interval the profiles were made with (jvmos record "
                         "--sample: 1000000)")
    ap.add_argument("--per-run", type=int, default=1,
                    help="divide the times by this many workload runs per recording")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if a.interval_ns <= 0 or a.per_run <= 0:
        ap.error("--interval-ns and --per-run must be positive")
    for p in a.pattern:
        try:
            re.compile(p)
        except re.error as e:
            ap.error(f"--pattern {p!r}: {e}")
    results = [measure(d, a.pattern, a.interval_ns, a.per_run) for d in a.run_dirs]
    if a.json:
        print(json.dumps(results, indent=1))
        return 0
    unit = "ms per run" if a.per_run > 1 else "ms"
    for r in results:
        print(f"{r['run_dir']}: {r['samples_total']} samples in {r['profiles']} profiles, "
              f"{r['all_ms']:.1f} {unit} of sampled CPU")
        for p, v in r["patterns"].items():
            share = v["share_of_all_pct"]
            print(f"  {p:40s} inclusive {v['inclusive_ms']:8.1f} ± {v['inclusive_err95_ms']:.1f} "
                  f"{unit} ({share:.1f}% of all)  self {v['self_ms']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
