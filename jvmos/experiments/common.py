"""What every experiment does: run workloads bare and under `record`, keep each run, write tables."""
import json
import os
import sys
from pathlib import Path
from typing import List, Optional

from jvmos import JvmosError
from jvmos import record as rec
from jvmos import cputime
from jvmos.heuristic import model
from jvmos.jdk import Jvm, discover_jdks


_BAR = None      # the progress bar being drawn (Progress), which log() writes above


def log(msg: str):
    if _BAR is not None:
        _BAR.write(msg, file=sys.stderr)
    else:
        print(msg, file=sys.stderr, flush=True)


class Progress:
    """A progress bar with an ETA (tqdm) over an experiment's steps, on stderr, drawn only
    when stdout is a terminal (quiet in pipes, CI and tests). The ETA is tqdm's: the mean time
    of the steps done so far times the steps left, so it is rough when steps differ in size
    (a weight per step evens that out)."""

    def __init__(self, total: float, what: str, unit: str = "step"):
        self.total, self.what, self.unit = total, what, unit
        self.bar = None

    def __enter__(self) -> "Progress":
        global _BAR
        from tqdm import tqdm
        self.bar = tqdm(total=self.total, desc=self.what, unit=self.unit, file=sys.stderr,
                        disable=not sys.stdout.isatty(), dynamic_ncols=True, leave=False,
                        bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.0f}/{total:.0f} "
                                   "[{elapsed}<{remaining} ETA]")
        _BAR = self.bar
        return self

    def step(self, weight: float = 1) -> None:
        self.bar.update(weight)

    def __exit__(self, *exc):
        global _BAR
        _BAR = None
        self.bar.close()


def progress_over(items, what: str, unit: str = "step"):
    """The items, one at a time, with a Progress bar stepped after each."""
    items = list(items)
    with Progress(len(items), what, unit) as bar:
        for x in items:
            yield x
            bar.step()


def last_json(text: str) -> dict:
    """The last JSON object a workload printed (every workload ends with one)."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    return {}


def run_bare(cmd: List[str], timeout: float = 900) -> dict:
    """Run a workload without any probe; returns its JSON line plus the process wall time and
    its CPU time (wait4 rusage: every thread, exited ones included, and the children it
    reaped; microsecond resolution, in ns)."""
    r = cputime.run_measured(cmd, timeout=timeout)
    if r["returncode"] != 0:
        tail = (r["stderr"].strip().splitlines() or ["no output"])[-1]
        raise JvmosError(f"workload failed (exit {r['returncode']}): {' '.join(cmd)}: {tail}")
    res = last_json(r["stdout"])
    res["process_wall_ns"] = r["wall_ns"]
    res["process_cpu_ns"] = r["cpu_ns"]
    res["process_sys_ns"] = r.get("sys_ns")     # its kernel-mode part
    return res


def run_recorded(name: str, cmd: List[str], out: Path, layers=("io",),
                 **kw) -> rec.Result:
    """Record a workload into out/runs/<name>; the workload's stdout is kept in the run dir."""
    run_dir = out / "runs" / name
    run_dir.mkdir(parents=True, exist_ok=True)
    opts = rec.Options(cmd=cmd, layers=list(layers), out=run_dir,
                       stdout=run_dir / "stdout.txt", stderr=run_dir / "stderr.txt",
                       log=lambda m: log(f"  [{name}] {m}"), **kw)
    res = rec.record(opts)
    if res.status != "complete":
        tail = (Path(run_dir / "stderr.txt").read_text(errors="replace").strip().splitlines()
                or ["no output"])[-1]
        raise JvmosError(f"recording of {name} ended {res.status} (exit {res.exit_code}): {tail}")
    return res


def workload_json(res: rec.Result) -> dict:
    return last_json((res.run_dir / "stdout.txt").read_text(errors="replace"))


# the output directory the running experiment made (jvmos run writes its index.html there)
OUT_DIRS: List[Path] = []


def out_dir(arg: Optional[str], label: str) -> Path:
    out = rec.prepare_out(Path(arg) if arg else rec.default_out(label))
    OUT_DIRS.append(out)
    return out


def jdk_label(j: Jvm) -> str:
    v = j.version.split(".")[0] if j.version != "unknown" else "x"
    vendor = "temurin" if "temurin" in str(j.home).lower() or "Eclipse" in j.vendor else "openjdk"
    return f"{vendor}-{v}"


def select_jdks(homes: Optional[List[str]]) -> List[Jvm]:
    jvms = discover_jdks()
    if homes:
        want = {os.path.realpath(h) for h in homes}
        jvms = [j for j in jvms if os.path.realpath(j.home) in want]
        if not jvms:
            raise JvmosError(f"no JDK found at {', '.join(homes)}")
    if not jvms:
        raise JvmosError("no JDK found (install one, or set JAVA_HOME)")
    return jvms


def engines_note(out: Path) -> Optional[str]:
    """Which probe engine made the recordings under out/runs (every manifest says), so that
    a table says it, and says so loudly if its recordings were made with different ones."""
    engines = {}
    for m in sorted(Path(out).glob("runs/**/manifest.json")):
        try:
            man = json.loads(m.read_text())
        except (OSError, ValueError):
            continue
        if man.get("mode") == "sample":
            continue            # async-profiler alone: no probe engine
        e = (man.get("engine") or {}).get("name", "bpftrace")
        engines.setdefault(e, []).append(m.parent.name)
    if not engines:
        return None
    # bpftrace: recordings made before its probe scripts were retired (issue 23)
    what = {"bpftrace": "bpftrace 0.17 running probes/*.bt",
            "bpf": "jvmos's compiled engine (probes/*.bpf.c on cilium/ebpf), its own "
                   "probe-cost calibration"}
    if len(engines) == 1:
        e = next(iter(engines))
        return f"probes: {what.get(e, e)}, every recording"
    return ("probes: MIXED ENGINES, the rows are not comparable: " +
            "; ".join(f"{what.get(e, e)} for {', '.join(r)}" for e, r in sorted(engines.items())))


def load_finished(src: Path, experiment: str, key: str) -> dict:
    """A finished experiment's JSON for --render (nothing is measured): one-line errors when
    src is missing, is not JSON, or is not `jvmos run EXPERIMENT`'s (no `key` in it)."""
    if not src.is_file():
        raise JvmosError(f"{src} does not exist: --render needs a finished 'jvmos run "
                         f"{experiment}' directory")
    try:
        results = json.loads(src.read_text())
    except json.JSONDecodeError as e:
        raise JvmosError(f"{src} is not JSON ({e.msg}, line {e.lineno})")
    if results.get("experiment") != experiment or key not in results:
        raise JvmosError(f"{src} is not the result of 'jvmos run {experiment}'")
    return results


def write_outputs(out: Path, stem: str, tables, results: dict, notes: List[str] = ()):
    """The experiment's tables (markdown and CSV), notes and results (JSON), with the note of
    which probe engine made its recordings."""
    note = engines_note(out)
    if note:
        notes = list(notes) + [note]
        results = dict(results, probe_engine=note)
    md = [t.markdown() for t in tables] + ([("\n".join(f"- {n}" for n in notes) + "\n")] if notes else [])
    (out / f"{stem}.md").write_text("\n".join(md))
    for i, t in enumerate(tables):
        suffix = "" if i == 0 else f"-{i + 1}"
        (out / f"{stem}{suffix}.csv").write_text(t.csv())
    tmp = out / f".{stem}.json.tmp"
    tmp.write_text(json.dumps(results, indent=2, default=str) + "\n")
    os.replace(tmp, out / f"{stem}.json")


def headline(figure: str, here: str, paper: Optional[str] = None) -> dict:
    """An experiment's main figure for the overview page (jvmos index of a directory of
    experiments): what it is, its value on this machine, and the paper's for the same figure
    (None where the paper gives none). Kept in the results JSON under "headline"."""
    return {"figure": figure, "here": here, "paper": paper}


def publish(out: Path, stem: str, tables, results: dict, notes: List[str] = (),
            also: str = "") -> None:
    """write_outputs, then the tables and notes on stdout and where they were written
    (`also`: what else the run left there)."""
    write_outputs(out, stem, tables, results, notes)
    for t in tables:
        print(t.markdown())
    for n in notes:
        print(f"- {n}")
    print(f"\nresults: {out}/{stem}.md (and .csv, .json){also}")


# ---------------------------------------------------------------- the boundary of a recording

# the layers a boundary recording uses (ipc, matmul): I/O, threads, links, memory
BOUNDARY_LAYERS = ("io", "threads", "links", "mem")
# the io layer's syscalls by family: the stream path (read/write, what JDK 17's socket streams
# and RMI's connections issue) and the datagram path (sendto/recvfrom, DatagramSocket's);
# a family is a syscall name, not a socket type (file and pipe I/O also read and write)
STREAM_SYSCALLS = ("read", "write", "readv", "writev")
DATAGRAM_SYSCALLS = ("sendto", "recvfrom", "sendmsg", "recvmsg")


def boundary_counts(s: dict, pid: Optional[str]) -> dict:
    """What the probes saw of one process (pid) or of every process of the recording (None),
    as the inputs of per-call (or per-operation) figures: every value a number, so that two
    recordings' counts can be subtracted key by key."""
    if pid is not None and pid not in (s.get("by_pid") or {}):
        raise JvmosError(f"process {pid} is not in the recording (seen: "
                         f"{', '.join(sorted(s.get('by_pid') or {})) or 'none'})")
    src = s if pid is None else {"categories": s["by_pid"].get(pid, {}).get("categories", {}),
                                 "totals": {"context_switches":
                                            s["by_pid"].get(pid, {}).get("context_switches")}}
    cats = src["categories"]
    counts = model.counts_from_summary(src)
    cs = counts.pop("context_switches") or {}
    by = (s["totals"] if pid is None else s["by_pid"].get(pid, {})).get(
        "guaranteed_by_resource") or {}
    sc = (cats.get("io_syscall") or {}).get("syscalls") or {}
    fam = lambda names, k: sum((sc.get(n) or {}).get(k) or 0 for n in names)  # noqa: E731
    return {**counts, "context_switches": cs.get("voluntary", 0) + cs.get("involuntary", 0),
            "copy_bytes": sum((cats.get(c) or {}).get("bytes") or 0
                              for c in ("jni_copy", "nio_copy")),
            "jni_copy_calls": (cats.get("jni_copy") or {}).get("calls") or 0,
            "jni_copy_bytes": (cats.get("jni_copy") or {}).get("bytes") or 0,
            "nio_copy_calls": (cats.get("nio_copy") or {}).get("calls") or 0,
            "nio_copy_bytes": (cats.get("nio_copy") or {}).get("bytes") or 0,
            "stream_syscalls": fam(STREAM_SYSCALLS, "calls"),
            "stream_bytes": fam(STREAM_SYSCALLS, "bytes"),
            "datagram_syscalls": fam(DATAGRAM_SYSCALLS, "calls"),
            "datagram_bytes": fam(DATAGRAM_SYSCALLS, "bytes"),
            # estimated: the bytes the I/O syscalls moved x the calibrated per-byte copy cost
            "kernel_copy_ns": (cats.get("kernel_copy") or {}).get("time_ns"),
            "io_ns": by.get("io"), "mem_ns": by.get("mem"), "threads_ns": by.get("threads"),
            "links_ns": by.get("links"),
            # the sum of the resources whose time is known; guaranteed_unknown counts the
            # unknown terms (categories for the recording, resources for one process): when
            # it is not 0 the sum covers the known terms only (not a bound of a difference)
            "guaranteed_ns": sum(v for v in by.values() if v is not None),
            "guaranteed_unknown": (len(s["totals"].get("guaranteed_overhead_unknown") or [])
                                   if pid is None else
                                   sum(1 for v in by.values() if v is None))}


def record_script(out: Path, name: str, script_name: str, render) -> tuple:
    """A boundary recording of a shell script: out/runs/<name>/workload/<script_name> holds
    render(that directory)'s text, and the script is recorded with the boundary layers.
    Returns (the recording's Result, the workload directory)."""
    d = out / "runs" / name / "workload"
    d.mkdir(parents=True, exist_ok=True)
    script = d / script_name
    script.write_text(render(d))
    return run_recorded(name, ["sh", str(script)], out, layers=BOUNDARY_LAYERS), d


def difference(x: dict, y: dict) -> dict:
    """x - y key by key (None where either is unknown)."""
    return {k: None if x[k] is None or y.get(k) is None else x[k] - y[k] for k in x}


def per_extra(lo: dict, hi: dict, extra: int) -> dict:
    """What one more unit costs: (hi - lo) / extra key by key, between boundary_counts of a
    recording of 1 unit (lo) and of 1 + extra (hi); unknown terms: the larger count of the two."""
    d = {k: None if v is None else v / extra for k, v in difference(hi, lo).items()}
    d["guaranteed_unknown"] = max(lo["guaranteed_unknown"], hi["guaranteed_unknown"])
    return d


def parse_list(text: str, known, what: str) -> List[str]:
    """A comma-separated option's items, each one of `known` (one error line otherwise)."""
    out = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in out if x not in known]
    if bad or not out:
        raise JvmosError(f"unknown {what} {', '.join(bad) or '(none given)'} "
                         f"(known: {', '.join(known)})")
    return out


# ---------------------------------------------------------------- the probe effect, both ways

PROBE_EFFECT_HEADERS = ["probe effect: estimated (jvmos; median of the repeats if several)",
                        "observed (recorded − bare; median of the repeats if several)", "ratio"]
PROBE_EFFECT_GOAL = 0.25     # issue 11: the estimate within ±25% of the observed slowdown
PROBE_TOTALS = ("probe_overhead_ns", "probe_overhead_known_ns", "probe_overhead_ci95_ns",
                "probe_overhead_unknown_kinds", "probe_hits")


def probe_totals(totals: dict) -> dict:
    """The probe-effect figures of a summary's totals, to keep beside an experiment's row."""
    return {k: totals.get(k) for k in PROBE_TOTALS}


def probe_effect(totals: Optional[dict], recorded_ns: Optional[float],
                 bare_ns: Optional[float], observed: str, estimated: Optional[str] = None) -> dict:
    """jvmos's estimate of what its probes cost (hits x calibrated cost per hit) beside the
    slowdown observed in the same invocation (recorded minus bare, measured the way `observed`
    says). bare_ns None: the experiment has no bare run, and the row says so.
    estimated: why there is no estimate at all (e.g. sample mode attaches no probe)."""
    t = totals or {}
    est = t.get("probe_overhead_ns")
    out = {"estimated_ns": est, "estimated_ci95_ns": t.get("probe_overhead_ci95_ns"),
           "estimated_known_ns": t.get("probe_overhead_known_ns"),
           "unknown_kinds": t.get("probe_overhead_unknown_kinds") or {},
           "no_estimate": estimated,
           "observed": observed, "bare_run": bare_ns is not None,
           "observed_ns": (recorded_ns - bare_ns
                           if recorded_ns is not None and bare_ns is not None else None)}
    obs = out["observed_ns"]
    out["ratio"] = est / obs if est is not None and obs is not None and obs > 0 else None
    out["within_goal"] = (abs(out["ratio"] - 1) <= PROBE_EFFECT_GOAL
                          if out["ratio"] is not None else None)
    return out


def probe_effect_median(effects: List[dict]) -> dict:
    """One figure for repeated recordings: the medians of the estimates and of the observed
    slowdowns (an estimate missing from any repeat leaves it unknown)."""
    import statistics
    if len(effects) == 1:
        return effects[0]
    e0 = dict(effects[0])
    ests = [e["estimated_ns"] for e in effects]
    obs = [e["observed_ns"] for e in effects]
    e0["estimated_ns"] = statistics.median(ests) if None not in ests else None
    e0["estimated_ci95_ns"] = None
    e0["observed_ns"] = statistics.median(obs) if None not in obs else None
    e0["repeats"] = len(effects)
    est, o = e0["estimated_ns"], e0["observed_ns"]
    e0["ratio"] = est / o if est is not None and o is not None and o > 0 else None
    e0["within_goal"] = abs(e0["ratio"] - 1) <= PROBE_EFFECT_GOAL if e0["ratio"] is not None else None
    return e0


def probe_effect_cells(pe: Optional[dict]):
    """(formatted cells, raw values) for PROBE_EFFECT_HEADERS."""
    from jvmos.analyzers.tables import fmt_ns
    if pe is None:
        return ["—", "—", "—"], [None, None, None]
    est = pe["estimated_ns"]
    if pe.get("no_estimate"):
        e = pe["no_estimate"]
    elif est is not None:
        ci = pe.get("estimated_ci95_ns")
        e = fmt_ns(est) + (f" [{fmt_ns(ci[0])}, {fmt_ns(ci[1])}]" if ci else "")
    elif pe.get("unknown_kinds"):
        e = (f"unknown: {len(pe['unknown_kinds'])} probe kind(s) uncalibrated (the others: "
             f"{fmt_ns(pe.get('estimated_known_ns'))})")
    else:
        e = "unknown (the summary has no estimate: no probe calibration)"
    if not pe["bare_run"]:
        o = "no bare run"
    else:
        o = fmt_ns(pe["observed_ns"]) + f" ({pe['observed']})"
    r = pe.get("ratio")
    if r is None:
        rt = "—"
    else:
        rt = f"{r:.2f} ({'within' if pe['within_goal'] else 'outside'} ±{PROBE_EFFECT_GOAL:.0%})"
    return [e, o, rt], [est, pe["observed_ns"], r]
