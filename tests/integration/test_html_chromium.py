"""The HTML pages (jvmos/htmlreport.py) as a browser shows them: headless Chromium loads each
page of committed results (copied; no bpftrace, no JVM), takes a screenshot and dumps the
DOM it built. Needs /usr/bin/chromium (Debian package `chromium`)."""
import json
import shutil
from pathlib import Path

import pytest

from conftest import console_messages, dump_dom, flame_graph_stand_ins, run_chromium
from jvmos import htmlreport

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"
@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict:
    """report.html of a time-mode run (with a timeline), of a sampled run (with its flame
    graph), and index.html of an experiment (a figure, four recordings)."""
    base = tmp_path_factory.mktemp("html")
    runs = {}
    for name in ("socket-time", "socket-sample"):
        runs[name] = base / name
        shutil.copytree(RESULTS / "accuracy" / "runs" / name, runs[name])
        flame_graph_stand_ins(runs[name])
    ivs = [{"index": i, "t_start_s": 2.0 * (i - 1), "t_end_s": 2.0 * i,
            "categories": {}, "guaranteed_by_resource": {
                "io": None if i == 3 else 1e5 * i, "threads": 0.0, "mem": 10.0, "links": None},
            "guaranteed_overhead_ns": None if i == 3 else 1e5 * i + 10.0,
            "target_cpu_ns": 1e9, "guaranteed_overhead_pct_of_cpu": None if i == 3 else 0.01 * i}
           for i in range(1, 7)]
    (runs["socket-time"] / "timeline.json").write_text(json.dumps(
        {"schema": "jvmos.timeline/1", "interval_s": 2.0, "intervals": ivs}))
    exp = base / "jni-census"
    shutil.copytree(RESULTS / "jni-census", exp)
    return {"socket-time": (htmlreport.write_run_html(runs["socket-time"]), 2),
            "socket-sample": (htmlreport.write_run_html(runs["socket-sample"]), 1),
            "index": (htmlreport.write_index_html(exp, "JNI census"), 1)}


def test_console_check_sees_errors(tmp_path):
    """The check below is worth something: a page that logs and throws is caught."""
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><body><p>x</p><script>console.error('jvmos-probe-"
                   "logged'); throw new Error('jvmos-probe-thrown');</script></body></html>")
    _, msgs = dump_dom(tmp_path, bad)
    assert any("jvmos-probe-logged" in m for m in msgs), msgs
    assert any("Uncaught" in m and "jvmos-probe-thrown" in m for m in msgs), msgs


@pytest.mark.parametrize("name", ["socket-time", "socket-sample", "index"])
def test_page_loads_with_its_figures_and_tables(tmp_path, pages, name):
    page, min_svg = pages[name]
    source = page.read_text(encoding="utf-8")
    dom, msgs = dump_dom(tmp_path, page)
    assert msgs == [], msgs                                  # no console error
    assert dom.lstrip().lower().startswith("<!doctype html>") or "<html" in dom[:200]
    assert dom.count("<svg") == source.count("<svg") >= min_svg
    assert dom.count("<table") == source.count("<table") >= 1
    assert dom.count("</table>") == dom.count("<table")
    if name == "index":
        for rec in ("java2d", "randomrw", "socket", "tomcat/rec"):
            assert f'href="runs/{rec}/report.html"' in dom
        assert "Table 2: JNI calls required to perform routine tasks" in dom
    else:
        summary = json.loads((page.parent / "summary.json").read_text())
        for cat in summary["categories"]:
            assert f'data-category="{cat}"' in dom, cat
    if name == "socket-time":
        assert "correction dominates</span>" in dom
    if name == "socket-sample":
        fg = next(page.parent.glob("flamegraph-*.html"))
        assert f'href="{fg.name}"' in dom


@pytest.mark.parametrize("name", ["socket-time", "socket-sample", "index"])
def test_page_screenshot_is_not_blank(tmp_path, pages, name):
    import numpy as np
    from matplotlib.image import imread
    page, _ = pages[name]
    png = tmp_path / f"{name}.png"
    r = run_chromium(tmp_path, page, f"--screenshot={png}", "--window-size=1280,3000",
                     "--hide-scrollbars")
    assert console_messages(r.stderr) == []
    assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    img = imread(png)
    assert img.shape[:2] == (3000, 1280)
    rgb = (img[..., :3] * 255).round().astype(np.uint8).reshape(-1, 3)
    colours = np.unique(rgb, axis=0)
    assert len(colours) > 50, len(colours)          # text, tables, figures: many colours
    inked = (rgb.min(axis=1) < 200).mean()
    assert inked > 0.01, inked                      # more than a few dark pixels
