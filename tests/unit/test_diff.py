"""`jvmos diff`'s arithmetic on hand-made run directories: after - before per category, Welch's
interval only with repeats, time kinds kept apart, CPU per unit, the what-if beside it, and
the refusals (modes differ, an unfinished recording)."""
import json

import pytest

from jvmos import JvmosError, diff
from scipy import stats as st

PLATFORM = {"constants": {"C_link": {"mean_us": 10.0, "ci95_us": [9.0, 11.0]}}}


def _run(tmp_path, name, accepts, link_ns, sync_ns, cpu_ns, mode="time", status="complete"):
    d = tmp_path / name
    d.mkdir()
    (d / "manifest.json").write_text(json.dumps({"status": status, "mode": mode,
                                                 "layers": ["links", "threads"]}))
    cats = {"link": {"calls": accepts, "time_ns": link_ns, "method": "measured",
                     "syscalls": {"accept": {"calls": accepts}}},
            "sync": {"calls": 10, "time_ns": sync_ns, "method": "measured"}}
    (d / "summary.json").write_text(json.dumps({
        "status": status, "categories": cats, "totals": {"target_cpu_ns": cpu_ns},
        "by_pid": {"7": {"jvm": "/jdk", "categories": cats}}}))
    return str(d)


def test_one_recording_a_side(tmp_path):
    b = _run(tmp_path, "b", 100, 2e6, 5e9, 400e6)
    a = _run(tmp_path, "a", 4, 0.1e6, 9e9, 300e6)
    res = diff.run([b], [a], units=(200, 200), unit="page", what_ifs=["keep-alive"],
                   platform=PLATFORM)
    link = next(c for c in res["categories"] if c["category"] == "link")
    assert link["calls"]["diff"] == -96 and link["time_ns"]["diff"] == pytest.approx(-1.9e6)
    assert "ci95" not in link["time_ns"]          # no interval from one recording a side
    sync = next(c for c in res["categories"] if c["category"] == "sync")
    assert sync["time_kind"] == "span (blocking included)" and link["time_kind"] == "on-CPU"
    assert res["target_cpu_ns_per_unit"]["diff"] == pytest.approx(-0.5e6)
    w = res["what_if"][0]
    assert w["count"]["before"] == 100 and w["count"]["after"] == 4
    assert w["predicted_saving_us"] == pytest.approx(1000.0)
    md = "\n".join(t.markdown() for t in diff.tables(res))
    # the prediction written as a change, a saving negative like the measured columns
    assert "| 100 -> 4 (-96 connections accepted" in md and "-1.000 [-1.100, -0.900]" in md


def test_repeats_give_welch_intervals(tmp_path):
    bs = [_run(tmp_path, f"b{i}", 100 + i, (2 + i) * 1e6, 5e9, 400e6) for i in range(3)]
    as_ = [_run(tmp_path, f"a{i}", 4, (0.1 + i / 10) * 1e6, 5e9, 300e6 + i * 1e6) for i in range(3)]
    res = diff.run(bs, as_)
    link = next(c for c in res["categories"] if c["category"] == "link")
    # Welch by hand: after - before = -2.8 ms; variances 0.01 and 1 (ms^2) over 3 each
    va, vb = 0.01e12 / 3, 1e12 / 3
    se = (va + vb) ** 0.5
    df = (va + vb) ** 2 / (va * va / 2 + vb * vb / 2)
    h = st.t.ppf(0.975, df) * se
    assert link["time_ns"]["diff"] == pytest.approx(-2.8e6)
    assert link["time_ns"]["ci95"] == pytest.approx([-2.8e6 - h, -2.8e6 + h])
    assert link["time_ns"]["n"] == [3, 3]


def test_refusals(tmp_path):
    b = _run(tmp_path, "b", 1, 1.0, 1.0, 1.0)
    a = _run(tmp_path, "a", 1, 1.0, 1.0, 1.0, mode="count")
    with pytest.raises(JvmosError, match="different modes"):
        diff.run([b], [a])
    d = _run(tmp_path, "d", 1, 1.0, 1.0, 1.0)
    m = json.loads((tmp_path / "d" / "manifest.json").read_text())
    (tmp_path / "d" / "manifest.json").write_text(json.dumps({**m, "layers": ["links"]}))
    with pytest.raises(JvmosError, match="different layers"):
        diff.run([b], [d])
    c = _run(tmp_path, "c", 1, 1.0, 1.0, 1.0, status="failed")
    with pytest.raises(JvmosError, match="ended failed"):
        diff.run([b], [c])
    with pytest.raises(JvmosError, match="no manifest"):
        diff.run([b], [str(tmp_path)])
