"""bpftrace's probe costs as an older platform file holds them, read for a bpftrace recording
(scripts/reanalyse.py): where its JNI copy probes were HotSpot's USDT probes, the figures of
that JDK's USDT probes apply, and without them the JNI copy costs are unknown, never the
symbol pair's."""
from types import SimpleNamespace

from jvmos.analyzers.correction import validate_probes
from jvmos.probecost import probes_for

HOME = "/jdk17"
SYMBOL = {"jni_copy_time_hit": {"mean_ns": 1500.0}, "jni_copy_time_window": {"mean_ns": 700.0},
          "jni_copy_count_hit": {"mean_ns": 800.0}, "io_syscall_hit": {"mean_ns": 900.0}}
USDT = {"usdt_jni_copy_time_hit": {"mean_ns": 1900.0},
        "usdt_jni_copy_time_window": {"mean_ns": 600.0},
        "usdt_jni_copy_count_hit": {"mean_ns": 950.0}}
WITH_USDT = SimpleNamespace(kinds={"usdt:/jdk17/lib/server/libjvm.so:hotspot_jni:"
                                   "GetByteArrayRegion__entry": "usdt"})
SYMBOLS_ONLY = SimpleNamespace(kinds={"uprobe:/jdk17/lib/server/libjvm.so:"
                                      "jni_GetByteArrayRegion": "uprobe"})


def test_a_usdt_recording_takes_that_jdks_usdt_figures():
    got, warnings = probes_for(dict(SYMBOL, usdt={HOME: USDT}), WITH_USDT, [HOME])
    assert warnings == []
    assert got["jni_copy_time_hit"]["mean_ns"] == 1900.0
    assert got["jni_copy_time_window"]["mean_ns"] == 600.0
    assert got["jni_copy_count_hit"]["mean_ns"] == 950.0
    assert got["io_syscall_hit"] == SYMBOL["io_syscall_hit"]
    # the symbol pair's figures stay, under their own name, for the symbol uprobes
    assert got["symbol_pair_time_hit"] == SYMBOL["jni_copy_time_hit"]


def test_without_that_jdks_usdt_figures_the_jni_costs_are_unknown():
    got, warnings = probes_for(SYMBOL, WITH_USDT, [HOME])
    assert not {"jni_copy_time_hit", "jni_copy_time_window", "jni_copy_count_hit"} & set(got)
    assert got["usdt_unknown"] and len(warnings) == 1 and HOME in warnings[0]
    validate_probes(got)        # unknown is not a calibration error


def test_a_symbol_recording_keeps_the_figures_and_nothing_is_none():
    got, warnings = probes_for(SYMBOL, SYMBOLS_ONLY, [HOME])
    assert warnings == [] and {k: got[k] for k in SYMBOL} == SYMBOL
    assert probes_for(None, SYMBOLS_ONLY, [HOME]) == (None, [])
