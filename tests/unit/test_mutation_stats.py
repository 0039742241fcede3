"""analyzers/stats.py: the statistics at the edges the other tests left open
(docs/mutation.md). Expected values are worked out by hand in the comments (the Student t
quantiles from tables, to the digits asserted); none is the module's own output."""
import math

import pytest
from scipy import stats as st

from jvmos.analyzers import stats


def test_t95_is_students_table():
    # the table against scipy's quantile, rounded as printed tables are
    for df in range(1, 31):
        assert stats.t95(df) == round(float(st.t.ppf(0.975, df)), 3), df
    assert stats.t95(5) == 2.571 and stats.t95(13) == 2.160 and stats.t95(29) == 2.045
    assert stats.t95(31) == 1.96
    assert stats.t95(0) == math.inf


def test_linfit_of_two_points():
    # through (0, 1) and (1, 3): y = 1 + 2x
    assert stats.linfit([0.0, 1.0], [1.0, 3.0]) == pytest.approx((1.0, 2.0))
    with pytest.raises(ValueError):
        stats.linfit([1.0], [1.0])


def test_summary_of_one_value_has_no_spread():
    s = stats.summary([5.0])
    assert s["sigma"] == 0.0 and s["sd"] is None and s["ci"] is None


def test_summary_whose_spread_underflows_is_zero():
    # (x - m)^2 ~ 2.5e-401 underflows to 0: no spread, though the values differ
    s = stats.summary([1e-200, 2e-200])
    assert s["sd"] == 0.0 and s["sigma"] == 0.0
    assert s["ci"] == [s["mean"], s["mean"]]


def test_welch_does_not_reject_at_p_equal_to_alpha():
    xs, ys = [1.0, 2.0, 3.0, 4.0], [10.0, 20.0, 30.0]
    p = stats.welch(xs, ys)["p"]
    assert stats.welch(xs, ys, alpha=p)["reject"] is False
    assert stats.welch(xs, ys, alpha=p * 1.000001)["reject"] is True


def test_welch_diff_ci_by_hand():
    # means 2.5 and 20: diff -17.5; variances 5/3 and 100: se sqrt(5/12 + 100/3) = 5.80948;
    # Welch df 33.75^2 / ((5/12)^2/3 + (100/3)^2/2) = 2.0501; t(0.975, 2.0501) = 4.1822
    r = stats.welch_diff_ci([1.0, 2.0, 3.0, 4.0], [10.0, 20.0, 30.0])
    assert r["diff"] == pytest.approx(-17.5)
    assert r["ci"] == pytest.approx([-41.9198, 6.9198], abs=1e-3)
    assert r["p"] == pytest.approx(0.09199, abs=1e-4)
    assert r["n"] == [4, 3]


def test_welch_diff_ci_needs_two_values_in_each_sample():
    with pytest.raises(ValueError):
        stats.welch_diff_ci([1.0, 2.0], [3.0])
    with pytest.raises(ValueError):
        stats.welch_diff_ci([1.0], [2.0, 3.0])
    # two in each is enough: diff 1.5 - 4 = -2.5
    assert stats.welch_diff_ci([1.0, 2.0], [3.0, 5.0])["diff"] == pytest.approx(-2.5)


def test_welch_diff_ci_without_variance():
    r = stats.welch_diff_ci([2.0, 2.0], [2.0, 2.0])
    assert r["p"] == 1.0 and r["ci"] == [0.0, 0.0]
    r = stats.welch_diff_ci([2.0, 2.0], [3.0, 3.0])
    assert r["p"] == 0.0 and r["ci"] == [-1.0, -1.0]


def test_ratio_ci_by_hand():
    # diffs 1..4: mean 2.5, sd sqrt(5/3), se 0.645497; R = 2.5 / 2 = 1.25
    # a = se^2 / P^2 = 0.104167, b = R^2 0.2^2 / P^2 = 0.015625, se_R = sqrt(a + b) = 0.346109
    # df = (a + b)^2 / (a^2 / 3) = 3.9675; t(0.95, 3.9675) = 2.13687: R -+ 0.73959
    r = stats.ratio_ci([1.0, 2.0, 3.0, 4.0], 2.0, 0.2)
    assert r["level"] == 0.9
    assert r["se"] == pytest.approx(0.346109, abs=1e-6)
    assert r["df"] == pytest.approx(3.9675, abs=1e-4)
    assert r["ci"] == pytest.approx([0.51041, 1.98959], abs=1e-4)
    assert "ratio estimator" not in r["method"]


def test_ratio_ci_with_the_prediction_on_few_degrees_of_freedom():
    # as above with b^2 / 4 added to the denominator: df = 0.119792^2 / (0.0036169 + 0.0000610)
    r = stats.ratio_ci([1.0, 2.0, 3.0, 4.0], 2.0, 0.2, predicted_df=4)
    assert r["df"] == pytest.approx(3.90166, abs=1e-4)
    assert r["ci"] == pytest.approx([0.50677, 1.99323], abs=1e-4)


def test_ratio_ci_with_counts_measured_per_pair():
    # counts 1, 1, 2, 2 (mean 1.5): residuals d - 1.25 x 2 x c / 1.5 = -2/3, 1/3, -1/3, 2/3;
    # se_m = sqrt((4/9 + 1/9 + 1/9 + 4/9) / 3) / 2 = 0.304290
    r = stats.ratio_ci([1.0, 2.0, 3.0, 4.0], 2.0, 0.2, counts=[1, 1, 2, 2])
    # a = 0.304290^2 / 4 = 0.023148, b = 0.015625: se_R = sqrt(0.038773) = 0.196909
    assert r["se"] == pytest.approx(0.196909, abs=1e-6)
    assert r["df"] == pytest.approx(8.416875, abs=1e-5)
    assert r["ci"] == pytest.approx([0.88618, 1.61382], abs=1e-4)
    assert "; the count measured per pair: ratio estimator" in r["method"]


def test_ratio_ci_of_equal_differences_has_n_minus_1_df():
    # no spread: a = 0, df = n - 1 = 2; se_R = 1 x 0.2 / 2 = 0.1; t(0.95, 2) = 2.919986
    r = stats.ratio_ci([2.0, 2.0, 2.0], 2.0, 0.2)
    assert r["df"] == 2.0
    assert r["ci"] == pytest.approx([1 - 0.2919986, 1 + 0.2919986], abs=1e-6)


MEASURED = {"mean": 1.0, "ci": [0.5, 2.0]}


def test_a_saving_whose_interval_holds_1_but_not_0_is_significant():
    v = stats.equivalence_verdict(None, MEASURED, 0.0)
    assert v["verdict"] == "missing term" and v["significant"] is True
    assert v["why"] == "the model predicts about 0 while the change saved time: a term is missing"
    v = stats.equivalence_verdict(None, {"mean": 1.0, "ci": [-0.5, 2.0]}, 0.0)
    assert v["verdict"] == "inconclusive" and v["why"] == "nothing predicted and nothing shown"


def test_a_prediction_of_exactly_one_percent_is_a_prediction():
    ratio = {"ci": [0.9, 1.1], "level": 0.9}
    assert stats.equivalence_verdict(ratio, MEASURED, 0.01)["verdict"] == "confirmed"
    assert stats.equivalence_verdict(ratio, MEASURED, 0.0099)["verdict"] == "missing term"


@pytest.mark.parametrize("ci, verdict", [([0.8, 1.25], "confirmed"), ([0.5, 0.8], "inconclusive"),
                                         ([1.25, 2.0], "inconclusive"), ([0.5, 0.79], "refuted"),
                                         ([1.26, 2.0], "refuted"), ([0.79, 1.0], "inconclusive")])
def test_the_equivalence_bounds_are_inclusive(ci, verdict):
    assert stats.equivalence_verdict({"ci": ci, "level": 0.9}, MEASURED, 1.0)["verdict"] == verdict


def test_pairs_needed_by_hand():
    # sd 1, P 1, relative se 0.05 (b = 0.0025): a = 1/n; the first n with
    # t(0.95, Welch df) sqrt(1/n + 0.0025) <= 0.2 is 83 (at 82: df 117.61, 1.65791 x 0.121223
    # = 0.200978; at 83: df 119.56, 1.65770 x 0.120616 = 0.199945)
    assert stats.pairs_needed(1.0, 1.0, 0.05) == 83
    assert stats.pairs_needed(1.0, 1.0, 0.05, cap=83) == 83
    assert stats.pairs_needed(1.0, 1.0, 0.05, cap=82) is None
    # the prediction on 4 degrees of freedom: fewer df, two pairs more
    assert stats.pairs_needed(1.0, 1.0, 0.05, predicted_df=4) == 85
    # no prediction error: df n - 1, t(0.95, n - 1) / sqrt(n) <= 0.2 first at n = 70
    assert stats.pairs_needed(1.0, 1.0, 0.0) == 70


def test_floored_notes():
    m = {"ns_per_call": 0.0, "ns_per_call_fit": -0.00123, "ns_per_call_floored": True,
         "ns_per_byte": 0.5}
    assert stats.floored_notes(m) == ["ns_per_call fitted -0.00123, floored at 0"]


def test_floor_fit_leaves_zero_and_positive_costs_alone():
    for v in (0.0, 0.5):
        m = stats.floor_fit({"b": v, "b_ci95": [-1.0, 2.0]}, "b")
        assert m == {"b": v, "b_ci95": [-1.0, 2.0]}


def test_floor_fit_clips_the_interval():
    m = stats.floor_fit({"b": -1.0, "b_ci95": [-2.0, 3.0]}, "b")
    assert m == {"b": 0.0, "b_fit": -1.0, "b_floored": True, "b_fit_ci95": [-2.0, 3.0],
                 "b_ci95": [0.0, 3.0]}


def test_summary_at_its_default_99_percent_by_hand():
    # 1, 2, 3: mean 2, sd 1, sigma sqrt(2/3); t(0.995, 2) = 9.924843: 2 -+ 9.924843 / sqrt 3
    s = stats.summary([1.0, 2.0, 3.0])
    assert s["level"] == 0.99 and s["n"] == 3
    assert s["sd"] == pytest.approx(1.0) and s["sigma"] == pytest.approx(math.sqrt(2 / 3))
    assert s["ci"] == pytest.approx([2 - 5.730111, 2 + 5.730111], abs=1e-6)
    assert stats.summary([4.0])["n"] == 1


def test_welch_by_hand():
    # as welch_diff_ci's: t = -17.5 / 5.80948 = -3.01232 on 2.0501 df, p 0.09199
    w = stats.welch([1.0, 2.0, 3.0, 4.0], [10.0, 20.0, 30.0])
    assert w["alpha"] == 0.01 and w["reject"] is False
    assert w["t"] == pytest.approx(-3.01232, abs=1e-5)
    assert w["df"] == pytest.approx(2.0501, abs=1e-4)
    assert w["p"] == pytest.approx(0.09199, abs=1e-4)


def test_welch_with_one_sample_without_variance_is_a_t_test():
    # 2, 2 against 1, 5: se sqrt(0 + 8/2) = 2, t = (2 - 3) / 2 = -0.5 on 1 df: p 0.704833
    w = stats.welch([2.0, 2.0], [1.0, 5.0])
    assert w["t"] == pytest.approx(-0.5)
    assert w["df"] == pytest.approx(1.0)
    assert w["p"] == pytest.approx(0.704833, abs=1e-6)


def test_welch_without_variance_in_either():
    w = stats.welch([2.0, 2.0], [2.0, 2.0])
    assert w["p"] == 1.0 and w["reject"] is False and w["t"] is None
    w = stats.welch([2.0, 2.0], [3.0, 3.0])
    assert w["p"] == 0.0 and w["reject"] is True


def test_paired_diff_ci_at_its_default_90_percent_by_hand():
    # diffs 1, 2, 3: mean 2, sd sqrt((1 + 0 + 1) / 2) = 1, se 1 / sqrt(3) = 0.5773503;
    # Student t(0.95, 2 df) = 2.919986 (tables): half-width 2.919986 x 0.5773503 = 1.685855
    d = stats.paired_diff_ci([1.0, 2.0, 3.0])
    assert d["level"] == 0.90
    assert d["ci"] == pytest.approx([0.314145, 3.685855], abs=2e-6)
    assert d["se"] == pytest.approx(0.5773503, abs=1e-7) and d["sd"] == 1.0
    # 3 pairs, 2 degrees of freedom, as printed beside the interval
    assert d["method"] == "paired t, 3 pairs (2 df)"


def test_welch_diff_ci_with_one_sample_without_variance_is_a_t_interval():
    # xs 1, 1 (no variance), ys 1, 2, 3 (variance 1): diff -1, se sqrt(0 + 1/3) = 0.5773503,
    # Welch df (1/3)^2 / ((1/3)^2 / 2) = 2; t(0.975, 2) = 4.302653: -1 -+ 2.484138;
    # t = -1.732051 on 2 df: p = 1 - 1.732051 / sqrt(1.732051^2 + 2) = 1 - 0.774597
    w = stats.welch_diff_ci([1.0, 1.0], [1.0, 2.0, 3.0])
    assert w["diff"] == -1.0 and w["method"] == "Welch t"
    assert w["ci"] == pytest.approx([-3.484138, 1.484138], abs=1e-5)
    assert w["p"] == pytest.approx(0.225403, abs=1e-5)


def test_pairs_needed_stops_at_its_default_cap_of_200():
    # no uncertainty in the prediction (b 0): the first n with t(0.95, n - 1) x 1.713 / sqrt(n)
    # <= 0.2. n = 200: 1.652547 x 1.713 / 14.142136 = 0.200169 > 0.2; n = 201: 1.652508 x
    # 1.713 / 14.177447 = 0.199665: 201 pairs, one more than the default cap
    assert stats.pairs_needed(1.713, 1.0, 0.0) is None
    assert stats.pairs_needed(1.713, 1.0, 0.0, cap=201) == 201


def test_pairs_needed_of_a_pilot_without_spread_has_n_minus_1_df():
    # sd 0: only the prediction's 10% (on infinite df): the df is n - 1, and t(0.95, df) x 0.1
    # <= 0.2 first at df 6 (1.943180; df 5: 2.015048): n = 7
    assert stats.pairs_needed(0.0, 1.0, 0.1) == 7
