"""analyzers/correction.py: the boundaries of the probe-effect correction that the other tests
left open (docs/mutation.md). Every expected value is computed by hand."""
import pytest

from jvmos import JvmosError
from jvmos.analyzers import correction as c


def test_an_absent_figure_does_not_stop_the_checks_of_the_next():
    # jni_copy_time_hit (the first key) is absent; uprobe, later, is negative
    with pytest.raises(JvmosError, match="uprobe is -1"):
        c.validate_probes({"uprobe": {"mean_ns": -1}})


def test_a_cost_below_one_ns_is_a_cost():
    c.validate_probes({"uprobe": {"mean_ns": 0.5}})
    with pytest.raises(JvmosError):
        c.validate_probes({"uprobe": {"mean_ns": 0}})


def test_an_interval_may_end_at_its_mean():
    c.validate_probes({"uprobe": {"mean_ns": 5.0, "ci95_ns": [4.0, 5.0]}})
    c.validate_probes({"uprobe": {"mean_ns": 4.0, "ci95_ns": [4.0, 5.0]}})
    with pytest.raises(JvmosError, match="does not hold its mean"):
        c.validate_probes({"uprobe": {"mean_ns": 5.5, "ci95_ns": [4.0, 5.0]}})


def test_a_bare_uprobe_may_cost_as_much_as_a_pair():
    c.validate_probes({"uprobe": {"mean_ns": 7.0}, "jni_copy_time_hit": {"mean_ns": 7.0}})
    with pytest.raises(JvmosError, match="costs more than"):
        c.validate_probes({"uprobe": {"mean_ns": 7.5}, "jni_copy_time_hit": {"mean_ns": 7.0}})


def test_a_window_may_be_its_whole_hit():
    c.validate_probes({"io_syscall_window": {"mean_ns": 9.0}, "io_syscall_hit": {"mean_ns": 9.0}})
    with pytest.raises(JvmosError, match="larger than io_syscall_hit"):
        c.validate_probes({"io_syscall_window": {"mean_ns": 9.5},
                           "io_syscall_hit": {"mean_ns": 9.0}})


def test_a_per_jdk_cost_may_be_zero_per_call():
    c.validate_costs({"jni_region": {"/jdk": {"ns_per_call": 0.0, "ns_per_byte": 0.1}}})
    with pytest.raises(JvmosError, match="malloc_call.ns_per_call"):
        c.validate_costs({"malloc_call": {"ns_per_call": 0.0}})


def test_entries_of_the_costs_that_are_not_models_are_left_alone():
    c.validate_costs({"version": 3, "note": "x", "other": {"fit": "none"}})


def test_an_unknown_correction_is_not_floored():
    out = c.correct(100.0, 2, None)
    assert out["floored"] is False
    assert out["time_ns"] is None and out["corrected"] is False


def test_a_correction_equal_to_the_raw_time_is_not_floored():
    out = c.correct(100.0, 1, 100.0)
    assert out["time_ns"] == 0.0
    assert out["floored"] is False
    assert "time_ci95_ns" not in out
    out = c.correct(100.5, 1, 100.0)
    assert out["time_ns"] == pytest.approx(0.5)
    assert out["floored"] is False


def test_a_correction_of_exactly_half_does_not_dominate():
    assert c.correct(100.0, 1, 50.0)["correction_dominates"] is False
    assert c.correct(100.0, 1, 50.5)["correction_dominates"] is True


def test_interval_without_a_per_hit_window_takes_the_whole_correction_as_the_window():
    # rest 0: low 100 - 2 x 20 = 60, high 100 - 2 x 10 = 80
    out = c.correct(100.0, 2, 30.0, window_ci=(10.0, 20.0))
    assert out["time_ci95_ns"] == pytest.approx([60.0, 80.0])


def test_combine_counts_a_missing_raw_time_and_hit_count_as_zero():
    out = c.combine([{"time_raw_ns": None, "time_hits": None, "time_ns": 0.0},
                     {"time_raw_ns": 10.0, "time_hits": 3, "time_ns": 5.0}])
    assert out["time_raw_ns"] == 10.0
    assert out["time_hits"] == 3


def _part(raw, corr):
    return {"time_raw_ns": raw, "time_ns": max(0.0, raw - corr), "correction_ns": corr,
            "corrected": True, "time_hits": 1}


def test_combine_dominance_at_and_around_half():
    assert c.combine([_part(100.0, 50.0)])["correction_dominates"] is False     # 50 = 0.5 x 100
    assert c.combine([_part(100.0, 10.0)])["correction_dominates"] is False     # 10 < 50
    assert c.combine([_part(100.0, 60.0)])["correction_dominates"] is True
    # no raw time: nothing to dominate
    assert c.combine([_part(0.0, 5.0)])["correction_dominates"] is False


def test_the_symbol_pair_is_used_where_calibrated():
    probes = {"symbol_pair_time_hit": {"mean_ns": 40.0},
              "symbol_pair_time_window": {"mean_ns": 30.0, "ci95_ns": [28.0, 32.0]},
              "jni_copy_time_hit": {"mean_ns": 400.0},
              "jni_copy_time_window": {"mean_ns": 300.0, "ci95_ns": [280.0, 320.0]}}
    k = c.probe_costs(probes)
    assert k["pair_hit"] == 40.0
    assert k["pair_window"] == 30.0
    assert k["pair_ci"] == (28.0, 32.0)
    del probes["symbol_pair_time_hit"], probes["symbol_pair_time_window"]
    k = c.probe_costs(probes)
    assert k["pair_hit"] == 400.0
    assert k["pair_window"] == 300.0


def test_sub_is_unknown_when_either_side_is():
    assert c.sub(None, 1.0) is None
    assert c.sub(1.0, None) is None
    assert c.sub(None, None) is None
    assert c.sub(5.0, 2.0) == 3.0


def test_get_reads_a_count_and_defaults_to_zero():
    assert c.get({"x": {"calls": 3}}, "x") == 3
    assert c.get({"x": {"bytes": 7}}, "x", "bytes") == 7
    assert c.get({"x": {}}, "x") == 0
    assert c.get({"x": {"calls": 0}}, "x") == 0
    assert c.get({"x": {"calls": None}}, "x") == 0
    assert c.get({"x": None}, "x") == 0
    assert c.get({}, "x") == 0
