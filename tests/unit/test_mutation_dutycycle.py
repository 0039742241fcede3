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


def test_water_filling_takes_layers_of_equal_cost_in_name_order():
    # limit 1e7, budget 8e6, period 5 s; "a" was 0.1 s last period: grows to 0.4 s at most
    # a first (by name, though "b" comes first in the dict): share 4e6, duty 0.4 -> 2 s, capped
    # at 0.4 s; left 8e6 - 1e7 x 0.4 / 5 = 7.2e6; b: share 7.2e6, duty 0.72 -> 3.6 s
    # (b first would take 2 s and leave a at 0.4: 2 s for b)
    w = dc.size_windows({"b": 1e7, "a": 1e7}, 1e9, 0.0, 1.0, 5.0, {"a": 0.1, "b": 5.0})
    assert w == pytest.approx({"a": 0.4, "b": 3.6})


def test_a_layer_without_a_last_window_grows_from_the_first():
    # budget 8e6 for a cost of 1e6: on all the time but for the growth cap: no last window,
    # so 0.1 s (FIRST_WINDOW_S) x 4 = 0.4 s
    assert dc.size_windows({"a": 1e6}, 1e9, 0.0, 1.0, 5.0, {}) == pytest.approx({"a": 0.4})
    assert dc.size_windows({"a": 1e6}, 1e9, 0.0, 1.0, 5.0, {"a": None}) == \
        pytest.approx({"a": 0.4})


def test_rate_interval_leaves_windows_without_on_time_out():
    # a closed window (0 counts in 0 s) is no window: the three others as in the test above
    r = dc.rate_interval([(0, 0.0), (10, 1.0), (24, 2.0), (9, 1.0)])
    assert r["n"] == 3 and r["method"] == "t over 3 windows"
    assert r["lower95"] == pytest.approx(6.610094, abs=1e-5)


def test_rate_interval_is_floored_at_0():
    # C 3 over T 3 s: r 1; residuals -1, -1, 2: s2 6 / 2 = 3; se sqrt(3 / 3) / 1 = 1;
    # t(0.975, 2) = 4.302653: 1 - 4.302653 < 0 -> 0, 1 + 4.302653 = 5.302653
    r = dc.rate_interval([(0, 1.0), (0, 1.0), (3, 1.0)])
    assert r["rate"] == 1.0 and r["lower95"] == 0.0
    assert r["upper95"] == pytest.approx(5.302653, abs=1e-6)


def test_sampler_window_of_a_jvm_using_1_ns_a_second():
    # 1 ns/s of CPU is CPU: share 0.4% of it (0.004 ns/s); free samples fit at the base
    assert dc.sampler_window(0, 0, 0, 1.0, 10, 60, 1.0, 1000) == (1000, 10, "")


def test_sampler_window_lengthened_for_its_start_and_stop():
    # 4e6 ns/s allowed less 3999999.5 open: room 0.5 ns/s at the base interval (free samples);
    # 10 ns to start and stop need 10 / 0.5 = 20 s (> 10): 20 s at the base interval
    assert dc.sampler_window(0, 10, 3999999.5, 1e9, 10, 60, 1.0, 100_000) == (100_000, 20, "")
    # 20 s is the longest allowed: still 20 s at the base interval
    assert dc.sampler_window(0, 10, 3999999.5, 1e9, 10, 20, 1.0, 100_000) == (100_000, 20, "")


def test_sampler_window_that_leaves_exactly_nothing_for_its_samples():
    # samples at 1e9: 1 x 1e9 / 1e9 = 1 ns/s > room 0.5: no base interval. 10 s: 0.5 - 10 / 10
    # < 0, so 20 s: left 0.5 - 10 / 20 = 0: no sample fits
    iv, length, why = dc.sampler_window(1, 10, 3999999.5, 1e9, 10, 20, 1.0, 1_000_000_000)
    assert (iv, length) == (None, 20)
    assert why.startswith("a 20 s window without a sample")


def test_sampler_window_whose_start_and_stop_take_all_of_the_shortest():
    # samples 0.001 x 1e9 / 1e6 = 1 ns/s > room 0.5. 10 s: 0.5 - 5 / 10 = 0: nothing left, so
    # 50 s: left 0.5 - 5 / 50 = 0.4; interval 0.001 x 1e9 / 0.4 = 2.5e6 ns
    assert dc.sampler_window(0.001, 5, 3999999.5, 1e9, 10, 50, 1.0, 1_000_000) == \
        (2_500_000, 50, "")


def test_sampler_window_at_exactly_the_coarsest_interval():
    # left 4e6 - 3999999 = 1 ns/s; interval 1 x 1e9 / 1 = 1e9 ns: the coarsest still run
    assert dc.sampler_window(1, 0, 3999999, 1e9, 10, 60, 1.0, 1_000_000) == \
        (1_000_000_000, 10, "")


def test_sampler_window_too_sparse_message_by_hand():
    # left 4e6 - 39999995 / 10 = 0.5 ns/s; interval 5e6 x 1e9 / 0.5 = 1e16 ns = 1e7 s
    # (the other test's 2000 s is printed the same if 1e9 were 1e9 + 1: 2000 s x 1e-9 is 2 µs;
    # 1e7 s moves by 0.01 s)
    iv, length, why = dc.sampler_window(5e6, 39_999_995, 0, 1e9, 10, 60, 1.0, 100_000)
    assert (iv, length) == (None, 10)
    assert why == ("a 10 s window would need a sample per 10000000.00 s of CPU to stay within "
                   "the sampler's share of --max-overhead 1% (0.4% of the JVM's CPU)")


def test_sampler_window_without_a_sample_message_by_hand():
    # a JVM using 12500001 ns/s (1.2500001% of a core): allowed 0.004 x 12500001 = 50000 ns/s,
    # far below 1e11 ns a second open: 60 s, nothing left. 1e11 ns = 100000.0 ms; 1.2500001%
    # printed to 2 digits is 1.3 (above 1.25)
    iv, length, why = dc.sampler_window(0, 1e11, 1e11, 12_500_001, 10, 60, 1.0, 100_000)
    assert (iv, length) == (None, 60)
    assert why == ("a 60 s window without a sample (100000.0 ms of CPU to start and stop, "
                   "100000.0 ms a second open) would pass the sampler's share of "
                   "--max-overhead 1% (0.4% of the JVM's CPU; the JVM used 1.3% of a core)")


def test_sampler_cost_per_s_by_hand():
    # samples 1000 x 1e9 / 1e7 = 1e5, open 1e5, start and stop 2e6 / 10 = 2e5: 4e5 ns/s
    assert dc.sampler_cost_per_s(1000, 2e6, 1e5, 1e9, 10, 1e7) == pytest.approx(4e5)
    # nothing calibrated (0) or a negative calibration costs nothing
    assert dc.sampler_cost_per_s(0, 0, 0, 1e9, 10, 1e6) == 0.0
    assert dc.sampler_cost_per_s(-5, -5, -5, 1e9, 10, 1e6) == 0.0


def test_sampler_window_whose_open_cost_takes_all_of_the_share():
    # 4e6 ns/s allowed, 4e6 a second open, free samples and start: room 0, nothing left in
    # 10 s or in 60 s: no window
    iv, length, why = dc.sampler_window(0, 0, 4e6, 1e9, 10, 60, 1.0, 100_000)
    assert (iv, length) == (None, 60)
    assert why.startswith("a 60 s window without a sample")


def test_sampler_window_just_above_the_coarsest_interval():
    # left 4e6 - 3999999 = 1 ns/s; interval 1.0000000005 x 1e9 / 1 = 1000000000.5 ns > 1e9:
    # not run (printed 1.00 s)
    iv, length, why = dc.sampler_window(1.0000000005, 0, 3999999, 1e9, 10, 60, 1.0, 1_000_000)
    assert (iv, length) == (None, 10)
    assert why.startswith("a 10 s window would need a sample per 1.00 s of CPU")
