import csv
import io

import pytest

from jvmos.analyzers.tables import Table, category_table, fmt_bytes, fmt_count, fmt_ns



@pytest.mark.parametrize("ns,text", [
    (None, "—"), (0, "0 ns"), (7, "7 ns"), (999, "999 ns"), (999.4, "999 ns"),
    (1000, "1 µs"), (1500, "1.5 µs"), (12_345, "12.3 µs"), (123_456, "123.5 µs"),
    (1_000_000, "1 ms"), (72_982_686, "73 ms"), (351_615_870, "351.6 ms"),
    (2_500_000_000, "2.5 s"), (150e9, "150.0 s"), (-1500, "-1.5 µs"), ("2000", "2 µs"),
])
def test_fmt_ns(ns, text):
    assert fmt_ns(ns) == text


@pytest.mark.parametrize("n,text", [
    (None, "—"), (0, "0 B"), (10, "10 B"), (999, "999 B"), (999.9, "999 B"), (1000, "1 kB"),
    (45_161, "45.2 kB"), (1_025_876, "1.03 MB"), (1_000_000, "1 MB"), (3.2e9, "3.2 GB"),
])
def test_fmt_bytes(n, text):
    assert fmt_bytes(n) == text


@pytest.mark.parametrize("n", [999_600, 999_600_000, 2e12])
def test_fmt_bytes_never_uses_exponent_notation(n):
    assert "e+" not in fmt_bytes(n)


@pytest.mark.parametrize("n,text", [(None, "—"), (0, "0"), (999, "999"), (1000, "1,000"),
                                    (1_234_567, "1,234,567"), (12.9, "12")])
def test_fmt_count(n, text):
    assert fmt_count(n) == text


def make_table():
    t = Table("Things", ["name", "calls", "time"])
    t.add(["a", fmt_count(12345), fmt_ns(1500)], ["a", 12345, 1500.25])
    t.add(["b", "—", "—"], ["b", None, None])
    t.add(["c", 3, 4.5])                     # no raw row: the formatted values are the raw ones
    return t


def test_markdown():
    assert make_table().markdown() == (
        "### Things\n"
        "\n"
        "| name | calls | time |\n"
        "|---|---|---|\n"
        "| a | 12,345 | 1.5 µs |\n"
        "| b | — | — |\n"
        "| c | 3 | 4.5 |\n")


def test_csv_keeps_raw_numbers():
    rows = list(csv.reader(io.StringIO(make_table().csv())))
    assert rows == [["name", "calls", "time"], ["a", "12345", "1500.25"], ["b", "", ""],
                    ["c", "3", "4.5"]]


def test_csv_quotes_commas():
    t = Table("t", ["x,y", "z"])
    t.add(["1,2", "3"])
    assert t.csv().splitlines()[0] == '"x,y",z'
    assert list(csv.reader(io.StringIO(t.csv())))[1] == ["1,2", "3"]


def test_empty_table():
    t = Table("Empty", ["a"])
    assert t.markdown() == "### Empty\n\n| a |\n|---|\n"
    assert t.csv().strip() == "a"


def _categories_of_hand_built_raw():
    """A summary built from hand-written raw maps: a floored syscall, probed allocator calls
    with estimated frees, a census without time, a JNI copy whose window is not calibrated."""
    from jvmos.analyzers import summary as summ
    from jvmos.analyzers.bpftrace import parse_lines
    from _unit_helpers import map_lines
    maps = {"@calls": {"7,io_syscall,tracepoint:syscalls:sys_exit_write": 10,
                       "7,malloc,uprobe:/libc.so.6:malloc": 100},
            "@bytes": {"7,io_syscall,tracepoint:syscalls:sys_exit_write": 1000,
                       "7,malloc,uprobe:/libc.so.6:malloc": 6400},
            "@time": {"7,io_syscall,tracepoint:syscalls:sys_exit_write": 2_000,
                      "7,malloc,uretprobe:/libc.so.6:malloc": 80_000}}
    probes = {"io_syscall_window": {"mean_ns": 300.0}, "io_syscall_hit": {"mean_ns": 900.0},
              "jni_copy_time_window": {"mean_ns": 600.0}, "jni_copy_time_hit": {"mean_ns": 2500.0}}
    costs = {"free_call": {"ns_per_call": 14.0}}
    return summ.build(parse_lines(map_lines(maps)), wall_ns=1_000_000, status="complete",
                      addresses={}, costs=costs, jvms_by_pid={}, probes=probes)


def test_category_table_says_what_is_counted_estimated_floored_unknown():
    s = _categories_of_hand_built_raw()
    t = category_table(s, "Cats")
    assert t.title == "Cats"
    rows = {r[0]: r for r in t.rows}
    raw = {r[0]: dict(zip(t.headers, r)) for r in t.raw_rows}
    # write: 2,000 - 10 x 300 < 0 -> floored at 0, shown with its interval [0, raw]
    assert rows["io_syscall"][3] == "0 ns (floored; 95%: 0 ns to 2 µs)"
    assert rows["io_syscall"][4] == "span (blocking included)"
    assert rows["io_syscall"][5] == "not split (no threads layer)"
    assert rows["io_syscall"][7] == "2 µs" and "floored" in rows["io_syscall"][8]
    # malloc: 100 probed calls, 80,000 - 100 x 600 = 20,000
    assert rows["malloc"][1:4] == ["100", "6.4 kB", "20 µs"]
    assert rows["malloc"][4] == "on-CPU"
    assert rows["malloc"][8].startswith("measured (calls probed), corrected")
    assert raw["malloc"]["time"] == 20_000 and raw["malloc"]["measured raw"] == 80_000
    # the frees: 100 estimated, 100 x 14 = 1,400 ns
    assert rows["free_estimated"][1:4] == ["100", "—", "1.4 µs"]
    assert rows["free_estimated"][8] == "estimated (calls estimated, not probed)"
    # kernel copy without its calibration: unknown, not 0
    assert rows["kernel_copy"][3] == "unknown"
    rows_csv = list(csv.reader(io.StringIO(t.csv())))
    assert rows_csv[0] == ["category", "calls", "bytes", "time", "time kind",
                           "off-CPU in it (blocked, preempted)", "on-CPU (est.)",
                           "measured raw", "method"]
    assert ["free_estimated", "100", "", "1400.0", "on-CPU", "", "", "",
            "estimated (calls estimated, not probed)"] in rows_csv


def test_category_table_names_an_uncorrected_time():
    t = category_table({"categories": {"io_syscall": {
        "calls": 3, "bytes": 30, "time_ns": None, "time_raw_ns": 1234, "corrected": False,
        "method": "measured"}}})
    assert t.rows[0] == ["io_syscall", "3", "30 B", "unknown", "span (blocking included)",
                         "not split (no threads layer)", "", "1.23 µs",
                         "measured, not corrected: probe costs not calibrated"]


def test_category_table_of_an_empty_summary():
    t = category_table({})
    assert t.rows == [] and t.title == "Categories"


def test_table6_keeps_probed_allocator_calls_and_estimated_frees_apart():
    from jvmos.experiments.memory import table6
    r = {"exec_ns": 2e9, "libc_ns": 82.5e6, "kernel_ns": 653e6, "overhead_pct": 36.8,
         "malloc_calls": 181_664, "free_estimated_calls": 181_424, "malloc_bytes": 1e9,
         "page_faults": 1000}
    t = table6({"suite": "s", "size": "default", "iterations": 3, "jdk_label": "JDK 17",
                "benchmarks": {"jython": r}, "average_overhead_pct": 36.8,
                "average_overhead_pct_without_outliers": None, "outliers": []})
    row = dict(zip(t.headers, t.rows[0]))
    assert row["allocator calls (probed)"] == "181,664"
    assert row["frees (estimated)"] == "181,424"
    assert all(len(x) == len(t.headers) for x in t.rows + t.raw_rows)


def test_a_span_is_split_into_blocked_and_on_cpu_where_the_threads_layer_saw_it():
    """A real chat server showed io_syscall 12,611 s "measured": its threads' blocked time,
    summed. With the off-CPU section by syscall, the span is split, the on-CPU part labelled
    an estimate; without it nothing is split."""
    from jvmos.analyzers.summary import split_spans
    cats = {"io_syscall": {"time_ns": 10_000, "syscalls": {"read": {}, "send": {}}},
            "sync": {"time_ns": 5_000}, "malloc": {"time_ns": 700}}
    off = {"by_syscall": {"read": {"blocked_ns": 6_000, "preempted_ns": 500},
                          "sendto": {"blocked_ns": 1_000},
                          "futex": {"blocked_ns": 9_000}, "poll": {"blocked_ns": 50_000}}}
    split_spans(cats, off)
    io_ = cats["io_syscall"]
    assert io_["blocked_ns"] == 7_000 and io_["preempted_in_it_ns"] == 500
    assert io_["on_cpu_ns"] == 2_500 and "on_cpu_floored" not in io_
    # more off-CPU than the span (the two are measured by different probes): floored at 0
    assert cats["sync"]["blocked_ns"] == 9_000 and cats["sync"]["on_cpu_ns"] == 0
    assert cats["sync"]["on_cpu_floored"]
    assert "blocked_ns" not in cats["malloc"]
    t = category_table({"categories": cats})
    rows = {r[0]: r for r in t.rows}
    assert rows["io_syscall"][4:7] == ["span (blocking included)", "7.5 µs", "2.5 µs"]
    assert rows["sync"][6] == "0 ns (floored)"
    none = {"io_syscall": {"time_ns": 10_000}}
    split_spans(none, None)
    assert "blocked_ns" not in none["io_syscall"]
