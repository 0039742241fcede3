"""A probe's name back to the symbol it stands for (the analyzers key figures by it), for the
engine's names and for those of recordings made with the retired bpftrace scripts."""
import pytest

from jvmos.probelist import symbol_of_probe


@pytest.mark.parametrize("probe,expected", [
    ("uprobe:/x/libjvm.so:9136384", "jni_GetByteArrayRegion"),   # bpftrace: by address
    ("uretprobe:/x/libjvm.so:9136384", "jni_GetByteArrayRegion"),
    ("uprobe:/x/libjvm.so:12345", "12345"),                  # unknown address
    ("uprobe:/x/libjvm.so:jni_GetVersion", "jni_GetVersion"),  # the engine: by symbol
    ("uprobe:/y/libjvm.so:9136384", "9136384"),              # same address, other library
    ("tracepoint:syscalls:sys_exit_write", "write"),
    ("tracepoint:syscalls:sys_enter_pread64", "pread64"),
    ("tracepoint:sched:sched_process_exit", "sched_process_exit"),
    ("interval:s:1", "interval:s:1"),
    ("usdt:/x/libjvm.so:hotspot_jni:GetByteArrayRegion__entry", "jni_GetByteArrayRegion"),
    ("usdt:/x/libjvm.so:hotspot_jni:GetByteArrayRegion__return", "jni_GetByteArrayRegion"),
    ("usdt:/x/libjvm.so:hotspot:thread__start", "thread__start"),
])
def test_symbol_of_probe(probe, expected):
    assert symbol_of_probe(probe, {"/x/libjvm.so:9136384": "jni_GetByteArrayRegion"}) == expected
