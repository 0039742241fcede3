"""What each layer attaches to, in the engine's plan (jvmos/enginelayers), against the
catalogue (jvmos/catalogue.py), which the recorder, the analyzers, `jvmos record -h` and the
README read: the syscalls traced by enter/exit tracepoint pairs and the symbols probed per
library. The plans are built as `jvmos record` builds them, in both scopes, with a stand-in
symbol table that resolves every name, so a symbol a layer asks for is in its plan."""
import re
from pathlib import Path

import pytest

from jvmos import catalogue as cat
from jvmos import engine as eng

LIBS = {"LIBJVM": [Path("/jdk/lib/server/libjvm.so")], "LIBNIO": [Path("/jdk/lib/libnio.so")],
        "LIBC": [Path("/lib/libc.so.6")], "LIBZ": [Path("/lib/libz.so.1")]}
PLACEHOLDER_OF = {str(p): f"@{ph}@" for ph, ps in LIBS.items() for p in ps}
# two JNI entry points beside the copy functions: the census layer's @JNI_ENTRY_POINTS@
EXTRA_JNI = ("jni_GetVersion", "jni_FindClass")


class AnySymbol(dict):
    """A symbol table in which every name is defined (at its own address)."""

    def __init__(self):
        super().__init__({n: 0x1000 + i for i, n in enumerate(
            [f"jni_{f}" for f in cat.JNI_COPY_FUNCTIONS] + list(EXTRA_JNI))})

    def __missing__(self, name):
        self[name] = 0x1000 + len(self)
        return self[name]

    def __contains__(self, name):
        return True


def _attached(layer, scope, mode="time"):
    """(syscalls with an enter or exit tracepoint, {placeholder: symbols probed})."""
    tables = {}
    plan = eng.build_plan([layer], LIBS, lambda p: tables.setdefault(str(p), AnySymbol()),
                          mode=mode, scope=scope, root=1, counting=True, usdt_of=lambda p: {})
    syscalls = set()
    for t in plan.doc["tracepoints"]:
        m = re.match(r"sys_(enter|exit)_(\w+)$", t["name"])
        assert t["group"] == "syscalls" and m, t
        syscalls.add(m.group(2))
    syms = {}
    for u in plan.doc["uprobes"]:
        syms.setdefault(PLACEHOLDER_OF[u["path"]], set()).add(u["symbol"])
    return syscalls, syms


@pytest.mark.parametrize("name", list(cat.LAYER_INFO))
def test_each_layer_attaches_to_what_the_catalogue_says(name):
    layer = cat.LAYER_INFO[name]
    syscalls, syms = set(), {}
    for scope in ("host", "process"):
        sc, sy = _attached(name, scope)
        syscalls |= sc
        for ph, names in sy.items():
            syms.setdefault(ph, set()).update(names)
    assert syscalls == set(layer.syscalls)
    want = {ph: set(names) for ph, names in layer.symbols.items()}
    if want.get("@LIBJVM@") == {"@JNI_ENTRY_POINTS@"}:
        want["@LIBJVM@"] = set(AnySymbol())     # the census alone: every JNI entry point
    assert syms == want


def test_the_io_layers_syscalls_are_the_catalogued_io_syscalls_and_their_libc_wrappers():
    host, _ = _attached("io", "host")
    assert host == set(cat.IO_SYSCALLS)
    procsys, procsyms = _attached("io", "process")
    assert not procsys and procsyms["@LIBC@"] == set(cat.IO_LIBC_WRAPPERS)


def test_at_process_scope_no_layer_enables_a_syscall_tracepoint():
    """Issue 31: --scope process enables no syscall tracepoint (each taxes every task on the
    host). Every layer counts on libc's functions there, in both modes; the threads layer's
    stack syscalls are timed in --mode time only, its clone wrappers and futex waits in
    both."""
    for mode in ("time", "count"):
        assert {name for name in cat.LAYER_INFO if _attached(name, "process", mode)[0]} == set()
    _, timed = _attached("threads", "process", "time")
    _, counted = _attached("threads", "process", "count")
    libc = set(cat.THREAD_LIBC_CLONE) | set(cat.THREAD_LIBC_FUTEX)
    assert timed["@LIBC@"] == libc | set(cat.THREAD_LIBC_SPAN) | {"pthread_create"}
    assert counted["@LIBC@"] == libc | {"pthread_create"}
    # at --scope host, every layer that makes syscalls uses their tracepoints
    assert {name for name in cat.LAYER_INFO if _attached(name, "host")[0]} == \
        {"io", "threads", "links", "mem"}


def test_two_layers_probing_one_function_each_get_their_programs():
    """The threads and mem layers both probe libc's mmap at --scope process: one layer's
    probe must not pass for the other's (an alias is an alias within a layer only)."""
    tables = {}
    plan = eng.build_plan(["threads", "mem"], LIBS,
                          lambda p: tables.setdefault(str(p), AnySymbol()), mode="time",
                          scope="process", root=1, counting=True, usdt_of=lambda p: {})
    objs = {u["object"] for u in plan.doc["uprobes"] if u["symbol"] == "mmap"}
    assert objs == {"threads", "mem"}
