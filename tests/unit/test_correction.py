"""Probe-effect correction: raw - hits x window, floored, flagged; slowdown = hits x cost."""
import json

import pytest

from jvmos.analyzers import rawparse
from jvmos.analyzers.summary import build, correct, correct_times

PROBES = {"jni_copy_time_window": {"mean_ns": 600.0}, "io_syscall_window": {"mean_ns": 300.0},
          "jni_copy_time_hit": {"mean_ns": 2500.0}, "jni_copy_count_hit": {"mean_ns": 1200.0},
          "io_syscall_hit": {"mean_ns": 900.0}, "uprobe": {"mean_ns": 1300.0}}


def test_correct_subtracts_hits_times_window():
    c = correct(10_000, 10, 600.0)
    assert c["time_ns"] == 4_000 and c["time_raw_ns"] == 10_000 and c["time_hits"] == 10
    assert c["corrected"] and not c["floored"]
    assert c["correction_dominates"]          # 6,000 of 10,000 is the probe


def test_correct_floors_at_zero_and_flags():
    c = correct(5_000, 10, 600.0)
    assert c["time_ns"] == 0 and c["floored"] and c["correction_dominates"]


def test_small_correction_is_not_flagged():
    c = correct(1_000_000, 10, 600.0)
    assert c["time_ns"] == 994_000 and not c["correction_dominates"] and not c["floored"]


def test_without_calibration_raw_is_kept_and_says_so():
    c = correct(1234, 3, None)
    assert c == {"time_ns": 1234, "time_raw_ns": 1234, "time_hits": 3, "corrected": False}


def test_correct_times_corrects_categories_and_functions():
    cats = {"jni_copy": {"calls": 10, "time_ns": 10_000,
                         "functions": {"GetByteArrayRegion": {"calls": 10, "time_ns": 10_000}}},
            "io_syscall": {"calls": 4, "time_ns": 2_000,
                           "syscalls": {"write": {"calls": 4, "time_ns": 2_000}}}}
    correct_times(cats, PROBES, "time")
    assert cats["jni_copy"]["time_ns"] == 4_000
    assert cats["jni_copy"]["functions"]["GetByteArrayRegion"]["time_ns"] == 4_000
    assert cats["io_syscall"]["time_ns"] == 800
    assert cats["io_syscall"]["syscalls"]["write"]["time_raw_ns"] == 2_000
    # applying it twice must not subtract twice
    correct_times(cats, PROBES, "time")
    assert cats["jni_copy"]["time_ns"] == 4_000 and cats["io_syscall"]["time_ns"] == 800


def _raw(time_ns=True):
    maps = {"@calls": {"7,jni_copy,uprobe:/j/libjvm.so:100": 1000,
                       "7,io_syscall,tracepoint:syscalls:sys_exit_write": 1000},
            "@bytes": {"7,jni_copy,uprobe:/j/libjvm.so:100": 10_000,
                       "7,io_syscall,tracepoint:syscalls:sys_exit_write": 10_000},
            "@time": {"7,io_syscall,tracepoint:syscalls:sys_exit_write": 600_000}}
    if time_ns:
        maps["@time"]["7,jni_copy,uretprobe:/j/libjvm.so:100"] = 700_000
    return rawparse.parse_lines([json.dumps({"type": "map", "data": {k: v}}) for k, v in maps.items()])


def test_build_in_time_mode_corrects_and_estimates_slowdown():
    s = build(_raw(), wall_ns=5_000_000, status="complete",
              addresses={"/j/libjvm.so:100": "jni_GetByteArrayRegion"}, costs={},
              jvms_by_pid={"7": "/j"}, probes=PROBES, mode="time")
    jc = s["categories"]["jni_copy"]
    assert jc["time_raw_ns"] == 700_000 and jc["time_ns"] == pytest.approx(100_000)
    assert s["categories"]["io_syscall"]["time_ns"] == pytest.approx(300_000)
    t = s["totals"]
    assert t["probe_overhead_ns"] == pytest.approx(1000 * 2500 + 1000 * 900)
    assert t["slowdown_pct"] == pytest.approx(100 * 3_400_000 / 1_600_000)
    assert s["by_pid"]["7"]["categories"]["jni_copy"]["time_ns"] == pytest.approx(100_000)


def test_build_in_count_mode_estimates_jni_copy_time_from_the_model():
    costs = {"jni_region": {"/j": {"ns_per_call": 20.0, "ns_per_byte": 0.5}}}
    s = build(_raw(time_ns=False), wall_ns=5_000_000, status="complete",
              addresses={"/j/libjvm.so:100": "jni_GetByteArrayRegion"}, costs=costs,
              jvms_by_pid={"7": "/j"}, probes=PROBES, mode="count")
    jc = s["categories"]["jni_copy"]
    assert jc["method"] == "estimated"
    assert jc["time_ns"] == pytest.approx(1000 * 20 + 10_000 * 0.5)
    assert s["totals"]["mode"] == "count"
