"""jvmos/htmlreport.py on copies of committed results: the run page, the experiment index, the
timeline figure and the small Markdown converter."""
import base64
import json
import math
import re
import shutil
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest

from jvmos import JvmosError, htmlreport, report
from jvmos.analyzers.tables import category_table, fmt_bytes, fmt_count, fmt_ns

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"
SOCKET_TIME = RESULTS / "accuracy" / "runs" / "socket-time"
SOCKET_SAMPLE = RESULTS / "accuracy" / "runs" / "socket-sample"
EXPERIMENT = RESULTS / "jni-census"     # 1.1 MB: a figure, four recordings, one nested

VOID = {"meta", "br", "hr", "img", "link", "input", "col", "wbr", "source"}


def norm(text: str) -> str:
    return " ".join(text.split())


class Page(HTMLParser):
    """Counts start and end tags, keeps every attribute, the tables (rows of cells, each
    cell's text and its badges) and the text outside <style>."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.starts, self.ends = Counter(), Counter()
        self.attrs, self.tables, self.text = [], [], []
        self._open, self._cell, self._span, self._skip = [], None, None, 0
        self.feed(text)
        self.close()

    def _start(self, tag, attrs):
        a = dict(attrs)
        self.starts[tag] += 1
        self.attrs.append((tag, a))
        if tag in ("style", "script"):
            self._skip += 1
        if tag == "table":
            t = {"id": a.get("id"), "class": a.get("class"), "rows": []}
            self.tables.append(t)
            self._open.append(t)
        elif tag == "tr" and self._open:
            self._open[-1]["rows"].append({"class": a.get("class") or "",
                                           "category": a.get("data-category"), "cells": []})
        elif tag in ("td", "th") and self._open:
            self._cell = {"tag": tag, "text": "", "badges": []}
            self._open[-1]["rows"][-1]["cells"].append(self._cell)
        elif tag == "span" and self._cell is not None:
            self._span = {"class": a.get("class") or "", "text": ""}
            self._cell["badges"].append(self._span)

    def handle_starttag(self, tag, attrs):
        self._start(tag, attrs)
        if tag in VOID:
            self.handle_endtag(tag)

    def handle_startendtag(self, tag, attrs):
        self._start(tag, attrs)
        self.handle_endtag(tag)

    def handle_endtag(self, tag):
        self.ends[tag] += 1
        if tag in ("style", "script"):
            self._skip -= 1
        elif tag == "table" and self._open:
            self._open.pop()
        elif tag in ("td", "th"):
            self._cell = None
        elif tag == "span":
            self._span = None

    def handle_data(self, data):
        if self._skip:
            return
        self.text.append(data)
        if self._cell is not None:
            self._cell["text"] += data
        if self._span is not None:
            self._span["text"] += data

    # -- helpers of the tests
    def table(self, **kw) -> dict:
        found = [t for t in self.tables if all(t.get(k) == v for k, v in kw.items())]
        assert len(found) == 1, (kw, [t["id"] for t in self.tables])
        return found[0]

    def table_after(self, html_text: str, heading: str) -> list:
        """The body rows (cell texts) of the first table after a heading of that text."""
        i = html_text.index(f">{heading}</h")
        sub = Page(html_text[i:])
        return body_rows(sub.tables[0])

    def visible(self) -> str:
        return norm(" ".join(self.text))

    def ids(self) -> list:
        return [a["id"] for _, a in self.attrs if "id" in a]

    def links(self) -> list:
        return [a["href"] for tag, a in self.attrs if tag == "a" and "href" in a]


def body_rows(table: dict) -> list:
    return [[norm(c["text"]) for c in r["cells"]] for r in table["rows"]
            if r["cells"] and r["cells"][0]["tag"] == "td"]


def header_row(table: dict) -> list:
    return [norm(c["text"]) for c in table["rows"][0]["cells"]]


def check_wellformed(p: Page, min_svg: int = 0):
    for tag in ("html", "head", "body", "table", "thead", "tbody", "tr", "td", "th", "ul",
                "li", "section", "figure", "svg", "a", "span", "details", "code", "p", "g",
                "dl", "dt", "dd"):
        assert p.starts[tag] == p.ends[tag], (tag, p.starts[tag], p.ends[tag])
    assert p.starts["html"] == 1 and p.starts["title"] == 1
    assert p.starts["svg"] >= min_svg
    for t in p.tables:                   # every table has a header row
        assert t["rows"] and t["rows"][0]["cells"][0]["tag"] == "th", t["id"]


def check_self_contained(p: Page):
    assert p.starts["script"] == 0 and p.starts["link"] == 0 and p.starts["iframe"] == 0
    for tag, a in p.attrs:
        for k in ("src", "href", "xlink:href"):
            v = (a.get(k) or "").strip().lower()
            assert not v.startswith(("http://", "https://", "//", "ftp:")), (tag, k, v)
        if tag == "img":
            assert a["src"].startswith("data:image/png;base64,")
    ids = p.ids()
    dup = [i for i, n in Counter(ids).items() if n > 1]
    assert not dup, dup[:5]


def copy_run(tmp_path, src: Path, name=None) -> Path:
    d = tmp_path / (name or src.name)
    shutil.copytree(src, d)
    # sampling writes a flame graph beside each profile; the reference results do not keep
    # them (.gitignore): a stand-in page gives the report's link a file to point at
    for prof in d.glob("profile-*.collapsed"):
        fg = d / prof.name.replace("profile-", "flamegraph-").replace(".collapsed", ".html")
        if not fg.exists():
            fg.write_text("<!DOCTYPE html><title>stand-in</title>\n")
    return d


def md_tables(text: str) -> dict:
    """{title: rows} of the Markdown tables of a text (### title, then | rows |)."""
    out, title, rows = {}, None, None
    for line in text.splitlines():
        if line.startswith("### "):
            title, rows = line[4:].strip(), []
            out[title] = rows
        elif line.startswith("|") and rows is not None and not re.match(r"^\|(-+\|)+$", line):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return {t: r[1:] for t, r in out.items()}       # the header row dropped


# --------------------------------------------------------------------------- run page

def test_time_run_page(tmp_path):
    d = copy_run(tmp_path, SOCKET_TIME)
    out = htmlreport.write_run_html(d)
    assert out == d / "report.html" and out.is_file()
    text = out.read_text(encoding="utf-8")
    p = Page(text)
    check_wellformed(p, min_svg=1)
    check_self_contained(p)
    manifest, summary = report.load_run(d)

    # the category table: the text report's cells, as analyzers.tables formats them
    expected = category_table(summary, "Categories (all traced processes)")
    cats = p.table(id="categories")
    assert header_row(cats)[:len(expected.headers)] == expected.headers
    rows = body_rows(cats)
    assert [r[:len(expected.headers)] for r in rows] == [[norm(x) for x in r]
                                                         for r in expected.rows]
    assert set(summary["categories"]) == {r["category"] for r in cats["rows"][1:]}

    # kinds and flags beside the numbers
    by_name = {r["category"]: r for r in cats["rows"][1:]}
    for name, c in summary["categories"].items():
        row = by_name[name]
        badges = {b["class"].split()[-1]: norm(b["text"]) for b in row["cells"][-2]["badges"]}
        for kind in c["method"].split("+"):
            assert badges.get(f"k-{kind}") == kind, (name, badges)
        assert ("k-corrected" in badges) == bool(c.get("corrected")), name
        assert (badges.get("f-dominates") == "correction dominates") == bool(
            c.get("correction_dominates")), name
        assert ("f-guaranteed" in badges) == (
            name in summary["totals"]["guaranteed_overhead_categories"]), name
        ci = c.get("time_ci95_ns")
        interval = norm(row["cells"][-1]["text"])
        assert interval == (f"{fmt_ns(ci[0])} to {fmt_ns(ci[1])}" if ci else "—"), name
    assert summary["categories"]["jni_copy"]["correction_dominates"]
    assert "flag-dominates" in by_name["jni_copy"]["class"]
    legend = " ".join(t for t in p.text)
    for word in ("measured", "estimated", "sampled", "corrected", "correction dominates"):
        assert word in legend

    # the other tables of the text report, built here from the summary
    jni = sorted(summary["categories"]["jni_copy"]["functions"].items(),
                 key=lambda kv: -kv[1]["calls"])
    assert p.table_after(text, "JNI copy functions") == [
        [n, fmt_count(f["calls"]), fmt_bytes(f["bytes"]) if f["bytes"] else "—",
         fmt_ns(f["time_ns"])] for n, f in jni]
    paths = summary["paths"]
    assert p.table_after(text, "I/O bytes by path") == [
        [n, fmt_count(paths[n]["calls"]) if "calls" in paths[n] else "—",
         fmt_bytes(paths[n]["bytes"])] for n in ("jni", "nio", "other")]
    # ... and every table of the text report is in the page, cell for cell
    rendered = report.render(d)
    for title, md_rows in md_tables(rendered).items():
        if title.startswith("Categories"):
            continue
        assert p.table_after(text, title) == md_rows, title

    # provenance
    vis = p.visible()
    assert " ".join(manifest["command"]) in vis
    for fact in ("JDK 17.0.15", manifest["host"]["kernel"], manifest["bpftrace"],
                 manifest["start_time"], manifest["end_time"], "17.41 s",
                 report.scope_line(manifest), f"{len(manifest['probes']['missing'])}"):
        assert fact in vis, fact
    for missing in manifest["probes"]["missing"]:
        assert missing in vis
    # probe costs: one row per probe kind that fired
    costs = p.table_after(text, "Probe costs")
    hits = summary["totals"]["probe_hits"]
    assert sorted(r[0] for r in costs) == sorted(hits)
    per = summary["totals"]["probe_cost_per_hit_ns"]
    for r in costs:
        assert r[2] == fmt_count(hits[r[0]])
        assert r[3].startswith(f"{per[r[0]]['ns']:,.0f}")
        assert r[5] == fmt_ns(per[r[0]]["total_ns"])
    # largest effect first, shares of the probe effect adding up to 100%
    effects = [per[r[0]]["total_ns"] for r in costs]
    assert effects == sorted(effects, reverse=True)
    assert sum(float(r[6].rstrip("%")) for r in costs) == pytest.approx(100, abs=0.1 * len(costs))
    # the headline figures of the text report
    assert "guaranteed overhead 1.91 ms (0.1% of wall)" in vis
    assert "no sampling in this recording" in vis


def test_sample_run_page_links_its_flame_graph(tmp_path):
    d = copy_run(tmp_path, SOCKET_SAMPLE)
    out = htmlreport.write_run_html(d)
    text = out.read_text(encoding="utf-8")
    p = Page(text)
    check_wellformed(p, min_svg=1)
    check_self_contained(p)
    _, summary = report.load_run(d)
    fgs = sorted(d.glob("flamegraph-*.html"))
    assert fgs
    links = [h for h in p.links() if not h.startswith("#")]
    assert sorted(links) == [f.name for f in fgs]
    for h in links:
        assert (out.parent / h).is_file()
    rows = {r["category"]: r for r in p.table(id="categories")["rows"][1:]}
    for name, c in summary["categories"].items():
        cells = rows[name]["cells"]
        assert [b["text"] for b in cells[-2]["badges"]][0] == "sampled"
        assert norm(cells[-1]["text"]) == f"± {fmt_ns(c['time_err95_ns'])}"
    samp = summary["sampling"]
    title = (f"CPU samples by category (async-profiler, {samp['samples_total']:,} samples of "
             f"{fmt_ns(samp['interval_ns'])})")
    assert p.table_after(text, title) == [
        [n, fmt_count(c["samples"]), f"{c['share_pct']:.1f}%",
         f"{fmt_ns(c['time_ns'])} ± {fmt_ns(c['time_err95_ns'])}"]
        for n, c in samp["categories"].items()]


def test_report_elsewhere_links_relative_to_itself(tmp_path):
    d = copy_run(tmp_path, SOCKET_SAMPLE)
    (tmp_path / "pages").mkdir()
    out = htmlreport.write_run_html(d, tmp_path / "pages" / "r.html")
    assert out == tmp_path / "pages" / "r.html" and not (d / "report.html").exists()
    links = [h for h in Page(out.read_text()).links() if not h.startswith("#")]
    assert links and all((out.parent / h).resolve().is_file() for h in links)


def test_warnings_listed_and_escaped(tmp_path):
    d = copy_run(tmp_path, SOCKET_TIME)
    s = json.loads((d / "summary.json").read_text())
    s["warnings"] = ["summary <b>warning</b> & co"]
    s["totals"]["lost_events"] = 7
    (d / "summary.json").write_text(json.dumps(s))
    m = json.loads((d / "manifest.json").read_text())
    m["warnings"] = ["manifest warning", "summary <b>warning</b> & co"]
    (d / "manifest.json").write_text(json.dumps(m))
    text = htmlreport.write_run_html(d).read_text()
    p = Page(text)
    assert p.starts["b"] == 0                          # escaped, not markup
    items = [norm(x) for x in re.findall(r'<ul class="warnings">(.*?)</ul>', text, re.S)]
    assert len(items) == 1
    lis = [norm(Page(li).visible()) for li in re.findall(r"<li>(.*?)</li>", items[0])]
    assert lis == ["summary <b>warning</b> & co", "manifest warning",
                   "bpftrace lost 7 events"]


def test_no_summary_raises_one_line(tmp_path):
    d = copy_run(tmp_path, SOCKET_TIME)
    (d / "summary.json").unlink()
    with pytest.raises(JvmosError) as e:
        htmlreport.write_run_html(d)
    assert "\n" not in str(e.value) and "summary.json" in str(e.value)
    assert not (d / "report.html").exists()
    with pytest.raises(JvmosError):
        htmlreport.write_run_html(tmp_path / "nowhere")


# --------------------------------------------------------------------------- timeline

def timeline(n=8, gaps=(3, 4)) -> dict:
    ivs = []
    for i in range(1, n + 1):
        io_ = None if i in gaps else 1e5 * i
        th = 2e5 if i % 2 else 0.0
        cpu = None if i == n else 1e9
        g = None if io_ is None else io_ + th + 10.0
        ivs.append({"index": i, "t_start_s": 2.0 * (i - 1), "t_end_s": 2.0 * i,
                    "categories": {"io_syscall": {"calls": 10, "bytes": 100, "time_ns": 5e3,
                                                  "method": "measured"}},
                    "guaranteed_by_resource": {"io": io_, "threads": th, "mem": 10.0,
                                               "links": None},
                    "guaranteed_overhead_ns": g, "target_cpu_ns": cpu,
                    "guaranteed_overhead_pct_of_cpu": g / cpu * 100 if g and cpu else None})
    return {"schema": "jvmos.timeline/1", "interval_s": 2.0, "intervals": ivs}


def test_timeline_figure_files_and_gaps(tmp_path):
    tl = timeline()
    files = htmlreport.timeline_figure(tl, tmp_path / "timeline")
    assert files == [tmp_path / "timeline.png", tmp_path / "timeline.svg"]
    assert files[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in files[1].read_text()
    fig = htmlreport._timeline_fig(tl)
    ax_ms, ax_pct = fig.axes[:2]
    lines = {l.get_label(): l for l in ax_ms.get_lines()}
    assert set(lines) == {"io", "threads", "mem", "links (no value)", "total"}
    io_y = list(lines["io"].get_ydata())
    assert math.isnan(io_y[2]) and math.isnan(io_y[3])          # null: a gap, not a zero
    assert io_y[0] == pytest.approx(0.1) and io_y[7] == pytest.approx(0.8)
    assert all(math.isnan(y) for y in lines["links (no value)"].get_ydata())
    assert list(lines["threads"].get_ydata())[1] == 0.0         # a zero stays a zero
    assert list(lines["io"].get_xdata()) == [2.0 * i for i in range(1, 9)]
    pct = {l.get_label(): l for l in ax_pct.get_lines()}
    assert math.isnan(list(pct["io"].get_ydata())[7])            # CPU time unknown
    assert list(pct["io"].get_ydata())[0] == pytest.approx(0.01)
    title = fig._suptitle.get_text()
    assert "measured and estimated" in title and "2-s" in title
    assert "(ms)" in ax_ms.get_ylabel() and "%" in ax_pct.get_ylabel()
    assert "(s)" in ax_pct.get_xlabel()


@pytest.mark.parametrize("tl", [
    {"schema": "jvmos.timeline/1", "interval_s": 2.0, "intervals": []},
    {"schema": "jvmos.timeline/1", "interval_s": None, "intervals": [
        {"index": 1, "t_start_s": 0.0, "t_end_s": None, "guaranteed_by_resource": None,
         "guaranteed_overhead_ns": None, "target_cpu_ns": None,
         "guaranteed_overhead_pct_of_cpu": None}]},
])
def test_timeline_figure_without_values(tmp_path, tl):
    files = htmlreport.timeline_figure(tl, tmp_path / "t")
    assert all(f.stat().st_size > 0 for f in files)


def test_run_page_with_timeline(tmp_path):
    d = copy_run(tmp_path, SOCKET_TIME)
    (d / "timeline.json").write_text(json.dumps(timeline()))
    p = Page(htmlreport.write_run_html(d).read_text())
    check_wellformed(p, min_svg=2)
    check_self_contained(p)                  # two matplotlib figures: no id shared
    assert p.starts["figure"] == 2
    (d / "timeline.json").write_text("{not json")
    p = Page(htmlreport.write_run_html(d).read_text())
    assert p.starts["svg"] == 1
    assert "timeline.json could not be read" in p.visible()


# --------------------------------------------------------------------------- index page

def test_index_of_an_experiment(tmp_path):
    exp = tmp_path / EXPERIMENT.name
    shutil.copytree(EXPERIMENT, exp)
    out = htmlreport.write_index_html(exp, "JNI <census>")
    assert out == exp / "index.html"
    text = out.read_text(encoding="utf-8")
    p = Page(text)
    check_wellformed(p, min_svg=len(list(exp.glob("*.svg"))))
    check_self_contained(p)
    assert "<h1>JNI &lt;census&gt;</h1>" in text
    # every Markdown table, cell for cell, and every bullet note
    for md in exp.glob("*.md"):
        mdtext = md.read_text()
        for title, rows in md_tables(mdtext).items():
            assert p.table_after(text, title) == [[norm(c) for c in r] for r in rows]
        for line in mdtext.splitlines():
            if line.startswith("- "):
                assert norm(line[2:].replace("`", "")) in p.visible()
    # a link to the report of every recording, nested ones too, each written
    recs = sorted(f.parent for f in (exp / "runs").rglob("summary.json"))
    assert any(len(r.relative_to(exp / "runs").parts) > 1 for r in recs)
    links = [h for h in p.links() if h.endswith("report.html")]
    assert sorted(links) == sorted(f"runs/{r.relative_to(exp / 'runs').as_posix()}/report.html"
                                   for r in recs)
    for h in links:
        assert (exp / h).is_file()
        check_self_contained(Page((exp / h).read_text()))
    for h in p.links():                      # the other links: files of the directory
        if not h.startswith("#"):
            assert (exp / h).is_file(), h


def test_index_png_fallback_and_a_failed_recording(tmp_path):
    exp = tmp_path / EXPERIMENT.name
    shutil.copytree(EXPERIMENT, exp)
    svg = next(exp.glob("*.svg"))
    png = svg.with_suffix(".png")
    svg.unlink()
    bad = sorted(f.parent for f in (exp / "runs").rglob("summary.json"))[0]
    (bad / "summary.json").write_text("{")
    text = htmlreport.write_index_html(exp, "x").read_text()
    p = Page(text)
    check_wellformed(p)
    check_self_contained(p)
    imgs = [a["src"] for tag, a in p.attrs if tag == "img"]
    assert len(imgs) == 1
    assert base64.b64decode(imgs[0].split(",", 1)[1]) == png.read_bytes()
    failed = re.findall(r'<ul class="warnings failed">(.*?)</ul>', text, re.S)
    assert len(failed) == 1 and "damaged" in failed[0] and bad.name in failed[0]
    assert f"runs/{bad.name}/report.html" not in p.links()
    assert len([h for h in p.links() if h.endswith("report.html")]) == len(
        list((exp / "runs").rglob("summary.json"))) - 1


def test_index_without_figures(tmp_path):
    exp = tmp_path / "threads"
    shutil.copytree(RESULTS / "threads", exp)
    p = Page(htmlreport.write_index_html(exp, "threads").read_text())
    check_wellformed(p)
    check_self_contained(p)
    assert "no figure in this directory" in p.visible()
    n_md_tables = sum(len(md_tables(f.read_text())) for f in exp.glob("*.md"))
    assert p.starts["table"] == n_md_tables + 1        # + the recordings


def test_index_of_a_missing_directory(tmp_path):
    with pytest.raises(JvmosError):
        htmlreport.write_index_html(tmp_path / "nowhere", "x")


# ------------------------------------------------------------------------------ pieces

def test_markdown_converter():
    md = ("# Top\n\nA paragraph with `a <b> c` and\na second line & more.\n\n"
          "### Table <1>\n\n| a | b \\| c |\n|---|---|\n| 1 | `x<y` |\n| 2 |\n\n"
          "- one\n  continued\n- two **bold**\n\n---\n")
    html_text = htmlreport.markdown_html(md, shift=0)
    p = Page(html_text)
    assert "<h1>Top</h1>" in html_text and "<h3>Table &lt;1&gt;</h3>" in html_text
    assert ("<p>A paragraph with <code>a &lt;b&gt; c</code> and a second line &amp; more.</p>"
            in html_text)
    t = p.tables[0]
    assert header_row(t) == ["a", "b | c"]
    assert body_rows(t) == [["1", "x<y"], ["2", ""]]
    assert "<td><code>x&lt;y</code></td>" in html_text
    assert "<li>one continued</li>" in html_text
    assert "<li>two <strong>bold</strong></li>" in html_text
    assert "<hr>" in html_text
    assert p.starts["b"] == 0


def test_inline_svg_strips_the_prolog_and_prefixes_ids():
    doc = ('<?xml version="1.0"?>\n<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" '
           '"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">\n<svg xmlns="x">'
           '<metadata>m</metadata><defs><path id="a1"/></defs>'
           '<use xlink:href="#a1"/><g clip-path="url(#a1)"/></svg>\n')
    el = htmlreport.inline_svg(doc, "f 1")
    assert el.startswith("<svg") and el.endswith("</svg>")
    assert "metadata" not in el and "DOCTYPE" not in el
    assert 'id="f-1-a1"' in el and 'xlink:href="#f-1-a1"' in el and "url(#f-1-a1)" in el
    assert htmlreport.inline_svg("not an svg", "x") is None


def test_suite_index_links_each_experiment_page(tmp_path):
    for name, head in (("ipc", "# Sockets against XML-RPC"), ("matmul", "## Total time")):
        d = tmp_path / name
        d.mkdir()
        (d / f"{name}.md").write_text(head + "\n\n| a |\n|---|\n| 1 |\n")
        htmlreport.write_index_html(d, name)
    (tmp_path / "no-page").mkdir()
    page = htmlreport.write_suite_index(tmp_path, "demo")
    text = page.read_text()
    assert 'href="ipc/index.html"' in text and 'href="matmul/index.html"' in text
    assert "no-page" not in text
    assert "Sockets against XML-RPC" in text and "Total time" in text
    with pytest.raises(JvmosError):
        htmlreport.write_suite_index(tmp_path / "missing", "x")


def test_suite_index_puts_each_headline_beside_the_papers(tmp_path):
    """The overview page (make demo's last): an experiment's headline figure here and the
    paper's, from its results JSON; an experiment with none shows a dash, not an invented
    figure."""
    import json
    from jvmos.experiments.common import headline
    for name, h in (("blocking-io", [headline("Java/C loop time", "1.82x", "2.09x")]),
                    ("ipc", None)):
        d = tmp_path / name
        d.mkdir()
        (d / "t.md").write_text("# T\n")
        (d / "t.json").write_text(json.dumps({"experiment": name, **({"headline": h} if h else {})}))
        htmlreport.write_index_html(d, name)
    text = htmlreport.write_suite_index(tmp_path, "demo").read_text()
    row = text[text.index('href="blocking-io/index.html"'):]
    row = row[:row.index("</tr>")]
    assert "Java/C loop time" in row and "1.82x" in row and "2.09x" in row
    ipc = text[text.index('href="ipc/index.html"'):]
    assert "—" in ipc[:ipc.index("</tr>")]
    assert htmlreport.experiment_headlines(tmp_path / "ipc") == []
