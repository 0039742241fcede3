"""heuristic/fit.py: the fit's edges the other tests left open (docs/mutation.md). Every
expected value is computed by hand in the comment beside it."""
import pytest

from jvmos.heuristic import fit as hf
from jvmos.heuristic.model import Constants

from test_heuristic_fit import level

K = Constants(C_nt=100.0, C_link=8.0, C_io_chunk=0.35)


def _levels():
    return [{"counts": {"io_writes": 10, "io_reads": 10, "threads_created": 60, "accepts": 5},
             "by_resource": {"io": 40_000.0, "threads": 120_000.0, "mem": 5_000.0}},
            {"counts": {"io_writes": 30, "io_reads": 10, "threads_created": 40},
             "by_resource": {"io": 80_000.0, "threads": 100_000.0, "mem": 7_000.0}}]


def test_goal_and_threshold_are_the_documented_ones():
    assert hf.GOAL_PCT == 5.0
    assert hf.MIN_THREADS_FIT == 100


def test_fit_by_hand_at_exactly_100_thread_creations():
    f = hf.fit(_levels(), Constants(C_nt=77.0, C_link=1.0, C_io_chunk=1.0))
    # I/O ops 20 and 40 against 40 and 80 µs: (800 + 3200) / (400 + 1600) = 2
    assert f["C_io_chunk"] == pytest.approx(2.0)
    # 60 + 40 = 100 creations: fitted, (60 x 120 + 40 x 100) / (3600 + 1600) = 11200 / 5200
    assert f["C_nt"] == pytest.approx(11200 / 5200)
    assert f["C_nt_fitted_from"] == "100 thread creations"
    # 5 accepts, no links cost measured: 0, not a default cost
    assert f["C_link"] == pytest.approx(0.0, abs=1e-15)
    assert f["C_mem"] == pytest.approx(6.0)                 # median of 5 and 7 µs


def test_count_defaults_to_zero():
    assert hf._count({"counts": {}}, "accepts") == 0
    assert hf._count({"counts": {"accepts": None}}, "accepts") == 0
    assert hf._count({"counts": {"accepts": 3}}, "accepts") == 3


def test_extended_fit_with_missing_memory_parts():
    levels = _levels()
    levels[0]["counts"]["malloc_calls"], levels[1]["counts"]["malloc_calls"] = 2, 4
    levels[0]["mem_parts"], levels[1]["mem_parts"] = {"malloc_ns": 4000.0}, {"malloc_ns": 8000.0}
    f = hf.fit_extended(levels, 77.0)
    assert f["C_malloc"] == pytest.approx(2.0)              # (2 x 4 + 4 x 8) / (4 + 16)
    assert f["C_pf"] == 0.0                                 # no page fault counted
    assert f["C_vm"] == 0.0                                 # no memory syscall time
    assert (f["C_link"], f["C_file"]) == (0.0, 0.0)


def test_lstsq2_two_regressors():
    # y = 2 x1 + 3 x2 on (1, 0), (0, 1), (1, 1)
    assert hf._lstsq2([1, 0, 1], [0, 1, 1], [2, 3, 5]) == pytest.approx((2.0, 3.0))


@pytest.mark.parametrize("ys, ab", [([0.0, 3.0], (0.0, 3.0)), ([0.5, 3.0], (0.5, 3.0)),
                                    ([2.0, 0.5], (2.0, 0.5)), ([-1.0, 3.0], (-1.0, 0.0)),
                                    ([2.0, -1.0], (2.0, 0.0))])
def test_lstsq2_keeps_non_negative_coefficients_and_falls_back_otherwise(ys, ab):
    # x1 = (1, 0), x2 = (0, 1): a = y1, b = y2; a negative coefficient: y1 alone on x1
    assert hf._lstsq2([1.0, 0.0], [0.0, 1.0], ys) == pytest.approx(ab)


def test_lstsq2_nearly_singular_falls_back():
    # x1 = (1000, 0), x2 = (1000, 0.001): det = 1e6 (1e6 + 1e-6) - 1e12 = 1, below
    # 1e-9 x s11 s22 = 1e3: y on x1 alone, (1000 x 2000) / 1e6 = 2
    assert hf._lstsq2([1000.0, 0.0], [1000.0, 0.001], [2000.0, 0.001]) == \
        pytest.approx((2.0, 0.0))


def test_lstsq2_of_small_regressors_is_not_singular():
    # x1 = (0.001, 0), x2 = (0, 0.001): det 1e-12 > 1e-9 x 1e-12: a = 2, b = 3
    assert hf._lstsq2([1e-3, 0.0], [0.0, 1e-3], [2e-3, 3e-3]) == pytest.approx((2.0, 3.0))


def test_combine_takes_the_labels_of_the_first_repeat():
    reps = [level(1000, 2, 1600), level(1000, 2, 1600)]
    reps[1].update(threads=9, pages=7, connections=5, bare={"pages_per_s": 1.0},
                   recorded={"pages_per_s": 2.0}, run_dir="other")
    reps[0]["counts"]["futex"], reps[1]["counts"]["futex"] = None, 4
    L = hf.combine(reps)
    assert (L["threads"], L["pages"], L["connections"]) == (1, 1000, 1000)
    assert L["bare"] == {"pages_per_s": 100.0} and L["recorded"] == {"pages_per_s": 90.0}
    assert L["run_dir"] == "runs/1000"
    assert L["counts"]["futex"] == 2.0                      # median of 0 (None) and 4


def test_worst_error_with_the_levels_own_memory():
    # levels that follow the model exactly, predicted with the true constants: the estimate
    # with the level's own memory cost is exact, 0%, and is reported (not None)
    levels = [level(100, 30, 400), level(500, 120, 1300), level(1000, 20, 1600)]
    results = {"levels": {str(i): L for i, L in enumerate(levels)}}
    hf.analyze(results, K)
    assert results["worst_counted_own_mem_error_pct"] == pytest.approx(0.0, abs=1e-9)
