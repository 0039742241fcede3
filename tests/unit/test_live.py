"""The live view's arithmetic and its snapshot reading, on canned data."""
import json

import pytest

from jvmos import live
from jvmos.analyzers.records import Records


def summary(cats: dict, g=None, by=None, probe=None):
    return {"categories": cats,
            "totals": {"guaranteed_overhead_ns": g, "guaranteed_overhead_known_ns": g or 0,
                       "guaranteed_by_resource": by or {}, "probe_overhead_ns": probe,
                       "guaranteed_overhead_unknown": [] if g is not None else ["malloc"]}}


def corrected(calls, raw, corr, floored=False):
    return {"calls": calls, "bytes": 10 * calls, "time_raw_ns": raw, "correction_ns": corr,
            "time_ns": max(0.0, raw - corr), "method": "measured", "corrected": True,
            "floored": floored}


def test_an_interval_is_the_difference_of_two_snapshots():
    # io_syscall is not a guaranteed-overhead category, jni_copy and kernel_copy are
    a = summary({"io_syscall": corrected(100, 9000.0, 4000.0),
                 "jni_copy": corrected(10, 100.0, 400.0, floored=True)}, probe=200.0)
    b = summary({"io_syscall": corrected(160, 14000.0, 6000.0),
                 "jni_copy": corrected(17, 2000.0, 680.0),
                 "kernel_copy": {"calls": 7, "bytes": 70, "time_ns": 30.0,
                                 "method": "estimated"}}, probe=260.0)
    e = live.interval_of(a, b, 1_000_000, 1_300_000, 2, 2.0, 4.0)
    io = e["categories"]["io_syscall"]
    assert (io["calls"], io["bytes"], io["method"]) == (60, 600, "measured")
    assert io["time_ns"] == 5000.0 - 2000.0 and io["corrected"] is True
    # the earlier snapshot's JNI time was floored at 0 (raw 100 < correction 400): the
    # interval's is its own raw 1,900 less its own correction 280, not 1,320 - 0
    jni = e["categories"]["jni_copy"]
    assert jni["time_ns"] == 1900.0 - 280.0 and "floored" not in jni
    # a category first seen in this interval: everything it has happened in it
    assert e["categories"]["kernel_copy"]["calls"] == 7
    assert e["guaranteed_overhead_ns"] == pytest.approx(1620.0 + 30.0)
    assert e["guaranteed_by_resource"] == {"io": pytest.approx(1650.0)}
    assert e["probe_overhead_ns"] == pytest.approx(60.0)
    assert e["target_cpu_ns"] == 300_000
    assert e["guaranteed_overhead_pct_of_cpu"] == pytest.approx(100 * 1650.0 / 300_000)
    assert (e["index"], e["t_start_s"], e["t_end_s"]) == (2, 2.0, 4.0)


def test_an_interval_whose_correction_exceeds_its_raw_time_is_floored():
    a = summary({"jni_copy": corrected(10, 5000.0, 400.0)})
    b = summary({"jni_copy": corrected(20, 5100.0, 800.0)})
    jni = live.interval_of(a, b, 0, 10, 1, 0.0, 1.0)["categories"]["jni_copy"]
    assert jni["time_ns"] == 0.0 and jni["floored"] and jni["correction_dominates"]
    assert "floored at 0" in "\n".join(live.format_interval(
        live.interval_of(a, b, 0, 10, 1, 0.0, 1.0), None))


def test_unknown_stays_unknown():
    a = summary({"malloc": {"calls": 1, "bytes": None, "time_ns": 50.0, "method": "measured"}})
    b = summary({"malloc": {"calls": 4, "bytes": None, "time_ns": None, "method": "measured"}})
    e = live.interval_of(a, b, None, None, 1, 0.0, 1.0)
    assert e["categories"]["malloc"] == {"calls": 3, "bytes": None, "time_ns": None,
                                         "method": "measured"}
    # the term is unknown in this interval: the sum is unknown, its known part kept apart
    assert e["guaranteed_overhead_ns"] is None and e["guaranteed_overhead_unknown"] == ["malloc"]
    assert e["guaranteed_overhead_known_ns"] == 0 and e["target_cpu_ns"] is None
    assert e["guaranteed_overhead_pct_of_cpu"] is None
    text = "\n".join(live.format_interval(e, None))
    assert "guaranteed overhead unknown" in text and "malloc" in text
    assert "CPU time not read" in text


def test_format_names_the_denominator_and_the_method():
    a = summary({}, probe=0.0)
    b = summary({"jni_copy": corrected(10, 5e6, 3e6)}, probe=1e7)
    lines = live.format_interval(live.interval_of(a, b, 0, 40_000_000, 3, 4.0, 6.0), 5)
    assert "interval 3/5 (4.0-6.0 s)" in lines[0]
    assert ("= 5.00% of the target's 40 ms CPU while traced, of which the probes' ~10 ms "
            "(estimated)") in lines[0]
    assert "measured, corrected, correction dominates" in lines[2]
    quiet = live.format_interval(live.interval_of(a, a, 0, 5, 1, 0.0, 2.0), None)
    assert quiet[-1].strip() == "(no probe fired in this interval)"


def _rec(kind, data):
    return json.dumps({"type": kind, "data": data})


class FakeEngine:
    """What the live view asks of the engine: alive(), and snapshot() -> its maps or None."""

    def __init__(self, events):
        self.events, self.up = list(events), True

    def alive(self):
        return self.up

    def snapshot(self, timeout):
        return self.events.pop(0) if self.events else None


def test_snapshot_is_the_engines_maps_as_records(tmp_path, monkeypatch):
    from jvmos import engine as engine_mod

    def decode(ev, plan):
        r = Records()
        r.maps["calls"] = dict(ev["calls"])
        r.engine_lost = dict(ev["lost"])
        return r
    monkeypatch.setattr(engine_mod, "decode", decode)
    eng = FakeEngine([{"calls": {"1,io_syscall,x": 5}, "lost": {"thread_state": 2}}])
    v = live.LiveView(eng, None, tmp_path, tmp_path / "engine.json", 1.0, None,
                      summarize=None, cpu_now=lambda: None)
    r, why = v.snapshot(eng.alive)
    assert why is None and r.maps["calls"] == {"1,io_syscall,x": 5}
    assert v.lost_events == 2          # the engine's counters, cumulative
    # alive but nothing handed over: no snapshot, and why
    assert v.snapshot(eng.alive)[1].startswith("the engine did not hand it over within")
    eng.up = False
    assert v.snapshot(eng.alive) == (None, "the engine stopped before handing it over")


def test_timeline_is_written_whole(tmp_path):
    v = live.LiveView(FakeEngine([]), None, tmp_path, tmp_path / "engine.json", 2.0, 3,
                      summarize=None, cpu_now=lambda: None)
    v.intervals.append({"index": 1})
    v.skipped.append("no snapshot at 4.0 s")
    v.write()
    t = json.loads((tmp_path / "timeline.json").read_text())
    assert t["schema"] == live.SCHEMA and t["interval_s"] == 2.0 and t["count"] == 3
    assert t["intervals"] == [{"index": 1}] and t["skipped"] == ["no snapshot at 4.0 s"]
    assert not list(tmp_path.glob(".*tmp"))
