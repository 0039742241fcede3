"""`jvmos diff BEFORE AFTER`: what changed between two recordings (or two sets of repeats), per
boundary category, in the manner of pprof's -diff_base: counts, time, and the traced
processes' CPU, each as after - before; with repeats, each difference has Welch's 95%
interval and p. `--what-if NAME` puts beside it what `jvmos predict --what-if` had predicted
for that change from the BEFORE recording, and what happened to the count it removes.

A time keeps its category's kind: on-CPU (corrected for the probe effect, or estimated from a
calibrated model, as the category's method says), or a span that may hold blocking (the
syscall spans of io_syscall and sync), or waiting (runq, thread_wait). Kinds are never summed.
"""
import json
import statistics
from pathlib import Path
from typing import List, Optional, Sequence

from jvmos import JvmosError
from jvmos.analyzers.stats import welch_diff_ci
from jvmos.analyzers.tables import Table, fmt_count
from jvmos.catalogue import time_kind
from jvmos.heuristic import whatif
from jvmos.report import load_run


# the categories whose time a what-if's change removes (the OS's part the term prices)
WHAT_IF_CATEGORIES = {
    "thread-pool": ("thread_create",), "keep-alive": ("link",), "file-handles": ("file",),
    "pretouch": ("vm",), "reuse-native-buffers": ("malloc", "free_estimated"),
    "direct-buffers": ("nio_copy",), "bigger-chunks": ("io_syscall",),
}


class Side:
    """One side of the diff: one recording or several repeats of the same configuration."""

    def __init__(self, dirs: Sequence[str], pid: Optional[int], label: str):
        if not dirs:
            raise JvmosError(f"{label}: no run directory")
        self.dirs = [str(d) for d in dirs]
        self.runs = [load_run(d) for d in dirs]
        self.parts = []
        for d, (m, s) in zip(self.dirs, self.runs):
            if s.get("status") not in ("complete", None):
                raise JvmosError(f"{d}: the recording ended {s.get('status')}: its counts are "
                                 f"short, it cannot be compared")
            part, jdk, who = whatif.jvm_of_run(s, pid)
            self.parts.append({"summary": s, "part": part, "jdk": jdk, "pid": who,
                               "layers": set(m.get("layers") or []), "mode": m.get("mode")})
        modes = {p["mode"] for p in self.parts}
        layers = {frozenset(p["layers"]) for p in self.parts}
        if len(modes) > 1 or len(layers) > 1:
            raise JvmosError(f"{label}: the repeats were recorded with different modes or "
                             f"layers ({', '.join(sorted(str(m) for m in modes))})")
        self.mode = modes.pop()
        self.layers = set(layers.pop())

    def values(self, category: str, field: str) -> List[float]:
        out = []
        for p in self.parts:
            c = (p["part"].get("categories") or {}).get(category) or {}
            v = c.get(field)
            out.append(float(v) if isinstance(v, (int, float)) else 0.0)
        return out

    def cpu(self) -> List[Optional[float]]:
        return [(p["summary"].get("totals") or {}).get("target_cpu_ns") for p in self.parts]

    def categories(self) -> List[str]:
        seen = []
        for p in self.parts:
            for k in (p["part"].get("categories") or {}):
                if k not in seen:
                    seen.append(k)
        return seen

    def method(self, category: str) -> str:
        for p in self.parts:
            c = (p["part"].get("categories") or {}).get(category)
            if c:
                return c.get("method") or "?"
        return "?"


def change(before: List[float], after: List[float]) -> dict:
    """after - before of the means; Welch's 95% interval and p when both sides have two
    values or more."""
    d = {"before": statistics.mean(before), "after": statistics.mean(after)}
    d["diff"] = d["after"] - d["before"]
    d["n"] = [len(before), len(after)]
    if len(before) >= 2 and len(after) >= 2:
        w = welch_diff_ci(after, before)
        d.update(ci95=w["ci"], p=w["p"], method=w["method"])
    else:
        d["method"] = "one recording per side: no interval (record repeats for one)"
    return d


def per_unit(values: List[Optional[float]], units: Optional[float]) -> Optional[List[float]]:
    if not units or any(v is None for v in values):
        return None
    return [v / units for v in values]


def compare(before: Side, after: Side, units=(None, None), unit: str = "unit") -> dict:
    if before.mode != after.mode:
        raise JvmosError(f"the two sides were recorded in different modes ({before.mode} and "
                         f"{after.mode}): their times are not comparable")
    if before.layers != after.layers:
        raise JvmosError(f"the two sides were recorded with different layers "
                         f"({','.join(sorted(before.layers))} and "
                         f"{','.join(sorted(after.layers))}): a category one side did not "
                         f"record would read as a change")
    rows = []
    for cat in before.categories() + [c for c in after.categories()
                                      if c not in before.categories()]:
        row = {"category": cat, "method": before.method(cat) if cat in before.categories()
               else after.method(cat), "time_kind": time_kind(cat),
               "calls": change(before.values(cat, "calls"), after.values(cat, "calls")),
               "time_ns": change(before.values(cat, "time_ns"), after.values(cat, "time_ns"))}
        b = before.values(cat, "bytes") + after.values(cat, "bytes")
        if any(b):
            row["bytes"] = change(before.values(cat, "bytes"), after.values(cat, "bytes"))
        rows.append(row)
    res = {"before": before.dirs, "after": after.dirs, "mode": before.mode,
           "layers": sorted(before.layers & after.layers), "categories": rows}
    cb, ca = before.cpu(), after.cpu()
    if None not in cb and None not in ca:
        res["target_cpu_ns"] = change(cb, ca)
    pb, pa = per_unit(cb, units[0]), per_unit(ca, units[1])
    if pb and pa:
        res["target_cpu_ns_per_unit"] = change(pb, pa)
        res["unit"], res["units"] = unit, list(units)
    return res


def what_if_beside(name: str, before: Side, after: Side, platform: dict) -> dict:
    """The what-if's prediction from each BEFORE recording (mean over repeats), and what
    happened: the count it removes, after - before, and the time of its categories."""
    w = whatif.WHAT_IFS[name]
    if w.layer not in before.layers or w.layer not in after.layers:
        raise JvmosError(f"--what-if {name} needs the {w.layer} layer on both sides")
    preds = [whatif.from_run(name, p["part"], platform, p["jdk"]) for p in before.parts]
    cb = [whatif.counts(p["part"])[w.count_key] for p in before.parts]
    ca = [whatif.counts(p["part"])[w.count_key] for p in after.parts]
    cats = WHAT_IF_CATEGORIES[name]
    tb = [sum(x) for x in zip(*(before.values(c, "time_ns") for c in cats))]
    ta = [sum(x) for x in zip(*(after.values(c, "time_ns") for c in cats))]
    return {"what_if": name, "term": w.term, "count_what": w.count_what,
            "predicted_saving_us": statistics.mean(p["predicted_us"] for p in preds),
            "predicted_ci95_us": [statistics.mean(p["predicted_ci95_us"][i] for p in preds)
                                  for i in (0, 1)],
            "prediction_is": preds[0]["bound"],
            "scaled_from_intervention_us": (statistics.mean(p["scaled_from_intervention_us"]
                                                            for p in preds)
                                            if all("scaled_from_intervention_us" in p
                                                   for p in preds) else None),
            "validation": preds[0]["validation"].get("status"),
            "count": change(cb, ca), "categories": list(cats),
            "categories_time_kind": time_kind(cats[0]),
            "categories_time_ns": change(tb, ta)}


# ------------------------------------------------------------------------------ output

def _ms(ns: float) -> str:
    return f"{ns / 1e6:+,.3f}"


def _ci(d: dict, scale: float = 1e6, fmt: str = "{:+,.3f}") -> str:
    if "ci95" not in d:
        return ""
    return (f" [{fmt.format(d['ci95'][0] / scale)}, {fmt.format(d['ci95'][1] / scale)}], "
            f"p={d['p']:.2g}")


def tables(res: dict) -> List[Table]:
    n = res["categories"][0]["calls"]["n"] if res["categories"] else [1, 1]
    t = Table(f"jvmos diff: after - before, per category ({n[0]} recording(s) before, {n[1]} "
              f"after; {res['mode']} mode)",
              ["category", "calls before", "calls after", "calls, after - before",
               "time before, ms", "time after, ms", "time, after - before, ms", "time is",
               "method"])
    for r in res["categories"]:
        c, tm = r["calls"], r["time_ns"]
        t.add([r["category"], fmt_count(round(c["before"])), fmt_count(round(c["after"])),
               f"{c['diff']:+,.0f}{_ci(c, 1, '{:+,.0f}')}", f"{tm['before'] / 1e6:,.3f}",
               f"{tm['after'] / 1e6:,.3f}", _ms(tm["diff"]) + _ci(tm), r["time_kind"],
               r["method"]])
    out = [t]
    s = Table("The traced processes' CPU (their CPU clocks, probes included)",
              ["figure", "before", "after", "after - before [95%]"])
    if "target_cpu_ns" in res:
        c = res["target_cpu_ns"]
        s.add(["CPU, ms", f"{c['before'] / 1e6:,.1f}", f"{c['after'] / 1e6:,.1f}",
               _ms(c["diff"]) + _ci(c)])
    if "target_cpu_ns_per_unit" in res:
        c = res["target_cpu_ns_per_unit"]
        s.add([f"CPU per {res['unit']}, µs", f"{c['before'] / 1e3:,.2f}",
               f"{c['after'] / 1e3:,.2f}", f"{c['diff'] / 1e3:+,.2f}" + _ci(c, 1e3, "{:+,.2f}")])
    if s.rows:
        out.append(s)
    if res.get("what_if"):
        w = Table("What the what-if predicted, beside what happened",
                  ["what-if", "count (BEFORE -> AFTER)", "predicted (the OS's part), after - "
                   "before, ms [95%]", "time of its categories, after - before, ms",
                   "traced processes' CPU (probes included), after - before, ms",
                   "scaled from the intervention, after - before, ms"])
        for x in res["what_if"]:
            c, tc = x["count"], x["categories_time_ns"]
            cpu = res.get("target_cpu_ns")
            w.add([f"{x['what_if']} ({x['term']})",
                   f"{c['before']:,.0f} -> {c['after']:,.0f} ({c['diff']:+,.0f} "
                   f"{x['count_what']})",
                   # a saving is a negative change, as in the other columns
                   f"{-x['predicted_saving_us'] / 1e3:+,.3f} [{-x['predicted_ci95_us'][1] / 1e3:+,.3f}"
                   f", {-x['predicted_ci95_us'][0] / 1e3:+,.3f}]",
                   f"{_ms(tc['diff'])} ({', '.join(x['categories'])}: "
                   f"{x['categories_time_kind']})" + _ci(tc),
                   (_ms(cpu["diff"]) + _ci(cpu)) if cpu else "—",
                   "—" if x["scaled_from_intervention_us"] is None
                   else f"{-x['scaled_from_intervention_us'] / 1e3:+,.3f}"])
        out.append(w)
    return out


NOTES = [
    "after - before: the mean of the AFTER recordings minus the mean of the BEFORE ones; a "
    "saving is negative. With two or more recordings on each side: Welch's 95% interval of "
    "that difference and its two-sided p.",
    "time is: on-CPU (corrected for the probes' effect, or estimated from a calibrated model: "
    "the method says which), a span from a syscall's entry to its return (blocking included), "
    "or waiting. Different kinds are never added.",
    "predicted: `jvmos predict --what-if` on each BEFORE recording (the OS's part of each use "
    "it would remove, at this machine's constants; the mean over the BEFORE recordings), "
    "written as a change (a saving is negative). It prices the uses the change removes, not "
    "the JVM's and the library's work around them, which the CPU column holds too.",
]


def figure_svg(res: dict) -> Optional[str]:
    """Horizontal bars of each category's on-CPU time change (after - before), with its
    interval where repeats give one: the differential view of the table."""
    from jvmos import htmlreport
    rows = [r for r in res["categories"] if r["time_kind"] == "on-CPU" and r["time_ns"]["diff"]]
    if not rows:
        return None
    fig = htmlreport._new_figure(7.5, 0.35 * len(rows) + 1.4)
    ax = fig.subplots()
    ys = range(len(rows))
    vals = [r["time_ns"]["diff"] / 1e6 for r in rows]
    err = [[max(0.0, v - r["time_ns"]["ci95"][0] / 1e6) for v, r in zip(vals, rows)],
           [max(0.0, r["time_ns"]["ci95"][1] / 1e6 - v) for v, r in zip(vals, rows)]] \
        if all("ci95" in r["time_ns"] for r in rows) else None
    ax.barh(list(ys), vals, xerr=err, color=["tab:green" if v < 0 else "tab:red" for v in vals],
            capsize=3)
    ax.set_yticks(list(ys), [r["category"] for r in rows])
    ax.axvline(0, color="grey", lw=0.8)
    ax.invert_yaxis()
    ax.set_xlabel("on-CPU time, after - before, ms (green: saved)")
    fig.tight_layout()
    return htmlreport.figure_svg(fig, "diff")


def write(out: Path, res: dict) -> List[Path]:
    from jvmos import htmlreport
    out.mkdir(parents=True, exist_ok=True)
    ts = tables(res)
    md = "\n".join(t.markdown() for t in ts) + "\n" + "\n".join(f"- {n}" for n in NOTES) + "\n"
    (out / "diff.md").write_text(md)
    (out / "diff.json").write_text(json.dumps(res, indent=2) + "\n")
    body = ["<h1>jvmos diff</h1>",
            f"<p>before: {htmlreport.esc(', '.join(res['before']))}<br>after: "
            f"{htmlreport.esc(', '.join(res['after']))}</p>"]
    svg = figure_svg(res)
    if svg:
        body.append(f'<figure>{svg}<figcaption>on-CPU time by category, after - before'
                    f'</figcaption></figure>')
    body.append(htmlreport.markdown_html(md))
    htmlreport._write(out / "diff.html", htmlreport._page("jvmos diff", body))
    return [out / "diff.md", out / "diff.json", out / "diff.html"]


def run(before: Sequence[str], after: Sequence[str], pid: Optional[int] = None,
        units=(None, None), unit: str = "unit", what_ifs: Sequence[str] = (),
        platform: Optional[dict] = None) -> dict:
    b, a = Side(before, pid, "BEFORE"), Side(after, pid, "AFTER")
    res = compare(b, a, units, unit)
    if what_ifs:
        res["what_if"] = [what_if_beside(n, b, a, platform) for n in what_ifs]
    return res
