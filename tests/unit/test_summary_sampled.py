"""--mode sample's summary is built by the analyzers (summary.build_sampled), like every other:
rebuilt from the samples a committed recording kept, it is that recording's summary, key order
included."""
import json
from pathlib import Path

import pytest

from jvmos.analyzers.summary import build_sampled

RUNS = sorted((Path(__file__).resolve().parents[2] / "results").glob("*/runs/*-sample"))


def test_there_are_committed_sample_runs():
    assert RUNS


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_a_committed_sample_summary_is_rebuilt_exactly(run):
    s = json.loads((run / "summary.json").read_text())
    s.pop("status_reason", None)            # set by the recorder, after the analyzers
    got = build_sampled(s["sampling"], wall_ns=s["totals"]["wall_ns"], status=s["status"],
                        exit_code=s["exit_code"], warnings=list(s["warnings"]))
    # older recordings (results/accuracy, 23 Nov) listed all three copy categories as terms,
    # sampled or not; the list now names those that were sampled (the ones summed)
    assert got["totals"]["guaranteed_overhead_categories"] == \
        [c for c in ("jni_copy", "nio_copy", "kernel_copy") if c in s["categories"]]
    got["totals"]["guaranteed_overhead_categories"] = \
        s["totals"]["guaranteed_overhead_categories"]
    assert json.dumps(got) == json.dumps(s)


def test_no_sample_in_a_copy_category_leaves_the_overhead_unknown_not_zero():
    samp = {"categories": {}, "by_pid": {"1": {}}}
    s = build_sampled(samp, wall_ns=10, status="complete")
    assert s["totals"]["guaranteed_overhead_ns"] is None
    assert s["totals"]["guaranteed_overhead_pct"] is None
    # samples elsewhere (Java code, I/O syscalls), none in a copy category: unknown, said
    java = {"categories": {"java": {"time_ns": 9.0, "time_err95_ns": 1.0, "samples": 9,
                                    "share_pct": 90.0}}, "by_pid": {}}
    s = build_sampled(java, wall_ns=10, status="complete")
    assert s["totals"]["guaranteed_overhead_ns"] is None
    assert any("below the sampler's resolution" in w for w in s["warnings"])
    one = {"categories": {"jni_copy": {"time_ns": 3.0, "time_err95_ns": 1.0, "samples": 3,
                                       "share_pct": 30.0}}, "by_pid": {}}
    s = build_sampled(one, wall_ns=10, status="complete")
    assert s["totals"]["guaranteed_overhead_ns"] == 3.0            # 3 samples x 1 ns
    assert s["totals"]["guaranteed_overhead_pct"] == 30.0          # 3 / 10 of the wall time
    assert s["categories"]["jni_copy"]["calls"] is None
