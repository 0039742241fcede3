import json
import locale
import math
from pathlib import Path

import pytest

from jvmos import JvmosError, calibrate
from jvmos.analyzers.stats import linfit, mean_ci, t95

# ---------------------------------------------------------------- stats


@pytest.mark.parametrize("a,b", [(2.0, 3.0), (-5.5, 0.25), (100.0, 0.0), (0.0, -1.5)])
def test_linfit_recovers_an_exact_line(a, b):
    xs = [1, 4, 16, 64, 256, 1024]
    got_a, got_b = linfit(xs, [a + b * x for x in xs])
    assert got_a == pytest.approx(a, abs=1e-9)
    assert got_b == pytest.approx(b, abs=1e-12)


def test_linfit_least_squares_of_noisy_points():
    # mean x = mean y = 1.5; Sxy = 3, Sxx = 5
    a, b = linfit([0, 1, 2, 3], [1, 0, 3, 2])
    assert b == pytest.approx(0.6)          # Sxy / Sxx = 3 / 5
    assert a == pytest.approx(1.5 - 0.6 * 1.5)


def test_linfit_errors():
    with pytest.raises(ValueError, match="two points"):
        linfit([1], [2])
    with pytest.raises(ValueError, match="two points"):
        linfit([], [])
    with pytest.raises(ValueError, match="all x equal"):
        linfit([3, 3, 3], [1, 2, 3])


def test_t95_table():
    assert t95(1) == 12.706
    assert t95(4) == 2.776
    assert t95(30) == 2.042
    assert t95(31) == 1.96 and t95(1000) == 1.96
    assert t95(0) == math.inf and t95(-1) == math.inf


def test_mean_ci_single_value_has_zero_width():
    assert mean_ci([4.5]) == (4.5, 4.5, 4.5)


def test_mean_ci_five_values_uses_t_of_four_degrees_of_freedom():
    m, lo, hi = mean_ci([1, 2, 3, 4, 5])
    h = 2.776 * math.sqrt(2.5) / math.sqrt(5)
    assert m == 3
    assert lo == pytest.approx(3 - h) and hi == pytest.approx(3 + h)
    assert h == pytest.approx(1.963, abs=1e-3)


def test_mean_ci_two_values_and_constant_values():
    m, lo, hi = mean_ci([2.0, 4.0])
    assert (m, lo, hi) == pytest.approx((3.0, 3.0 - 12.706, 3.0 + 12.706))
    assert mean_ci([7, 7, 7]) == (7, 7, 7)


def test_mean_ci_of_nothing_raises():
    with pytest.raises(ValueError):
        mean_ci([])


# ---------------------------------------------------------------- calibrate._fit_trials

SIZES = [64, 256, 1024, 4096]


def rows_for(lines):
    """[(intercept, slope)] per trial -> [(trial, size, ns)]"""
    return [(t, s, a + b * s) for t, (a, b) in enumerate(lines) for s in SIZES]


def test_fit_trials_identical_trials():
    fit = calibrate._fit_trials(rows_for([(150.0, 0.05)] * 5), "write(2)")
    assert fit["ns_per_byte"] == pytest.approx(0.05)
    assert fit["ns_per_call"] == pytest.approx(150.0)
    assert fit["ns_per_byte_ci95"] == pytest.approx([0.05, 0.05])
    assert fit["ns_per_call_ci95"] == pytest.approx([150.0, 150.0])
    assert fit["trials"] == 5 and fit["sizes"] == SIZES and fit["what"] == "write(2)"


def test_fit_trials_means_and_intervals_across_trials():
    fit = calibrate._fit_trials(rows_for([(100.0, 2.0), (200.0, 4.0)]), "x")
    assert fit["ns_per_byte"] == pytest.approx(3.0)
    assert fit["ns_per_call"] == pytest.approx(150.0)
    # two trials: t(1) = 12.706, sd/sqrt(n) = 1 for the slopes and 50 for the intercepts
    assert fit["ns_per_byte_ci95"] == pytest.approx([3.0 - 12.706, 3.0 + 12.706])
    assert fit["ns_per_call_ci95"] == pytest.approx([150 - 12.706 * 50, 150 + 12.706 * 50])
    assert fit["trials"] == 2


def test_fit_trials_rows_in_any_order_and_trial_ids():
    rows = rows_for([(10.0, 1.0), (30.0, 1.0)])
    rows = [(("b" if t else "a"), s, ns) for t, s, ns in reversed(rows)]
    fit = calibrate._fit_trials(rows, "x")
    assert fit["ns_per_call"] == pytest.approx(20.0) and fit["ns_per_byte"] == pytest.approx(1.0)


def test_fit_trials_floors_a_negative_per_call_cost_with_its_flag_fit_and_interval():
    # intercepts -70, -66, -68: mean -68; floored at 0, flagged, the fit and its interval
    # kept apart; the floored value's interval is the fit's clipped at 0, so it holds 0
    fit = calibrate._fit_trials(rows_for([(-70.0, 0.025), (-66.0, 0.025), (-68.0, 0.025)]), "memcpy")
    assert fit["ns_per_call"] == 0.0 and fit["ns_per_call_floored"] is True
    assert fit["ns_per_call_fit"] == pytest.approx(-68.0)
    lo, hi = fit["ns_per_call_fit_ci95"]
    assert lo < -68.0 < hi < 0
    assert fit["ns_per_call_ci95"] == [0.0, 0.0]
    assert fit["ns_per_byte"] == pytest.approx(0.025)


def test_fit_trials_keeps_a_positive_cost_unflagged():
    fit = calibrate._fit_trials(rows_for([(10.0, 1.0), (30.0, 1.0)]), "x")
    assert "ns_per_call_floored" not in fit and "ns_per_call_fit" not in fit


# ---------------------------------------------------------------- platform file

PLATFORM = {"schema": "jvmos.platform/1", "created": "2026-01-01T00:00:00+0000",
            "host": {"kernel": "6.1"},
            "copy": {"kernel_copyin": {"ns_per_byte": 0.05, "ns_per_call": 150.0},
                     "kernel_copyout": {"ns_per_byte": 0.07, "ns_per_call": 140.0},
                     "nio_heap_to_direct": {"/usr/lib/jvm/x": {"ns_per_byte": 0.006}}}}


def test_save_load_round_trip(tmp_path):
    p = tmp_path / "deep" / "er" / "platform.json"
    calibrate.save(p, PLATFORM)
    assert calibrate.load(p) == PLATFORM
    assert sorted(x.name for x in p.parent.iterdir()) == ["platform.json"]   # no temp file left
    calibrate.save(p, dict(PLATFORM, created="later"))     # overwrite in place
    assert calibrate.load(p)["created"] == "later"


def test_load_of_a_missing_file_is_none(tmp_path):
    assert calibrate.load(tmp_path / "nope.json") is None


@pytest.mark.parametrize("content", ['{"schema": "jvmos.platform/0", "copy": {}}', '{}',
                                     '{"copy": {}}'])
def test_load_of_a_wrong_schema_raises(tmp_path, content):
    p = tmp_path / "platform.json"
    p.write_text(content)
    with pytest.raises(JvmosError, match="recalibrate"):
        calibrate.load(p)


@pytest.mark.parametrize("content", ['{"schema": "jvmos.platform/1", ', '', 'not json'])
def test_load_of_broken_json_raises(tmp_path, content):
    p = tmp_path / "platform.json"
    p.write_text(content)
    with pytest.raises(JvmosError, match="unreadable"):
        calibrate.load(p)


def test_load_of_a_directory_raises(tmp_path):
    with pytest.raises(JvmosError):
        calibrate.load(tmp_path)


@pytest.mark.parametrize("content", ["[]", "null"])
def test_load_of_json_that_is_not_an_object_raises_jvmos_error(tmp_path, content):
    p = tmp_path / "platform.json"
    p.write_text(content)
    with pytest.raises(JvmosError):
        calibrate.load(p)


@pytest.mark.skipif(locale.getpreferredencoding(False).lower().replace("-", "") != "utf8",
                    reason="needs a UTF-8 locale for the bytes to be undecodable")
def test_load_of_binary_garbage_raises_jvmos_error(tmp_path):
    p = tmp_path / "platform.json"
    p.write_bytes(b"\xff\xfe\x00\x81garbage")
    with pytest.raises(JvmosError):
        calibrate.load(p)


def test_platform_path_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("JVMOS_PLATFORM", "/env/platform.json")
    monkeypatch.setenv("XDG_DATA_HOME", "/xdg")
    assert calibrate.platform_path("/explicit.json") == Path("/explicit.json")
    assert calibrate.platform_path() == Path("/env/platform.json")
    monkeypatch.delenv("JVMOS_PLATFORM")
    assert calibrate.platform_path() == Path("/xdg/jvmos/platform.json")
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert calibrate.platform_path() == tmp_path / ".local/share/jvmos/platform.json"


def test_costs_for():
    assert calibrate.costs_for(None) == {}
    assert calibrate.costs_for({"schema": "jvmos.platform/1"}) == {}
    costs = calibrate.costs_for(PLATFORM)
    assert costs == PLATFORM["copy"]
    costs["memcpy"] = {}
    assert "memcpy" not in PLATFORM["copy"]      # a copy, not the platform's own dict


def test_saved_file_is_json_with_trailing_newline(tmp_path):
    p = tmp_path / "platform.json"
    calibrate.save(p, PLATFORM)
    text = p.read_text()
    assert text.endswith("}\n")
    assert json.loads(text) == PLATFORM
