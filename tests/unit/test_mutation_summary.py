"""analyzers/summary.py: the edges of the guaranteed-overhead summary that the other tests left
open (docs/mutation.md). Expected values by hand."""
import pytest

from jvmos.analyzers import summary as summ
from jvmos.analyzers.records import Records

WRITE = "tracepoint:syscalls:sys_exit_write"
READ = "tracepoint:syscalls:sys_exit_read"
PROBES = {"io_syscall_window": {"mean_ns": 5.0}, "io_syscall_hit": {"mean_ns": 20.0}}


def _build(maps, probes=PROBES, costs=None):
    return summ.build(Records(maps=maps), wall_ns=1000, status="complete", addresses={},
                      costs=costs or {}, jvms_by_pid={}, probes=probes)


def test_a_time_of_zero_is_kept_not_dropped():
    dropped = []
    fns = summ._per_pid(Records(maps={"calls": {("1", "io_syscall", WRITE): 2},
                                      "time": {("1", "io_syscall", WRITE): 0}}), {}, dropped)
    assert dropped == []
    assert fns["1"]["io_syscall"]["write"] == {"calls": 2, "bytes": 0, "time_ns": 0}


def test_a_negative_time_is_dropped_and_the_next_entries_are_read():
    dropped = []
    fns = summ._per_pid(Records(maps={"time": {("1", "io_syscall", WRITE): -5,
                                               ("1", "io_syscall", READ): 7}}), {}, dropped)
    assert dropped == [("time", "1", "io_syscall", "write", -5)]
    assert fns["1"]["io_syscall"]["read"]["time_ns"] == 7
    assert "time_ns" not in fns["1"]["io_syscall"]["write"] or \
        fns["1"]["io_syscall"]["write"]["time_ns"] == 0


def test_missed_notes():
    assert summ.missed_note("usdt_args", 1234) == (
        "1,234 JNI copy call(s) counted through a USDT probe whose length or buffer argument "
        "could not be read: counted, their bytes not")
    assert summ.missed_note("futex_offcpu_exceeds_span", 2).startswith(
        "2 futex span(s) whose off-CPU time came out longer than the span")
    assert summ.missed_note("syscall_no_entry", 3).startswith(
        "3 syscall no entry event(s): a call was in progress")


def test_a_process_seen_only_off_the_cpu_is_a_process():
    s = _build({"offcpu_n": {("5", "1", "blocked"): 2},
                "offcpu_ns": {("5", "1", "blocked"): 100}})
    assert list(s["by_pid"]) == ["5"]
    assert s["totals"]["processes"] == 1


def test_nio_activity_without_confirmations_confirms_none():
    s = _build({"calls": {("1", "nio_native", "uprobe:/j/libnio.so:5"): 3}})
    assert s["categories"]["nio_copy"]["confirmed_calls"] == 0
    s = _build({"calls": {("1", "nio_native", "uprobe:/j/libnio.so:5"): 3},
                "nio_confirmed": {("1",): 2}})
    assert s["categories"]["nio_copy"]["confirmed_calls"] == 2


def test_jvm_thread_starts_without_an_inclusive_time_have_none():
    s = _build({"ncalls": {("1", "thread_jvm", "start"): 2}})
    assert s["categories"]["thread_jvm"]["start_inclusive_raw_ns"] == 0
    s = _build({"ncalls": {("1", "thread_jvm", "start"): 2}, "thr_incl": {("1",): 70}})
    assert s["categories"]["thread_jvm"]["start_inclusive_raw_ns"] == 70


def test_spans_are_split_by_the_off_cpu_section_in_a_recording():
    # 4 writes timed 1000 ns, corrected by 4 x 5 ns: 980; write (nr 1, key 2) blocked 300 ns
    s = _build({"calls": {("1", "io_syscall", WRITE): 4}, "time": {("1", "io_syscall", WRITE): 1000},
                "offcpu_n": {("1", "2", "blocked"): 1}, "offcpu_ns": {("1", "2", "blocked"): 300}})
    c = s["categories"]["io_syscall"]
    assert c["time_ns"] == pytest.approx(980.0)
    assert c["blocked_ns"] == 300
    assert c["on_cpu_ns"] == pytest.approx(680.0)


def test_uncalibrated_times_are_named_in_a_warning():
    maps = {"calls": {("1", "io_syscall", WRITE): 4}, "time": {("1", "io_syscall", WRITE): 1000}}
    s = _build(maps, probes={"jni_copy_time_window": {"mean_ns": 1.0}})
    assert s["categories"]["io_syscall"]["time_ns"] is None
    assert any(w.startswith("probe costs not calibrated (jvmos calibrate --probes): the "
                            "corrected times of io_syscall are unknown") for w in s["warnings"])
    s = _build(maps)
    assert s["categories"]["io_syscall"]["time_ns"] is not None
    assert not any(w.startswith("probe costs not calibrated") for w in s["warnings"])


def _span(t):
    return {"time_ns": t, "syscalls": {"write": {"calls": 1}}}


def test_split_spans_blocked_and_preempted():
    off = {"by_syscall": {"write": {"blocked_ns": 60, "preempted_ns": 30},
                          "futex": {"preempted_ns": 5}}}
    cats = {"io_syscall": _span(100), "sync": {"time_ns": 50}}
    summ.split_spans(cats, off)
    assert cats["io_syscall"]["blocked_ns"] == 60
    assert cats["io_syscall"]["preempted_in_it_ns"] == 30
    assert cats["io_syscall"]["on_cpu_ns"] == 10
    assert "on_cpu_floored" not in cats["io_syscall"]
    # futex has no blocked time: 0, not a default of anything else
    assert cats["sync"]["blocked_ns"] == 0
    assert cats["sync"]["on_cpu_ns"] == 45


def test_split_spans_floors_below_zero_only():
    off = {"by_syscall": {"write": {"blocked_ns": 60, "preempted_ns": 50}}}
    cats = {"io_syscall": _span(110)}                     # 110 - 60 - 50 = 0: not floored
    summ.split_spans(cats, off)
    assert cats["io_syscall"]["on_cpu_ns"] == 0
    assert "on_cpu_floored" not in cats["io_syscall"]
    cats = {"io_syscall": _span(100)}                     # 100 - 60 - 50 = -10: floored
    summ.split_spans(cats, off)
    assert cats["io_syscall"]["on_cpu_ns"] == 0
    assert cats["io_syscall"]["on_cpu_floored"] is True


def test_split_spans_skips_an_unknown_span_and_goes_on():
    off = {"by_syscall": {"futex": {"blocked_ns": 20}}}
    cats = {"io_syscall": {"time_ns": None, "syscalls": {"write": {}}}, "sync": {"time_ns": 50}}
    summ.split_spans(cats, off)
    assert "blocked_ns" not in cats["io_syscall"]
    assert cats["sync"]["blocked_ns"] == 20
    assert cats["sync"]["on_cpu_ns"] == 30
    cats = {"sync": {"time_ns": 50}}                      # no io_syscall at all
    summ.split_spans(cats, off)
    assert cats["sync"]["on_cpu_ns"] == 30


def test_merge_figures_shares_the_window_and_takes_the_first_of_other_values():
    out = summ.merge_figures([{"probe_window_ns": 10.0, "ci": [1, 2], "n": 1},
                              {"probe_window_ns": 10.0, "ci": [3, 4], "n": 2}])
    assert out == {"probe_window_ns": 10.0, "ci": [1, 2], "n": 3}


def test_merge_figures_recombines_only_corrected_figures():
    out = summ.merge_figures([{"time_raw_ns": 10, "time_ns": 10}, {"time_raw_ns": 5, "time_ns": 5}])
    assert out == {"time_raw_ns": 15, "time_ns": 15}


def test_a_time_unknown_for_a_negative_sum_is_not_called_uncalibrated():
    # the probes are calibrated; the time is unknown because its sum came out negative
    s = _build({"calls": {("1", "io_syscall", WRITE): 2}, "time": {("1", "io_syscall", WRITE): -5}})
    assert s["categories"]["io_syscall"]["time_ns"] is None
    assert not any(w.startswith("probe costs not calibrated") for w in s["warnings"])
