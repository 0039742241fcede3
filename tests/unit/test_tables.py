import csv
import io

import pytest

from jvmos.analyzers.tables import Table, category_table, fmt_bytes, fmt_count, fmt_ns

from _unit_helpers import recording


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


def test_category_table_of_a_recorded_summary():
    s = recording("socket-census").summary
    t = category_table(s, "Cats")
    assert t.title == "Cats"
    assert [r[0] for r in t.rows] == list(s["categories"])
    nio = dict(zip(t.headers, t.raw_rows[[r[0] for r in t.rows].index("nio_copy")]))
    assert nio == {"category": "nio_copy", "calls": 72432, "bytes": 1_000_000,
                   "time": s["categories"]["nio_copy"]["time_ns"], "measured raw": None,
                   "method": "estimated"}
    census = t.rows[[r[0] for r in t.rows].index("jni_call")]
    assert census == ["jni_call", "1,728", "—", "—", "—", "measured"]
    rows = list(csv.reader(io.StringIO(t.csv())))
    assert rows[0] == ["category", "calls", "bytes", "time", "measured raw", "method"]
    assert ["jni_call", "1728", "", "", "", "measured"] in rows


def test_category_table_of_an_empty_summary():
    t = category_table({})
    assert t.rows == [] and t.title == "Categories"
