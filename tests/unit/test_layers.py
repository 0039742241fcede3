"""The threads, links and memory categories: arithmetic on hand-built raw output (expected
values worked out by hand next to them), and the parsing of a recorded fixture (NoOpThreads
under the threads, links and mem layers)."""
import copy

import pytest

from jvmos.analyzers import summary as summ
from jvmos.analyzers.bpftrace import parse_lines

from _unit_helpers import map_lines, Recording

PROBES = {"jni_copy_time_hit": {"mean_ns": 1300.0}, "jni_copy_time_window": {"mean_ns": 600.0},
          "io_syscall_hit": {"mean_ns": 640.0}, "io_syscall_window": {"mean_ns": 300.0},
          "uprobe": {"mean_ns": 500.0}, "tracepoint": {"mean_ns": 80.0}}
COSTS = {"malloc_call": {"ns_per_call": 20.0}, "free_call": {"ns_per_call": 14.0},
         "page_fault": {"ns_per_call": 1400.0}}


def build(maps, probes=PROBES, costs=COSTS, mode="time"):
    raw = parse_lines(map_lines(maps))
    return summ.build(raw, wall_ns=10_000_000, status="complete", addresses={}, costs=costs,
                      jvms_by_pid={}, probes=probes, mode=mode)


# ---------------------------------------------------------------- threads

THREADS = {
    "@ncalls": {"7,thread_create,pthread_create java": 100,
                "7,thread_create,kernel in create java": 200,
                "7,thread_create,libc start java": 100,
                "7,thread_create,libc exit java": 100,
                "7,thread_create,kernel exit java": 100,
                "7,thread_jvm,start": 100, "7,thread_jvm,exit java": 100,
                "7,thread_wait,first run delay": 100,
                "7,thread_wait,futex in JVM_StartThread": 50,
                "7,sync,futex wait": 40, "7,sync,futex wake": 60},
    "@ntime": {"7,thread_create,libc create java": 1_000_000,
               "7,thread_create,kernel in create java": 2_000_000,
               "7,thread_create,libc start java": 800_000,
               "7,thread_create,libc exit java": 600_000,
               "7,thread_create,kernel exit java": 900_000,
               "7,thread_jvm,start": 3_000_000, "7,thread_jvm,exit java": 1_500_000,
               "7,thread_wait,first run delay": 2_500_000,
               "7,thread_wait,futex in JVM_StartThread": 7_000_000,
               "7,sync,futex wait": 9_000_000, "7,sync,futex wake": 100_000},
    "@calls": {"7,thread_create,tracepoint:syscalls:sys_enter_clone3": 100},
    "@thr_incl": {"7": 20_000_000},
    "@csw": {"7,70,voluntary": 5, "7,70,involuntary": 2, "7,71,voluntary": 1},
}


def test_count_mode_says_thread_times_are_partial():
    s = build(THREADS, mode="count")
    for name in ("thread_create", "thread_jvm"):
        c = s["categories"][name]
        assert c["time_partial"] and c["basis"].startswith("--mode count")
    assert "time_partial" not in build(THREADS)["categories"]["thread_create"]


def test_thread_layers_are_exclusive_and_corrected():
    s = build(THREADS)
    tc = s["categories"]["thread_create"]
    p = tc["parts"]
    # libc create: its own window per call, and the outside-window part of the nested syscalls
    assert p["libc create java"]["time_raw_ns"] == 1_000_000
    assert p["libc create java"]["time_ns"] == pytest.approx(1_000_000 - 100 * 600 - 200 * 340)
    # syscalls: their window
    assert p["kernel in create java"]["time_ns"] == pytest.approx(2_000_000 - 200 * 300)
    # the exit span ends at a tracepoint and a switch-out: nothing to take off
    assert p["kernel exit java"]["time_ns"] == 900_000
    # libc start: half an entry uprobe; libc exit: half a uretprobe (pair hit - uprobe)
    assert p["libc start java"]["time_ns"] == pytest.approx(800_000 - 100 * 250)
    assert p["libc exit java"]["time_ns"] == pytest.approx(600_000 - 100 * 400)
    java = tc["layers"]["java"]
    assert java["threads"] == 100
    assert java["libc_ns"] == pytest.approx(sum(p[n]["time_ns"] for n in
                                                ("libc create java", "libc start java",
                                                 "libc exit java")))
    assert java["kernel_ns"] == pytest.approx(sum(p[n]["time_ns"] for n in
                                                  ("kernel in create java", "kernel exit java")))
    assert tc["time_ns"] == pytest.approx(java["libc_ns"] + java["kernel_ns"])
    assert tc["clone_calls"] == 100 and tc["calls"] == 100
    tj = s["categories"]["thread_jvm"]
    # JVM_StartThread: own window, plus outside-window cost of the nested pthread_create pair
    # and of the futex tracepoint pairs it waited in
    assert tj["parts"]["jvm start java"]["time_ns"] == pytest.approx(
        3_000_000 - 100 * 600 - 100 * 700 - 50 * 340)
    assert tj["start_inclusive_raw_ns"] == 20_000_000
    assert tj["start_probe_outside_window_ns"] == pytest.approx(100 * 700)
    # waiting is reported, not corrected and not guaranteed overhead
    tw = s["categories"]["thread_wait"]
    assert tw["time_ns"] == 9_500_000 and tw["calls"] == 100
    assert s["totals"]["guaranteed_overhead_categories"] == ["thread_create"]
    assert s["totals"]["guaranteed_overhead_ns"] == pytest.approx(tc["time_ns"])
    sync = s["categories"]["sync"]
    assert sync["calls"] == 100 and sync["wait_calls"] == 40 and sync["wake_calls"] == 60
    assert sync["time_ns"] == pytest.approx(9_100_000 - 100 * 300)
    cs = s["by_pid"]["7"]["context_switches"]
    assert (cs["voluntary"], cs["involuntary"], cs["threads"]) == (6, 2, 2)
    assert s["totals"]["context_switches"] == {"voluntary": 6, "involuntary": 2, "threads": 2}


def test_allocator_probes_nested_in_thread_spans_are_taken_out():
    maps = copy.deepcopy(THREADS)
    maps["@nhits"] = {"7,thread_nested_alloc,libc create": 300}
    s = build(maps)
    p = s["categories"]["thread_create"]["parts"]["libc create java"]
    assert p["time_ns"] == pytest.approx(1_000_000 - 100 * 600 - 200 * 340 - 300 * 700)


def test_correction_that_dominates_is_floored_and_flagged():
    maps = {"@ncalls": {"7,thread_create,pthread_create java": 100},
            "@ntime": {"7,thread_create,libc create java": 10_000}}
    p = build(maps)["categories"]["thread_create"]["parts"]["libc create java"]
    assert p["time_ns"] == 0 and p["floored"] and p["correction_dominates"]


def test_without_probe_calibration_times_are_unknown_not_raw():
    s = build(THREADS, probes=None)
    p = s["categories"]["thread_create"]["parts"]["libc create java"]
    assert p["time_ns"] is None and p["time_raw_ns"] == 1_000_000 and not p["corrected"]
    assert s["categories"]["thread_create"]["time_ns"] is None
    assert s["categories"]["sync"]["time_ns"] is None
    # waiting is not corrected: it needs no calibration
    assert s["categories"]["thread_wait"]["time_ns"] == 9_500_000
    assert s["totals"]["guaranteed_overhead_unknown"] == ["thread_create"]
    assert any("not calibrated" in w for w in s["warnings"])


def test_one_uncalibrated_probe_cost_leaves_only_the_parts_that_use_it_unknown():
    probes = {k: v for k, v in PROBES.items() if k != "uprobe"}
    p = build(THREADS, probes=probes)["categories"]["thread_create"]["parts"]
    # libc start (half a bare uprobe) and libc exit (pair hit - uprobe) need it
    assert p["libc start java"]["time_ns"] is None and p["libc exit java"]["time_ns"] is None
    assert p["kernel in create java"]["time_ns"] == pytest.approx(2_000_000 - 200 * 300)


def test_every_corrected_figure_names_the_window_it_used():
    maps = copy.deepcopy(THREADS)
    for k, v in MEM.items():
        maps.setdefault(k, {}).update(v)
    s = build(maps)
    for name in ("thread_create", "thread_jvm", "sync", "malloc", "vm"):
        c = s["categories"][name]
        assert c["probe_window_source"], name
        for part in (c.get("parts") or c.get("syscalls") or c.get("functions") or {}).values():
            if part.get("corrected"):
                assert part["probe_window_source"], name
    assert "borrowed" in s["categories"]["sync"]["probe_window_source"]
    assert "jni_copy_time_window" in s["categories"]["malloc"]["probe_window_source"]
    assert s["categories"]["vm"]["probe_window_source"].startswith("io_syscall_window")


# ---------------------------------------------------------------- links

def test_links_are_on_cpu_time_and_failed_calls_apart():
    maps = {"@calls": {"7,link,tracepoint:syscalls:sys_exit_accept4": 10,
                       "7,file,tracepoint:syscalls:sys_exit_openat": 20,
                       "7,file,tracepoint:syscalls:sys_exit_close": 20},
            "@time": {"7,link,tracepoint:syscalls:sys_exit_accept4": 50_000,
                      "7,file,tracepoint:syscalls:sys_exit_openat": 40_000,
                      "7,file,tracepoint:syscalls:sys_exit_close": 10_000},
            "@wall": {"7,link,tracepoint:syscalls:sys_exit_accept4": 5_000_000},
            "@ncalls": {"7,file,failed": 3}}
    s = build(maps)
    link, f = s["categories"]["link"], s["categories"]["file"]
    assert link["calls"] == 10 and link["syscalls"]["accept4"]["wall_ns"] == 5_000_000
    assert link["time_ns"] == pytest.approx(50_000 - 10 * 300)
    assert "borrowed" in link["probe_window_source"]
    assert f["calls"] == 40 and f["failed_calls"] == 3
    assert f["time_ns"] == pytest.approx(50_000 - 40 * 300)
    # C_link and C_file are terms of the heuristic's C_os: links are in the guaranteed overhead
    assert s["totals"]["guaranteed_by_resource"]["links"] == pytest.approx(
        link["time_ns"] + f["time_ns"])


# ---------------------------------------------------------------- memory

MEM = {"@calls": {"7,malloc,uprobe:/lib/libc.so.6:malloc": 1000,
                  "7,malloc,uprobe:/lib/libc.so.6:realloc": 10,
                  "7,vm,tracepoint:syscalls:sys_enter_mmap": 30,
                  "7,vm_timed,tracepoint:syscalls:sys_exit_mmap": 20},
       "@bytes": {"7,malloc,uprobe:/lib/libc.so.6:malloc": 64_000,
                  "7,malloc,uprobe:/lib/libc.so.6:realloc": 640,
                  "7,vm,tracepoint:syscalls:sys_enter_mmap": 3 << 20},
       "@time": {"7,malloc,uretprobe:/lib/libc.so.6:malloc": 800_000,
                 "7,malloc,uretprobe:/lib/libc.so.6:realloc": 5_000,
                 "7,vm,tracepoint:syscalls:sys_exit_mmap": 200_000},
       "@ncalls": {"7,vm,page_fault_user": 100},
       "@ntime": {"7,malloc,off-CPU": 123_456, "7,vm,off-CPU": 7_000_000},
       "@grow_vm": {"7,0": 1 << 20, "7,3": 2 << 20}}


def test_malloc_counts_probed_calls_and_free_is_estimated_apart():
    s = build(MEM)
    m, fe = s["categories"]["malloc"], s["categories"]["free_estimated"]
    f = m["functions"]
    assert f["malloc"]["time_ns"] == pytest.approx(800_000 - 1000 * 600)          # 200,000
    # realloc: 5,000 - 10 x 600 = -1,000 -> 0, floored, and 0 <= time <= 5,000 (no window CI)
    assert f["realloc"]["floored"] and f["realloc"]["time_ns"] == 0
    assert f["realloc"]["time_ci95_ns"] == [0, 5_000]
    assert "free" not in f
    # only the probed calls: 1,000 malloc + 10 realloc (the frees are not added)
    assert m["calls"] == 1010 and m["calls_method"] == "probed" and m["bytes"] == 64_640
    assert m["time_ns"] == pytest.approx(200_000)                                  # 200,000 + 0
    assert m["time_raw_ns"] == 805_000 and m["correction_ns"] == pytest.approx(606_000)
    assert m["floored"] and m["correction_dominates"]                # 606,000 > 805,000 / 2
    assert m["time_ci95_ns"] == pytest.approx([200_000, 205_000])   # malloc exact + [0, 5,000]
    assert m["off_cpu_ns"] == 123_456 and "off-CPU" not in f
    # free is not probed: one per block allocated (realloc does not add a block)
    assert fe["calls"] == 1000 and fe["calls_method"] == "estimated"
    assert fe["method"] == "estimated" and fe["time_ns"] == pytest.approx(1000 * 14.0)
    assert "not probed" in fe["basis"]
    vm = s["categories"]["vm"]
    # only the 20 calls that were timed (not nested in an allocator call) are corrected
    assert vm["syscalls"]["mmap"]["time_ns"] == pytest.approx(200_000 - 20 * 300)
    assert vm["page_faults"] == 100 and vm["page_fault_time_ns"] == pytest.approx(140_000)
    assert vm["time_ns"] == pytest.approx(200_000 - 20 * 300 + 140_000)           # 334,000
    assert vm["syscalls_time_ns"] == pytest.approx(194_000)
    # mem.bt already left the time switched out inside the syscalls out of @time: kept beside
    assert vm["off_cpu_ns"] == 7_000_000 and "off-CPU" not in vm["syscalls"]
    assert vm["calls"] == 30
    # the memory resource names both allocator figures: 200,000 + 14,000 + 334,000
    assert s["totals"]["guaranteed_by_resource"]["mem"] == pytest.approx(548_000)
    assert [t["category"] for t in s["totals"]["guaranteed_overhead_terms"]["mem"]] == \
        ["malloc", "free_estimated", "vm"]
    # the probe effect counts the 1,010 probed allocator pairs, not the estimated frees
    assert s["totals"]["probe_hits"]["mem:malloc_pair"] == 1010
    assert s["by_pid"]["7"]["memory_growth"]["vm_bytes"] == [[0.0, 1 << 20], [0.75, 2 << 20]]


def test_count_mode_costs_every_allocator_call():
    s = build(MEM, mode="count")
    m, fe = s["categories"]["malloc"], s["categories"]["free_estimated"]
    assert m["method"] == "estimated" and m["calls"] == 1010
    assert m["time_ns"] == pytest.approx(1010 * 20.0)                 # 20,200
    assert fe["time_ns"] == pytest.approx(1000 * 14.0)                # 14,000, apart


def test_uncalibrated_free_and_page_faults_are_unknown():
    s = build(MEM, costs={})
    fe, vm = s["categories"]["free_estimated"], s["categories"]["vm"]
    assert fe["calls"] == 1000 and fe["time_ns"] is None
    assert vm["page_fault_time_ns"] is None and vm["time_ns"] is None
    assert vm["syscalls_time_ns"] == pytest.approx(194_000)         # 200,000 - 20 x 300
    assert s["totals"]["guaranteed_by_resource"]["mem"] == pytest.approx(200_000)
    assert s["totals"]["guaranteed_overhead_unknown"] == ["free_estimated", "vm"]
    assert any("free_estimated" in w for w in s["warnings"])


def test_thread_and_memory_figures_add_up_over_processes():
    # pid 7 as above, pid 8 a copy whose malloc correction floors (10 calls in 1,000 ns)
    maps = copy.deepcopy(MEM)
    for k, v in THREADS.items():
        maps.setdefault(k, {}).update(v)
    maps["@calls"]["8,malloc,uprobe:/lib/libc.so.6:malloc"] = 10
    maps["@bytes"]["8,malloc,uprobe:/lib/libc.so.6:malloc"] = 640
    maps["@time"]["8,malloc,uretprobe:/lib/libc.so.6:malloc"] = 1_000
    maps["@ncalls"]["8,sync,futex wait"] = 2
    maps["@ntime"]["8,sync,futex wait"] = 5_000
    s = build(maps)
    m8 = s["by_pid"]["8"]["categories"]["malloc"]
    assert m8["time_ns"] == 0 and m8["floored"]                    # 1,000 - 10 x 600 < 0
    m = s["categories"]["malloc"]
    assert m["calls"] == 1020 and m["time_ns"] == pytest.approx(200_000)   # 200,000 + 0
    assert m["floored"]
    assert s["categories"]["free_estimated"]["calls"] == 1010      # 1,000 + 10
    assert s["categories"]["sync"]["time_ns"] == pytest.approx(9_070_000 + 4_400)  # + 5,000 - 600
    for name, cat in s["categories"].items():
        for field in ("calls", "bytes", "time_ns"):
            vals = [bp["categories"][name].get(field) for bp in s["by_pid"].values()
                    if name in bp["categories"]]
            if cat.get(field) is not None:
                assert cat[field] == pytest.approx(sum(v or 0 for v in vals)), (name, field)
    for r, v in s["totals"]["guaranteed_by_resource"].items():
        assert v == pytest.approx(sum(bp["guaranteed_by_resource"].get(r, 0)
                                      for bp in s["by_pid"].values())), r


# ---------------------------------------------------------------- recorded fixture (parsing)

def test_recorded_threads_fixture_parses_the_threads_it_ran():
    rec = Recording("noop-threads-mem")
    built = rec.rebuild(probes=rec.summary["probe_costs"], mode="time")
    tc = built["categories"]["thread_create"]
    java = tc["layers"]["java"]
    # 50 threads x (1 warm-up + 2) rounds, each created by JVM_StartThread
    assert java["threads"] >= 150 and tc["clone_calls"] >= 150
    assert built["categories"]["thread_jvm"]["calls"] >= 150
    assert tc["time_raw_ns"] > 0 and java["libc_ns"] is not None
    assert built["categories"]["malloc"]["calls"] > 0
    # the frees are estimated from the probed allocations, never counted with them
    fe = built["categories"]["free_estimated"]
    assert fe["calls"] <= built["categories"]["malloc"]["calls"]
    assert fe["calls"] == sum(f["calls"] for k, f in
                              built["categories"]["malloc"]["functions"].items()
                              if k != "realloc")


def test_a_link_category_with_only_failed_calls_claims_no_correction():
    s = build({"@ncalls": {"7,link,failed": 2}})
    link = s["categories"]["link"]
    assert link["failed_calls"] == 2 and link["calls"] == 0 and link["time_ns"] == 0
    assert link["corrected"] is None        # nothing was corrected, nor left uncorrected
    # the only warning: the 2 probe hits' cost is not in this test's calibration
    assert [w for w in s["warnings"] if "links:syscall_pair: 2 hits" not in w] == []
