"""heuristic/theta.py: θ's fit, its leave-one-dose-out model error and the combination of
predictions, worked by hand (docs/mutation.md): the slopes are least squares of four points,
the rest the formulas of the module's docstrings evaluated on paper."""
import math
import random

import pytest

from jvmos.heuristic import theta

X = {"0": 0, "1": 10, "2": 20, "3": 30}


def _servers(cpus, x=X):
    return [[{"dose": d, "uses": x[d], "cpu_ns": c[d]} for d in x] for c in cpus]


def test_dose_order_reverses_every_other_round():
    first = ["a", "b", "c"]
    random.Random(7).shuffle(first)                 # the first round: the seed's order
    assert theta.dose_order(["a", "b", "c"], 1, 7) == first
    assert theta.dose_order(["a", "b", "c"], 4, 7) == first + first[::-1] + first + first[::-1]


def test_a_slope_of_two_counts():
    s = theta.slope([1.0, 2.0], [3.0, 5.0])
    assert s["intercept"] == pytest.approx(1.0) and s["slope"] == pytest.approx(2.0)


def test_mean_by_dose():
    m = theta._mean_by_dose([{"dose": "a", "uses": 10, "cpu_ns": 100},
                             {"dose": "a", "uses": 12, "cpu_ns": 110}])
    assert m == {"a": {"x": 11.0, "y": 105.0}}


def test_leave_one_dose_out_by_hand():
    # baseline at 5 uses: effects are differences from it. Dose 1 left out: slopes through
    # (5, 100), (25, 310) and (5, 100), (25, 300): 10.5 and 10, mean 10.25, x 10: 102.5;
    # observed 100 and 110: 105, sd sqrt(50), se sqrt(50)/sqrt(2) = 5
    x = {"0": 5, "1": 15, "2": 25}
    loo = theta.loo_errors(_servers([{"0": 100, "1": 200, "2": 310},
                                     {"0": 100, "1": 210, "2": 300}], x), "0")
    d1, d2 = loo
    assert d1["dose"] == "1"
    assert d1["predicted_effect_ns"] == pytest.approx(102.5)
    assert d1["observed_effect_ns"] == pytest.approx(105.0)
    assert d1["relative_error"] == pytest.approx(2.5 / 102.5)
    assert d1["sampling_se_relative"] == pytest.approx(5 / 102.5)
    # dose 2: slopes 10 and 11 -> 10.5 x 20 = 210; observed 210 and 200: 205
    assert d2["predicted_effect_ns"] == pytest.approx(210.0)
    assert d2["relative_error"] == pytest.approx(-5 / 210)


def test_no_model_error_without_a_row():
    assert theta.model_error([{"relative_error": None, "sampling_se_relative": None}]) == 0.0


def test_fit_with_a_model_error_by_hand():
    # slopes of the four points: 20 and 19.7; mean 19.85, se 0.15 (1 df)
    # leave one dose out (relative error, sampling se): dose 1 (-0.452514, 0.026071),
    # dose 2 (-0.256098, 0.012195), dose 3 (0.300546, 0.010929); mean squares 0.120228 and
    # 0.000316: model error sqrt(0.119912) = 0.346283
    f = theta.fit(_servers([{"0": 0, "1": 100, "2": 300, "3": 600},
                            {"0": 0, "1": 110, "2": 310, "3": 590}]), "0")
    assert f["ns_per_use"] == pytest.approx(19.85)
    assert f["se_ns"] == pytest.approx(0.15)
    assert f["model_error_relative"] == pytest.approx(0.346283, abs=1e-6)
    # va 0.0225, vb (19.85 x 0.346283)^2 = 47.2479; se 6.875349; df (va + vb)^2 /
    # (va^2 / 1 + vb^2 / 3) = 3.002856; t(0.975, 1) = 12.706205
    assert f["se_with_model_error_ns"] == pytest.approx(6.875349, abs=1e-6)
    assert f["df"] == pytest.approx(3.002856, abs=1e-6)
    assert f["ci_ns"] == pytest.approx([17.944069, 21.755931], abs=1e-6)
    assert f["ci_with_model_error_ns"] == pytest.approx([-2.018660, 41.718660], abs=1e-5)
    assert "Student t (1 df)" in f["method"]


def test_combine_by_hand():
    # mean 150, var 9 + 16 = 25, se 5; df 625 / (81/4 + 256/9) = 12.835140; t 2.163193
    c = theta.combine([{"predicted_ns": 100.0, "predicted_se_ns": 3.0, "predicted_df": 4.0},
                       {"predicted_ns": 50.0, "predicted_se_ns": 4.0, "predicted_df": 9.0}])
    assert c["predicted_ns"] == 150.0 and c["predicted_se_ns"] == pytest.approx(5.0)
    assert c["predicted_df"] == pytest.approx(12.835140, abs=1e-6)
    assert c["predicted_ci_ns"] == pytest.approx([139.184036, 160.815964], abs=1e-5)


def test_combine_on_infinite_df_is_normal():
    # z(0.975) = 1.959964: 10 -+ 3 x 1.959964
    c = theta.combine([{"predicted_ns": 10.0, "predicted_se_ns": 3.0, "predicted_df": math.inf}])
    assert c["predicted_df"] == math.inf
    assert c["predicted_ci_ns"] == pytest.approx([10 - 5.879892, 10 + 5.879892], abs=1e-6)


def test_combine_leaves_a_part_without_df_out_of_the_df():
    c = theta.combine([{"predicted_ns": 100.0, "predicted_se_ns": 3.0, "predicted_df": 4.0},
                       {"predicted_ns": 50.0, "predicted_se_ns": 4.0, "predicted_df": 0}])
    # den 81/4 only: df 625 / 20.25 = 30.864198
    assert c["predicted_df"] == pytest.approx(625 / 20.25)


def test_sha256_of_does_not_depend_on_key_order():
    import hashlib
    # the canonical text of {"b": 1, "a": 2}: keys sorted, no spaces
    want = hashlib.sha256(b'{"a":2,"b":1}').hexdigest()
    assert theta.sha256_of({"b": 1, "a": 2}) == want
    assert theta.sha256_of({"a": 2, "b": 1}) == want


def test_leave_one_dose_out_follows_the_first_servers_dose_order():
    # server 0's windows come in dose order 0, 2, 1, 3; server 1's in 0, 1, 2, 3
    x = {"0": 0, "2": 20, "1": 10, "3": 30}
    s0 = [{"dose": d, "uses": x[d], "cpu_ns": 5 * x[d]} for d in ("0", "2", "1", "3")]
    s1 = [{"dose": d, "uses": x[d], "cpu_ns": 6 * x[d]} for d in ("0", "1", "2", "3")]
    loo = theta.loo_errors([s0, s1], "0")
    assert [e["dose"] for e in loo] == ["2", "1", "3"]


def test_leave_one_dose_out_of_one_server_has_no_sampling_noise():
    # one server, cpu = 100 + 5 x: dose 1 left out, slope 5, predicted 5 x 10 = 50 = observed;
    # one observation: no spread, a sampling se of 0
    loo = theta.loo_errors(_servers([{"0": 100, "1": 150, "2": 200, "3": 250}]), "0")
    assert [e["dose"] for e in loo] == ["1", "2", "3"]
    assert loo[0]["predicted_effect_ns"] == pytest.approx(50.0)
    assert loo[0]["observed_effect_ns"] == pytest.approx(50.0)
    assert [e["sampling_se_relative"] for e in loo] == [0.0, 0.0, 0.0]


def test_leave_one_dose_out_of_three_servers_by_hand():
    # cpu = 5 x, 6 x, 7 x: dose 1 (10 uses) left out, slopes 5, 6, 7: predicted 6 x 10 = 60;
    # observed 50, 60, 70: mean 60, sd sqrt((100 + 0 + 100) / 2) = 10;
    # sampling se 10 / sqrt(3) / 60 = 0.0962250
    loo = theta.loo_errors(_servers([{d: k * X[d] for d in X} for k in (5, 6, 7)]), "0")
    assert loo[0]["dose"] == "1"
    assert loo[0]["predicted_effect_ns"] == pytest.approx(60.0)
    assert loo[0]["sampling_se_relative"] == pytest.approx(0.0962250, abs=1e-7)


def test_fit_without_a_model_error_has_the_slopes_df():
    # slopes 5, 6, 7 (each server exactly linear): mean 6, sd 1, se 1 / sqrt(3); every
    # left-out dose is predicted exactly: model error 0, vb 0; Welch-Satterthwaite df
    # (va)^2 / (va^2 / 2) = 2 = the slopes' n - 1
    f = theta.fit(_servers([{d: k * X[d] for d in X} for k in (5, 6, 7)]), "0")
    assert f["ns_per_use"] == pytest.approx(6.0)
    assert f["model_error_relative"] == 0.0
    assert f["se_with_model_error_ns"] == pytest.approx(1 / math.sqrt(3))
    assert f["df"] == pytest.approx(2.0)
    assert f["df_slopes"] == 2
    # t(0.975, 2) = 4.302653: 6 -+ 4.302653 / sqrt(3) = 6 -+ 2.484138
    assert f["ci_with_model_error_ns"] == pytest.approx([3.515862, 8.484138], abs=1e-5)


def test_fit_of_servers_without_any_spread_has_n_minus_1_df():
    # two servers whose CPU does not move with the uses (0 ns in every window): slopes 0 and
    # 0, se 0, no prediction to err (model error 0): no variance to weigh, so the df is the
    # slopes' 2 - 1 = 1
    f = theta.fit(_servers([{d: 0 for d in X}] * 2), "0")
    assert f["ns_per_use"] == 0.0 and f["se_with_model_error_ns"] == 0.0
    assert f["df"] == 1.0 and f["df_slopes"] == 1


def test_predict_scales_the_standard_error_by_the_count():
    t = {"ci_with_model_error_ns": [1.0, 3.0], "ns_per_use": 2.0,
         "se_with_model_error_ns": 0.5, "df": 7.0, "level": 0.95}
    # 4 uses: 4 x 2 = 8 ns, interval [4, 12], se 4 x 0.5 = 2
    p = theta.predict(4, t)
    assert p["predicted_ns"] == 8.0 and p["predicted_ci_ns"] == [4.0, 12.0]
    assert p["predicted_se_ns"] == 2.0 and p["predicted_df"] == 7.0
    # -4 uses (a change that adds them): the ends swap, the se is still 2
    p = theta.predict(-4, t)
    assert p["predicted_ci_ns"] == [-12.0, -4.0] and p["predicted_se_ns"] == 2.0


def test_of_without_a_jdk_is_the_latest():
    # no JDK asked: the latest, not the one kept under the empty key (a θ stored without jdk)
    latest, older = {"jdk": "/jdk-a", "v": 1}, {"v": 0}
    p = {"theta": {"w": latest}, "theta_by_jdk": {"w": {"": older}}}
    assert theta.of(p, "w") is latest
