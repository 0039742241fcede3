"""heuristic/terms.py: Table 7 term by term (docs/mutation.md). Every expected value is
computed by hand in the comment beside it."""
import json

import pytest

from jvmos.heuristic import terms
from jvmos.heuristic.model import Constants


def _summary(scale=1.0):
    t = lambda ns: {"time_ns": ns * scale}
    return {"categories": {
        "thread_create": t(100), "link": t(200), "file": t(300), "jni_copy": t(400),
        "nio_copy": t(500), "kernel_copy": t(600), "malloc": t(700), "free_estimated": t(800),
        "vm": {"syscalls_time_ns": 900 * scale, "page_fault_time_ns": 1000 * scale}}}


def test_terms_are_the_four_of_equation_1():
    assert terms.TERMS == ("threads", "links", "io", "mem")


def test_parts_of_a_recording():
    p = terms.parts_of(_summary())
    assert p == {"threads": {"measured_ns": 100.0, "estimated_ns": 0.0},
                 "links": {"measured_ns": 500.0, "estimated_ns": 0.0},        # 200 + 300
                 "io": {"measured_ns": 400.0, "estimated_ns": 1100.0},        # 500 + 600
                 "mem": {"measured_ns": 1600.0, "estimated_ns": 1800.0}}      # 700+900, 800+1000


def test_parts_of_an_empty_recording_are_zero():
    p = terms.parts_of({"categories": {"link": {"time_ns": None}}})
    assert all(v == {"measured_ns": 0.0, "estimated_ns": 0.0} for v in p.values())
    assert set(p) == set(terms.TERMS)


def test_level_parts_are_medians_part_by_part(tmp_path):
    dirs = []
    for i, scale in enumerate((1.0, 3.0, 2.0)):
        d = tmp_path / f"r{i}"
        d.mkdir()
        (d / "summary.json").write_text(json.dumps(_summary(scale)))
        dirs.append(d)
    p = terms.level_parts(dirs)
    # the median of scales 1, 3, 2 is 2
    assert p["threads"] == {"measured_ns": 200.0, "estimated_ns": 0.0}
    assert p["mem"] == {"measured_ns": 3200.0, "estimated_ns": 3600.0}
    assert p["io"] == {"measured_ns": 800.0, "estimated_ns": 2200.0}


def test_level_parts_of_an_even_number_of_recordings(tmp_path):
    dirs = []
    for i, scale in enumerate((1.0, 2.0)):
        d = tmp_path / f"r{i}"
        d.mkdir()
        (d / "summary.json").write_text(json.dumps(_summary(scale)))
        dirs.append(d)
    assert terms.level_parts(dirs)["threads"]["measured_ns"] == 150.0


def test_level_parts_without_a_summary_is_none(tmp_path):
    good = tmp_path / "good"
    good.mkdir()
    (good / "summary.json").write_text(json.dumps(_summary()))
    bad = tmp_path / "bad"
    bad.mkdir()
    assert terms.level_parts([good, bad]) is None
    (bad / "summary.json").write_text("{not json")
    assert terms.level_parts([good, bad]) is None


K = Constants(C_nt=10.0, C_link=20.0, C_io_chunk=0.5, C_file=3.0)
COUNTS = {"accepts": 4, "io_writes": 6, "io_reads": 2, "threads_created": 5, "files_opened": 2}


def test_predicted_terms_of_equation_1():
    # 4 connections, (6 + 2) / 4 = 2 chunks each, 5 threads, 2 files (no file chunks: the
    # I/O belongs to the connections)
    p = terms.predicted_terms(K, COUNTS, mem_us=7.0)
    assert p["threads"] == pytest.approx(50.0)       # 5 x 10
    assert p["links"] == pytest.approx(86.0)         # 4 x 20 + 2 x 3
    assert p["io"] == pytest.approx(4.0)             # 4 x 2 x 0.5
    assert p["mem"] == pytest.approx(7.0)


def test_paper_terms_of_equation_6():
    p = terms.paper_terms(K, COUNTS)
    assert p["threads"] == pytest.approx(40.0)       # a thread per connection: 4 x 10
    assert p["links"] == pytest.approx(80.0)         # 4 x 20
    assert p["io"] == pytest.approx(4.0)             # 4 x 2 x 0.5
    assert p["mem"] == 0.0


PARTS = {"threads": {"measured_ns": 2000.0, "estimated_ns": 0.0},
         "links": {"measured_ns": 1000.0, "estimated_ns": 0.0},
         "io": {"measured_ns": 0.0, "estimated_ns": 500.0},
         "mem": {"measured_ns": 0.0, "estimated_ns": 0.0}}
PRED = {"threads": 1.0, "links": 2.0, "io": 3.0, "mem": 4.0}


def test_compare_term_by_term():
    c = terms.compare(PRED, PARTS)
    assert c["threads"] == {"predicted_us": 1.0, "measured_us": 2.0, "estimated_us": 0.0,
                            "estimated_only": False, "diff_pct": pytest.approx(50.0)}
    assert c["links"]["diff_pct"] == pytest.approx(-100.0)       # (1 - 2) / 1
    assert c["io"]["estimated_only"] is True
    assert c["io"]["estimated_us"] == pytest.approx(0.5)
    assert c["io"]["diff_pct"] is None
    # nothing measured nor estimated: not "estimated only", no error either
    assert c["mem"]["estimated_only"] is False
    assert c["mem"]["diff_pct"] is None


def test_totals_leave_the_estimated_only_terms_out():
    t = terms.totals(terms.compare(PRED, PARTS))
    assert t["terms"] == ["threads", "links", "mem"]
    assert t["measured_us"] == pytest.approx(3.0)            # 2 + 1 + 0
    assert t["predicted_us"] == pytest.approx(7.0)           # 1 + 2 + 4
    assert t["diff_pct"] == pytest.approx(100.0 * (3 - 7) / 3)


def test_totals_of_nothing_measured_have_no_error():
    zero = {k: {"measured_ns": 0.0, "estimated_ns": 0.0} for k in terms.TERMS}
    t = terms.totals(terms.compare(PRED, zero))
    assert t["measured_us"] == 0.0
    assert t["diff_pct"] is None


def test_compare_error_of_a_term_measured_4_predicted_1():
    parts = dict(PARTS, threads={"measured_ns": 4000.0, "estimated_ns": 0.0})
    assert terms.compare(PRED, parts)["threads"]["diff_pct"] == pytest.approx(75.0)  # 3 / 4
