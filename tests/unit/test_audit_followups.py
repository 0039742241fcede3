"""Figures that must stay unknown when an input is unknown, and totals that follow what was
merged into them: the slowdown in CPU time, count mode's sampled times, the memory split."""
import pytest

from jvmos import cputime
from jvmos.heuristic import model
from jvmos.recordsample import merge_samples


def test_slowdown_is_probe_cpu_over_the_uninstrumented_cpu():
    # probes 200 ms of CPU, the target used 1,000 ms while recorded: without the probes it
    # would have used 1,000 - 200 = 800 ms, so the probes slowed it by 200 / 800 = 25%;
    # the wall time (5 s, mostly idle) is not the denominator
    t = cputime.overhead_totals(30e6, 5e9, {"cpu_ns": 1_000_000_000, "complete": True,
                                            "method": "m"}, probe_ns=200e6)
    assert t["cpu_uninstrumented_estimate_ns"] == pytest.approx(800e6)
    assert t["slowdown_pct"] == pytest.approx(25.0)
    assert t["slowdown_basis"].startswith("estimated")


def test_slowdown_unknown_without_cpu_or_probe_cost_or_when_the_cost_exceeds_the_cpu():
    cpu = {"cpu_ns": 100e6, "complete": True, "method": "m"}
    assert cputime.overhead_totals(1, 5e9, cpu, probe_ns=None)["slowdown_pct"] is None
    assert cputime.overhead_totals(1, 5e9, {"cpu_ns": None}, probe_ns=5e6)["slowdown_pct"] is None
    t = cputime.overhead_totals(1, 5e9, cpu, probe_ns=150e6)
    assert t["slowdown_pct"] is None and "exceeds" in t["slowdown_basis"]


def _count_summary():
    # count mode: pid 10's JNI copies estimated at 4 ms, NIO at 6 ms; pid 11 NIO 1 ms;
    # io_syscall 9 ms measured (its own category, not sampled over in count mode)
    cat = lambda t, m="estimated": {"calls": 5, "bytes": 50, "time_ns": t, "method": m}
    p10 = {"jni_copy": cat(4e6), "nio_copy": cat(6e6), "io_syscall": cat(9e6, "measured")}
    p11 = {"nio_copy": cat(1e6)}
    return {"totals": {"mode": "count", "wall_ns": 1e9, "guaranteed_overhead_ns": 20e6},
            "categories": {"jni_copy": cat(4e6), "nio_copy": cat(7e6),
                           "io_syscall": cat(9e6, "measured")},
            "by_pid": {"10": {"categories": p10}, "11": {"categories": p11}},
            "warnings": []}


def test_count_mode_samples_replace_the_estimates_and_the_totals_follow():
    s = _count_summary()
    s["warnings"] = ["guaranteed overhead unknown: the time of x is unknown (not calibrated); ..."]
    s["categories"]["nio_copy"].update(corrected=True, time_raw_ns=9e6, floored=False)
    # 30 samples of 1 ms in nio_copy for pid 10, none in jni_copy, none at all for pid 11;
    # 5 samples in io_syscall, whose time the probes measured in count mode
    samp = {"categories": {"nio_copy": {"samples": 30, "time_ns": 30e6, "time_err95_ns": 11e6},
                           "io_syscall": {"samples": 5, "time_ns": 5e6, "time_err95_ns": 4e6}},
            "by_pid": {"10": {"categories": {"nio_copy": {"samples": 30, "time_ns": 30e6,
                                                         "time_err95_ns": 11e6}}}}}
    merge_samples(s, samp)
    c = s["categories"]
    assert c["nio_copy"]["time_ns"] == 30e6 and c["nio_copy"]["method"] == "sampled"
    assert c["nio_copy"]["time_estimated_ns"] == 7e6
    # the estimate's correction fields went with it
    assert not {"corrected", "time_raw_ns", "floored"} & set(c["nio_copy"])
    # no sample fell in jni_copy: the model's estimate stays, its sampled time is unknown
    assert c["jni_copy"]["time_ns"] == 4e6 and c["jni_copy"]["method"] == "estimated"
    assert c["jni_copy"]["samples"] == 0 and c["jni_copy"]["time_sampled_ns"] is None
    # measured io_syscall keeps its probed time; the samples sit beside it
    assert c["io_syscall"]["time_ns"] == 9e6 and c["io_syscall"]["time_sampled_ns"] == 5e6
    # the totals are summed again (GUARANTEED io = jni_copy + nio_copy + kernel_copy):
    # 4 + 30 = 34 ms, and the stale "unknown" warning is gone
    t = s["totals"]
    assert t["guaranteed_overhead_ns"] == 34e6 and t["guaranteed_overhead_unknown"] == []
    assert not any(w.startswith("guaranteed overhead unknown") for w in s["warnings"])
    # per process: pid 10's nio 30 ms sampled; pid 11 had no sample, its estimate stays
    assert s["by_pid"]["10"]["categories"]["nio_copy"]["time_ns"] == 30e6
    assert s["by_pid"]["11"]["categories"]["nio_copy"]["time_ns"] == 1e6
    assert s["by_pid"]["10"]["guaranteed_by_resource"]["io"] == 34e6


def test_time_mode_samples_sit_beside_the_probed_times():
    s = _count_summary()
    s["totals"]["mode"] = "time"
    samp = {"categories": {"nio_copy": {"samples": 3, "time_ns": 3e6, "time_err95_ns": 3e6}},
            "by_pid": {}}
    merge_samples(s, samp)
    assert s["categories"]["nio_copy"]["time_ns"] == 7e6           # unchanged
    assert s["categories"]["nio_copy"]["time_sampled_ns"] == 3e6
    assert s["categories"]["jni_copy"]["time_sampled_ns"] is None   # no sample: no figure
    assert s["totals"]["guaranteed_overhead_ns"] == 20e6            # not re-summed


def test_mem_parts_unknown_stays_unknown():
    # malloc 12 ms probed + frees unknown (free not calibrated): the allocator part is unknown
    s = {"categories": {"malloc": {"time_ns": 12e6}, "free_estimated": {"time_ns": None},
                        "vm": {"time_ns": 7e6, "page_fault_time_ns": 5e6,
                               "syscalls_time_ns": 2e6}}}
    assert model.mem_parts_from_summary(s) == {"malloc_ns": None, "page_fault_ns": 5e6,
                                               "vm_syscall_ns": 2e6}
    # page faults not calibrated: unknown; no allocator call at all: 0
    s = {"categories": {"vm": {"time_ns": None, "page_fault_time_ns": None,
                               "syscalls_time_ns": 2e6}}}
    assert model.mem_parts_from_summary(s) == {"malloc_ns": 0.0, "page_fault_ns": None,
                                               "vm_syscall_ns": 2e6}


def test_extended_fit_refuses_levels_with_an_unknown_memory_part():
    from jvmos.heuristic.fit import fit_extended
    L = {"mem_parts": {"malloc_ns": None, "page_fault_ns": 1.0, "vm_syscall_ns": 1.0}}
    assert fit_extended([L, L], 80.0) is None


def test_repeats_keep_an_unknown_memory_part_unknown():
    # two repeats of a level; the allocator time unknown in one of them: the level's median
    # is unknown (not the median of 0 and 5 ms), and the fit refuses it
    from jvmos.heuristic.fit import combine, fit_extended
    rep = lambda malloc: {"threads": 1, "pages": 1, "connections": 1,
                          "by_resource": {"io": 1e6}, "counts": {"accepts": 1},
                          "mem_parts": {"malloc_ns": malloc, "page_fault_ns": 2e6,
                                        "vm_syscall_ns": 1e6},
                          "server_cpu_ns": 1e9, "bare_cpu_ns": 1e9, "wall_ns": 2e9,
                          "probe_overhead_ns": None if malloc is None else 3e6,
                          "guaranteed_ns": 1e6, "bare": {}, "recorded": {}, "run_dir": "r"}
    L = combine([rep(None), rep(5e6)])
    assert L["mem_parts"]["malloc_ns"] is None
    assert L["probe_overhead_ns"] is None       # unknown in one repeat: not the median of 0, 3
    assert L["mem_parts"]["page_fault_ns"] == 2e6
    assert fit_extended([L, L], 80.0) is None


def test_table6_says_unknown_and_leaves_it_out_of_the_average():
    from jvmos.experiments import memory
    row = lambda libc, pct: {"exec_ns": 1e9, "libc_ns": libc, "kernel_ns": 5e6,
                             "overhead_pct": pct, "malloc_calls": 10,
                             "free_estimated_calls": 10, "malloc_bytes": 100, "page_faults": 3}
    # a: (10 + 5) ms of 1 s = 1.5%; b: libc unknown, so its overhead is unknown
    res = {"suite": "s", "size": "small", "iterations": 1, "jdk_label": "17",
           "benchmarks": {"a": row(10e6, 1.5), "b": row(None, None)}}
    memory.summarize(res)
    assert res["average_overhead_pct"] == pytest.approx(1.5)
    assert res["overhead_unknown"] == ["b"]
    md = memory.table6(res).markdown()
    assert "| b | 1,000 | unknown | 5.0 | unknown |" in md
    assert "b: unknown, left out" in md


def test_report_names_the_slowdowns_denominator(tmp_path):
    # probes 200 ms over 800 ms of CPU without them: 25%, said with its denominator
    import json
    import shutil
    from pathlib import Path
    from jvmos.report import render
    src = Path(__file__).resolve().parent.parent / "fixtures" / "blocking-java17"
    for f in ("manifest.json", "summary.json"):
        shutil.copy(src / f, tmp_path / f)
    s = json.loads((tmp_path / "summary.json").read_text())
    s["totals"].update(cputime.overhead_totals(None, 5e9, {"cpu_ns": 1e9, "complete": True},
                                               probe_ns=200e6), probe_overhead_ns=200e6)
    (tmp_path / "summary.json").write_text(json.dumps(s))
    assert "(= 25% of their CPU time without the probes, estimated)" in render(tmp_path)
