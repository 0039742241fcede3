"""jvmos/dutycycle.py: the agent's window sizing, window start, rate interval and sampler
window at the edges the other tests left open (docs/mutation.md). Values by hand."""
import pytest

from jvmos import dutycycle as dc


def test_water_filling_of_three_layers_by_hand():
    # limit 1% of 1e9 ns/s = 1e7; budget 0.8 x 1e7 = 8e6 ns/s; period 5 s, no growth cap
    # a (1e6): share 8e6 / 3, on all the time; left 7e6
    # b (1e7): share 7e6 / 2 = 3.5e6: duty 0.35, 1.75 s; left 7e6 - 1e7 x 1.75 / 5 = 3.5e6
    # c (2e7): share 3.5e6: duty 0.175, 0.875 s
    w = dc.size_windows({"a": 1e6, "b": 1e7, "c": 2e7}, 1e9, 0.0, 1.0, 5.0,
                        {"a": 5.0, "b": 5.0, "c": 5.0})
    assert w == pytest.approx({"a": 5.0, "b": 1.75, "c": 0.875})


def test_a_shed_layer_leaves_its_share_to_the_next():
    # fixed 9e6 of the 1e7 limit: budget -1e6, headroom 0.2 x 1e7 = 2e6
    # a (3e7): whole (-1e6 + 2e6) / 2 = 5e5; 3e7 x 0.1 = 3e6 > 5e5 x 5: shed
    # b (4e7): whole 1e6 (nothing spent on a); 4e6 <= 5e6: the shortest window
    w = dc.size_windows({"a": 3e7, "b": 4e7}, 1e9, 9e6, 1.0, 5.0, {})
    assert w == {"a": None, "b": 0.1}


def test_over_the_limit_a_cheap_layer_is_shed():
    # fixed 2e7 ns/s on a 1e7 limit: nothing is left, not even for 10 ns/s
    assert dc.size_windows({"a": 10.0}, 1e9, 2e7, 1.0, 5.0, {}) == {"a": None}


class _Last:
    """An rng whose draw is the latest start allowed."""
    @staticmethod
    def uniform(a, b):
        return b


def test_window_start_latest_by_hand():
    # 100 + (5 - 1 - 0.05) = 103.95
    assert dc.window_start(100.0, 5.0, 1.0, rng=_Last) == pytest.approx(103.95)
    # the last window closed at 97: no later than 97 + 5 = 102
    assert dc.window_start(100.0, 5.0, 1.0, last_off=97.0, rng=_Last) == pytest.approx(102.0)
    # a window as long as the period opens at once
    assert dc.window_start(100.0, 5.0, 5.0, rng=_Last) == 100.0


def test_rate_interval_of_three_windows_by_hand():
    # C 43 over T 4 s: r 10.75; residuals -0.75, 2.5, -1.75: s2 9.875 / 2 = 4.9375;
    # se sqrt(4.9375 / 3) / (4 / 3) = 0.962175; t(0.975, 2) = 4.302653: -+ 4.139906
    r = dc.rate_interval([(10, 1.0), (24, 2.0), (9, 1.0)])
    assert r["rate"] == pytest.approx(10.75) and r["n"] == 3
    assert r["lower95"] == pytest.approx(6.610094, abs=1e-5)
    assert r["upper95"] == pytest.approx(14.889906, abs=1e-5)
    assert r["method"] == "t over 3 windows"


def test_sampler_window_at_the_base_interval():
    # share 0.4% of 1e9: 4e6 ns/s; samples 1000 x 1e9 / 1e7 = 1e5, open 1e5: room 3.8e6
    assert dc.sampler_window(1000, 1e6, 1e5, 1e9, 10, 60, 1.0, 10_000_000) == \
        (10_000_000, 10, "")
    # free samples: the base interval however fine it is (room 4e6 - 3.9e6 = 1e5)
    assert dc.sampler_window(0, 0, 3.9e6, 1e9, 10, 60, 1.0, 1000) == (1000, 10, "")


def test_sampler_window_stretched_to_the_longest():
    # samples at 1e5 ns would take 1e7 ns/s: no room; 10 s: 4e6 - 1e6 - 4e7/10 < 0, so 60 s:
    # left 3e6 - 4e7/60 = 2333333.3; interval 1000 x 1e9 / 2333333.3 = 428571.4 -> 428572
    assert dc.sampler_window(1000, 4e7, 1e6, 1e9, 10, 60, 1.0, 100_000) == (428572, 60, "")


def test_sampler_window_whose_samples_would_be_too_sparse():
    # 10 s leaves 4e6 - 3999999.5 = 0.5 ns/s for the samples: a sample per 2e12 ns of CPU
    iv, length, why = dc.sampler_window(1000, 39_999_995, 0, 1e9, 10, 60, 1.0, 100_000)
    assert (iv, length) == (None, 10)
    assert why.startswith("a 10 s window would need a sample per 2000.00 s of CPU")
