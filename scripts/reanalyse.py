#!/usr/bin/env python3
"""Re-analyse every recorded run under a results tree with the analyzers of this checkout.

A check for changes that must not move any figure (a refactoring): run it before and after on
the same results tree and platform file, then `diff -r` the two output folders. For each run
directory (one with manifest.json and the raw probe output: raw/engine.json with the
probes.plan.json it was made with, or a bpftrace-era raw/bpftrace.json) it writes

  <name>.summary.json  the summary rebuilt from the raw probe output, the manifest's record of
                       the recording (addresses, processes, mode, scope, status, wall time) and
                       the platform file given (its costs may differ from the ones the run was
                       made with: the check is old code against new code on the same inputs)
  <name>.report.txt    `jvmos report` of the committed run directory

and, for an experiment folder that can re-tabulate itself (`jvmos run heuristic --analyze`),
the tables it prints.

  scripts/reanalyse.py --platform build/test-platform.json results /tmp/before
"""
import argparse
import contextlib
import io
import json
import shutil
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace


def rebuild(run: Path, platform: dict) -> dict:
    from jvmos import calibrate as cal
    from jvmos.analyzers import bpftrace, summary as summ
    from jvmos.probecost import probes_for
    from jvmos.conclusion import jvm_homes
    m = json.loads((run / "manifest.json").read_text())
    committed = json.loads((run / "summary.json").read_text())
    probes = m.get("probes") or {}
    decoys = (probes.get("scope") or {}).get("decoys")
    raw = bpftrace.parse_file(run / "raw" / "bpftrace.json", decoys=decoys)
    homes, ran = jvm_homes(m.get("processes") or {}, m.get("attach_pid"),
                           [j["home"] for j in m.get("jvms_probed", [])])
    script = SimpleNamespace(kinds=probes.get("kinds") or {},
                             addresses=probes.get("addresses") or {})
    probe_costs, _ = probes_for(platform.get("probes"), script, ran)
    scoped = (probes.get("scope") or {}).get("mode") == "process"
    s = summ.build(raw, wall_ns=m["wall_ns"], status=m["status"],
                   addresses=script.addresses, costs=cal.costs_for(platform),
                   jvms_by_pid=homes, exit_code=m.get("exit_code"), probes=probe_costs,
                   mode=m.get("mode", "time"), scope="process" if scoped else "host")
    return _totals(s, m, committed)


def _totals(s: dict, m: dict, committed: dict) -> dict:
    from jvmos import cputime
    t = committed.get("totals") or {}
    target = {"cpu_ns": t.get("target_cpu_ns"), "complete": t.get("target_cpu_complete"),
              "method": t.get("target_cpu_method")}
    try:
        s["totals"].update(cputime.overhead_totals(
            s["totals"].get("guaranteed_overhead_ns"), m["wall_ns"], target,
            s["totals"].get("probe_overhead_ns")))
    except Exception as e:          # an older signature: the check compares like with like
        s["totals"]["overhead_totals_error"] = repr(e)
    return s


def rebuild_engine(run: Path, platform: dict) -> dict:
    """A recording of the compiled engine, from its final maps and its plan: corrected with
    the engine's probe costs of the platform file given."""
    from jvmos import engine as eng
    from jvmos.analyzers import summary as summ
    from jvmos.conclusion import summary_inputs
    m = json.loads((run / "manifest.json").read_text())
    committed = json.loads((run / "summary.json").read_text())
    plan = eng.plan_of_file(run / "probes.plan.json")
    raw = eng.decode(json.loads((run / "raw" / "engine.json").read_text()), plan)
    kw, _, _ = summary_inputs(platform, m, m.get("processes") or {}, raw)
    s = summ.build(raw, wall_ns=m["wall_ns"], status=m["status"], exit_code=m.get("exit_code"),
                   **kw)
    return _totals(s, m, committed)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--platform", required=True)
    p.add_argument("results")
    p.add_argument("out")
    a = p.parse_args(argv)
    from jvmos import report
    platform = json.loads(Path(a.platform).read_text())
    root, out = Path(a.results), Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    for man in sorted(root.rglob("manifest.json")):
        run = man.parent
        if not (run / "summary.json").exists():
            continue
        name = str(run.relative_to(root)).replace("/", "__")
        try:
            (out / f"{name}.report.txt").write_text(report.render(run) + "\n")
        except Exception as e:
            (out / f"{name}.report.txt").write_text(f"error: {e!r}\n")
        made = (rebuild_engine if (run / "raw" / "engine.json").exists() else
                rebuild if (run / "raw" / "bpftrace.json").exists() else None)
        if made is not None:
            try:
                s = made(run, platform)
                text = json.dumps(s, indent=1, default=str)     # key order kept: summary.json has it
            except Exception as e:
                text = f"error: {e!r}"
            (out / f"{name}.summary.json").write_text(text + "\n")
        n += 1
    for t7 in sorted(root.rglob("table7.json")):
        tmp = Path(tempfile.mkdtemp(prefix="reanalyse-"))
        try:
            shutil.copy(t7, tmp / "table7.json")
            from jvmos.experiments import heuristic
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
                heuristic.main(["--analyze", str(tmp)])
            name = str(t7.parent.relative_to(root)).replace("/", "__") or "root"
            (out / f"{name}.table7.txt").write_text(buf.getvalue().replace(str(tmp), "TMP"))
            for f in sorted(tmp.iterdir()):
                if f.suffix in (".md", ".csv"):
                    shutil.copy(f, out / f"{name}.{f.name}")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{n} run(s) re-analysed into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
