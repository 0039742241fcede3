"""The what-if arithmetic (heuristic/whatif.py) and the interventions' verdict and storage."""
import json

import pytest

from jvmos import JvmosError
from jvmos.analyzers.stats import welch_diff_ci
from jvmos.experiments import interventions as iv
from jvmos.heuristic import whatif

PLATFORM = {
    "schema": None,
    "constants": {"C_nt": {"mean_us": 80.0, "ci95_us": [70.0, 90.0]},
                  "C_link": {"mean_us": 7.0, "ci95_us": [5.0, 9.0]},
                  "C_file": {"mean_us": 2.5, "ci95_us": [2.0, 3.0]},
                  "C_io_chunk": {"mean_us": 0.9, "ci95_us": [0.8, 1.0]}},
    "copy": {"page_fault": {"ns_per_call": 1500.0, "ns_per_call_ci95": [1300.0, 1700.0]},
             "malloc_call": {"ns_per_call": 30.0, "ns_per_call_ci95": [20.0, 40.0]},
             "free_call": {"ns_per_call": 20.0, "ns_per_call_ci95": [-5.0, 30.0]},
             "nio_heap_to_direct": {"/jdk": {"ns_per_byte": 0.02, "ns_per_byte_ci95": [0.01, 0.03],
                                             "ns_per_call": 5.0, "ns_per_call_ci95": [-2.0, 8.0]}}},
}


def summary(**cats):
    return {"categories": cats, "totals": {"context_switches": 0}}


def test_term_constants_price_the_count():
    p = whatif.predict("thread-pool", 100, PLATFORM)
    assert p["predicted_us"] == pytest.approx(8000.0)
    assert p["predicted_ci95_us"] == pytest.approx([7000.0, 9000.0])
    assert whatif.predict("bigger-chunks", 10, PLATFORM)["predicted_us"] == pytest.approx(9.0)


def test_memory_constants_sum_and_floor_their_low_ends():
    p = whatif.predict("reuse-native-buffers", 1000, PLATFORM)
    # malloc + free per call, µs; free's negative low end is floored at 0
    assert p["predicted_us"] == pytest.approx(50.0)
    assert p["predicted_ci95_us"] == pytest.approx([20.0, 70.0])
    assert whatif.predict("pretouch", 10, PLATFORM)["predicted_us"] == pytest.approx(15.0)


def test_direct_buffers_are_priced_per_byte_and_per_copy():
    p = whatif.predict("direct-buffers", 1_000_000, PLATFORM, "/jdk", removed_calls=100)
    assert p["predicted_us"] == pytest.approx((1e6 * 0.02 + 100 * 5.0) / 1e3)
    assert p["predicted_ci95_us"] == pytest.approx([(1e6 * 0.01) / 1e3,
                                                    (1e6 * 0.03 + 100 * 8.0) / 1e3])
    with pytest.raises(JvmosError, match="no calibrated heap->direct"):
        whatif.predict("direct-buffers", 1, PLATFORM, "/other-jdk")


def test_a_negative_count_keeps_its_interval_ordered():
    p = whatif.predict("keep-alive", -10, PLATFORM)
    lo, hi = p["predicted_ci95_us"]
    assert lo <= p["predicted_us"] <= hi and hi == pytest.approx(-50.0)


def test_missing_constants_and_unknown_names_are_refused():
    with pytest.raises(JvmosError, match="no C_nt"):
        whatif.predict("thread-pool", 1, {"constants": {}})
    with pytest.raises(JvmosError, match="lacks the calibrated memory costs"):
        whatif.predict("pretouch", 1, {"constants": {}, "copy": {}})
    with pytest.raises(JvmosError, match="unknown what-if"):
        whatif.predict("faster", 1, PLATFORM)


def test_a_recordings_jvm_is_chosen_and_several_are_refused():
    one = {"categories": {}, "by_pid": {"7": {"jvm": "/jdk", "categories": {
        "thread_create": {"calls": 5}}}, "8": {"categories": {}}}}
    part, jdk, pid = whatif.jvm_of_run(one)
    assert (jdk, pid) == ("/jdk", "7") and part["categories"]["thread_create"]["calls"] == 5
    two = {"by_pid": {"7": {"jvm": "/a", "categories": {}}, "9": {"jvm": "/b", "categories": {}}}}
    with pytest.raises(JvmosError, match="holds 2 JVMs"):
        whatif.jvm_of_run(two)
    assert whatif.jvm_of_run(two, 9)[1] == "/b"
    with pytest.raises(JvmosError, match="pid 5 is not in the recording"):
        whatif.jvm_of_run(two, 5)


def test_from_run_keeps_only_where_a_change_keeps():
    s = summary(thread_create={"calls": 30}, vm={"page_faults": 100},
                link={"syscalls": {"accept": {"calls": 12}}},
                nio_copy={"calls": 4, "bytes": 4096})
    t = whatif.from_run("thread-pool", s, PLATFORM, None, keep=8)
    assert (t["counted"], t["removed"], t["keep"]) == (30, 22, 8)
    # a keep above the count keeps them all
    assert whatif.from_run("keep-alive", s, PLATFORM, None, keep=50)["keep"] == 12
    f = whatif.from_run("pretouch", s, PLATFORM, None, keep=8)
    assert (f["removed"], f["keep"]) == (100, 0)
    d = whatif.from_run("direct-buffers", s, PLATFORM, "/jdk", keep=8)
    assert (d["removed"], d["removed_calls"], d["keep"]) == (4096, 4, 0)
    assert t["validation"]["status"].startswith("not validated")
    assert "scaled_from_intervention_us" not in t
    # the measured savings of every decisive intervention were above the prediction: the
    # figure is the OS's part of a use, never called an upper bound of the change's saving
    assert t["bound"].startswith("the OS's part only, not a bound on the change")


def test_pretouch_counts_only_the_heaps_faults_and_theta_needs_them():
    """AlwaysPreTouch moves only the heap's first touches: with the heap's range read, the
    count removed is the faults inside it; without it θ is refused (the count would be every
    fault) and the OS's part keeps the old count with its caveat."""
    fit = {"ns_per_use": 2000.0, "ci_with_model_error_ns": [1500.0, 2500.0],
           "se_with_model_error_ns": 250.0, "df": 11.0, "level": 0.95,
           "model_error_relative": 0.1}
    p = {**PLATFORM, "theta": {"pretouch": {"what_if": "pretouch", "fit": fit, "jdk": "/jdk",
                                            "theta_sha256": "t"}}}
    known = summary(vm={"page_faults": 1000, "page_faults_heap": 600})
    f = whatif.from_run("pretouch", known, p, "/jdk")
    assert (f["removed"], f["counted"]) == (600, 600)
    assert f["predicted_us"] == pytest.approx(600 * 1.5)
    assert f["theta"]["whole_change_us"] == pytest.approx(600 * 2.0)
    assert "600 of 1,000" in f["count_caveat"]
    unknown = summary(vm={"page_faults": 1000, "page_faults_heap": None})
    g = whatif.from_run("pretouch", unknown, p, "/jdk")
    assert g["removed"] == 1000 and g["theta"]["whole_change_us"] is None
    assert "did not read the heap's range" in g["theta"]["refused"]
    assert "every user page fault" in g["count_caveat"]


def test_from_run_scales_a_stored_validation():
    p = dict(PLATFORM, interventions={"keep-alive": {
        "status": "not validated: no: measured 10.00x the prediction", "date": "2026-11-26",
        "measured_cpu_per_use_us": 70.0, "measured_cpu_per_use_ci95_us": [60.0, 80.0]}})
    s = summary(link={"syscalls": {"accept": {"calls": 11}}})
    t = whatif.from_run("keep-alive", s, p, None, keep=1)
    assert t["scaled_from_intervention_us"] == pytest.approx(700.0)
    assert t["scaled_from_intervention_ci95_us"] == pytest.approx([600.0, 800.0])


THETA_FIT = {"ns_per_use": 50e3, "ci_with_model_error_ns": [40e3, 60e3],
             "se_with_model_error_ns": 5e3, "df": 11, "level": 0.95}
TP = ["tracepoint:syscalls:sys_enter_accept", "tracepoint:syscalls:sys_enter_accept4"]


def test_theta_prices_the_whole_change_and_refuses_other_hooks():
    p = dict(PLATFORM, theta={"keep-alive": {
        "fit": THETA_FIT, "jdk": "/jdk", "date": "d", "commit": "c", "jdk_label": "j",
        "theta_sha256": "x", "held_out": {"shop-keep-alive": {"verdict": "inconclusive",
                                                             "count_hooks": TP}}}})
    s = summary(link={"syscalls": {"accept": {"calls": 11}}})
    t = whatif.from_run("keep-alive", s, p, "/jdk", keep=1, hooks=TP)
    # 10 connections removed x 50 µs, θ's interval
    assert t["theta"]["whole_change_us"] == pytest.approx(500.0)
    assert t["theta"]["whole_change_ci_us"] == pytest.approx([400.0, 600.0])
    assert t["theta"]["refused"] is None
    # counted by other probes than θ was validated with (the links layer on libc's wrappers,
    # say): refused until validated again
    u = whatif.from_run("keep-alive", s, p, "/jdk", keep=1, hooks=["uprobe:libc:accept"])
    assert "validate θ again" in u["theta"]["refused"]
    # θ validated before the probes were stored with the verdict: refused, and no figure
    old = dict(p, theta={"keep-alive": {**p["theta"]["keep-alive"], "held_out": {
        "shop-keep-alive": {"verdict": "inconclusive"}}}})
    v = whatif.from_run("keep-alive", s, old, "/jdk", keep=1, hooks=TP)
    assert "validate θ again" in v["theta"]["refused"] and v["theta"]["whole_change_us"] is None
    # a θ with no held-out verdict yet prices it (and says so where it is printed)
    new = dict(p, theta={"keep-alive": {**p["theta"]["keep-alive"], "held_out": {}}})
    assert whatif.from_run("keep-alive", s, new, "/jdk", keep=1,
                           hooks=TP)["theta"]["whole_change_us"] == pytest.approx(500.0)
    # a θ whose interval with the model error reaches 0 does not price anything
    bad = dict(p, theta={"keep-alive": {**p["theta"]["keep-alive"], "held_out": {}, "fit": {
        **THETA_FIT, "ci_with_model_error_ns": [-5e3, 105e3], "model_error_relative": 0.8}}})
    b = whatif.from_run("keep-alive", s, bad, "/jdk", keep=1, hooks=TP)
    assert "not resolved from 0" in b["theta"]["refused"]
    assert b["theta"]["whole_change_us"] is None
    # another JDK: refused too
    assert "not this recording's" in whatif.from_run("keep-alive", s, p, "/other", keep=1,
                                                     hooks=TP)["theta"]["refused"]


def test_theta_for_writes_prices_only_writes_of_its_sizes():
    """θ for writes holds between the write sizes it was fitted on: a recording whose writes
    average 5 bytes (an unbuffered ObjectOutputStream) is refused, one of 2 KiB is priced."""
    t = {"fit": THETA_FIT, "jdk": "/jdk", "theta_sha256": "w", "held_out": {},
         "doses": {"1024": "1 KiB", "2048": "2 KiB", "4096": "4 KiB", "8192": "8 KiB"}}
    p = dict(PLATFORM, theta={"bigger-chunks": t})
    tiny = summary(io_syscall={"syscalls": {"write": {"calls": 1000, "bytes": 5000}}})
    r = whatif.from_run("bigger-chunks", tiny, p, "/jdk")
    assert "average 5 bytes" in r["theta"]["refused"] and r["theta"]["whole_change_us"] is None
    ok = summary(io_syscall={"syscalls": {"write": {"calls": 1000, "bytes": 2048 * 1000}}})
    r = whatif.from_run("bigger-chunks", ok, p, "/jdk")
    assert r["theta"]["refused"] is None
    assert r["theta"]["whole_change_us"] == pytest.approx(1000 * 50.0)
    assert whatif.outside_regime(9000, t) and not whatif.outside_regime(1024, t)


def test_count_hooks_and_caveats():
    m = {"probes": {"attached": TP + ["tracepoint:syscalls:sys_enter_close",
                                      "tracepoint:syscalls:sys_exit_accept",
                                      "tracepoint:syscalls:sys_enter_openat"]}}
    # entry probes only: a time-mode recording's return probes do not change the set
    assert whatif.count_hooks(m, "keep-alive") == TP
    assert whatif.count_hooks(m, "file-handles") == ["tracepoint:syscalls:sys_enter_openat"]
    assert whatif.count_hooks(m, "pretouch") == []
    io = {"probes": {"attached": ["uprobe:/lib/libc.so.6:write", "uprobe:/lib/libc.so.6:writev",
                                  "uretprobe:/lib/libc.so.6:write", "uprobe:/lib/libc.so.6:read"]}}
    assert whatif.count_hooks(io, "bigger-chunks") == ["uprobe:/lib/libc.so.6:write",
                                                       "uprobe:/lib/libc.so.6:writev"]
    s = summary(vm={"page_faults": 100}, nio_copy={"calls": 4, "bytes": 4096})
    assert "first touches of the Java heap" in whatif.from_run("pretouch", s, PLATFORM,
                                                               None)["count_caveat"]
    assert "direct buffers" in whatif.from_run("direct-buffers", s, PLATFORM,
                                               "/jdk")["count_caveat"]


def test_welch_interval_holds_the_difference():
    a, b = [10.0, 12.0, 11.0, 13.0], [5.0, 6.0, 7.0, 6.5]
    w = welch_diff_ci(a, b)
    assert w["diff"] == pytest.approx(11.5 - 6.125)
    assert w["ci"][0] < w["diff"] < w["ci"][1] and w["n"] == [4, 4] and w["p"] < 0.01
    same = welch_diff_ci([1.0, 1.0], [1.0, 1.0])
    assert same["ci"] == [0.0, 0.0] and same["p"] == 1.0
    with pytest.raises(ValueError):
        welch_diff_ci([1.0], [1.0, 2.0])


def pred(mean, lo, hi):
    return {"predicted_us": mean, "predicted_ci95_us": [lo, hi]}


def test_verdicts():
    inside = iv.verdict(pred(100, 80, 120), {"diff": 110e3, "ci": [90e3, 130e3]})
    assert inside["inside"] and inside["kind"] == "inside" and inside["text"] == "yes"
    over = iv.verdict(pred(100, 80, 120), {"diff": 300e3, "ci": [250e3, 350e3]})
    assert not over["inside"] and over["kind"] == "miss" and over["ratio"] == pytest.approx(3.0)
    assert over["text"] == "no: measured 3.00x the prediction"
    near = iv.verdict(pred(100, 80, 120), {"diff": 150e3, "ci": [110e3, 190e3]})
    assert not near["inside"] and near["overlap"] and near["kind"] == "overlap"
    # a mean inside the prediction is no validation when the interval holds 0
    noise = iv.verdict(pred(100, 80, 120), {"diff": 100e3, "ci": [-50e3, 250e3]})
    assert not noise["inside"] and noise["kind"] == "inconclusive"
    assert noise["text"].startswith("inconclusive") and "overlaps" in noise["text"]


def test_store_verdicts(tmp_path):
    f = tmp_path / "platform.json"
    from jvmos import calibrate as cal
    cal.save(f, dict(PLATFORM, schema=cal.SCHEMA))
    r = {"name": "keep-alive", "status": "complete",
         "verdict": {"inside": False, "kind": "miss", "ratio": 2.0,
                     "text": "no: measured 2.00x the prediction"},
         "prediction": {"predicted_us": 100.0, "terms": {"keep-alive": {"removed": 10}}},
         "measured_cpu": {"diff": 200e3, "ci": [150e3, 250e3]}}
    results = {"interventions": [r, {"name": "combined"}], "trials": 10, "jdk": "/jdk",
               "jdk_label": "openjdk-17", "date": "2026-11-26", "out": "x"}
    iv.store_verdicts(results, f)
    v = json.loads(f.read_text())["interventions"]
    assert set(v) == {"keep-alive"}
    k = v["keep-alive"]
    assert k["status"].startswith("not validated: no: measured 2.00x")
    assert k["measured_cpu_per_use_us"] == pytest.approx(20.0)
    assert k["measured_cpu_per_use_ci95_us"] == pytest.approx([15.0, 25.0])


def test_the_what_if_prices_with_the_theta_of_the_recordings_jdk():
    from jvmos.heuristic import theta as th
    p = dict(PLATFORM)
    t17 = {"what_if": "keep-alive", "fit": THETA_FIT, "jdk": "/jdk", "theta_sha256": "a",
           "held_out": {}}
    t25 = {"what_if": "keep-alive", "fit": dict(THETA_FIT, ns_per_use=90e3), "jdk": "/jdk25",
           "theta_sha256": "b", "held_out": {}}
    th.keep(p, t17)
    th.keep(p, t25)          # the latest is JDK 25's
    s = summary(link={"syscalls": {"accept": {"calls": 11}}})
    r = whatif.from_run("keep-alive", s, p, "/jdk", keep=1)
    assert r["theta"]["refused"] is None and r["theta"]["source"]["theta_sha256"] == "a"
    assert r["theta"]["whole_change_us"] == pytest.approx(500.0)


def test_reused_inflaters_are_priced_by_theta_per_inflater_not_per_allocator_call():
    fit = {"ns_per_use": 400.0, "ci_with_model_error_ns": [100.0, 700.0],
           "se_with_model_error_ns": 150.0, "df": 11.0, "level": 0.95,
           "model_error_relative": 0.0}
    p = {**PLATFORM, "theta": {"reuse-native-buffers": {
        "what_if": "reuse-native-buffers", "unit": "Inflater", "fit": fit, "jdk": "/jdk",
        "theta_sha256": "z"}}}
    s = summary(malloc={"calls": 9000, "zlib_streams": {"inflate": 2000, "deflate": 5}})
    f = whatif.from_run("reuse-native-buffers", s, p, "/jdk")
    assert f["removed"] == 9000                              # the OS's part: allocator calls
    assert f["theta"]["removed"] == 2000 and f["theta"]["unit"] == "Inflater"
    assert f["theta"]["whole_change_us"] == pytest.approx(2000 * 0.4)
    g = whatif.from_run("reuse-native-buffers", summary(malloc={"calls": 9000}), p, "/jdk")
    assert g["theta"]["whole_change_us"] is None and "zlib" in g["theta"]["refused"]
    # a θ whose interval reaches below 0 prices nothing, and says so
    p["theta"]["reuse-native-buffers"]["fit"] = {**fit, "ci_with_model_error_ns": [-12.0, 700.0]}
    h = whatif.from_run("reuse-native-buffers", s, p, "/jdk")
    assert h["theta"]["whole_change_us"] is None
    assert "not resolved from 0" in h["theta"]["refused"]
