"""HTML pages of jvmos's results, each one self-contained file (inline CSS and SVG, no script,
nothing fetched when the page is viewed).

- write_run_html: one finished recording as RUN_DIR/report.html: provenance from the manifest,
  the tables of the text report (`jvmos report`, jvmos/report.py) with the kind of each figure
  (measured, estimated, sampled, corrected) and its flags beside it, the warnings, figures
  (time by category; overhead over time when the live view left a timeline.json), links to
  the flame graphs of a sampled run.
- write_index_html: an experiment's output directory as EXP_DIR/index.html: its Markdown
  tables and notes, its figures, and a link to the report.html of every recording under runs/.
- timeline_figure: the overhead-over-time figure of a timeline.json as PNG and SVG files.
"""
import base64
import html
import io
import json
import math
import os
import re
from pathlib import Path
from typing import List, Optional, Sequence, Tuple
from urllib.parse import quote

from jvmos import JvmosError
from jvmos.export import write_atomically
from jvmos.analyzers.summary import missed_note
from jvmos.analyzers.tables import Table, category_table, fmt_ns
from jvmos.report import load_run, probe_kinds_table, render, scope_line

PROBE_KINDS_TITLE = "Probe effect by probe kind"

CATEGORY_TITLE = "Categories (all traced processes)"       # the text report's title

# what the figures of a category are: its method, split on "+", and whether it was corrected
KINDS = {
    "measured": "counted and timed by jvmos's probes, call by call (probe-counted)",
    "estimated": "not timed: counts or bytes × a cost calibrated by `jvmos calibrate`",
    "sampled": "CPU samples × the sampling interval (async-profiler); its interval is the "
               "95% sampling error",
    "corrected": "the probe effect (probe hits × their calibrated cost) was removed from the "
                 "measured time; `measured raw` is the time before",
}
# flags of a category, with the badge's text
FLAGS = {
    "guaranteed": ("in guaranteed overhead", "one of the terms summed into the guaranteed "
                   "overhead of the run"),
    "dominates": ("correction dominates", "the probe effect removed is larger than what "
                  "remains: the figure is mostly correction, read it with its interval"),
    "floored": ("floored", "a corrected time came out below 0 somewhere and was set to 0; the "
                "95% interval holds the value"),
    "uncorrected": ("not corrected", "probe costs not calibrated: only the raw measured time "
                    "is known"),
    "calls-estimated": ("calls estimated", "the calls were not probed but estimated"),
    "lower-bound": ("lower bound", "the figure is a lower bound"),
    "partial": ("time partial", "only part of the time was measured in this mode"),
    "unknown": ("unknown", "the time could not be computed (a calibration is missing)"),
}
KIND_COLOURS = {"measured": "#1b9e77", "estimated": "#d95f02", "sampled": "#7570b3",
                "measured+estimated": "#b8860b"}
RESOURCE_ORDER = ("io", "threads", "mem", "links")
RESOURCE_COLOURS = {"io": "#1b9e77", "threads": "#d95f02", "mem": "#7570b3",
                    "links": "#e7298a"}

CSS = """
body{font-family:"DejaVu Sans",Verdana,Arial,sans-serif;color:#1b1b1b;margin:1.5rem auto;
 max-width:82rem;padding:0 1rem;line-height:1.45;font-size:15px}
h1{font-size:1.5rem;margin-bottom:.3rem}
h2{font-size:1.2rem;border-bottom:1px solid #d0d0d0;padding-bottom:.15rem;margin-top:2rem}
h3{font-size:1.05rem;margin-bottom:.3rem}
h4,h5,h6{font-size:1rem;margin-bottom:.3rem}
nav a{margin-right:.8rem}
table{border-collapse:collapse;margin:.4rem 0 1.1rem;font-size:.88rem}
th,td{border:1px solid #c8c8c8;padding:.2rem .5rem;text-align:left;vertical-align:top}
thead th{background:#eef2f6}
tbody tr:nth-child(even){background:#f8f8f8}
table.kv th{background:#f4f4f4;white-space:nowrap;font-weight:600}
table.categories td:nth-child(-n+5),table.categories td:last-child{white-space:nowrap}
.scroll{overflow-x:auto}
code{font-family:"DejaVu Sans Mono",monospace;font-size:.86em;background:#f2f2f2;
 padding:0 .2em;border-radius:3px;word-break:break-word}
.badge{display:inline-block;font-size:.72rem;line-height:1.3;padding:0 .45em;
 margin:.05rem .2rem .05rem 0;border-radius:.7em;border:1px solid;white-space:nowrap}
.k-measured{color:#0f5e48;border-color:#1b9e77;background:#e3f4ee}
.k-estimated{color:#8a3a00;border-color:#d95f02;background:#fcebdc}
.k-sampled{color:#3f3a7a;border-color:#7570b3;background:#ebeaf6}
.k-corrected{color:#1d4f91;border-color:#3a78c2;background:#e4eefa}
.f-guaranteed{color:#333;border-color:#555;background:#fff}
.f-dominates,.f-floored{color:#fff;border-color:#b3261e;background:#c62828}
.f-uncorrected,.f-unknown{color:#555;border-color:#999;background:#eee}
.f-calls-estimated,.f-lower-bound,.f-partial{color:#6b4e00;border-color:#c99a00;
 background:#fff6d6}
dl.legend{display:grid;grid-template-columns:max-content 1fr;gap:.2rem .8rem;
 font-size:.85rem;margin:.4rem 0 1rem}
dl.legend dt{margin:0} dl.legend dd{margin:0}
ul.warnings li{color:#7a2500}
ul.overview li.sub{list-style:none;margin-left:1rem}
figure{margin:1rem 0 1.5rem}
figure svg,figure img{max-width:100%;height:auto;display:block}
figcaption{font-size:.85rem;color:#444;margin-top:.3rem}
.muted{color:#666}
details summary{cursor:pointer}
details ul{font-size:.82rem;max-height:24rem;overflow-y:auto}
"""


def esc(x) -> str:
    return html.escape(str(x), quote=True)


# ------------------------------------------------------------------------------- figures

def _num(v) -> float:
    """A JSON number as a float; anything else (null, text) as NaN: a gap in a line."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return math.nan
    return float(v)


def _text(label) -> str:
    """A label drawn as it is: matplotlib would read the text between two $ as mathtext."""
    return str(label).replace("$", r"\$")


def _unit(ns: float) -> Tuple[float, str]:
    for div, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
        if abs(ns) >= div:
            return div, unit
    return 1.0, "ns"


def _new_figure(width: float, height: float):
    from matplotlib.figure import Figure   # no pyplot: no global state, no GUI backend
    return Figure(figsize=(width, height))


def inline_svg(text: str, prefix: str) -> Optional[str]:
    """The <svg> element of an SVG document, to be written inside HTML: the XML prolog, the
    DOCTYPE and matplotlib's metadata dropped, and every id prefixed so that several figures
    in one page can not clash. None when the text holds no <svg> element."""
    start, end = text.find("<svg"), text.rfind("</svg>")
    if start < 0 or end < start:
        return None
    svg = text[start:end + len("</svg>")]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    ids = set(re.findall(r'\sid="([^"]+)"', svg))
    if ids:
        p = re.sub(r"[^A-Za-z0-9_-]", "-", prefix) + "-"
        svg = re.sub(r'(\sid=")([^"]+)"', lambda m: f'{m.group(1)}{p}{m.group(2)}"', svg)
        svg = re.sub(r"url\(#([^)\s]+)\)",
                     lambda m: f"url(#{p}{m.group(1)})" if m.group(1) in ids else m.group(0),
                     svg)
        svg = re.sub(r'((?:xlink:)?href)="#([^"]+)"',
                     lambda m: f'{m.group(1)}="#{p}{m.group(2)}"' if m.group(2) in ids
                     else m.group(0), svg)
    return svg


def figure_svg(fig, name: str) -> str:
    """A matplotlib figure as an inline <svg> element (text drawn as paths: no font needed
    by the viewer; deterministic ids)."""
    import matplotlib
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": name, "svg.fonttype": "path"}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    return inline_svg(buf.getvalue(), name)


def _interval(c: dict) -> Optional[Tuple[float, float]]:
    """A category's 95% interval of its time: time_ci95_ns, or time ± time_err95_ns."""
    ci = c.get("time_ci95_ns")
    if isinstance(ci, (list, tuple)) and len(ci) == 2 and None not in ci:
        return float(ci[0]), float(ci[1])
    t, err = c.get("time_ns"), c.get("time_err95_ns")
    if t is not None and err is not None:
        return float(t) - float(err), float(t) + float(err)
    return None


def _bars(ax, rows: list, title: str):
    """Horizontal bars of (label, ns or None, method, interval or None), coloured by method;
    a log scale when the values span more than three decades."""
    known = [v for _, v, _, _ in rows if v is not None]
    pos = [v for v in known if v > 0]
    log = bool(pos) and max(pos) / min(pos) > 1e3 and min(known) >= 0
    top = max([abs(v) for v in known] + [iv[1] for *_, iv in rows if iv] + [1.0])
    div, unit = _unit(max(abs(v) for v in known) if known else 1.0)
    if log:
        from matplotlib.ticker import FuncFormatter, NullFormatter
        ax.set_xscale("log")       # plain tick labels (1e-05 rather than mathtext 10^-5)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
    for i, (label, v, method, iv) in enumerate(rows):
        if v is None:
            ax.text(0.01, i, "unknown", transform=ax.get_yaxis_transform(), va="center",
                    fontsize=8, color="#666666", style="italic")
            continue
        ax.barh(i, v / div, color=KIND_COLOURS.get(method, "#9e9e9e"), height=0.7)
        if iv:
            lo = max(v - iv[0], 0.0)
            if log:
                lo = min(lo, v * 0.999)        # a log axis can not show a bar end at 0
            ax.errorbar(v / div, i, xerr=[[lo / div], [max(iv[1] - v, 0.0) / div]],
                        fmt="none", ecolor="#222222", elinewidth=1, capsize=3)
        if log and v <= 0:
            ax.text(0.01, i, fmt_ns(v), transform=ax.get_yaxis_transform(), va="center",
                    fontsize=8)
        else:
            x = max(v, iv[1] if iv else v) / div
            ax.annotate(fmt_ns(v), (x, i), xytext=(4, 0), textcoords="offset points",
                        va="center", fontsize=8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([_text(r[0]) for r in rows], fontsize=9)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    if log:
        ax.set_xlim(min(pos) / div / 3, top / div * 40)
    elif known:
        ax.set_xlim(min(0.0, min(known) / div * 1.1), top / div * 1.3 or 1.0)
    ax.set_xlabel(f"time ({unit}{', log scale' if log else ''})", fontsize=9)
    ax.set_title(title, fontsize=10, loc="left")
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)


def category_figure(summary: dict):
    """The guaranteed overhead's terms by resource, and the time of every category: a
    matplotlib Figure, or None when the summary has no category."""
    from matplotlib.patches import Patch
    cats = summary.get("categories") or {}
    t = summary.get("totals") or {}
    terms = t.get("guaranteed_overhead_terms") or {}
    g_rows = []
    for res, lst in terms.items():
        for term in lst or []:
            c = cats.get(term.get("category"), {})
            v = term.get("time_ns")
            g_rows.append((f"{res}: {term.get('category')}", v, term.get("method"),
                           _interval(c) if v is not None and v == c.get("time_ns") else None))
    if not terms:
        for name in t.get("guaranteed_overhead_categories") or []:
            c = cats.get(name, {})
            g_rows.append((name, c.get("time_ns"), c.get("method"), _interval(c)))
    all_rows = [(name, c.get("time_ns"), c.get("method"), _interval(c))
                for name, c in cats.items()]
    if not all_rows and not g_rows:
        return None
    panels = [r for r in (g_rows, all_rows) if r]
    fig = _new_figure(9.5, 1.6 * len(panels) + 0.32 * sum(len(r) for r in panels) + 0.6)
    axes = fig.subplots(len(panels), 1, squeeze=False,
                        gridspec_kw={"height_ratios": [len(r) + 2 for r in panels]})[:, 0]
    k = 0
    if g_rows:
        g = t.get("guaranteed_overhead_ns")
        _bars(axes[0], g_rows, "Guaranteed overhead by resource and term "
              f"(sum {fmt_ns(g) if g is not None else 'unknown'}: measured and estimated terms)")
        k = 1
    if all_rows:
        _bars(axes[k], all_rows, "Time by category, all traced processes "
              "(error bar: 95% interval)")
    methods = [m for m in KIND_COLOURS if any(r[2] == m for r in g_rows + all_rows)]
    if methods:
        fig.legend(handles=[Patch(color=KIND_COLOURS[m], label=_text(m)) for m in methods],
                   loc="lower center", ncol=len(methods), frameon=False, fontsize=9)
    fig.tight_layout(rect=(0, 0.06 if methods else 0, 1, 1))
    return fig


def _timeline_fig(timeline: dict):
    """Guaranteed overhead per interval by resource (ms), and as a share of the target's CPU
    time (%): one line per resource and one for the total; a null is a gap, not a zero."""
    ivs = [iv for iv in (timeline.get("intervals") or []) if isinstance(iv, dict)]
    step = timeline.get("interval_s")
    x = []
    for iv in ivs:
        end = _num(iv.get("t_end_s"))
        if math.isnan(end):         # an end time lost: the start + the interval, if known
            end = _num(iv.get("t_start_s")) + _num(step)
        x.append(end)
    resources = list(RESOURCE_ORDER)
    for iv in ivs:
        for r in (iv.get("guaranteed_by_resource") or {}):
            if r not in resources:
                resources.append(r)
    seen = [r for r in resources
            if any(r in (iv.get("guaranteed_by_resource") or {}) for iv in ivs)]

    def res_ns(iv, r):
        return _num((iv.get("guaranteed_by_resource") or {}).get(r))

    fig = _new_figure(9.5, 7.0)
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    lines_ms = {r: [res_ns(iv, r) / 1e6 for iv in ivs] for r in seen}
    total_ms = [_num(iv.get("guaranteed_overhead_ns")) / 1e6 for iv in ivs]
    cpu = [_num(iv.get("target_cpu_ns")) for iv in ivs]
    lines_pct = {r: [(res_ns(iv, r) / c * 100.0) if c and c > 0 else math.nan
                     for iv, c in zip(ivs, cpu)] for r in seen}
    total_pct = [_num(iv.get("guaranteed_overhead_pct_of_cpu")) for iv in ivs]
    for ax, lines, total in ((ax1, lines_ms, total_ms), (ax2, lines_pct, total_pct)):
        for r, ys in lines.items():
            empty = all(math.isnan(y) for y in ys)
            ax.plot(x, ys, marker="o", markersize=3.5, linewidth=1.4,
                    color=RESOURCE_COLOURS.get(r),
                    label=_text(r) + (" (no value)" if empty else ""))
        ax.plot(x, total, marker="s", markersize=3, linewidth=1.2, linestyle="--",
                color="#222222", label="total")
        if all(math.isnan(y) for y in total) and all(
                math.isnan(y) for ys in lines.values() for y in ys):
            ax.text(0.5, 0.5, "no value in any interval" if ivs else "no interval recorded",
                    transform=ax.transAxes, ha="center", va="center", color="#666666")
        ax.grid(color="#dddddd", linewidth=0.6)
        ax.set_ylim(bottom=0)
        ax.set_xlim(left=0)
    ax1.set_ylabel("guaranteed overhead\nper interval (ms)", fontsize=9)
    ax2.set_ylabel("% of the target's CPU time\nin the interval", fontsize=9)
    ax2.set_xlabel("time since the recording began, end of the interval (s)", fontsize=9)
    ax1.legend(fontsize=8, loc="upper left", ncol=6, frameon=False)
    every = f"{float(step):g}-s intervals" if isinstance(step, (int, float)) else "intervals"
    fig.suptitle("Guaranteed overhead over time by resource "
                 f"({every}; sum of measured and estimated terms; gaps: unknown)", fontsize=10)
    fig.tight_layout()
    return fig


def timeline_figure(timeline: dict, path_stem: Path) -> list:
    """The timeline's overhead over time as PATH_STEM.png and PATH_STEM.svg; returns the two
    paths."""
    path_stem = Path(path_stem)
    path_stem.parent.mkdir(parents=True, exist_ok=True)
    fig = _timeline_fig(timeline)
    files = []
    for ext in ("png", "svg"):
        f = path_stem.parent / f"{path_stem.name}.{ext}"
        fig.savefig(f, dpi=120, **({"metadata": {"Date": None}} if ext == "svg" else {}))
        files.append(f)
    return files


# ------------------------------------------------------------------------------ Markdown

_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s{0,3}[-*+]\s+(.*)$")
_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_RULE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
_INLINE = re.compile(r"`([^`]+)`|\*\*(.+?)\*\*")


def _cells(line: str) -> List[str]:
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|") and not s.endswith("\\|"):
        s = s[:-1]
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", s)]


def _table_start(lines: List[str], i: int) -> bool:
    return ("|" in lines[i] and i + 1 < len(lines) and bool(_SEPARATOR.match(lines[i + 1]))
            and "-" in lines[i + 1])


def _block_start(lines: List[str], i: int) -> bool:
    line = lines[i]
    return bool(_HEADING.match(line) or _BULLET.match(line) or _RULE.match(line)
                or _table_start(lines, i))


def md_blocks(text: str) -> list:
    """What jvmos's Markdown files hold, as blocks: ("heading", level, text), ("table",
    headers, rows), ("list", items), ("para", text), ("rule",)."""
    lines = text.splitlines()
    blocks, i, n = [], 0, len(lines)
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        m = _HEADING.match(line)
        if m:
            blocks.append(("heading", len(m.group(1)), m.group(2)))
            i += 1
        elif _table_start(lines, i):
            headers, rows = _cells(line), []
            i += 2
            while i < n and lines[i].strip() and "|" in lines[i] and not _HEADING.match(lines[i]):
                rows.append(_cells(lines[i]))
                i += 1
            blocks.append(("table", headers, rows))
        elif _RULE.match(line):
            blocks.append(("rule",))
            i += 1
        elif _BULLET.match(line):
            items = [_BULLET.match(line).group(1)]
            i += 1
            while i < n and lines[i].strip():
                b = _BULLET.match(lines[i])
                if b:
                    items.append(b.group(1))
                elif _block_start(lines, i):
                    break
                else:                               # a bullet's continuation line
                    items[-1] += " " + lines[i].strip()
                i += 1
            blocks.append(("list", items))
        else:
            para = [line.strip()]
            i += 1
            while i < n and lines[i].strip() and not _block_start(lines, i):
                para.append(lines[i].strip())
                i += 1
            blocks.append(("para", " ".join(para)))
    return blocks


def inline_md(text: str) -> str:
    """Escaped text, with `code` spans and **strong** spans."""
    out, pos = [], 0
    for m in _INLINE.finditer(text):
        out.append(esc(text[pos:m.start()]))
        if m.group(1) is not None:
            out.append(f"<code>{esc(m.group(1))}</code>")
        else:
            out.append(f"<strong>{esc(m.group(2))}</strong>")
        pos = m.end()
    out.append(esc(text[pos:]))
    return "".join(out)


def table_html(headers: Sequence[str], rows: Sequence[Sequence[str]], cls: str = "",
               table_id: str = "", markdown: bool = True) -> str:
    """An HTML table with a header row; cells given as text (escaped; Markdown's inline
    spans when markdown)."""
    fmt = inline_md if markdown else esc
    width = max([len(headers)] + [len(r) for r in rows])
    head = list(headers) + [""] * (width - len(headers))
    attrs = (f' class="{esc(cls)}"' if cls else "") + (f' id="{esc(table_id)}"' if table_id else "")
    out = [f'<div class="scroll"><table{attrs}>',
           "<thead><tr>" + "".join(f"<th>{fmt(h)}</th>" for h in head) + "</tr></thead>",
           "<tbody>"]
    for r in rows:
        cells = list(r) + [""] * (width - len(r))
        out.append("<tr>" + "".join(f"<td>{fmt(c)}</td>" for c in cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "\n".join(out)


def blocks_html(blocks: list, shift: int = 1) -> str:
    out = []
    for b in blocks:
        if b[0] == "heading":
            level = min(b[1] + shift, 6)
            out.append(f"<h{level}>{inline_md(b[2])}</h{level}>")
        elif b[0] == "table":
            out.append(table_html(b[1], b[2]))
        elif b[0] == "list":
            out.append("<ul>" + "".join(f"<li>{inline_md(x)}</li>" for x in b[1]) + "</ul>")
        elif b[0] == "para":
            out.append(f"<p>{inline_md(b[1])}</p>")
        elif b[0] == "rule":
            out.append("<hr>")
    return "\n".join(out)


def markdown_html(text: str, shift: int = 1) -> str:
    """The HTML of a Markdown text of the kind jvmos writes (headings, pipe tables, bullet
    lists, paragraphs, `code`); everything escaped."""
    return blocks_html(md_blocks(text), shift)


# ----------------------------------------------------------------------------- run page

def _page(title: str, body: List[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{esc(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
            + "\n".join(body) + "\n</body>\n</html>\n")


def _write(path: Path, text: str):
    write_atomically(path, text.encode("utf-8"))


def badge(cls: str, text: str, title: str) -> str:
    return f'<span class="badge {cls}" title="{esc(title)}">{esc(text)}</span>'


def category_kinds(name: str, c: dict, guaranteed: Sequence[str]) -> Tuple[list, list]:
    """(kinds, flags) of one category: the badges' classes' suffixes."""
    kinds = [k for k in str(c.get("method") or "").split("+") if k]
    if c.get("corrected"):
        kinds.append("corrected")
    flags = []
    if name in guaranteed:
        flags.append("guaranteed")
    if c.get("correction_dominates"):
        flags.append("dominates")
    if c.get("floored"):
        flags.append("floored")
    if c.get("corrected") is False and c.get("time_raw_ns") is not None:
        flags.append("uncorrected")
    if c.get("calls_method") == "estimated":
        flags.append("calls-estimated")
    if c.get("lower_bound"):
        flags.append("lower-bound")
    if c.get("time_partial"):
        flags.append("partial")
    if c.get("time_ns") is None and (c.get("time_raw_ns") is not None or c.get("basis")):
        flags.append("unknown")
    return kinds, flags


def _kind_badges(kinds: list, flags: list) -> str:
    return "".join(badge(f"k-{k}", k, KINDS.get(k, k)) for k in kinds) + "".join(
        badge(f"f-{f}", FLAGS[f][0], FLAGS[f][1]) for f in flags)


def _interval_text(c: dict) -> str:
    ci = c.get("time_ci95_ns")
    if isinstance(ci, (list, tuple)) and len(ci) == 2 and None not in ci:
        return f"{fmt_ns(ci[0])} to {fmt_ns(ci[1])}"
    if c.get("time_err95_ns") is not None:
        return f"± {fmt_ns(c['time_err95_ns'])}"
    return "—"


def category_table_html(summary: dict, table: Table) -> str:
    """The text report's category table (analyzers.tables.category_table, its cells as they
    are) with two columns more: the kind of the figures with their flags as badges, and the
    95% interval of the time."""
    guaranteed = (summary.get("totals") or {}).get("guaranteed_overhead_categories") or []
    cats = list((summary.get("categories") or {}).items())
    out = ['<div class="scroll"><table id="categories" class="categories">',
           "<thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in table.headers)
           + "<th>kind</th><th>95% interval of the time</th></tr></thead>", "<tbody>"]
    for (name, c), row in zip(cats, table.rows):
        kinds, flags = category_kinds(name, c, guaranteed)
        cls = " ".join(f"kind-{k}" for k in kinds) + "".join(f" flag-{f}" for f in flags)
        out.append(f'<tr class="{esc(cls)}" data-category="{esc(name)}">'
                   + "".join(f"<td>{esc(x)}</td>" for x in row)
                   + f'<td class="kind">{_kind_badges(kinds, flags)}</td>'
                   f"<td>{esc(_interval_text(c))}</td></tr>")
    out.append("</tbody></table></div>")
    return "\n".join(out)


def legend_html(present: set = None) -> str:
    """What each badge means (all of them when present is None)."""
    items = []
    for k, text in KINDS.items():
        if present is None or k in present:
            items.append(f"<dt>{badge('k-' + k, k, text)}</dt><dd>{inline_md(text)}</dd>")
    for f, (label, text) in FLAGS.items():
        if present is None or f in present:
            items.append(f"<dt>{badge('f-' + f, label, text)}</dt><dd>{inline_md(text)}</dd>")
    return '<dl class="legend">' + "".join(items) + "</dl>"


def _kv(rows: List[Tuple[str, str]]) -> str:
    return ('<table class="kv"><tbody>' + "".join(
        f"<tr><th>{esc(k)}</th><td>{v}</td></tr>" for k, v in rows) + "</tbody></table>")


def _details(summary_text: str, items: Sequence[str]) -> str:
    if not items:
        return esc(summary_text)
    return (f"<details><summary>{esc(summary_text)}</summary><ul>"
            + "".join(f"<li><code>{esc(x)}</code></li>" for x in items) + "</ul></details>")


def provenance_rows(m: dict, s: dict) -> List[Tuple[str, str]]:
    """(label, HTML) of what the manifest says about the recording; a key only when there."""
    rows = []
    add = rows.append
    if m.get("command"):
        add(("command", f"<code>{esc(' '.join(map(str, m['command'])))}</code>"))
    if m.get("attach_pid") is not None:
        add(("attached to pid", esc(m["attach_pid"])))
    if m.get("target"):
        add(("target", esc(m["target"])))
    status = s.get("status") or m.get("status")
    if status:
        reason = s.get("status_reason") or m.get("status_reason")
        text = esc(status) + (f": {esc(reason)}" if reason else "")
        if m.get("status") and m.get("status") != status:
            text += f" (manifest: {esc(m['status'])})"
        add(("status", text))
    code = s.get("exit_code", m.get("exit_code"))
    if code is not None:
        add(("exit code", esc(code)))
    for key, label in (("start_time", "start"), ("end_time", "end")):
        if m.get(key):
            add((label, esc(m[key])))
    if m.get("wall_ns") is not None:
        add(("wall time", esc(fmt_ns(m["wall_ns"]))))
    if m.get("duration_s") is not None:
        add(("duration asked", esc(f"{m['duration_s']} s")))
    if m.get("mode"):
        add(("mode", esc(m["mode"])))
    if m.get("sampler"):
        add(("sampler", esc(m["sampler"])))
    if m.get("layers"):
        add(("layers", esc(", ".join(m["layers"]))))
    if m.get("mode") != "sample" and (m.get("probes") or m.get("scope")):
        add(("scope", esc(scope_line(m))))
    jdks = m.get("jvms_probed") or []
    if jdks:
        add(("JDK(s)", "<br>".join(
            esc(f"JDK {j.get('version', '?')}" + (f" ({j['vendor']})" if j.get("vendor") else "")
                + (f": {j['home']}" if j.get("home") else "")) for j in jdks)))
    procs = m.get("processes") or {}
    if procs:
        items = []
        for pid, p in procs.items():
            jvm = (p or {}).get("jvm") or {}
            items.append(f"{pid}" + (f" (JDK {jvm['version']})" if jvm.get("version") else ""))
        add(("traced processes", _details(f"{len(procs)}: " + ", ".join(items[:8])
                                          + (", …" if len(items) > 8 else ""),
                                          items if len(items) > 8 else [])))
    host = m.get("host") or {}
    if host.get("kernel"):
        add(("kernel", esc(host["kernel"])))
    desc = ", ".join(str(x) for x in (host.get("hostname"), host.get("machine"),
                                      host.get("cpu_model")) if x)
    if host.get("cpus"):
        desc += f", {host['cpus']} CPUs"
    if desc:
        add(("host", esc(desc)))
    eng = m.get("engine") or {}
    if eng.get("name") == "bpf":
        from jvmos.report import engine_label
        add(("probe engine", esc(engine_label(m)
                                 + ("; " + eng["fallback"] if eng.get("fallback") else ""))))
    if m.get("bpftrace"):           # a recording made before bpftrace was retired
        add(("bpftrace", esc(m["bpftrace"])))
    probes = m.get("probes") or {}
    if probes:
        attached = probes.get("attached") or []
        n = m.get("attached_probe_count", len(attached))
        counts = ", ".join(f"{probes[k]} {k}" for k in ("uprobes", "tracepoints", "usdt")
                           if probes.get(k) is not None)
        add(("probes attached", _details(f"{n}" + (f" ({counts})" if counts else ""),
                                         sorted(set(attached)))))
        missing = probes.get("missing") or []
        add(("probes missing", _details(f"{len(missing)}" if missing else "none", missing)))
        if probes.get("usdt_skipped"):
            add(("USDT probes skipped", _details(str(len(probes["usdt_skipped"])),
                                                 list(map(str, probes["usdt_skipped"])))))
        if probes.get("script_sha256"):
            add(("probe script sha256", f"<code>{esc(probes['script_sha256'])}</code>"))
    heap = m.get("java_heap")
    if heap:
        add(("Java heap", esc(
            f"pid {heap.get('pid')}: [{heap['start']:#x}, {heap['end']:#x}) "
            f"({(heap['end'] - heap['start']) / (1 << 20):,.0f} MiB, {heap.get('collector') or '?'}; "
            f"{heap.get('source')}, read after counting stopped)"
            if heap.get("start") is not None and heap.get("end") is not None
            else f"pid {heap.get('pid')}: unknown ({heap.get('unknown')})")))
    if m.get("platform_file"):
        add(("probe-cost calibration", f"<code>{esc(m['platform_file'])}</code>"))
    t = s.get("totals") or {}
    if t.get("probe_overhead_ns") is not None:
        ci = t.get("probe_overhead_ci95_ns")
        text = f"{fmt_ns(t['probe_overhead_ns'])} added to the traced processes, estimated"
        if ci and None not in ci:
            text += f" (95%: {fmt_ns(ci[0])} to {fmt_ns(ci[1])})"
        if t.get("slowdown_pct") is not None:
            text += f"; {t['slowdown_pct']:.0f}% of their CPU time without the probes"
        add(("probe effect", esc(text)))
    elif t.get("probe_overhead_known_ns") is not None:
        add(("probe effect", esc(f"unknown; the calibrated kinds cost "
                                 f"{fmt_ns(t['probe_overhead_known_ns'])}")))
    if m.get("attach_seconds") is not None:
        add(("attach seconds", esc(f"{m['attach_seconds']} s")))
    if m.get("teardown_seconds") is not None:
        add(("teardown seconds", esc(f"{m['teardown_seconds']} s")))
    if eng.get("end"):
        add(("engine end", esc(eng["end"])))
    if m.get("engine_exit_status") is not None:
        add(("engine exit status", esc(m["engine_exit_status"])))
    if m.get("bpftrace_end"):
        add(("bpftrace end", esc(m["bpftrace_end"])))
    if m.get("bpftrace_exit_status") is not None:
        add(("bpftrace exit status", esc(m["bpftrace_exit_status"])))
    if m.get("jvmos_version"):
        add(("jvmos version", esc(m["jvmos_version"])))
    return rows


def warnings_of(m: dict, s: dict) -> List[str]:
    """The summary's and the manifest's warnings (each once), lost and missed events."""
    out = []
    for w in list(s.get("warnings") or []) + list(m.get("warnings") or []):
        if str(w) not in out:
            out.append(str(w))
    t = s.get("totals") or {}
    if t.get("lost_events"):
        who = "bpftrace" if m.get("bpftrace") else "the probes"
        out.append(f"{who} lost {t['lost_events']} events")
    for what, n in (t.get("missed_events") or {}).items():
        out.append(missed_note(what, n))
    return out


def _terms_table(t: dict) -> Optional[Table]:
    terms = t.get("guaranteed_overhead_terms") or {}
    if not terms:
        return None
    tt = Table("Terms of the guaranteed overhead", ["resource", "category", "method", "time"])
    for res, lst in terms.items():
        for term in lst or []:
            tt.add([res, term.get("category"), term.get("method"), fmt_ns(term.get("time_ns"))])
        if not lst:
            tt.add([res, "—", "—", "—"])
    return tt


def _report_parts(text: str) -> Tuple[List[str], List[str]]:
    """The text report split: its headline lines (from `wall ...` on, warnings and notes left
    out, they are listed apart) and the rest (tables and their notes)."""
    lines = text.splitlines()
    first = next((i for i, l in enumerate(lines) if l.startswith("### ")), len(lines))
    head = lines[:first]
    start = next((i for i, l in enumerate(head) if l.startswith("wall ")), 1)
    head = [l for l in head[start:] if l.strip()
            and not l.startswith(("warning: ", "note: "))]
    return head, lines[first:]


def _rest_blocks(lines: List[str]) -> list:
    """The text report's tables and the lines between them (each one a list item)."""
    md = []
    for l in lines:
        if not l.strip() or l.startswith("#") or l.lstrip().startswith("|"):
            md.append(l)
        else:
            md.append("- " + l)
    return md_blocks("\n".join(md))


def _flamegraphs(run_dir: Path, s: dict) -> List[Path]:
    names = set(p.name for p in run_dir.glob("flamegraph-*.html"))
    names |= set((s.get("sampling") or {}).get("flamegraphs") or [])
    return [run_dir / n for n in sorted(names)]


def _href(target: Path, page_dir: Path) -> str:
    return quote(Path(os.path.relpath(Path(target).resolve(), Path(page_dir).resolve())).as_posix())


def _run_page(run_dir: Path, m: dict, s: dict, page_dir: Path) -> str:
    name = run_dir.resolve().name
    title = f"jvmos recording {name}"
    body = [f"<h1>{esc(title)}</h1>"]
    what = (" ".join(map(str, m["command"])) if m.get("command")
            else f"pid {m.get('attach_pid')}")
    body.append(f'<p class="muted"><code>{esc(what)}</code></p>')
    body.append('<nav><a href="#provenance">provenance</a><a href="#overview">overview</a>'
                '<a href="#warnings">warnings</a><a href="#figures">figures</a>'
                '<a href="#tables">tables</a><a href="#probe-costs">probe costs</a>'
                '<a href="#flamegraphs">flame graphs</a></nav>')
    body.append('<section id="provenance"><h2>Provenance</h2>')
    body.append(_kv(provenance_rows(m, s)))
    body.append("</section>")

    head, rest = _report_parts(render(run_dir))
    body.append('<section id="overview"><h2>Overview</h2><ul class="overview">')
    for l in head:
        cls = ' class="sub"' if l.startswith(" ") else ""
        body.append(f"<li{cls}>{esc(l.strip())}</li>")
    body.append("</ul></section>")

    warnings = warnings_of(m, s)
    figures = []
    fig = category_figure(s)
    if fig is not None:
        figures.append((figure_svg(fig, "categories"),
                        "Guaranteed overhead by term, and time by category (colour: method)"))
    tl_path = run_dir / "timeline.json"
    if tl_path.exists():
        try:
            timeline = json.loads(tl_path.read_text())
            if not isinstance(timeline, dict):
                raise ValueError("not a JSON object")
            figures.append((figure_svg(_timeline_fig(timeline), "timeline"),
                            "Guaranteed overhead over time by resource (timeline.json)"))
        except (ValueError, UnicodeDecodeError, OSError) as e:
            warnings.append(f"timeline.json could not be read: {e}")

    body.append('<section id="warnings"><h2>Warnings</h2>')
    body.append('<ul class="warnings">' + "".join(f"<li>{esc(w)}</li>" for w in warnings)
                + "</ul>" if warnings else '<p class="muted">none</p>')
    body.append("</section>")

    body.append('<section id="figures"><h2>Figures</h2>')
    for svg, caption in figures:
        if svg:
            body.append(f"<figure>{svg}<figcaption>{esc(caption)}</figcaption></figure>")
    if not figures:
        body.append('<p class="muted">no figure: the summary has no category</p>')
    body.append("</section>")

    body.append('<section id="tables"><h2>Tables</h2>')
    guaranteed = (s.get("totals") or {}).get("guaranteed_overhead_categories") or []
    present = set()
    for n, c in (s.get("categories") or {}).items():
        kinds, flags = category_kinds(n, c, guaranteed)
        present.update(kinds)
        present.update(flags)
    body.append("<p>Beside each category, the kind of its figures and its flags:</p>")
    body.append(legend_html(present | {"measured", "estimated", "sampled", "corrected"}))
    cat_table = category_table(s, CATEGORY_TITLE)
    blocks = _rest_blocks(rest)
    i = 0
    while i < len(blocks):
        b = blocks[i]
        if (b[0] == "heading" and b[2] == CATEGORY_TITLE and i + 1 < len(blocks)
                and blocks[i + 1][0] == "table" and blocks[i + 1][1] == cat_table.headers):
            body.append(f"<h3>{esc(CATEGORY_TITLE)}</h3>")
            body.append(category_table_html(s, cat_table))
            i += 2
            continue
        if (b[0] == "heading" and b[2].startswith(PROBE_KINDS_TITLE) and i + 1 < len(blocks)
                and blocks[i + 1][0] == "table"):
            i += 2          # shown in its own section, "Probe costs"
            continue
        body.append(blocks_html([b], shift=0))
        i += 1
    tt = _terms_table(s.get("totals") or {})
    if tt:
        body.append(f"<h3>{esc(tt.title)}</h3>" + table_html(tt.headers, tt.rows, markdown=False))
    body.append("</section>")

    body.append('<section id="probe-costs"><h2>Probe costs</h2>')
    pt = probe_kinds_table(s.get("totals") or {})
    if pt:
        body.append("<p>Every probe kind that fired × its calibrated cost per hit: the probe "
                    "effect, removed from the measured times (corrected).</p>")
        body.append(f"<h3>{esc(pt.title)}</h3>" + table_html(pt.headers, pt.rows,
                                                             markdown=False))
    else:
        body.append('<p class="muted">no probe in this recording</p>')
    body.append("</section>")

    body.append('<section id="flamegraphs"><h2>Flame graphs</h2>')
    fgs = _flamegraphs(run_dir, s)
    if fgs:
        body.append("<ul>" + "".join(
            f'<li><a href="{esc(_href(f, page_dir))}">{esc(f.name)}</a></li>' if f.exists()
            else f'<li>{esc(f.name)} <span class="muted">(missing)</span></li>'
            for f in fgs) + "</ul>")
    else:
        body.append('<p class="muted">none: no sampling in this recording</p>')
    body.append("</section>")
    return _page(title, body)


def _write_run(run_dir: Path, out: Optional[Path]) -> Tuple[Path, dict, dict]:
    run_dir = Path(run_dir)
    manifest, summary = load_run(run_dir)
    out = Path(out) if out is not None else run_dir / "report.html"
    _write(out, _run_page(run_dir, manifest, summary, out.resolve().parent))
    return out, manifest, summary


def write_run_html(run_dir: Path, out: Optional[Path] = None) -> Path:
    """A finished recording as one self-contained HTML page, RUN_DIR/report.html unless out
    says otherwise; returns its path. A directory without summary.json raises JvmosError."""
    return _write_run(run_dir, out)[0]


# --------------------------------------------------------------------------- index page

def _figure_html(path: Path) -> Optional[str]:
    """A figure of the directory inline: its SVG's <svg> element, else its PNG as a data:
    URI."""
    svg = path.with_suffix(".svg")
    if svg.exists():
        try:
            el = inline_svg(svg.read_text(encoding="utf-8"), "fig-" + path.stem)
        except (OSError, UnicodeDecodeError):
            el = None
        if el:
            return el
    png = path.with_suffix(".png")
    if png.exists():
        data = base64.b64encode(png.read_bytes()).decode("ascii")
        return f'<img src="data:image/png;base64,{data}" alt="{esc(png.name)}">'
    return None


def find_recordings(exp_dir: Path) -> List[Path]:
    """Every directory under EXP_DIR/runs (at any depth) that holds a summary.json."""
    runs = Path(exp_dir) / "runs"
    if not runs.is_dir():
        return []
    found = set()
    for root, dirs, files in os.walk(runs):
        dirs.sort()
        if "summary.json" in files:
            found.add(Path(root))
    return sorted(found, key=lambda p: p.relative_to(runs).parts)


def write_index_html(exp_dir: Path, title: str) -> Path:
    """An experiment's output directory as one HTML page, EXP_DIR/index.html: its Markdown
    files, its figures inline, and a link to each recording's report.html (written here);
    returns its path."""
    exp_dir = Path(exp_dir)
    if not exp_dir.is_dir():
        raise JvmosError(f"{exp_dir} is not a directory")
    body = [f"<h1>{esc(title)}</h1>",
            '<nav><a href="#tables">tables</a><a href="#figures">figures</a>'
            '<a href="#recordings">recordings</a></nav>']

    body.append('<section id="tables"><h2>Tables and notes</h2>')
    mds = sorted(exp_dir.glob("*.md"))
    for md in mds:
        data = sorted(p for p in exp_dir.iterdir() if p.suffix in (".csv", ".json")
                      and (p.stem == md.stem or p.stem.startswith(md.stem + "-")))
        body.append(f'<div class="mdfile" data-file="{esc(md.name)}">')
        body.append(f'<p class="muted">from <a href="{esc(quote(md.name))}">{esc(md.name)}</a>'
                    + ("; data: " + ", ".join(f'<a href="{esc(quote(p.name))}">{esc(p.name)}</a>'
                                              for p in data) if data else "") + "</p>")
        try:
            body.append(markdown_html(md.read_text(encoding="utf-8"), shift=0))
        except (OSError, UnicodeDecodeError) as e:
            body.append(f'<p class="muted">{esc(md.name)} could not be read: {esc(e)}</p>')
        body.append("</div>")
    if not mds:
        body.append('<p class="muted">no table in this directory</p>')
    body.append("</section>")

    body.append('<section id="figures"><h2>Figures</h2>')
    stems = sorted({p.stem for p in exp_dir.glob("*.svg")} | {p.stem for p in exp_dir.glob("*.png")})
    shown = 0
    for stem in stems:
        el = _figure_html(exp_dir / stem)
        if el:
            body.append(f"<figure>{el}<figcaption>{esc(stem)}</figcaption></figure>")
            shown += 1
    if not shown:
        body.append('<p class="muted">no figure in this directory</p>')
    body.append("</section>")

    body.append('<section id="recordings"><h2>Recordings</h2>')
    rows, failed = [], []
    runs = exp_dir / "runs"
    for d in find_recordings(exp_dir):
        name = d.relative_to(runs).as_posix()
        try:
            page, _, s = _write_run(d, None)
        except Exception as e:      # one bad recording does not stop the index
            failed.append((name, str(e) if isinstance(e, JvmosError)
                           else f"{type(e).__name__}: {e}"))
            continue
        t = s.get("totals") or {}
        g = t.get("guaranteed_overhead_ns")
        rows.append(
            f'<tr><td><a href="{esc(_href(page, exp_dir))}">{esc(name)}</a></td>'
            f"<td>{esc(s.get('status', '—'))}</td><td>{esc(t.get('mode', '—'))}</td>"
            f"<td>{esc(fmt_ns(t.get('wall_ns')))}</td>"
            f"<td>{esc(fmt_ns(g) if g is not None else 'unknown')}</td></tr>")
    if rows:
        body.append('<div class="scroll"><table id="recordings-table"><thead><tr>'
                    "<th>recording (report)</th><th>status</th><th>mode</th><th>wall</th>"
                    "<th>guaranteed overhead</th></tr></thead><tbody>"
                    + "".join(rows) + "</tbody></table></div>")
    elif not failed:
        body.append('<p class="muted">no recording under runs/</p>')
    if failed:
        body.append("<p>Recordings without a report:</p>")
        body.append('<ul class="warnings failed">' + "".join(
            f"<li><code>{esc(n)}</code>: {esc(err)}</li>" for n, err in failed) + "</ul>")
    body.append("</section>")

    out = exp_dir / "index.html"
    _write(out, _page(title, body))
    return out


def experiment_headlines(d: Path) -> List[dict]:
    """The headlines an experiment's results JSON states ({figure, here, paper}: its main
    figure measured on this machine, and the paper's for the same figure or null), from the
    JSON files directly in d."""
    out = []
    for f in sorted(d.glob("*.json")):
        try:
            doc = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        h = doc.get("headline") if isinstance(doc, dict) else None
        out += [x for x in (h if isinstance(h, list) else [h]) if isinstance(x, dict)]
    return out


def write_suite_index(root: Path, title: str) -> Path:
    """ROOT/index.html for a directory of experiments (make demo's): one row per experiment,
    its headline figures here and in the paper, the titles of its tables, and a link to its
    page (tables, figures, a report per recording); returns its path."""
    root = Path(root)
    if not root.is_dir():
        raise JvmosError(f"{root} is not a directory")
    rows = []
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        page = d / "index.html"
        if not page.is_file():
            continue
        heads = []
        for md in sorted(d.glob("*.md")):
            try:
                heads += [line.lstrip("#").strip() for line in
                          md.read_text(encoding="utf-8").splitlines() if line.startswith("#")]
            except (OSError, UnicodeDecodeError):
                continue
        lines = experiment_headlines(d)
        dash = '<span class="muted">—</span>'
        rows.append([f'<a href="{esc(quote(d.name))}/index.html">{esc(d.name)}</a>',
                     "<br>".join(esc(h.get("figure", "")) for h in lines) or dash,
                     "<br>".join(esc(str(h.get("here") or "—")) for h in lines) or dash,
                     "<br>".join(esc(str(h.get("paper") or "—")) for h in lines) or dash,
                     (esc(heads[0]) + (f' <span class="muted">(+{len(heads) - 1} more '
                                       'on its page)</span>' if len(heads) > 1 else ""))
                     if heads else dash])
    body = [f"<h1>{esc(title)}</h1>",
            "<p>One row per experiment: its headline figure on this machine beside the "
            "paper's (— where the paper gives none), then its tables; the experiment's page "
            "has the tables, figures and a report per recording.</p>"]
    if rows:
        body.append("<table><thead><tr><th>experiment</th><th>headline</th><th>here</th>"
                    "<th>paper</th><th>first table</th></tr></thead><tbody>"
                    + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>"
                              for r in rows)
                    + "</tbody></table>")
    else:
        body.append('<p class="muted">no experiment page (index.html) under this directory</p>')
    path = root / "index.html"
    _write(path, _page(title, body))
    return path
