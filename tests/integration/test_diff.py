"""`jvmos diff` on two recordings of the shop: a connection per page (keep-alive off), then
keep-alive on, the same pages. The diff must show the connections the change removed, the
links' on-CPU time it saved, and the what-if's prediction from the first recording beside
them; its HTML has the differential figure. Bad inputs: one line, non-zero."""
import json

import pytest

from conftest import can_trace, one_error_line, run_jvmos
from jvmos import record as rec
from jvmos.experiments.shop import Shop
from jvmos.jdk import discover_jdks

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")]

THREADS, PAGES = 4, 60          # each load thread asks PAGES pages: 240 in all


def _record(shop: Shop, keepalive: bool, out, platform_file) -> dict:
    box = {}
    res = rec.record(rec.Options(
        pid=shop.pid, layers=["links", "threads"], mode="time", out=out,
        platform=str(platform_file),
        workload=lambda: box.setdefault("load", shop.load(THREADS, PAGES, keepalive)),
        log=lambda m: None))
    assert res.status == "complete", res.reason
    return box["load"]


def test_diff_of_keep_alive_on_the_shop(platform_file, tmp_path):
    java = str(discover_jdks()[0].home / "bin" / "java")
    before, after = tmp_path / "before", tmp_path / "after"
    with Shop(java, tmp_path / "shop", page_bytes=4096, max_seconds=600) as shop:
        shop.load(THREADS, PAGES, False)           # warm-up, not recorded
        lb = _record(shop, False, before, platform_file)
        la = _record(shop, True, after, platform_file)
    pages = THREADS * PAGES
    r = run_jvmos(["diff", str(before), str(after), "--what-if", "keep-alive",
                   "--units", f"{pages},{pages}", "--unit", "page", "--out",
                   str(tmp_path / "d"), "--json"], timeout=120)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    link = next(c for c in d["categories"] if c["category"] == "link")
    # a connection per page before (one accept each, the close is in the file/close path),
    # one per load thread after
    assert link["calls"]["before"] >= pages
    assert link["calls"]["after"] < link["calls"]["before"] - pages // 2
    assert link["time_ns"]["diff"] < 0 and link["time_kind"] == "on-CPU"
    w = d["what_if"][0]
    assert w["what_if"] == "keep-alive"
    accepts_before, accepts_after = w["count"]["before"], w["count"]["after"]
    assert accepts_before >= pages and accepts_after <= THREADS + 2
    c_link = json.loads(platform_file.read_text())["constants"]["C_link"]["mean_us"]
    # the prediction removes every accept counted before, at C_link
    assert w["predicted_saving_us"] == pytest.approx(accepts_before * c_link)
    assert w["prediction_is"].startswith("the OS's part only")
    assert d["target_cpu_ns_per_unit"]["n"] == [1, 1]
    # one recording per side: no interval is invented
    assert "ci95" not in link["calls"]
    html = (tmp_path / "d" / "diff.html").read_text()
    assert "<svg" in html and "keep-alive (C_link)" in html
    # the printed form names the removed connections beside the prediction
    r = run_jvmos(["diff", str(before), str(after), "--what-if", "keep-alive"], timeout=120)
    assert r.returncode == 0, r.stderr
    row = next(l for l in r.stdout.splitlines() if l.startswith("| keep-alive (C_link)"))
    assert f"{accepts_before:,.0f} -> {accepts_after:,.0f}" in row
    assert f"{-accepts_before * c_link / 1e3:+,.3f}" in row
    # the same work on both sides, and the connections the load generator itself counted
    assert lb["pages"] == la["pages"] == pages
    assert lb["connections"] == pages and la["connections"] == THREADS


def test_diff_bad_input(tmp_path):
    one_error_line(run_jvmos(["diff", str(tmp_path), str(tmp_path)], timeout=60))
    one_error_line(run_jvmos(["diff", ",", str(tmp_path)], timeout=60))
    one_error_line(run_jvmos(["diff", str(tmp_path), str(tmp_path), "--what-if", "nope"],
                             timeout=60))
    one_error_line(run_jvmos(["diff", str(tmp_path), str(tmp_path), "--units", "1"],
                             timeout=60))
