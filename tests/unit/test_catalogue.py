"""The catalogue's own contracts (the plans are checked against it in test_catalogue_plans.py
and test_engine_catalogue.py), and what is written from it: `jvmos record -h` and the README's
layer table."""
from pathlib import Path

import pytest

from jvmos import catalogue as cat
from jvmos.catalogue import (CATEGORIES, GUARANTEED, GUARANTEED_IO, IO_SYSCALLS, JNI_BYTES_FROM_ARGS,
                             JNI_COPY_FUNCTIONS, SYSCALL_DIRECTION, is_jni_entry_point)

ROOT = Path(__file__).resolve().parents[2]


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


def test_the_readmes_layer_table_is_the_catalogues():
    readme = (ROOT / "README.md").read_text()
    assert cat.layers_markdown() in readme, \
        "README's layer table differs from catalogue.layers_markdown(): paste it again"


def test_record_help_lists_every_layer_with_its_cost():
    from jvmos.cli import build_parser
    import io
    import contextlib
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), pytest.raises(SystemExit):
        build_parser().parse_args(["record", "-h"])
    text = " ".join(buf.getvalue().split())
    for layer in cat.LAYER_INFO.values():
        assert f"{layer.name}: " in text and " ".join(layer.cost.split()) in text, layer.name


def test_a_mode_is_checked_once_and_says_the_known_ones():
    from jvmos import JvmosError
    assert cat.Mode.parse("count") is cat.Mode.COUNT and cat.Mode.COUNT == "count"
    with pytest.raises(JvmosError, match=r"unknown mode 'bogus' \(known: time, count, sample\)"):
        cat.Mode.parse("bogus")
    assert f"{cat.Mode.TIME}" == "time"
