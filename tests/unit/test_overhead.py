"""The probe effect: every probe kind's hits x its calibrated cost per hit, worked out by hand."""
import json

import pytest

from jvmos import enginecost
from jvmos.analyzers import bpftrace, overhead
from jvmos.experiments.common import probe_effect, probe_effect_cells, probe_effect_median


def _raw(maps):
    return bpftrace.parse_lines([json.dumps({"type": "map", "data": {k: v}})
                                 for k, v in maps.items()])


def _p(ns, lo=None, hi=None):
    return {"mean_ns": ns, "ci95_ns": [lo if lo is not None else ns - 10,
                                        hi if hi is not None else ns + 10]}


# a recording of two processes with the io, threads, links and mem layers: every kind fires
MAPS = {
    "@calls": {"7,jni_copy,uprobe:/j/libjvm.so:100": 10,
               "7,io_syscall,tracepoint:syscalls:sys_exit_write": 20,
               "7,nio_native,uprobe:/j/libnio.so:5": 3,
               "7,unsafe_copy_out,uprobe:/j/libjvm.so:7": 2,
               "7,link,tracepoint:syscalls:sys_exit_accept4": 4,
               "7,file,tracepoint:syscalls:sys_exit_openat": 5,
               "7,thread_create,tracepoint:syscalls:sys_enter_clone3": 6,
               "7,malloc,uprobe:/lib/libc.so.6:11": 100,
               "7,vm,tracepoint:syscalls:sys_enter_mmap": 8,
               # counted apart from the vm calls (the timed subset): never a hit of its own
               "7,vm_timed,tracepoint:syscalls:sys_exit_mmap": 8,
               "9,io_syscall,tracepoint:syscalls:sys_exit_read": 1},
    "@ncalls": {"7,link,failed": 1,
                "7,sync,futex wait": 30, "7,sync,futex wake": 12,
                "7,thread_jvm,start": 2,
                "7,thread_create,pthread_create java": 2,
                "7,thread_create,pthread_create internal": 4,
                "7,thread_create,libc start java": 2,      # not a probe hit: a span count
                "7,vm,page_fault_user": 500},
    "@csw": {"7,70,voluntary": 40, "7,71,involuntary": 10, "9,90,voluntary": 5},
    "@hits": {"7,links:sched_switch": 50, "7,mem:sched_switch": 50, "9,links:sched_switch": 5,
              "9,mem:sched_switch": 5,
              "7,common:task_newtask": 6, "7,common:sched_process_exit": 7,
              "7,common:sched_process_exec": 1, "9,common:sched_process_exec": 1,
              "7,threads:uprobe": 9, "7,threads:uretprobe": 11,
              "7,threads:sched_wakeup_new": 6, "7,threads:sys_enter_exit": 5,
              "7,threads:span_syscall": 70},
}


def test_every_kind_is_counted_from_the_maps():
    h = overhead.hits_by_pid(_raw(MAPS))
    p7, p9 = h["7"], h["9"]
    assert p7["io:jni_copy"] == 10 and p7["io:syscall_pair"] == 20
    assert p7["io:uprobe"] == 3 + 2                      # nio natives + Unsafe_CopyMemory0
    assert p7["links:syscall_pair"] == 4 + 5 + 1         # accept4 + openat + one failed
    assert p7["threads:sched_switch"] == 40 + 10         # every @csw switch of pid 7
    assert p7["threads:futex_pair"] == 30 + 12
    assert p7["threads:clone_count"] == 2 * 6            # two extra blocks per clone
    assert p7["threads:uprobe"] == 2 + 2 + 4 + 9         # JVM_StartThread, pthread_create x2, @hits
    assert p7["threads:uretprobe"] == 11
    assert p7["mem:malloc_pair"] == 100 and p7["mem:vm_syscall_pair"] == 8
    assert p7["mem:page_fault"] == 500
    # the exec also runs mem.bt's block: two blocks per exec when mem is loaded
    assert p7["common:sched_process_exec"] == 2 and p9["common:sched_process_exec"] == 2
    assert p9 == {"io:syscall_pair": 1, "threads:sched_switch": 5, "links:sched_switch": 5,
                  "mem:sched_switch": 5, "common:sched_process_exec": 2}
    assert set(p7) <= set(overhead.KINDS)


# every cost key calibrated, each a round number so that the sum can be done by hand
PROBES = {"jni_copy_time_hit": _p(2500), "jni_copy_count_hit": _p(1200),
          "io_syscall_hit": _p(900), "uprobe": _p(1300), "uprobe_pair": _p(2000),
          "tracepoint": _p(400), "link_syscall_hit": _p(800),
          "sched_switch_links_hit": _p(150), "sched_switch_threads_hit": _p(300),
          "sched_switch_mem_hit": _p(200), "futex_threads_hit": _p(700),
          "span_syscall_threads_hit": _p(500), "thread_common_hit": _p(600),
          "malloc_mem_time_hit": _p(2200), "malloc_mem_count_hit": _p(1100),
          "vm_syscall_mem_hit": _p(650), "page_fault_mem_hit": _p(250)}


def test_estimate_is_hits_times_cost_of_every_kind():
    o = overhead.probe_overhead(_raw(MAPS), PROBES, "time")
    hits = o["probe_hits"]
    assert hits["threads:sched_switch"] == 55 and hits["links:sched_switch"] == 55
    expected = (10 * 2500            # io:jni_copy, time mode
                + 21 * 900           # io:syscall_pair (20 of pid 7, 1 of pid 9)
                + 5 * 1300           # io:uprobe
                + 10 * 800           # links:syscall_pair
                + 55 * 150           # links:sched_switch
                + 55 * 300           # threads:sched_switch
                + 55 * 200           # mem:sched_switch
                + 42 * 700           # threads:futex_pair
                + 70 * 500           # threads:span_syscall
                + 12 * 400           # threads:clone_count (minimal tracepoint)
                + 17 * 1300          # threads:uprobe (minimal uprobe)
                + 11 * (2000 - 1300)  # threads:uretprobe (pair - uprobe)
                + 6 * 400 + 5 * 400  # sched_wakeup_new, sys_enter_exit
                + 6 * 600 + 7 * 600  # task_newtask, sched_process_exit
                + 4 * 400            # sched_process_exec: 2 blocks x 2 execs
                + 100 * 2200         # mem:malloc_pair, time mode
                + 8 * 650            # mem:vm_syscall_pair
                + 500 * 250)         # mem:page_fault
    assert expected == 557_150   # 43,900 + 6,500 + ... summed term by term
    assert o["probe_overhead_ns"] == pytest.approx(expected)
    assert o["probe_overhead_unknown_kinds"] == {}
    # every cost says where it came from
    costs = o["probe_cost_per_hit_ns"]
    assert costs["mem:page_fault"]["source"].startswith("measured")
    assert costs["threads:uprobe"]["source"].startswith("borrowed")
    assert costs["mem:page_fault"]["total_ns"] == 500 * 250
    # the 95% interval: each cost's bounds +-10 ns x every hit (the uretprobe's is +-20)
    n = sum(hits.values())
    assert o["probe_overhead_ci95_ns"] == pytest.approx([expected - 10 * n - 10 * 11,
                                                         expected + 10 * n + 10 * 11])
    # the pids add up to the total
    assert sum(o["probe_overhead_by_pid"].values()) == pytest.approx(expected)
    assert o["probe_overhead_by_pid"]["9"] == pytest.approx(900 + 5 * (300 + 150 + 200) + 2 * 400)


def test_count_mode_uses_the_entry_only_costs():
    maps = {"@calls": {"7,jni_copy,uprobe:/j/libjvm.so:100": 10,
                       "7,malloc,uprobe:/lib/libc.so.6:11": 100}}
    o = overhead.probe_overhead(_raw(maps), PROBES, "count")
    assert o["probe_overhead_ns"] == pytest.approx(10 * 1200 + 100 * 1100)


def test_an_uncalibrated_kind_is_unknown_never_zero():
    probes = {k: v for k, v in PROBES.items() if k != "page_fault_mem_hit"}
    o = overhead.probe_overhead(_raw(MAPS), probes, "time")
    assert o["probe_overhead_ns"] is None and o["probe_overhead_ci95_ns"] is None
    assert o["probe_overhead_unknown_kinds"] == {"mem:page_fault": 500}
    assert o["probe_cost_per_hit_ns"]["mem:page_fault"]["ns"] is None
    assert "page_fault" in o["probe_overhead_warning"]
    assert o["probe_overhead_known_ns"] == pytest.approx(557_150 - 500 * 250)
    # a calibration whose mean is not positive did not resolve the cost: unknown, and why
    probes = dict(PROBES, page_fault_mem_hit=_p(-40.0, -300.0, 220.0))
    o = overhead.probe_overhead(_raw(MAPS), probes, "time")
    assert o["probe_overhead_ns"] is None
    assert o["probe_overhead_unknown_kinds"] == {"mem:page_fault": 500}
    assert "did not resolve" in o["probe_cost_per_hit_ns"]["mem:page_fault"]["source"]
    # a kind jvmos does not know (a new probe in a script) is unknown too
    maps = {"@hits": {"7,usdt:something": 3}}
    o = overhead.probe_overhead(_raw(maps), PROBES, "time")
    assert o["probe_overhead_ns"] is None
    assert o["probe_overhead_unknown_kinds"] == {"usdt:something": 3}
    # no calibration at all
    o = overhead.probe_overhead(_raw(MAPS), None, "time")
    assert o["probe_overhead_ns"] is None and o["probe_hits"]["mem:page_fault"] == 500


def test_every_layer_cost_the_engine_calibrates_is_one_a_kind_uses():
    used = ({v[1] for v in overhead.KINDS.values()} | {v[2] for v in overhead.KINDS.values()}
            | set(enginecost.KIND_KEYS.values()))
    measured = {c.key for c in enginecost.layer_calibrations()}
    assert measured and measured <= used, measured - used


def test_probe_effect_columns():
    totals = {"probe_overhead_ns": 80e6, "probe_overhead_ci95_ns": [70e6, 90e6]}
    pe = probe_effect(totals, recorded_ns=1_100e6, bare_ns=1_000e6, observed="loop time")
    assert pe["observed_ns"] == pytest.approx(100e6)        # 1,100 - 1,000 ms
    assert pe["ratio"] == pytest.approx(0.8)                # 80 / 100
    assert pe["within_goal"]                                # |0.8 - 1| <= 0.25
    cells, vals = probe_effect_cells(pe)
    assert cells[0] == "80 ms [70 ms, 90 ms]" and cells[2] == "0.80 (within ±25%)"
    assert vals == [80e6, pytest.approx(100e6), pytest.approx(0.8)]
    pe = probe_effect(totals, 1_300e6, 1_000e6, "loop time")
    assert pe["ratio"] == pytest.approx(80 / 300) and not pe["within_goal"]
    # no bare run: said, not invented
    cells, vals = probe_effect_cells(probe_effect(totals, None, None, "no bare run"))
    assert cells[1] == "no bare run" and cells[2] == "—" and vals[1] is None
    # an unknown estimate shows the known part under its own name
    cells, _ = probe_effect_cells(probe_effect(
        {"probe_overhead_ns": None, "probe_overhead_known_ns": 5e6,
         "probe_overhead_unknown_kinds": {"mem:page_fault": 3}}, 2e6, 1e6, "loop"))
    assert cells[0].startswith("unknown: 1 probe kind") and "5 ms" in cells[0]
    # repeats: medians of estimates (3, 5, 4 ms -> 4) and of observed (6, 2, 5 ms -> 5)
    effs = [probe_effect({"probe_overhead_ns": e}, o, 0, "cpu") for e, o in
            ((3e6, 6e6), (5e6, 2e6), (4e6, 5e6))]
    m = probe_effect_median(effs)
    assert m["estimated_ns"] == 4e6 and m["observed_ns"] == 5e6
    assert m["ratio"] == pytest.approx(0.8)


def _threads_process_maps(timed: bool) -> dict:
    """The threads layer at --scope process: clones on glibc's __clone3 (an entry uprobe,
    with a return in --mode time, counted as threads:span_libc by its program), futex waits
    on glibc's functions, exits at sched_process_exit."""
    hits = {"7,threads:sched_process_exit": 5}
    if timed:
        hits["7,threads:span_libc"] = 20        # 6 clone returns + 14 stack syscalls
    return {"@calls": {"7,thread_create,uprobe:/lib/libc.so.6:__clone3": 6},
            "@ncalls": {"7,sync,futex wait": 30},
            "@hits": hits}


@pytest.mark.parametrize("timed", [True, False])
def test_the_threads_layer_at_process_scope_is_charged_as_libc_pairs(timed):
    h = overhead.hits_by_pid(_raw(_threads_process_maps(timed)), "process")["7"]
    assert h["threads:futex_libc"] == 30 and "threads:futex_pair" not in h
    assert "threads:clone_count" not in h and "threads:sys_enter_exit" not in h
    assert h["threads:sched_process_exit"] == 5
    if timed:
        # a clone's pair is charged once, by its return program's span_libc hit
        assert h["threads:span_libc"] == 20 and "threads:clone_libc" not in h
    else:
        assert h["threads:clone_libc"] == 6 and "threads:span_libc" not in h
    # the same maps read as --scope host would charge tracepoint pairs: the scope decides
    hh = overhead.hits_by_pid(_raw(_threads_process_maps(timed)), "host")["7"]
    assert hh["threads:futex_pair"] == 30 and hh["threads:clone_count"] == 12
