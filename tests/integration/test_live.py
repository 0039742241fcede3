"""The live view of a running JVM (`record --pid --interval --count`), its timeline, its
OpenMetrics file and its exports, on the shop under a bounded load."""
import json
import re
import subprocess
import threading
import time

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families
from prometheus_client.parser import text_string_to_metric_families as classic_parse

from conftest import can_trace, dump_dom, one_error_line, run_jvmos
from jvmos.experiments.shop import Shop
from jvmos.tools import SHOP_JAR, jar
from jvmos.jdk import discover_jdks

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")]

INTERVAL_LINE = re.compile(r"^\d\d:\d\d:\d\d  interval (\d+)/5 \(")


def _load_until(shop: Shop, java: str, stop: threading.Event, deadline: float):
    """Small bounded loads, one after another, until stopped (at most until deadline)."""
    while not stop.is_set() and time.monotonic() < deadline:
        subprocess.run([java, "-cp", str(jar(SHOP_JAR)), "org.jvmos.workloads.shop.ShopLoad",
                        "--port", str(shop.port), "--threads", "4", "--pages", "50",
                        "--max-seconds", "60"], capture_output=True, timeout=180)


def test_live_view_of_the_shop(platform_file, tmp_path):
    java = str(discover_jdks()[0].home / "bin" / "java")
    out = tmp_path / "live"
    metrics = tmp_path / "shop.prom"
    stop = threading.Event()
    with Shop(java, tmp_path / "shop", page_bytes=4096, max_seconds=900) as shop:
        loader = threading.Thread(target=_load_until,
                                  args=(shop, java, stop, time.monotonic() + 600), daemon=True)
        loader.start()
        try:
            r = run_jvmos(["record", "--pid", str(shop.pid), "--interval", "2", "--count", "5",
                           "--layers", "io,threads,links,mem", "--metrics-file", str(metrics),
                           "--out", str(out)], timeout=900)
        finally:
            stop.set()
            loader.join(timeout=240)
        assert shop.proc.poll() is None, "the shop outlived its recording"
    assert r.returncode == 0, r.stderr
    heads = [int(m.group(1)) for m in map(INTERVAL_LINE.match, r.stdout.splitlines()) if m]
    assert heads == [1, 2, 3, 4, 5], r.stdout

    tl = json.loads((out / "timeline.json").read_text())
    s = json.loads((out / "summary.json").read_text())
    assert tl["schema"] == "jvmos.timeline/1" and len(tl["intervals"]) == 5
    ends = [e["t_end_s"] for e in tl["intervals"]]
    assert all(1.5 < b - a < 4 for a, b in zip([0.0] + ends, ends)), ends
    # the intervals are differences of snapshots of the same counters the summary reads:
    # together they never exceed the whole recording, which only adds the moments after the
    # fifth snapshot
    for cat, c in s["categories"].items():
        if not isinstance(c.get("calls"), int):
            continue
        summed = sum((e["categories"].get(cat) or {}).get("calls") or 0 for e in tl["intervals"])
        assert summed <= c["calls"], cat
    io = sum((e["categories"].get("io_syscall") or {}).get("calls") or 0 for e in tl["intervals"])
    assert io > 0, "the shop served pages: its socket I/O is in the intervals"
    assert all(e["target_cpu_ns"] and e["target_cpu_ns"] > 0 for e in tl["intervals"])
    assert tl["ended"] == "--count 5 intervals" and tl["covered_until_s"] == ends[-1]
    m = json.loads((out / "manifest.json").read_text())
    assert m["live"]["intervals"] == 5 and m["status"] == "complete"
    assert m["live"]["timeline"] == "timeline.json"

    # the metrics file ends with the whole recording, in the classic text format that
    # node-exporter's textfile collector reads (Prometheus's own parser reads it back)
    fams = {f.name: f for f in classic_parse(metrics.read_text())}
    calls = [smp for smp in fams["jvmos_category_calls"].samples
             if smp.labels.get("category") == "io_syscall" and smp.name.endswith("_total")]
    assert sum(smp.value for smp in calls) == s["categories"]["io_syscall"]["calls"]

    # the report draws the timeline, and its page loads in Chromium with the figures (the
    # categories and the timeline) and the tables
    r = run_jvmos(["report", "--html", str(out)])
    assert r.returncode == 0, r.stderr
    assert (out / "timeline.png").stat().st_size > 5000 and (out / "timeline.svg").exists()
    page = out / "report.html"
    dom, console = dump_dom(tmp_path, page)
    assert console == [], console
    assert dom.count("<svg") >= 2 and dom.count("<table") >= 2
    assert "io_syscall" in dom and "Guaranteed overhead over time" in dom
    r = run_jvmos(["export", str(out), "--format", "openmetrics"])
    assert r.returncode == 0, r.stderr
    assert list(text_string_to_metric_families((out / "metrics.prom").read_text()))
    # no sampling in this recording: pprof says so in one line
    line = one_error_line(run_jvmos(["export", str(out), "--format", "pprof"]))
    assert "sampling did not run" in line


@pytest.mark.parametrize("argv, needle", [
    (["--interval", "0"], "--interval must be a positive number"),
    (["--interval", "-2"], "--interval must be a positive number"),
    (["--count", "3"], "--count needs --interval"),
    (["--interval", "1", "--count", "0"], "--count must be a positive number"),
    (["--metrics-file", "/tmp/x.prom"], "--metrics-file needs --interval"),
])
def test_live_view_bad_input(tmp_path, argv, needle):
    out = tmp_path / "r"
    line = one_error_line(run_jvmos(["record", "--pid", "1", "--out", str(out)] + argv))
    assert needle in line
    assert not out.exists()


def test_report_html_of_a_run_without_summary(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps({"status": "running"}))
    line = one_error_line(run_jvmos(["report", "--html", str(run)]))
    assert "has no summary.json" in line and not (run / "report.html").exists()


def test_export_bad_format_and_unsampled_run(tmp_path):
    import shutil
    from conftest import ROOT
    run = tmp_path / "socket-time"
    shutil.copytree(ROOT / "results" / "accuracy" / "runs" / "socket-time", run)
    line = one_error_line(run_jvmos(["export", str(run), "--format", "csv"]))
    assert "unknown export format 'csv' (known: openmetrics, pprof)" in line
    line = one_error_line(run_jvmos(["export", str(run), "--format", "pprof"]))
    assert "sampling did not run" in line and not (run / "profile.pb.gz").exists()
