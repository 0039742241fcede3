"""The catalogue and the probe templates must agree: the analyzers read one, bpftrace runs the other."""
import re

import pytest

from jvmos.catalogue import (CATEGORIES, GUARANTEED, GUARANTEED_IO, IO_SYSCALLS, JNI_BYTES_FROM_ARGS,
                             JNI_COPY_FUNCTIONS, LAYERS, PRIMITIVES, SYSCALL_DIRECTION,
                             is_jni_entry_point)
from jvmos.probegen import PROBES_DIR, _expand_values


@pytest.mark.parametrize("sym,yes", [
    ("jni_GetVersion", True), ("jni_GetByteArrayRegion", True), ("jni_FindClass", True),
    ("jni_invoke_static", False), ("jni_", False), ("jni", False), ("JNI_CreateJavaVM", False),
    ("Jni_GetVersion", False), ("xjni_GetVersion", False), ("jni_9", False), ("", False),
])
def test_is_jni_entry_point(sym, yes):
    assert is_jni_entry_point(sym) is yes


def test_copy_functions():
    assert len(JNI_COPY_FUNCTIONS) == len(set(JNI_COPY_FUNCTIONS)) == 38
    assert JNI_COPY_FUNCTIONS == sorted(JNI_COPY_FUNCTIONS)
    assert {"GetByteArrayRegion", "SetByteArrayRegion", "GetPrimitiveArrayCritical",
            "ReleaseIntArrayElements", "GetStringUTFChars"} <= set(JNI_COPY_FUNCTIONS)
    assert len(JNI_BYTES_FROM_ARGS) == 18
    assert all(f.endswith("Region") for f in JNI_BYTES_FROM_ARGS)
    assert "GetPrimitiveArrayCritical" not in JNI_BYTES_FROM_ARGS


def test_syscall_catalogue():
    assert set(SYSCALL_DIRECTION) == set(IO_SYSCALLS)
    assert SYSCALL_DIRECTION["sendfile64"] is None
    assert {s for s, d in SYSCALL_DIRECTION.items() if d == "in"} == \
        {"write", "pwrite64", "writev", "sendto", "sendmsg"}


def test_categories():
    assert list(CATEGORIES) == ["jni_copy", "nio_copy", "io_syscall", "kernel_copy", "jni_call",
                                "thread_create", "thread_jvm", "thread_wait", "sync", "runq", "link",
                                "file", "malloc", "free_estimated", "vm"]
    assert set(GUARANTEED_IO) <= set(CATEGORIES) and "io_syscall" not in GUARANTEED_IO
    # waiting and blocking are never guaranteed overhead; the JVM's own part is reported beside
    guaranteed = {c for names in GUARANTEED.values() for c in names}
    assert guaranteed <= set(CATEGORIES)
    assert not guaranteed & {"io_syscall", "thread_wait", "sync", "runq", "thread_jvm", "jni_call"}
    for files in LAYERS.values():
        for f in files:
            assert (PROBES_DIR / f).is_file(), f


# io.bt as jvmos writes it out: one Region block per element size (the sizes are given beside
# the attach points of the template)
IO_BT = _expand_values((PROBES_DIR / "io.bt").read_text(), "io.bt")


def _blocks(text):
    """[(attach points, body)] of a probe template."""
    out = []
    for m in re.finditer(r"((?:^(?:uprobe|uretprobe|tracepoint):\S+\n)+)(.*?)^\}", text, re.M | re.S):
        out.append((m.group(1).split(), m.group(2)))
    return out


def test_io_bt_probes_exactly_the_copy_functions():
    entries = set(re.findall(r"^uprobe:@LIBJVM@:jni_(\w+?),?$", IO_BT, re.M))
    returns = set(re.findall(r"^uretprobe:@LIBJVM@:jni_(\w+?),?$", IO_BT, re.M))
    assert entries == set(JNI_COPY_FUNCTIONS)
    assert returns == set(JNI_COPY_FUNCTIONS)


def test_io_bt_counts_bytes_exactly_for_the_region_functions_with_their_element_size():
    sized = {}
    for aps, body in _blocks(IO_BT):
        m = re.search(r'@bytes\[pid, "jni_copy", probe\] = sum\(\(uint64\)\(int32\)arg3 \* (\d)\)',
                      body)
        for ap in aps:
            f = re.match(r"uprobe:@LIBJVM@:jni_(\w+?),?$", ap)
            if f and m:
                sized[f.group(1)] = int(m.group(1))
    assert set(sized) == JNI_BYTES_FROM_ARGS
    for f, size in sized.items():
        prim = re.match(r"(?:Get|Set)(\w+?)ArrayRegion$", f)
        if prim:
            assert size == PRIMITIVES[prim.group(1)], f
    assert sized["GetStringRegion"] == 2 and sized["GetStringUTFRegion"] == 1


def test_io_bt_traces_exactly_the_catalogued_syscalls():
    enters = set(re.findall(r"^tracepoint:syscalls:sys_enter_(\w+?),?$", IO_BT, re.M))
    exits = set(re.findall(r"^tracepoint:syscalls:sys_exit_(\w+?),?$", IO_BT, re.M))
    assert enters == exits == set(IO_SYSCALLS)


def test_categories_the_probes_emit_are_known_to_the_analyzer():
    emitted = set()
    for f in PROBES_DIR.glob("*.bt"):
        emitted |= set(re.findall(r'@(?:calls|bytes|time|wall|ncalls|ntime|nhits)\[[^,\]]+, "(\w+)", ',
                                  f.read_text()))
    # categories of the summary, plus the raw inputs the summary turns into them
    assert emitted <= set(CATEGORIES) | {"unsafe_copy_out", "unsafe_copy_etc", "nio_native",
                                         "vm_timed", "thread_nested_alloc",
                                         "malloc_untimed"}
    assert {"thread_create", "thread_jvm", "thread_wait", "sync", "runq", "link", "file", "malloc",
            "vm"} <= emitted
    assert {"jni_copy", "io_syscall", "jni_call", "nio_native", "unsafe_copy_out"} <= emitted
