"""heuristic/whatif.py: the what-if constants, predictions and from_run's θ at the edges the
other tests left open (docs/mutation.md). Values by hand."""
import pytest

from jvmos import JvmosError
from jvmos.heuristic import whatif

COPY = {"/jdk": {"ns_per_byte": 0.02, "ns_per_byte_ci95": [0.01, 0.03],
                 "ns_per_call": 5.0, "ns_per_call_ci95": [-2.0, 8.0]}}
CONSTANTS = {"C_link": {"mean_us": 7.0, "ci95_us": [5.0, 9.0]},
             "C_nt": {"mean_us": 80.0, "ci95_us": [70.0, 90.0]}}
FIT = {"ns_per_use": 50e3, "ci_with_model_error_ns": [40e3, 60e3],
       "se_with_model_error_ns": 5e3, "df": 11, "level": 0.95, "model_error_relative": 0.1}


def _links(accepts, **cats):
    return {"categories": {"link": {"syscalls": {"accept": {"calls": accepts}}}, **cats},
            "totals": {"context_switches": 0}}


def _theta_platform(fit=FIT, jdk="/jdk", **extra):
    return {"constants": CONSTANTS, "copy": {},
            "theta": {"keep-alive": {"what_if": "keep-alive", "fit": fit, "jdk": jdk,
                                     "theta_sha256": "x", **extra}}}


def test_direct_buffers_without_a_jdk_take_the_one_calibrated():
    # no JDK named, one calibrated: its 0.02 ns per byte and 5 ns per copy
    k = whatif.constant("direct-buffers", {"copy": {"nio_heap_to_direct": COPY}})
    assert k["ns_per_byte"] == 0.02 and k["ns_per_call"] == 5.0
    assert k["ns_per_call_ci95"] == [0.0, 8.0]          # -2 floored at 0
    assert k["source"].startswith("calibrated heap->direct copy of the JDK")


def test_direct_buffers_without_any_calibration_name_any_jdk():
    with pytest.raises(JvmosError, match="copy cost for any JDK: run 'jvmos calibrate'"):
        whatif.constant("direct-buffers", {"copy": {}})


def test_direct_buffers_without_a_per_copy_cost_or_intervals():
    # only 0.02 ns per byte calibrated: no cost per copy (0), no intervals (the mean twice)
    p = {"copy": {"nio_heap_to_direct": {"/jdk": {"ns_per_byte": 0.02}}}}
    k = whatif.constant("direct-buffers", p, "/jdk")
    assert k["ns_per_call"] == 0.0 and k["ns_per_call_ci95"] == [0.0, 0.0]
    assert k["ns_per_byte_ci95"] == [0.02, 0.02]
    # 1000 bytes x 0.02 + 10 copies x 0 = 20 ns = 0.02 µs
    r = whatif.predict("direct-buffers", 1000, p, "/jdk", removed_calls=10)
    assert r["predicted_us"] == pytest.approx(0.02)
    assert r["predicted_ci95_us"] == pytest.approx([0.02, 0.02])


def test_direct_buffers_count_no_copy_unless_told():
    # 1000 bytes x 0.02 ns = 20 ns = 0.02 µs; no copies given: none priced (5 ns each)
    p = {"copy": {"nio_heap_to_direct": COPY}}
    assert whatif.predict("direct-buffers", 1000, p, "/jdk")["predicted_us"] == \
        pytest.approx(0.02)


def test_memory_costs_without_intervals_are_their_means():
    # a page fault of 1500 ns without an interval: 1.5 µs, interval [1.5, 1.5]
    k = whatif.constant("pretouch", {"copy": {"page_fault": {"ns_per_call": 1500.0}}})
    assert k["mean_us"] == 1.5 and k["ci95_us"] == [1.5, 1.5]
    # malloc 30 + free 20 ns: 0.05 µs
    k = whatif.constant("reuse-native-buffers", {"copy": {
        "malloc_call": {"ns_per_call": 30.0}, "free_call": {"ns_per_call": 20.0}}})
    assert k["ci95_us"] == pytest.approx([0.05, 0.05])


def test_a_fraction_of_a_use_keeps_its_interval_order():
    # half a thread: 0.5 x [70, 90] = [35, 45]
    p = whatif.predict("thread-pool", 0.5, {"constants": CONSTANTS})
    assert p["predicted_us"] == 40.0 and p["predicted_ci95_us"] == [35.0, 45.0]


def test_a_pid_missing_from_an_empty_recording():
    with pytest.raises(JvmosError, match=r"its processes: none\)"):
        whatif.jvm_of_run({"by_pid": {}}, 5)


def test_outside_regime_at_the_ends_of_the_fitted_sizes():
    t = {"doses": {"1024": "1 KiB", "2048": "2 KiB", "4096": "4 KiB", "8192": "8 KiB"}}
    # both ends and an inner size are inside: 1024 <= x <= 8192
    assert whatif.outside_regime(8192, t) is None
    assert whatif.outside_regime(4096, t) is None
    assert whatif.outside_regime(1024, t) is None
    why = whatif.outside_regime(9000, t)
    assert why == ("this recording's writes average 9,000 bytes, outside the write sizes θ was "
                   "fitted on (1,024-8,192 bytes): what a write costs depends on its size")


def test_pretouch_caveat_of_faults_counted_without_their_region():
    s = {"categories": {"vm": {"page_faults": 1000, "page_faults_heap": 600,
                               "page_faults_unregioned": 3}}, "totals": {}}
    f = whatif.from_run("pretouch", s, {"copy": {"page_fault": {"ns_per_call": 1500.0}}}, None)
    assert f["removed"] == 600
    assert f["count_caveat"].endswith("so the heap's count is a lower bound")


def test_a_validation_on_another_jdk_says_so():
    p = {"constants": CONSTANTS, "interventions": {"keep-alive": {
        "status": "validated: yes", "jdk": "/jdk17"}}}
    r = whatif.from_run("keep-alive", _links(3), p, "/jdk25")
    assert r["validation"]["status"] == "validated: yes (on /jdk17, not this recording's /jdk25)"
    assert whatif.from_run("keep-alive", _links(3), p, "/jdk17")["validation"]["status"] == \
        "validated: yes"


def test_theta_whose_interval_starts_at_0_is_refused():
    fit = dict(FIT, ci_with_model_error_ns=[0.0, 100e3])
    r = whatif.from_run("keep-alive", _links(10), _theta_platform(fit), "/jdk")
    assert r["theta"]["whole_change_us"] is None
    assert r["theta"]["refused"] == ("θ is not resolved from 0: its 95% interval with the "
                                     "model error (10% beyond noise) reaches 0.00 µs")


def test_theta_whose_interval_starts_just_above_0_prices():
    # interval [0.5 ns, 100 µs]: resolved from 0; 10 connections x 50 µs = 500 µs
    fit = dict(FIT, ci_with_model_error_ns=[0.5, 100e3])
    r = whatif.from_run("keep-alive", _links(10), _theta_platform(fit), "/jdk")
    assert r["theta"]["refused"] is None
    assert r["theta"]["whole_change_us"] == pytest.approx(500.0)
    assert r["theta"]["whole_change_ci_us"] == pytest.approx([0.005, 1000.0])


def test_theta_refusal_prints_its_low_end_in_us():
    # -1e6 ns = -1,000.00 µs
    fit = dict(FIT, ci_with_model_error_ns=[-1e6, 100e3], model_error_relative=0.8)
    r = whatif.from_run("keep-alive", _links(10), _theta_platform(fit), "/jdk")
    assert r["theta"]["refused"].endswith("(80% beyond noise) reaches -1,000.00 µs")


def test_a_stale_theta_stays_refused_in_a_recording_with_writes():
    # θ of another JDK; the recording also wrote (io_writes > 0): still refused for the JDK
    s = _links(10, io_syscall={"syscalls": {"write": {"calls": 100, "bytes": 204800}}})
    r = whatif.from_run("keep-alive", s, _theta_platform(jdk="/jdk17"), "/jdk25")
    assert r["theta"]["refused"] == "θ was fitted on /jdk17, not this recording's /jdk25"
    assert r["theta"]["whole_change_us"] is None


def test_theta_held_out_verdicts_are_reported():
    held = {"shop-keep-alive": {"verdict": "confirmed"}}
    r = whatif.from_run("keep-alive", _links(10), _theta_platform(held_out=held), "/jdk")
    assert r["theta"]["held_out"] == held
    assert r["theta"]["whole_change_us"] == pytest.approx(500.0)


def test_outside_regime_of_doses_that_are_not_sizes():
    # doses named otherwise than by a size in bytes: no regime to check
    assert whatif.outside_regime(5, {"doses": {"small": "s", "large": "l"}}) is None


def test_what_ifs_are_frozen():
    import dataclasses
    with pytest.raises(dataclasses.FrozenInstanceError):
        whatif.WHAT_IFS["keep-alive"].term = "C_nt"


def test_no_nio_copy_counted_is_0_bytes():
    c = whatif.counts({"categories": {}, "totals": {}})
    assert c["nio_copy_bytes"] == 0 and c["nio_copy_calls"] == 0
    # nothing to remove: 0 bytes and 0 copies, 0 µs
    r = whatif.from_run("direct-buffers", {"categories": {}, "totals": {}},
                        {"copy": {"nio_heap_to_direct": COPY}}, "/jdk")
    assert (r["removed"], r["removed_calls"], r["predicted_us"]) == (0, 0, 0.0)


def test_count_hooks_skip_probes_without_a_colon():
    # bpftrace's BEGIN has no "provider:" prefix: it counts nothing and is no error
    m = {"probes": {"attached": ["BEGIN", "tracepoint:syscalls:sys_enter_accept"]}}
    assert whatif.count_hooks(m, "keep-alive") == ["tracepoint:syscalls:sys_enter_accept"]


def test_from_run_keeps_nothing_unless_told():
    r = whatif.from_run("thread-pool", {"categories": {"thread_create": {"calls": 30}},
                                        "totals": {}}, {"constants": CONSTANTS}, None)
    # 30 threads, none kept: 30 x 80 µs = 2400 µs
    assert (r["counted"], r["removed"], r["keep"]) == (30, 30, 0)
    assert r["predicted_us"] == pytest.approx(2400.0)


def test_theta_of_allocator_calls_prices_allocator_calls():
    # θ for reused native buffers fitted per allocator call (not per Inflater): the 9000
    # calls, 9000 x 50 µs = 450000 µs, whatever zlib counted
    p = {"copy": {"malloc_call": {"ns_per_call": 30.0}, "free_call": {"ns_per_call": 20.0}},
         "theta": {"reuse-native-buffers": {"what_if": "reuse-native-buffers", "fit": FIT,
                                            "jdk": "/jdk", "unit": "allocator call"}}}
    s = {"categories": {"malloc": {"calls": 9000, "zlib_streams": {"inflate": 2000,
                                                                   "deflate": 5}}},
         "totals": {}}
    r = whatif.from_run("reuse-native-buffers", s, p, "/jdk")
    assert r["theta"]["removed"] == 9000
    assert r["theta"]["whole_change_us"] == pytest.approx(450000.0)


def test_theta_refused_for_a_recording_without_count_hooks():
    tp = ["tracepoint:syscalls:sys_enter_accept"]
    p = _theta_platform(held_out={"shop-keep-alive": {"verdict": "confirmed",
                                                      "count_hooks": tp}})
    r = whatif.from_run("keep-alive", _links(10), p, "/jdk", hooks=[])
    assert r["theta"]["refused"] == (
        "this recording counted its uses with other probes (none) than θ's held-out tests did "
        "(tracepoint:syscalls:sys_enter_accept): validate θ again (jvmos run held-out)")


def test_theta_of_no_use_removed_is_0():
    # no connection accepted: 0 x 50 µs
    r = whatif.from_run("keep-alive", _links(0), _theta_platform(), "/jdk")
    assert r["theta"]["refused"] is None
    assert r["theta"]["whole_change_us"] == 0.0
    assert r["theta"]["whole_change_ci_us"] == [0.0, 0.0]


def test_copies_without_bytes_keep_their_interval_order():
    # 0 bytes, 10 copies at 5 ns [floored 0, 8]: 0.05 µs, interval [0, 0.08] µs
    r = whatif.predict("direct-buffers", 0, {"copy": {"nio_heap_to_direct": COPY}}, "/jdk",
                       removed_calls=10)
    assert r["predicted_us"] == pytest.approx(0.05)
    assert r["predicted_ci95_us"] == pytest.approx([0.0, 0.08])
