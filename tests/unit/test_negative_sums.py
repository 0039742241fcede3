"""bpftrace prints a sum() of signed differences as an unsigned 64-bit number: a span whose
bookkeeping went wrong (an off-CPU interval counted twice, a return without its entry's
state) makes the total negative, printed as ~1.8e19. Seen in a real recording (results/memory,
24 Nov, before mem.bt reset its off-CPU sum at each span's start): antlr's malloc time
18,446,744,073,517,741,011 ns, i.e. -191,810,605 ns, shown in Table 6 as 18,446,744,073,447 ms.
Such a figure is a negative number, never a time: it is left out and said."""
import json

import pytest

from jvmos.analyzers import summary as summ
from jvmos.analyzers.bpftrace import parse_lines

WRAPPED = 18446744073517741011          # the antlr value above
PROBE = "uretprobe:/lib/libc.so.6:malloc"


def _lines(time_val):
    maps = {"@calls": {f"7,malloc,{PROBE.replace('uretprobe', 'uprobe')}": 10},
            "@time": {f"7,malloc,{PROBE}": time_val}}
    return [json.dumps({"type": "map", "data": {k: v}}) for k, v in maps.items()]


def test_an_unsigned_wrapped_sum_is_read_back_as_the_negative_number_it_is():
    raw = parse_lines(_lines(WRAPPED))
    assert raw.negative == [("time", f"7,malloc,{PROBE}", -191810605)]
    assert raw.maps["time"][("7", "malloc", PROBE)] == -191810605       # 2^64 - WRAPPED, negated


PROBES = {"jni_copy_time_window": {"mean_ns": 100.0}, "jni_copy_time_hit": {"mean_ns": 900.0},
          "io_syscall_window": {"mean_ns": 50.0}, "io_syscall_hit": {"mean_ns": 400.0},
          "uprobe": {"mean_ns": 300.0}, "jni_copy_count_hit": {"mean_ns": 500.0}}


@pytest.mark.parametrize("probes", [None, PROBES], ids=["uncalibrated", "calibrated"])
def test_a_negative_time_makes_the_category_time_unknown_and_is_said(probes):
    s = summ.build(parse_lines(_lines(WRAPPED)), wall_ns=10**9, status="complete",
                   addresses={}, costs={}, jvms_by_pid={}, probes=probes)
    m = s["categories"]["malloc"]
    assert m["calls"] == 10                       # the calls stand
    assert m["time_ns"] is None                   # never 0, never a floored "measured" 0
    assert "negative" in s["by_pid"]["7"]["categories"]["malloc"]["time_unknown_reason"]
    assert s["totals"]["guaranteed_overhead_ns"] is None       # a sum with an unknown term
    assert "malloc" in s["totals"]["guaranteed_overhead_unknown"]
    assert s["totals"]["negative_sums_dropped"] == [
        {"map": "time", "key": "7,malloc,malloc", "value": -191810605}]
    assert any("-191.811 ms, a negative figure" in w and "unknown (null)" in w
               for w in s["warnings"])


def test_an_ordinary_sum_is_untouched():
    raw = parse_lines(_lines(5_000_000))
    assert raw.negative == []
    s = summ.build(raw, wall_ns=10**9, status="complete", addresses={}, costs={},
                   jvms_by_pid={})
    assert "negative_sums_dropped" not in s["totals"]
    assert s["categories"]["malloc"]["time_raw_ns"] == 5_000_000
