"""The live view's arithmetic and its snapshot reading, on canned data."""
import json

import pytest

from jvmos import live
from jvmos.probegen import SNAPSHOT_BEGIN, SNAPSHOT_END


def summary(cats: dict, g=None, by=None, probe=None):
    return {"categories": cats,
            "totals": {"guaranteed_overhead_ns": g, "guaranteed_overhead_known_ns": g or 0,
                       "guaranteed_by_resource": by or {}, "probe_overhead_ns": probe,
                       "guaranteed_overhead_unknown": [] if g is not None else ["malloc"]}}


def test_an_interval_is_the_difference_of_two_snapshots():
    a = summary({"io_syscall": {"calls": 100, "bytes": 1000, "time_ns": 5000.0,
                                "method": "measured", "corrected": True}},
                g=5000.0, by={"io": 5000.0}, probe=200.0)
    b = summary({"io_syscall": {"calls": 160, "bytes": 1600, "time_ns": 8000.0,
                                "method": "measured", "corrected": True},
                 "jni_copy": {"calls": 7, "bytes": 70, "time_ns": 30.0, "method": "measured"}},
                g=8030.0, by={"io": 8030.0}, probe=260.0)
    e = live.interval_of(a, b, 1_000_000, 1_300_000, 2, 2.0, 4.0)
    assert e["categories"]["io_syscall"] == {"calls": 60, "bytes": 600, "time_ns": 3000.0,
                                             "method": "measured", "corrected": True}
    # a category first seen in this interval: everything it has happened in it
    assert e["categories"]["jni_copy"]["calls"] == 7
    assert e["guaranteed_overhead_ns"] == pytest.approx(3030.0)
    assert e["guaranteed_by_resource"] == {"io": pytest.approx(3030.0)}
    assert e["probe_overhead_ns"] == pytest.approx(60.0)
    assert e["target_cpu_ns"] == 300_000
    # the share's numerator and denominator are the same interval's
    assert e["guaranteed_overhead_pct_of_cpu"] == pytest.approx(100 * 3030.0 / 300_000)
    assert (e["index"], e["t_start_s"], e["t_end_s"]) == (2, 2.0, 4.0)


def test_unknown_stays_unknown():
    a = summary({"malloc": {"calls": 1, "bytes": None, "time_ns": None, "method": "measured"}})
    b = summary({"malloc": {"calls": 4, "bytes": None, "time_ns": None, "method": "measured"}})
    e = live.interval_of(a, b, None, None, 1, 0.0, 1.0)
    assert e["categories"]["malloc"] == {"calls": 3, "bytes": None, "time_ns": None,
                                         "method": "measured"}
    assert e["guaranteed_overhead_ns"] is None and e["target_cpu_ns"] is None
    assert e["guaranteed_overhead_pct_of_cpu"] is None
    text = "\n".join(live.format_interval(e, 1.0, None))
    assert "guaranteed overhead unknown" in text and "malloc" in text
    assert "CPU time not read" in text


def test_format_names_the_denominator_and_the_method():
    a = summary({}, g=0.0, by={})
    b = summary({"io_syscall": {"calls": 10, "bytes": 100, "time_ns": 2e6, "method": "measured",
                                "corrected": True, "correction_dominates": True}},
                g=2e6, by={"io": 2e6})
    lines = live.format_interval(live.interval_of(a, b, 0, 40_000_000, 3, 4.0, 6.0), 2.0, 5)
    assert "interval 3/5 (4.0-6.0 s)" in lines[0]
    assert "= 5.00% of the target's 40 ms CPU" in lines[0]
    assert "measured, corrected, correction dominates" in lines[2]
    quiet = live.format_interval(live.interval_of(a, a, 0, 5, 1, 0.0, 2.0), 2.0, None)
    assert quiet[-1].strip() == "(no probe fired in this interval)"


def _rec(kind, data):
    return json.dumps({"type": kind, "data": data})


def test_snapshot_reads_the_block_between_the_markers(tmp_path, monkeypatch):
    raw = tmp_path / "bpftrace.json"
    monkeypatch.setattr(live, "start_counting", lambda: None)
    lines = [_rec("printf", "jvmos-ready\n"),
             _rec("map", {"@calls": {"1,io_syscall,uprobe:/decoy/libc.so.6:write": 1}}),
             _rec("printf", SNAPSHOT_BEGIN + "\n"),
             _rec("map", {"@calls": {"1,io_syscall,uprobe:/decoy/libc.so.6:write": 5}}),
             _rec("map", {"@bytes": {"1,io_syscall,uprobe:/decoy/libc.so.6:write": 50}}),
             _rec("printf", SNAPSHOT_END + "\n"),
             _rec("printf", SNAPSHOT_BEGIN + "\n")]      # the next one, not finished yet
    raw.write_text("\n".join(lines) + "\n")
    v = live.LiveView(tmp_path, raw, 1.0, None, summarize=None, cpu_now=lambda: None,
                      decoys={"/decoy/libc.so.6": "/lib/libc.so.6"})
    r = v.snapshot(lambda: True)
    assert r.maps["@calls"] == {"1,io_syscall,uprobe:/lib/libc.so.6:write": 5}
    assert r.maps["@bytes"] == {"1,io_syscall,uprobe:/lib/libc.so.6:write": 50}
    assert not r.errors
    # bpftrace gone before the next block ends: no snapshot, said by None
    assert v.snapshot(lambda: False) is None


def test_timeline_is_written_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(live, "start_counting", lambda: None)
    v = live.LiveView(tmp_path, tmp_path / "raw.json", 2.0, 3, summarize=None,
                      cpu_now=lambda: None)
    v.intervals.append({"index": 1})
    v.skipped.append("no snapshot at 4.0 s")
    v.write()
    t = json.loads((tmp_path / "timeline.json").read_text())
    assert t["schema"] == live.SCHEMA and t["interval_s"] == 2.0 and t["count"] == 3
    assert t["intervals"] == [{"index": 1}] and t["skipped"] == ["no snapshot at 4.0 s"]
    assert not list(tmp_path.glob(".*tmp"))
