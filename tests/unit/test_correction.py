"""Probe-effect correction (analyzers/correction.py) and its use by build(): small raw inputs,
expected values worked out by hand next to each number."""
import json

import pytest

from jvmos import JvmosError
from jvmos.analyzers import bpftrace
from jvmos.analyzers.correction import combine, correct, validate_costs, validate_probes
from jvmos.analyzers.io import correct_times
from jvmos.analyzers.summary import build
from jvmos.calibrate import costs_for

PROBES = {"jni_copy_time_window": {"mean_ns": 600.0, "ci95_ns": [500.0, 700.0]},
          "io_syscall_window": {"mean_ns": 300.0, "ci95_ns": [250.0, 350.0]},
          "jni_copy_time_hit": {"mean_ns": 2500.0}, "jni_copy_count_hit": {"mean_ns": 1200.0},
          "io_syscall_hit": {"mean_ns": 900.0}, "uprobe": {"mean_ns": 1300.0}}
KERNEL = {"kernel_copyin": {"ns_per_byte": 0.5, "ns_per_call": 100.0},
          "kernel_copyout": {"ns_per_byte": 0.25, "ns_per_call": 100.0}}
ADDR = {"/j/libjvm.so:100": "jni_GetByteArrayRegion"}
GBAR_U, GBAR_R = "uprobe:/j/libjvm.so:100", "uretprobe:/j/libjvm.so:100"
WRITE = "tracepoint:syscalls:sys_exit_write"


def raw_of(maps):
    return bpftrace.parse_lines([json.dumps({"type": "map", "data": {k: v}})
                                 for k, v in maps.items()])


# ---------------------------------------------------------------- correct()

def test_correct_subtracts_the_correction():
    c = correct(10_000, 10, 10 * 600.0, window_ns=600.0)
    assert c["time_ns"] == 4_000                       # 10,000 - 10 x 600
    assert (c["time_raw_ns"], c["time_hits"], c["correction_ns"]) == (10_000, 10, 6_000)
    assert c["corrected"] and not c["floored"] and c["probe_window_ns"] == 600.0
    assert c["correction_dominates"]                   # 6,000 > 10,000 / 2
    assert "time_ci95_ns" not in c                     # no interval known, none invented


def test_small_correction_is_not_flagged():
    c = correct(1_000_000, 10, 6_000.0)
    assert c["time_ns"] == 994_000                     # 1,000,000 - 6,000
    assert not c["correction_dominates"] and not c["floored"]


def test_interval_from_the_windows_interval():
    c = correct(10_000, 10, 6_000.0, window_ns=600.0, window_ci=(500.0, 700.0))
    # 10,000 - 10 x 700 = 3,000 and 10,000 - 10 x 500 = 5,000
    assert c["time_ci95_ns"] == [3_000, 5_000]


def test_interval_keeps_a_correction_outside_the_window_exact():
    # 4 hits x window 600 + 1,000 of nested probes: the window's interval moves only its part
    c = correct(10_000, 4, 4 * 600.0 + 1_000.0, window_ns=600.0, window_ci=(500.0, 700.0))
    assert c["time_ns"] == 6_600                       # 10,000 - 2,400 - 1,000
    assert c["time_ci95_ns"] == [6_200, 7_000]         # 9,000 - 2,800 and 9,000 - 2,000


def test_a_window_interval_reaching_below_zero_never_lifts_the_time_above_raw():
    c = correct(10_000, 10, 3_000.0, window_ns=300.0, window_ci=(-100.0, 700.0))
    assert c["time_ns"] == 7_000                       # 10,000 - 10 x 300
    assert c["time_ci95_ns"] == [3_000, 10_000]        # 10,000 - 7,000; 10,000 - 10 x 0


def test_a_floored_value_keeps_its_flag_and_an_interval_that_holds_it():
    c = correct(5_000, 10, 6_000.0, window_ns=600.0)
    assert c["time_ns"] == 0 and c["floored"] and c["correction_dominates"]   # 5,000 - 6,000 < 0
    assert c["time_ci95_ns"] == [0.0, 5_000.0]         # 0 <= time <= raw
    c = correct(5_000, 10, 6_000.0, window_ns=600.0, window_ci=(400.0, 800.0))
    assert c["time_ci95_ns"] == [0.0, 1_000.0]         # 5,000 - 8,000 < 0 -> 0; 5,000 - 4,000
    c = correct(5_000, 10, 6_000.0, window_ns=600.0, window_ci=(550.0, 650.0))
    # the whole interval is below zero (5,000 - 5,500 < 0): the data only say 0 <= time <= raw
    assert c["time_ci95_ns"] == [0.0, 5_000.0]


def test_a_missing_calibration_is_unknown_not_zero():
    c = correct(1234, 3, None, source="io_syscall_window")
    assert c["time_ns"] is None and c["correction_ns"] is None
    assert c["time_raw_ns"] == 1234 and c["time_hits"] == 3
    assert c["corrected"] is False and c["probe_window_source"] == "io_syscall_window"


def test_combine_sums_and_keeps_flags():
    a = correct(10_000, 10, 6_000.0, window_ns=600.0, window_ci=(500.0, 700.0))   # 4,000 [3,000, 5,000]
    b = correct(1_000, 2, 1_200.0, window_ns=600.0)                               # floored, [0, 1,000]
    t = combine([a, b])
    assert t["time_ns"] == 4_000 and t["time_raw_ns"] == 11_000                  # 4,000 + 0
    assert t["correction_ns"] == 7_200 and t["time_hits"] == 12                  # 6,000 + 1,200
    assert t["floored"] and t["corrected"]
    assert t["time_ci95_ns"] == [3_000, 6_000]                                   # 3,000+0, 5,000+1,000
    assert t["correction_dominates"]                                             # 7,200 > 5,500
    assert combine([a, correct(1, 1, None)])["time_ns"] is None                 # unknown stays unknown


# ---------------------------------------------------------------- validation

@pytest.mark.parametrize("bad", [0.0, -5.0, float("nan"), "300", None])
def test_a_zero_negative_or_non_numeric_window_is_a_calibration_error(bad):
    probes = dict(PROBES, io_syscall_window={"mean_ns": bad})
    with pytest.raises(JvmosError, match=r"^calibration error: probe cost io_syscall_window"):
        validate_probes(probes)


def test_a_window_larger_than_its_hit_is_a_calibration_error():
    with pytest.raises(JvmosError, match="io_syscall_window .* larger than io_syscall_hit"):
        validate_probes(dict(PROBES, io_syscall_window={"mean_ns": 950.0}))


def test_an_interval_that_does_not_hold_its_mean_is_a_calibration_error():
    with pytest.raises(JvmosError, match="interval"):
        validate_probes(dict(PROBES, uprobe={"mean_ns": 1300.0, "ci95_ns": [1400.0, 1500.0]}))


def test_a_bare_uprobe_dearer_than_a_pair_is_a_calibration_error():
    with pytest.raises(JvmosError, match="bare uprobe"):
        validate_probes(dict(PROBES, uprobe={"mean_ns": 3000.0}))


@pytest.mark.parametrize("costs,what", [
    ({"free_call": {"ns_per_call": 0.0}}, "free_call.ns_per_call"),         # a zero divisor
    ({"page_fault": {"ns_per_call": -1.0}}, "page_fault.ns_per_call"),
    ({"kernel_copyin": {"ns_per_byte": float("inf")}}, "kernel_copyin.ns_per_byte"),
    ({"jni_region": {"/j": {"ns_per_call": 1.0, "ns_per_byte": -0.1}}}, r"jni_region\[/j\]"),
])
def test_bad_cost_models_are_calibration_errors(costs, what):
    with pytest.raises(JvmosError, match=what):
        validate_costs(costs)


def test_costs_for_validates_the_platform_file():
    good = {"copy": dict(KERNEL, memcpy={"ns_per_call": 0.0, "ns_per_byte": 0.02}),
            "engine_probes": PROBES}
    assert costs_for(good)["kernel_copyin"]["ns_per_byte"] == 0.5
    with pytest.raises(JvmosError, match="^calibration error"):
        costs_for(dict(good, engine_probes=dict(PROBES, jni_copy_time_window={"mean_ns": -1.0})))
    # the retired bpftrace costs of an older file are not what a recording uses: not checked
    costs_for(dict(good, probes=dict(PROBES, jni_copy_time_window={"mean_ns": -1.0})))
    with pytest.raises(JvmosError, match="^calibration error"):
        build(raw_of({}), wall_ns=1, status="complete", addresses={}, costs={},
              jvms_by_pid={}, probes=dict(PROBES, uprobe={"mean_ns": 0}))


# ---------------------------------------------------------------- correct_times()

def test_correct_times_corrects_functions_and_sums_them():
    cats = {"jni_copy": {"calls": 10, "time_ns": 10_000,
                         "functions": {"GetByteArrayRegion": {"calls": 10, "time_ns": 10_000}}},
            "io_syscall": {"calls": 4, "time_ns": 2_000,
                           "syscalls": {"write": {"calls": 4, "time_ns": 2_000}}}}
    correct_times(cats, PROBES, "time")
    assert cats["jni_copy"]["time_ns"] == 4_000                       # 10,000 - 10 x 600
    assert cats["jni_copy"]["functions"]["GetByteArrayRegion"]["time_ns"] == 4_000
    assert cats["io_syscall"]["time_ns"] == 800                       # 2,000 - 4 x 300
    assert cats["io_syscall"]["syscalls"]["write"]["time_raw_ns"] == 2_000
    assert cats["io_syscall"]["probe_window_source"].startswith("io_syscall_window")
    correct_times(cats, PROBES, "time")                               # twice: no double subtraction
    assert cats["jni_copy"]["time_ns"] == 4_000 and cats["io_syscall"]["time_ns"] == 800


# ---------------------------------------------------------------- build(): two processes,
# probe costs, one process floored

TWO_PIDS = {
    "@calls": {f"1,jni_copy,{GBAR_U}": 4, f"2,jni_copy,{GBAR_U}": 1,
               f"1,io_syscall,{WRITE}": 10, f"2,io_syscall,{WRITE}": 10},
    "@bytes": {f"1,jni_copy,{GBAR_U}": 400, f"2,jni_copy,{GBAR_U}": 100,
               f"1,io_syscall,{WRITE}": 1000, f"2,io_syscall,{WRITE}": 3000},
    "@time": {f"1,jni_copy,{GBAR_R}": 10_000, f"2,jni_copy,{GBAR_R}": 300,
              f"1,io_syscall,{WRITE}": 5_000, f"2,io_syscall,{WRITE}": 2_000},
}


def two_pids(probes=PROBES):
    return build(raw_of(TWO_PIDS), wall_ns=1_000_000, status="complete", addresses=ADDR,
                 costs=KERNEL, jvms_by_pid={"1": "/j", "2": "/j"}, probes=probes, mode="time")


def test_each_process_is_corrected_on_its_own_figures():
    s = two_pids()
    p1, p2 = (s["by_pid"][p]["categories"] for p in ("1", "2"))
    # pid 1: jni 10,000 - 4 x 600 = 7,600, interval [10,000 - 4 x 700, 10,000 - 4 x 500]
    assert p1["jni_copy"]["time_ns"] == 7_600 and not p1["jni_copy"]["floored"]
    assert p1["jni_copy"]["time_ci95_ns"] == [7_200, 8_000]
    # pid 1: write 5,000 - 10 x 300 = 2,000, interval [5,000 - 3,500, 5,000 - 2,500]
    assert p1["io_syscall"]["time_ns"] == 2_000
    assert p1["io_syscall"]["time_ci95_ns"] == [1_500, 2_500]
    # pid 2: jni 300 - 600 < 0 -> 0, floored; the window's interval is all above 300: [0, raw]
    assert p2["jni_copy"]["time_ns"] == 0 and p2["jni_copy"]["floored"]
    assert p2["jni_copy"]["time_ci95_ns"] == [0, 300]
    # pid 2: write 2,000 - 3,000 < 0 -> 0, floored, [0, 2,000]
    assert p2["io_syscall"]["time_ns"] == 0 and p2["io_syscall"]["floored"]
    assert p2["io_syscall"]["time_ci95_ns"] == [0, 2_000]


def test_totals_are_the_sums_of_the_per_process_corrected_figures():
    s = two_pids()
    jc, sc = s["categories"]["jni_copy"], s["categories"]["io_syscall"]
    # jni: 7,600 + 0 (correcting the summed raw would give 10,300 - 5 x 600 = 7,300)
    assert jc["time_ns"] == 7_600 and jc["time_raw_ns"] == 10_300
    assert jc["correction_ns"] == 3_000 and jc["time_hits"] == 5     # 2,400 + 600
    assert jc["floored"] and jc["corrected"]
    assert jc["time_ci95_ns"] == [7_200, 8_300]                       # 7,200 + 0, 8,000 + 300
    assert jc["functions"]["GetByteArrayRegion"]["time_ns"] == 7_600
    assert jc["probe_window_ns"] == 600.0                             # shared, not summed
    # io: 2,000 + 0 (not 7,000 - 20 x 300 = 1,000)
    assert sc["time_ns"] == 2_000 and sc["floored"] and sc["correction_ns"] == 6_000
    assert sc["time_ci95_ns"] == [1_500, 4_500]                       # 1,500 + 0, 2,500 + 2,000
    assert sc["correction_dominates"]                                 # 6,000 > 7,000 / 2
    # the invariant: every per-process figure adds up to its total
    for name, cat in s["categories"].items():
        for field in ("calls", "bytes", "time_ns", "time_raw_ns", "correction_ns"):
            vals = [bp["categories"][name].get(field) for bp in s["by_pid"].values()]
            if field in cat:
                assert cat[field] == sum(vals), (name, field)


def test_guaranteed_overhead_adds_up_over_processes():
    s = two_pids()
    # kernel copy: pid 1 1,000 B x 0.5 = 500, pid 2 3,000 B x 0.5 = 1,500
    assert s["by_pid"]["1"]["guaranteed_by_resource"] == {"io": 8_100}    # 7,600 + 500
    assert s["by_pid"]["2"]["guaranteed_by_resource"] == {"io": 1_500}    # 0 + 1,500
    assert s["totals"]["guaranteed_by_resource"] == {"io": 9_600}         # 8,100 + 1,500
    assert s["totals"]["guaranteed_overhead_ns"] == 9_600
    assert s["totals"]["guaranteed_overhead_pct"] == pytest.approx(0.96)  # 9,600 / 1,000,000
    terms = s["totals"]["guaranteed_overhead_terms"]["io"]
    assert [(t["category"], t["method"], t["time_ns"]) for t in terms] == \
        [("jni_copy", "measured", 7_600), ("kernel_copy", "estimated", 2_000)]
    assert s["totals"]["guaranteed_overhead_unknown"] == [] and s["warnings"] == []
    # probe effect: 5 JNI pairs x 2,500 + 20 syscall pairs x 900 = 30,500
    assert s["totals"]["probe_overhead_ns"] == pytest.approx(30_500)


def test_without_probe_calibration_times_are_unknown_with_a_warning():
    s = two_pids(probes=None)
    jc, sc = s["categories"]["jni_copy"], s["categories"]["io_syscall"]
    assert jc["time_ns"] is None and jc["time_raw_ns"] == 10_300 and not jc["corrected"]
    assert sc["time_ns"] is None and sc["time_raw_ns"] == 7_000
    assert s["by_pid"]["2"]["categories"]["jni_copy"]["time_ns"] is None
    # only the kernel copy (its own calibration is there) is known: the total is unknown,
    # its known part (a lower bound) is kept apart
    assert s["totals"]["guaranteed_overhead_ns"] is None
    assert s["totals"]["guaranteed_overhead_known_ns"] == 2_000
    assert s["totals"]["guaranteed_overhead_unknown"] == ["jni_copy"]
    assert any("not calibrated" in w and "jni_copy" in w and "io_syscall" in w
               for w in s["warnings"])
    assert s["totals"]["probe_overhead_ns"] is None


def test_one_missing_window_leaves_only_its_times_unknown():
    probes = {k: v for k, v in PROBES.items() if k != "io_syscall_window"}
    s = two_pids(probes)
    assert s["categories"]["io_syscall"]["time_ns"] is None
    assert s["categories"]["jni_copy"]["time_ns"] == 7_600
    assert any("io_syscall" in w for w in s["warnings"])


def test_count_mode_estimates_jni_copy_time_from_the_model():
    maps = {k: {kk: vv for kk, vv in v.items() if not kk.endswith(GBAR_R)}
            for k, v in TWO_PIDS.items()}
    costs = dict(KERNEL, jni_region={"/j": {"ns_per_call": 20.0, "ns_per_byte": 0.5}})
    s = build(raw_of(maps), wall_ns=1_000_000, status="complete", addresses=ADDR, costs=costs,
              jvms_by_pid={"1": "/j", "2": "/j"}, probes=PROBES, mode="count")
    jc = s["categories"]["jni_copy"]
    assert jc["method"] == "estimated"
    # pid 1: 4 x 20 + 400 x 0.5 = 280; pid 2: 1 x 20 + 100 x 0.5 = 70
    assert jc["time_ns"] == pytest.approx(350)
    assert s["totals"]["mode"] == "count"
    # probe effect in count mode: 5 JNI entries x 1,200 + 20 syscall pairs x 900 = 24,000
    assert s["totals"]["probe_overhead_ns"] == pytest.approx(24_000)


def test_a_window_floored_at_zero_by_the_calibration_is_usable_and_labelled():
    """io_syscall_window came out -2.2 ns [-110, 106] in a CI calibration: a window is not
    negative, so the calibration floors it at 0 with the interval's upper end kept, flagged;
    validation accepts that (and still refuses a 0 that is not flagged, or a floored hit)."""
    from jvmos.analyzers.correction import validate_probes
    floored = {"mean_ns": 0.0, "ci95_ns": [0.0, 105.6], "floored": True, "fit_mean_ns": -2.2}
    validate_probes(dict(PROBES, io_syscall_window=floored))
    with pytest.raises(JvmosError, match="must be a positive number"):
        validate_probes(dict(PROBES, io_syscall_window=dict(floored, floored=False)))
    with pytest.raises(JvmosError, match="must be a positive number"):
        validate_probes(dict(PROBES, io_syscall_hit=floored))
